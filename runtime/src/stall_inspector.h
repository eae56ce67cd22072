// Stall inspector (runs on each process set's coordinator): tensors that some ranks submitted and
// others did not, for too long. Warns with the missing ranks after LOCKSTEP_RT_STALL_WARN seconds and
// asks for an abort after LOCKSTEP_RT_STALL_ABORT seconds, so a mismatched job fails instead of hanging.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "request.h"

namespace lockstep::rt::internal {

struct StalledTensor {
  uint64_t set = 0;
  std::string name;
  Op op = Op::allreduce;
  std::vector<int> ready;    // world ranks that submitted it
  std::vector<int> missing;  // world ranks that did not
  double age_s = 0;          // since the first rank submitted it
};

// "0,2-5,7": world ranks, compact.
std::string format_ranks(const std::vector<int>& ranks);

class StallInspector {
 public:
  StallInspector(double warn_s, double abort_s) : warn_s_(warn_s), abort_s_(abort_s) {}
  // Prints a warning when tensors have waited past the warning time (at most once per warning period),
  // and returns the abort reason once the oldest waited past the abort time (0 disables abort).
  std::optional<std::string> inspect(std::vector<StalledTensor> pending, Clock::time_point now,
                                     const std::vector<int>& finalized);

 private:
  double warn_s_, abort_s_;
  std::optional<Clock::time_point> last_warning_;
};

// The report's text, capped at `max_tensors` lines plus "and N more".
std::string stall_report(const std::vector<StalledTensor>& stalled, size_t max_tensors);

}  // namespace lockstep::rt::internal
