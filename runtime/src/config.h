// The runtime's settings: defaults, overridden by LOCKSTEP_RT_* environment variables (docs/runtime.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lockstep/rt.h"

namespace lockstep::rt::internal {

// Exit status of a rank the runtime stops (stall abort, dead peer): distinct from 1 and 2 so a script
// can tell "the runtime stopped a stuck job" from the application's own failures.
constexpr int kAbortExitCode = 3;

struct Config {
  Matching matching = Matching::name;
  std::vector<std::string> backends{"mpi"};  // LOCKSTEP_RT_BACKEND, first that starts wins
  size_t fusion_bytes = 64u << 20;           // LOCKSTEP_RT_FUSION_BYTES
  double cycle_ms = 1.0;                     // LOCKSTEP_RT_CYCLE_MS: batching window while no rank waits
  double stall_warn_s = 60;                  // LOCKSTEP_RT_STALL_WARN
  double stall_abort_s = 300;                // LOCKSTEP_RT_STALL_ABORT (0: never abort)
  double heartbeat_s = 30;  // LOCKSTEP_RT_HEARTBEAT: control-plane silence that names a rank dead
};

// Throws std::runtime_error naming the variable when a value does not parse.
Config load_config(const Options& options);

// Prints "lockstep-rt: rank R: aborting: why" (unless already printed) and exits kAbortExitCode.
[[noreturn]] void fatal(const std::string& why, bool printed = false);

}  // namespace lockstep::rt::internal
