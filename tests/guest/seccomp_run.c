/* Runs a command with some NUMA system calls denied, as a container's default seccomp profile denies
 * them without CAP_SYS_NICE (Docker, containerd: EPERM). No Docker needed: a seccomp filter of our own.
 *
 *   seccomp_run CALL[,CALL...] -- COMMAND [ARG...]
 *
 * CALL: mbind, set_mempolicy, get_mempolicy, move_pages, migrate_pages, or all. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
  const char* name;
  long nr;
} kCalls[] = {{"mbind", SYS_mbind},
              {"set_mempolicy", SYS_set_mempolicy},
              {"get_mempolicy", SYS_get_mempolicy},
              {"move_pages", SYS_move_pages},
              {"migrate_pages", SYS_migrate_pages}};
enum { kCallCount = sizeof(kCalls) / sizeof(kCalls[0]) };

int main(int argc, char** argv) {
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "usage: seccomp_run CALL[,CALL...]|all -- COMMAND [ARG...]\n");
    return 2;
  }
  long deny[kCallCount];
  int n = 0;
  char list[256];
  snprintf(list, sizeof(list), "%s", argv[1]);
  for (char* name = strtok(list, ","); name; name = strtok(NULL, ",")) {
    int found = 0;
    for (int i = 0; i < kCallCount; ++i)
      if ((!strcmp(name, "all") || !strcmp(name, kCalls[i].name)) && n < kCallCount)
        deny[n++] = kCalls[i].nr, found = 1;
    if (!found) {
      fprintf(stderr, "seccomp_run: unknown call %s\n", name);
      return 2;
    }
  }
  /* load the syscall number; for each denied one return EPERM; allow everything else */
  struct sock_filter f[2 + 2 * kCallCount + 1];
  int k = 0;
  f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  for (int i = 0; i < n; ++i) {
    f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)deny[i], 0, 1);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
  }
  f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {(unsigned short)k, f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp_run: installing the filter");
    return 125;
  }
  execvp(argv[3], argv + 3);
  perror("seccomp_run: exec");
  return 127;
}
