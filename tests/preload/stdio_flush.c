/* Output written into stdio's buffer (with stdout a pipe, a malloc'd 4 KiB block: tracked at the harness's
 * threshold), then tracked allocations, then the flush. Under profiling the allocations start intervals that
 * protect every live tracked object, the stdout buffer included; glibc's flush calls its internal write(),
 * which no interposed write() sees, so the kernel answers EFAULT and stdio drops the text. Also fputs of a
 * line longer than the buffer (written straight from the program's tracked block) and fwrite to a file. */
#include <unistd.h>

#include "common.h"

int t_failures;

static void allocate_some(int n) {
  for (int k = 0; k < n; k++) {
    unsigned char* p = malloc(8192 + (size_t)k * 64);
    memset(p, 1, 8192);
    free(p);
  }
}

int main(void) {
  for (int i = 0; i < 100; i++) {
    printf("line %d\n", i);
    allocate_some(50);
    if (fflush(stdout) != 0) return 2; /* stdio reports the lost write; the plain run never gets here */
  }
  /* A long line from a tracked block that has not been touched since an interval started. */
  char* big = malloc(20000);
  memset(big, 'x', 19998);
  big[19998] = '\n';
  big[19999] = '\0';
  allocate_some(50);
  fputs(big, stdout);
  fflush(stdout);
  /* fwrite of a tracked block to a file, read back with read(2) into another tracked block. */
  char path[] = "/tmp/sentinel-stdio-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 1;
  unlink(path);
  FILE* f = fdopen(fd, "w+");
  unsigned char *src = malloc(100000), *dst = malloc(100000);
  t_fill(src, 100000, 9);
  allocate_some(50);
  size_t w = fwrite(src, 1, 100000, f);
  int fl = fflush(f);
  allocate_some(50);
  ssize_t r = pread(fd, dst, 100000, 0);
  printf("fwrite %zu, fflush %d, pread %zd, same %d\n", w, fl, r, r == 100000 && memcmp(src, dst, 100000) == 0);
  fclose(f);
  free(src);
  free(dst);
  free(big);
  return 0;
}
