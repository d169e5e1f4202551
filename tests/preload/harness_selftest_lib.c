/* A stand-in for the runtime that misbehaves on purpose, to prove that compare.sh notices (tests named
 * harness_selftest_*; all but `none` are expected to fail). COMPARE_SELFTEST_MODE picks the fault:
 *   none      nothing (the harness must pass)
 *   stdout    an extra stdout line
 *   stderr    an extra stderr line that is not a runtime message
 *   message   a `sentinel:` line (at the harness's SENTINEL_LOG=error, an error)
 *   status    exit status 9 at the end
 *   signal    SIGABRT at the end */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* mode(void) {
  const char* m = getenv("COMPARE_SELFTEST_MODE");
  return m ? m : "none";
}

__attribute__((constructor)) static void selftest_init(void) {
  const char* m = mode();
  if (!strcmp(m, "stdout")) printf("an extra line\n");
  if (!strcmp(m, "stderr")) fprintf(stderr, "an extra stderr line\n");
  if (!strcmp(m, "message")) {
    static const char line[] = "sentinel: simulated runtime error\n";
    if (write(2, line, sizeof line - 1) < 0) _exit(1);
  }
}

__attribute__((destructor)) static void selftest_fini(void) {
  const char* m = mode();
  fflush(stdout);
  if (!strcmp(m, "status")) _exit(9);
  if (!strcmp(m, "signal")) {
    signal(SIGABRT, SIG_DFL);
    raise(SIGABRT);
  }
}
