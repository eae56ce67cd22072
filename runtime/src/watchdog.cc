// Reports, then aborts on, a data-plane collective that does not return (docs/runtime.md).
#include "watchdog.h"

#include <chrono>
#include <cstdio>

namespace lockstep::rt::internal {

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void Watchdog::start() {
  thread_ = std::thread([this] { watch(); });
}

void Watchdog::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::begin(std::string what) {
  {
    std::lock_guard<std::mutex> lock(what_mu_);
    what_ = std::move(what);
  }
  since_ns_.store(now_ns());
}

void Watchdog::watch() {
  bool warned = false;
  int64_t warned_for = 0;
  while (!stop_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const int64_t since = since_ns_.load();
    if (since == 0) continue;
    const double age = static_cast<double>(now_ns() - since) / 1e9;
    std::string what;
    {
      std::lock_guard<std::mutex> lock(what_mu_);
      what = what_;
    }
    const char* order_note =
        cfg_.matching == Matching::order
            ? " (matching by order: without negotiation the runtime cannot tell which rank is "
              "missing; 'lockstep check' on a trace can)"
            : "";
    if (cfg_.stall_abort_s > 0 && age >= cfg_.stall_abort_s) {
      fatal(what + " has not completed after " + std::to_string(static_cast<int>(age)) +
            " s (LOCKSTEP_RT_STALL_ABORT): a peer rank died or runs a different collective" + order_note);
    }
    if (age >= cfg_.stall_warn_s && !(warned && warned_for == since)) {
      warned = true;
      warned_for = since;
      std::fprintf(stderr, "lockstep-rt: rank %d: stall warning: %s has not completed after %.0f s%s\n",
                   world_rank_, what.c_str(), age, order_note);
      std::fflush(stderr);
    }
  }
}

}  // namespace lockstep::rt::internal
