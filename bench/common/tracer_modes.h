// The driver the benchmarks of traced calls share: the same binary run once per tracer mode, each a
// fresh process with LOCKSTEP_BENCH_MODE and that mode's tracer settings in its environment, so every
// mode is measured in the same run against the untraced one.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <system_error>

namespace lockstep::bench {

// Modes: "off" (no trace directory, the tracer stays idle), "traced", "traced+ring" (a ring of 65,536
// records), "traced+stack8" (8 stack frames per call). The traces go to a directory made from `tmpl`
// (mkdtemp) and removed afterwards. Returns 0 when every run exited 0.
inline int run_modes(char** argv, std::initializer_list<const char*> modes, char* tmpl) {
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  int rc = 0;
  for (const char* mode : modes) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("LOCKSTEP_BENCH_MODE", mode, 1);
      setenv("OMPI_MCA_btl", "self", 0);
      if (std::strcmp(mode, "off") != 0) setenv("LOCKSTEP_TRACE_DIR", tmpl, 1);
      if (std::strcmp(mode, "traced+stack8") == 0) setenv("LOCKSTEP_TRACE_STACK", "8", 1);
      if (std::strcmp(mode, "traced+ring") == 0) setenv("LOCKSTEP_TRACE_RING", "65536", 1);
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return rc;
}

}  // namespace lockstep::bench
