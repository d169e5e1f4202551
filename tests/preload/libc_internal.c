/* Memory that glibc allocates on the program's behalf (through the interposable malloc) and the program frees,
 * or that glibc frees itself: strdup/strndup, asprintf, getline/getdelim, open_memstream, fopen buffers with
 * setvbuf, realpath(NULL), scandir, regcomp, qsort of a large array (temporary buffer), tsearch, getaddrinfo of
 * a numeric host, and stdio on a pipe. Sizes on both sides of the tracking threshold. */
#include <dirent.h>
#include <netdb.h>
#include <regex.h>
#include <search.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static int cmp_int(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

static int cmp_str(const void* a, const void* b) {
  return strcmp((const char*)a, (const char*)b);
}

static void noop_free(void* p) {
  (void)p;
}

int main(void) {
  /* strdup / strndup of big and small strings. */
  char* big = malloc(200001);
  for (int i = 0; i < 200000; i++) big[i] = (char)('a' + i % 26);
  big[200000] = '\0';
  char *d1 = strdup(big), *d2 = strndup(big, 5000), *d3 = strdup("short");
  printf("strdup: %d %d %d\n", strcmp(d1, big) == 0, strlen(d2) == 5000 && memcmp(d2, big, 5000) == 0,
         strcmp(d3, "short") == 0);
  free(d1);
  free(d2);
  free(d3);

  /* asprintf. */
  char* s = NULL;
  int n = asprintf(&s, "%s-%d", big + 190000, 42);
  printf("asprintf: %d %d\n", n, s != NULL && strlen(s) == (size_t)n);
  free(s);

  /* open_memstream grows its buffer with realloc. */
  char* ms = NULL;
  size_t mlen = 0;
  FILE* mf = open_memstream(&ms, &mlen);
  for (int i = 0; i < 20000; i++) fprintf(mf, "line %d\n", i);
  fclose(mf);
  unsigned long sum = 0;
  for (size_t i = 0; i < mlen; i++) sum = sum * 31 + (unsigned char)ms[i];
  printf("open_memstream: %zu bytes, hash %lx\n", mlen, sum);

  /* getline / getdelim on a memory stream holding long and short lines. */
  FILE* in = fmemopen(ms, mlen, "r");
  char* line = NULL;
  size_t cap = 0;
  long lines = 0, chars = 0;
  ssize_t got;
  while ((got = getline(&line, &cap, in)) > 0) {
    lines++;
    chars += got;
  }
  fclose(in);
  free(line);
  printf("getline: %ld lines, %ld chars\n", lines, chars);
  free(ms);
  FILE* in2 = fmemopen(big, 200000, "r");
  line = NULL;
  cap = 0;
  got = getdelim(&line, &cap, 'z', in2);
  long pieces = 1;
  while (getdelim(&line, &cap, 'z', in2) > 0) pieces++;
  fclose(in2);
  printf("getdelim: first %zd, pieces %ld\n", got, pieces);
  free(line);

  /* A temp file with a large stdio buffer set by the program and one chosen by glibc. */
  char path[] = "/tmp/sentinel-libc-XXXXXX";
  int fd = mkstemp(path);
  FILE* f = fd >= 0 ? fdopen(fd, "w+") : NULL;
  if (!f) {
    printf("mkstemp failed\n");
    return 1;
  }
  char* buf = malloc(65536);
  setvbuf(f, buf, _IOFBF, 65536);
  for (int i = 0; i < 10000; i++) fprintf(f, "%08d\n", i);
  fflush(f);
  rewind(f);
  int v = 0, count = 0, bad = 0;
  while (fscanf(f, "%d", &v) == 1) bad += v != count++;
  fclose(f);
  free(buf);
  f = fopen(path, "r");
  char tmp[16];
  int count2 = 0;
  while (f && fgets(tmp, sizeof tmp, f)) count2++;
  if (f) fclose(f);
  printf("stdio file: %d numbers (bad %d), %d lines\n", count, bad, count2);

  /* realpath(NULL) allocates. */
  char* rp = realpath(path, NULL);
  printf("realpath: %d\n", rp != NULL && strcmp(rp, path) == 0);
  free(rp);
  unlink(path);

  /* scandir allocates the array and every entry. */
  char dir[] = "/tmp/sentinel-scan-XXXXXX";
  if (!mkdtemp(dir)) {
    printf("mkdtemp failed\n");
    return 1;
  }
  for (int i = 0; i < 300; i++) {
    char p[128];
    snprintf(p, sizeof p, "%s/file-%03d", dir, i);
    FILE* t = fopen(p, "w");
    if (t) fclose(t);
  }
  struct dirent** list = NULL;
  int ents = scandir(dir, &list, NULL, alphasort);
  int order_ok = ents == 302;
  for (int i = 0; i < ents; i++) {
    if (i >= 2) {
      char want[32];
      snprintf(want, sizeof want, "file-%03d", i - 2);
      order_ok &= strcmp(list[i]->d_name, want) == 0;
      char p[512];
      snprintf(p, sizeof p, "%s/%s", dir, list[i]->d_name);
      unlink(p);
    }
    free(list[i]);
  }
  free(list);
  rmdir(dir);
  printf("scandir: %d entries, sorted %d\n", ents, order_ok);

  /* regcomp/regexec/regfree. */
  regex_t re;
  int rc = regcomp(&re, "^(a|b)+[0-9]{3,}(x|y|z)*$", REG_EXTENDED);
  int m1 = regexec(&re, "abba12345xyz", 0, NULL, 0) == 0, m2 = regexec(&re, "abc", 0, NULL, 0) == 0;
  regfree(&re);
  printf("regex: compiled %d, match %d, no match %d\n", rc == 0, m1, !m2);

  /* qsort of a big array (glibc may allocate a temporary buffer). */
  int* arr = malloc(200000 * sizeof(int));
  uint64_t seed = 5;
  for (int i = 0; i < 200000; i++) arr[i] = (int)(t_rand(&seed) % 1000000);
  qsort(arr, 200000, sizeof(int), cmp_int);
  int sorted = 1;
  for (int i = 1; i < 200000; i++) sorted &= arr[i - 1] <= arr[i];
  free(arr);
  printf("qsort: sorted %d\n", sorted);

  /* tsearch allocates nodes. */
  void* root = NULL;
  static char keys[500][8];
  for (int i = 0; i < 500; i++) {
    snprintf(keys[i], sizeof keys[i], "k%03d", (i * 7) % 500);
    tsearch(keys[i], &root, cmp_str);
  }
  int found = 0;
  for (int i = 0; i < 500; i++) found += tfind(keys[i], &root, cmp_str) != NULL;
  tdestroy(root, noop_free);
  printf("tsearch: found %d\n", found);

  /* getaddrinfo of numeric addresses (no network). */
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  int g = getaddrinfo("127.0.0.1", "80", &hints, &res);
  printf("getaddrinfo: %d, result %d\n", g, res != NULL);
  if (res) freeaddrinfo(res);

  free(big);
  return 0;
}
