// The data-plane watchdog: a thread of its own that warns about, then aborts on, a collective that has
// not returned after the stall times. Negotiation has its own deadlines; this catches a collective
// that cannot finish (a peer died inside it, or matching by order paired different collectives).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "config.h"

namespace lockstep::rt::internal {

class Watchdog {
 public:
  Watchdog(const Config& cfg, int world_rank) : cfg_(cfg), world_rank_(world_rank) {}
  void start();
  void stop();  // joins the thread
  // Background thread: a data-plane collective starts (described for the report) and ends.
  void begin(std::string what);
  void end() { since_ns_.store(0); }

 private:
  void watch();

  const Config& cfg_;
  int world_rank_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> since_ns_{0};  // start of the collective running now, 0 when none
  std::mutex what_mu_;
  std::string what_;  // guarded by what_mu_
};

}  // namespace lockstep::rt::internal
