#include "base/guard.h"

namespace sentinel {

constinit thread_local int t_guard __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace sentinel
