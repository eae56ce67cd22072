// The hand-off between application threads and the background thread: requests submitted and not yet
// taken, the names in flight, the process sets, and what wakes the background thread. All of it is
// under one mutex; besides this, the two sides share only each request's own state.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backend.h"
#include "request.h"

namespace lockstep::rt::internal {

class Inbox {
 public:
  // ---- application threads
  // Queues the request; returns why not ("" when queued) if the runtime is finalizing, the set is
  // unknown or does not include this rank, the root is out of range or the name is still pending.
  std::string submit(const std::shared_ptr<RequestState>& st, int world_rank);
  // An application thread blocks on an unfinished request (the background thread then reports at
  // once instead of batching further) and stops blocking.
  void begin_wait();
  void end_wait();
  void request_finalize();
  void mark_stopped();
  bool stopped() const;

  // ---- process sets: the background thread adds them, both sides look them up
  void add_set(std::unique_ptr<SetComm> set);
  SetComm* set(uint64_t id) const;  // nullptr when unknown; sets live until finalize
  std::map<uint64_t, std::unique_ptr<SetComm>>& sets_at_finalize() { return sets_; }

  // ---- background thread
  struct Taken {
    std::vector<std::shared_ptr<RequestState>> fresh;  // submitted since the last take
    bool finalizing = false;
    bool app_blocked = false;  // some application thread waits on a request
    uint64_t flush_epoch = 0;  // bumped whenever an application thread starts waiting
  };
  Taken take();
  // The requests are done: their names may be submitted again.
  void release_names(RequestState* const* states, size_t n);
  // Sleeps up to `nap`, or until an application thread starts waiting or finalizes since `seen`, or
  // (unless `batching`) a submission arrives. Arms the wake-up of the next first submission.
  void sleep(std::chrono::microseconds nap, const Taken& seen, bool batching);
  // Matching by order: blocks until something is queued or finalize is requested.
  Taken wait_for_work();

 private:
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<RequestState>> queue_;
  std::set<std::pair<uint64_t, std::string>> in_flight_;  // names that may not be submitted again yet
  std::map<uint64_t, std::unique_ptr<SetComm>> sets_;
  bool finalize_requested_ = false;
  bool stopped_ = false;
  int app_waiting_ = 0;
  uint64_t flush_epoch_ = 0;
  // The background thread sleeps with nothing submitted: the next submission must wake it (later
  // ones in the same burst need not, which saves a futex wake per request).
  bool wants_submissions_ = true;
};

}  // namespace lockstep::rt::internal
