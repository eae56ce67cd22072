// Stall reports name the ranks that are missing for each tensor (the place to look) and cap the list,
// because a real stall usually involves every gradient of a model.
#include "stall_inspector.h"

#include <algorithm>
#include <cstdio>

namespace lockstep::rt::internal {

std::string format_ranks(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(r[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(r[j]);
    i = j + 1;
  }
  return out;
}

std::string stall_report(const std::vector<StalledTensor>& stalled, size_t max_tensors) {
  std::string out;
  const size_t shown = std::min(stalled.size(), max_tensors);
  for (size_t i = 0; i < shown; ++i) {
    const StalledTensor& t = stalled[i];
    char age[32];
    std::snprintf(age, sizeof age, "%.1f", t.age_s);
    const std::string set = t.set ? " (process set " + std::to_string(t.set) + ")" : "";
    out += "  " + std::string(op_name(t.op)) + " '" + t.name + "'" + set + ": submitted by rank" +
           (t.ready.size() == 1 ? " " : "s ") + format_ranks(t.ready) + ", missing on rank" +
           (t.missing.size() == 1 ? " " : "s ") + format_ranks(t.missing) + " (waiting " + age + " s)\n";
  }
  if (stalled.size() > shown) out += "  and " + std::to_string(stalled.size() - shown) + " more\n";
  return out;
}

std::optional<std::string> StallInspector::inspect(std::vector<StalledTensor> pending, Clock::time_point now,
                                                   const std::vector<int>& finalized) {
  std::vector<StalledTensor> stalled;
  for (auto& t : pending) {
    if (t.age_s >= warn_s_) stalled.push_back(std::move(t));
  }
  if (stalled.empty()) return std::nullopt;
  double oldest = 0;
  for (const auto& t : stalled) oldest = std::max(oldest, t.age_s);
  // Tensors missing on the fewest ranks first: those few ranks are the likely culprits (blame by
  // majority), then the oldest.
  std::stable_sort(stalled.begin(), stalled.end(), [](const StalledTensor& a, const StalledTensor& b) {
    if (a.missing.size() != b.missing.size()) return a.missing.size() < b.missing.size();
    return a.age_s > b.age_s;
  });
  std::string finalized_note;
  if (!finalized.empty()) {
    finalized_note = "  rank" + std::string(finalized.size() == 1 ? " " : "s ") + format_ranks(finalized) +
                     " already called finalize\n";
  }
  if (abort_s_ > 0 && oldest >= abort_s_) {
    const StalledTensor& t = stalled.front();
    std::string reason = "stalled for " + std::to_string(static_cast<int>(abort_s_)) +
                         " s (LOCKSTEP_RT_STALL_ABORT): " + op_name(t.op) + " '" + t.name +
                         "' was never submitted by rank" + (t.missing.size() == 1 ? " " : "s ") +
                         format_ranks(t.missing);
    if (stalled.size() > 1) reason += " (and " + std::to_string(stalled.size() - 1) + " more tensors)";
    std::fprintf(stderr, "lockstep-rt: stall: %zu tensor(s) submitted by some ranks only\n%s%s",
                 stalled.size(), stall_report(stalled, 5).c_str(), finalized_note.c_str());
    return reason;
  }
  const bool due =
      !last_warning_ || std::chrono::duration<double>(now - *last_warning_).count() >= std::max(warn_s_, 1.0);
  if (due) {
    last_warning_ = now;
    std::fprintf(
        stderr,
        "lockstep-rt: stall warning: %zu tensor(s) submitted by some ranks only for more than %.0f s; "
        "aborting after %.0f s\n%s%s",
        stalled.size(), warn_s_, abort_s_, stall_report(stalled, 5).c_str(), finalized_note.c_str());
    std::fflush(stderr);
  }
  return std::nullopt;
}

}  // namespace lockstep::rt::internal
