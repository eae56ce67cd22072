// Submission, waiting and wake-ups between the application threads and the background thread.
#include "inbox.h"

namespace lockstep::rt::internal {

std::string Inbox::submit(const std::shared_ptr<RequestState>& st, int world_rank) {
  const Submission& s = st->sub;
  const std::string what = std::string(op_name(s.op)) + " '" + s.name + "'";
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_ || finalize_requested_) return what + ": the runtime is finalizing";
  auto set = sets_.find(s.set);
  if (set == sets_.end()) return what + ": no process set " + std::to_string(s.set);
  if (set->second->rank < 0) {
    return what + ": rank " + std::to_string(world_rank) + " is not in process set " + std::to_string(s.set);
  }
  if (s.op == Op::broadcast && (s.root < 0 || s.root >= set->second->size())) {
    return what + ": root " + std::to_string(s.root) + " is not a rank of the process set";
  }
  if (!in_flight_.insert({s.set, s.name}).second)
    return what + ": a request of that name is still pending on this rank";
  queue_.push_back(st);
  const bool wake = wants_submissions_;
  wants_submissions_ = false;
  lock.unlock();
  if (wake) wake_.notify_one();
  return {};
}

void Inbox::begin_wait() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++app_waiting_;
    ++flush_epoch_;
  }
  wake_.notify_one();
}

void Inbox::end_wait() {
  std::lock_guard<std::mutex> lock(mu_);
  --app_waiting_;
}

void Inbox::request_finalize() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finalize_requested_ = true;
  }
  wake_.notify_all();
}

void Inbox::mark_stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
}

bool Inbox::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

void Inbox::add_set(std::unique_ptr<SetComm> set) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = set->id;
  sets_[id] = std::move(set);
}

SetComm* Inbox::set(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second.get();
}

Inbox::Taken Inbox::take() {
  Taken t;
  std::lock_guard<std::mutex> lock(mu_);
  t.fresh.swap(queue_);
  t.finalizing = finalize_requested_;
  t.app_blocked = app_waiting_ > 0;
  t.flush_epoch = flush_epoch_;
  return t;
}

void Inbox::release_names(RequestState* const* states, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i) in_flight_.erase({states[i]->sub.set, states[i]->sub.name});
}

void Inbox::sleep(std::chrono::microseconds nap, const Taken& seen, bool batching) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!batching && queue_.empty()) wants_submissions_ = true;
  // A non-empty queue wakes the thread only when it is not batching already.
  wake_.wait_for(lock, nap, [&] {
    return flush_epoch_ != seen.flush_epoch || finalize_requested_ != seen.finalizing ||
           (!batching && !queue_.empty());
  });
  wants_submissions_ = false;
}

Inbox::Taken Inbox::wait_for_work() {
  std::unique_lock<std::mutex> lock(mu_);
  wake_.wait(lock, [&] { return !queue_.empty() || finalize_requested_; });
  Taken t;
  t.fresh.swap(queue_);
  t.finalizing = finalize_requested_;
  return t;
}

}  // namespace lockstep::rt::internal
