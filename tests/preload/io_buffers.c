/* System calls that read into and write from tracked buffers: read/write, pread/pwrite, readv/writev,
 * preadv/pwritev, send/recv and sendmsg/recvmsg on a socketpair, a pipe, and a temp file. Harmless in track
 * mode; once the runtime protects tracked pages (profiling), such calls must still succeed (no EFAULT). */
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static int full_write(int fd, const unsigned char* p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return 0;
    p += w;
    n -= (size_t)w;
  }
  return 1;
}
static int full_read(int fd, unsigned char* p, size_t n) {
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r <= 0) return 0;
    p += r;
    n -= (size_t)r;
  }
  return 1;
}

int main(void) {
  const size_t N = 1u << 20;
  unsigned char *src = malloc(N), *dst = malloc(N);
  t_fill(src, N, 1);

  char path[] = "/tmp/sentinel-io-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    printf("mkstemp failed\n");
    return 1;
  }
  unlink(path);
  int ok = full_write(fd, src, N);
  ok &= lseek(fd, 0, SEEK_SET) == 0 && full_read(fd, dst, N) && memcmp(src, dst, N) == 0;
  printf("write/read 1 MiB through a file: %d\n", ok);

  memset(dst, 0, N);
  ok = pwrite(fd, src + 4096, 65536, 8192) == 65536 && pread(fd, dst, 65536, 8192) == 65536 &&
       memcmp(dst, src + 4096, 65536) == 0;
  printf("pwrite/pread 64 KiB: %d\n", ok);

  unsigned char *a = malloc(10000), *b = malloc(300), *c = malloc(50000);
  t_fill(a, 10000, 2);
  t_fill(b, 300, 3);
  t_fill(c, 50000, 4);
  struct iovec wv[3] = {{a, 10000}, {b, 300}, {c, 50000}};
  ok = pwritev(fd, wv, 3, 0) == 60300;
  memset(a, 0, 10000);
  memset(b, 0, 300);
  memset(c, 0, 50000);
  ok &= preadv(fd, wv, 3, 0) == 60300 && t_check(a, 10000, 2) && t_check(b, 300, 3) && t_check(c, 50000, 4);
  lseek(fd, 0, SEEK_SET);
  ok &= writev(fd, wv, 3) == 60300 && lseek(fd, 0, SEEK_SET) == 0;
  memset(c, 0, 50000);
  ok &= readv(fd, wv, 3) == 60300 && t_check(c, 50000, 4);
  printf("readv/writev/preadv/pwritev: %d\n", ok);
  close(fd);

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    printf("socketpair failed\n");
    return 1;
  }
  memset(dst, 0, N);
  ok = send(sv[0], src, 100000, 0) == 100000;
  size_t got = 0;
  while (got < 100000) {
    ssize_t r = recv(sv[1], dst + got, 100000 - got, 0);
    if (r <= 0) break;
    got += (size_t)r;
  }
  ok &= got == 100000 && memcmp(src, dst, 100000) == 0;
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  struct iovec sv_iov[2] = {{a, 10000}, {c, 50000}};
  mh.msg_iov = sv_iov;
  mh.msg_iovlen = 2;
  ok &= sendmsg(sv[0], &mh, 0) == 60000;
  unsigned char* r1 = malloc(60000);
  struct iovec rv_iov[1] = {{r1, 60000}};
  mh.msg_iov = rv_iov;
  mh.msg_iovlen = 1;
  got = 0;
  while (got < 60000) {
    rv_iov[0].iov_base = r1 + got;
    rv_iov[0].iov_len = 60000 - got;
    ssize_t r = recvmsg(sv[1], &mh, 0);
    if (r <= 0) break;
    got += (size_t)r;
  }
  ok &= got == 60000 && memcmp(r1, a, 10000) == 0 && memcmp(r1 + 10000, c, 50000) == 0;
  printf("send/recv/sendmsg/recvmsg: %d\n", ok);
  close(sv[0]);
  close(sv[1]);

  int pp[2];
  if (pipe(pp) != 0) {
    printf("pipe failed\n");
    return 1;
  }
  ok = write(pp[1], src, 60000) == 60000;
  memset(dst, 0, 60000);
  ok &= full_read(pp[0], dst, 60000) && memcmp(src, dst, 60000) == 0;
  /* A read into a freshly allocated, never touched tracked buffer. */
  unsigned char* fresh = malloc(32768);
  ok &= write(pp[1], src, 32768) == 32768 && full_read(pp[0], fresh, 32768) && memcmp(fresh, src, 32768) == 0;
  printf("pipe: %d\n", ok);
  close(pp[0]);
  close(pp[1]);

  free(fresh);
  free(r1);
  free(a);
  free(b);
  free(c);
  free(src);
  free(dst);
  return 0;
}
