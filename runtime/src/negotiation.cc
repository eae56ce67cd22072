// Horovod-style negotiation, as an asynchronous stream rather than lock-step rounds: workers send their
// new requests (and a heartbeat when idle); the coordinator sends plans as tensors become ready and a
// heartbeat plan when idle. Silence longer than the heartbeat timeout names the rank that went quiet.
//
// Batching: a burst of submissions fuses because a worker holds its new requests until the
// application waits on a handle (it will submit nothing more before that completes) or for
// LOCKSTEP_RT_CYCLE_MS, and the coordinator plans what is ready as soon as the whole process set of a
// ready request is waiting, else after the same window. While the application waits on requests that
// are reported but not yet run, the thread polls without sleeping (yielding the core) for a few
// milliseconds, so a plan is picked up at once; otherwise it sleeps between polls.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "background.h"
#include "liveness.h"

namespace lockstep::rt::internal {

namespace {

double seconds_since(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

RequestInfo info_of(const RequestState& st) {
  RequestInfo q;
  q.name = st.sub.name;
  q.op = st.sub.op;
  q.dtype = st.sub.dtype;
  q.reduce = st.sub.reduce;
  q.count = st.sub.count;
  q.root = st.sub.root;
  q.set = st.sub.set;
  q.members = st.members;
  return q;
}

}  // namespace

void Background::loop_negotiated() {
  heartbeat_every_ = std::chrono::duration<double>(std::max(0.05, cfg_.heartbeat_s / 4));
  cycle_ = std::chrono::duration<double, std::milli>(cfg_.cycle_ms);
  const auto start = Clock::now();
  last_sent_ = unsent_since_ = busy_at_ = progress_at_ = start;
  last_heard_.assign(static_cast<size_t>(world_size_), start);
  for (;;) {
    Inbox::Taken taken = inbox_.take();
    bool progressed = !taken.fresh.empty();
    std::vector<RequestInfo> mine;
    for (auto& st : taken.fresh) {
      mine.push_back(info_of(*st));
      pending_[{st->sub.set, st->sub.name}] = std::move(st);
    }
    // Blocked only while something of this rank's is still waiting for a plan.
    const bool blocked = taken.app_blocked && !pending_.empty();
    ControlPlane cp;
    channel_.reap();
    const bool shutdown = coordinator_ ? coordinator_step(std::move(mine), taken, blocked, progressed)
                                       : worker_step(std::move(mine), taken, blocked, progressed);
    if (shutdown) return;
    idle_wait(taken, progressed);
  }
}

bool Background::coordinator_step(std::vector<RequestInfo> mine, const Inbox::Taken& taken, bool blocked,
                                  bool& progressed) {
  auto now = Clock::now();
  coordinator_->set_blocked(0, blocked);
  if (!mine.empty() || (taken.finalizing && !coord_finalize_seen_)) {
    coord_finalize_seen_ = taken.finalizing;
    Readiness r;
    r.finalizing = taken.finalizing;
    r.blocked = blocked;
    r.requests = std::move(mine);
    coordinator_->add(0, r, now);
    if (taken.finalizing) ready_since_ = ready_since_.value_or(now);
  }
  while (auto msg = channel_.poll_readiness()) {
    now = Clock::now();
    last_heard_[static_cast<size_t>(msg->from)] = now;
    try {
      Readiness r = decode_readiness(msg->bytes.data(), msg->bytes.size());
      if (r.finalizing || !r.requests.empty()) ready_since_ = ready_since_.value_or(now);
      coordinator_->add(msg->from, r, now);
    } catch (const std::exception& e) {
      coordinator_abort("bad control message from rank " + std::to_string(msg->from) + ": " + e.what(), {});
    }
    progressed = true;
  }
  if (coordinator_->has_ready() && !ready_since_) ready_since_ = now;
  const bool batch_due =
      ready_since_ && (now - *ready_since_ >= cycle_ || coordinator_->ready_bytes() >= cfg_.fusion_bytes ||
                       coordinator_->ready_set_blocked() || coordinator_->all_finalizing());
  const bool heartbeat_due = now - last_sent_ >= heartbeat_every_;
  if (batch_due || heartbeat_due) {
    Plan plan = coordinator_->plan(now);
    ready_since_.reset();
    if (plan.kind == Plan::kAbort) coordinator_abort(plan.message, {});
    channel_.send_plan(plan);
    last_sent_ = now;
    execute(plan);
    if (!plan.responses.empty()) {
      // Everyone took part in those collectives, so everyone was alive a moment ago.
      std::fill(last_heard_.begin(), last_heard_.end(), Clock::now());
      progressed = true;
    }
    if (plan.kind == Plan::kShutdown) {
      channel_.flush();
      return true;
    }
  }
  check_silence();
  return false;
}

bool Background::worker_step(std::vector<RequestInfo> mine, const Inbox::Taken& taken, bool blocked,
                             bool& progressed) {
  const auto now = Clock::now();
  if (unsent_.empty()) unsent_since_ = now;
  for (auto& q : mine) unsent_.push_back(std::move(q));
  const bool report = !unsent_.empty() && (blocked || taken.finalizing || now - unsent_since_ >= cycle_);
  if (report || taken.finalizing != sent_finalizing_ || (blocked && !told_blocked_) ||
      now - last_sent_ >= heartbeat_every_) {
    Readiness r;
    r.finalizing = taken.finalizing;
    r.blocked = blocked;
    if (report) r.requests.swap(unsent_);
    channel_.send_readiness(r);
    sent_finalizing_ = taken.finalizing;
    told_blocked_ = blocked;
    last_sent_ = now;
  }
  while (auto plan = next_plan()) {
    // The coordinator forgets who was blocked whenever a plan runs something.
    if (!plan->responses.empty()) told_blocked_ = false;
    execute(*plan);
    last_heard_[0] = Clock::now();
    progressed = true;
    if (plan->kind == Plan::kShutdown) {
      channel_.flush();
      return true;
    }
  }
  check_silence();
  return false;
}

std::optional<Plan> Background::next_plan() {
  if (deferred_plans_.empty()) return receive_plan();
  Plan p = std::move(deferred_plans_.front());
  deferred_plans_.pop_front();
  return p;
}

std::optional<Plan> Background::receive_plan() {
  auto msg = channel_.poll_plan();
  if (!msg) return std::nullopt;
  Plan plan;
  try {
    plan = decode_plan(msg->bytes.data(), msg->bytes.size());
  } catch (const std::exception& e) {
    fatal(std::string("bad control message from rank 0: ") + e.what());
  }
  if (plan.kind == Plan::kAbort) worker_abort(plan.message);
  last_heard_[0] = Clock::now();
  return plan;
}

// A rank silent on the control plane for longer than the heartbeat timeout is dead or wedged: the
// coordinator names it and stops the others; a worker names the coordinator. Workers wait longer, so
// that the coordinator, which can tell which worker died, speaks first.
void Background::check_silence() {
  const auto now = Clock::now();
  if (!coordinator_) {
    if (seconds_since(last_heard_[0], now) > cfg_.heartbeat_s * 1.5) {
      fatal(describe_silent_rank(0, cfg_.heartbeat_s * 1.5) + " (rank 0 coordinates negotiation)");
    }
    return;
  }
  std::vector<int> silent;
  for (int w = 1; w < world_size_; ++w) {
    if (seconds_since(last_heard_[static_cast<size_t>(w)], now) > cfg_.heartbeat_s) silent.push_back(w);
  }
  if (!silent.empty()) {
    std::string who;
    for (int w : silent) who += (who.empty() ? "" : "; ") + describe_silent_rank(w, cfg_.heartbeat_s);
    coordinator_abort(who, silent);
  }
}

// A collective still running after kSpin is most likely waiting for a peer rather than moving data:
// the polls then space out by kNap, which costs a waiting rank a few percent of a core instead of all
// of it, yet still lets a long transfer progress (each poll moves what arrived meanwhile). The control
// plane is served every kKeepaliveEvery from then on.
void Background::between_polls(Clock::time_point started) {
  constexpr auto kSpin = std::chrono::milliseconds(100);
  constexpr auto kNap = std::chrono::microseconds(100);
  constexpr auto kKeepaliveEvery = std::chrono::milliseconds(5);
  const auto now = Clock::now();
  if (now - started < kSpin) {
    std::this_thread::yield();
    return;
  }
  // Only a collective that outlived the spin window interleaves with control-plane traffic: the
  // usual one finishes first, and a heartbeat period is seconds anyway.
  if (cfg_.matching == Matching::name && now - last_keepalive_ >= kKeepaliveEvery) {
    last_keepalive_ = now;
    keepalive();
  }
  std::this_thread::sleep_for(kNap);
}

void Background::keepalive() {
  ControlPlane cp;
  channel_.reap();
  const auto now = Clock::now();
  const bool heartbeat_due = now - last_sent_ >= heartbeat_every_;
  if (coordinator_) {
    while (auto msg = channel_.poll_readiness()) {
      const auto at = Clock::now();
      last_heard_[static_cast<size_t>(msg->from)] = at;
      try {
        Readiness r = decode_readiness(msg->bytes.data(), msg->bytes.size());
        if (r.finalizing || !r.requests.empty()) ready_since_ = ready_since_.value_or(at);
        coordinator_->add(msg->from, r, at);
      } catch (const std::exception& e) {
        coordinator_abort("bad control message from rank " + std::to_string(msg->from) + ": " + e.what(), {});
      }
    }
    // Planning waits for the collective; an empty plan only says the coordinator is alive.
    if (heartbeat_due) {
      channel_.send_plan(Plan{});
      last_sent_ = now;
    }
  } else {
    if (heartbeat_due) {
      // What the coordinator was last told, again: a heartbeat changes nothing in its table.
      Readiness r;
      r.finalizing = sent_finalizing_;
      r.blocked = told_blocked_;
      channel_.send_readiness(r);
      last_sent_ = now;
    }
    while (auto plan = receive_plan()) deferred_plans_.push_back(std::move(*plan));
  }
  check_silence();
}

// The application waits for a plan: poll without sleeping, yielding the core to the other ranks'
// threads, until a few milliseconds pass without progress (a slow or stalled peer). Otherwise poll fast
// while requests are pending, slower when idle and slower still after 100 ms of idleness (spinning
// ranks share the cores with these wake-ups). The first submission of a burst, and an application
// thread starting to wait, wake the thread at once.
void Background::idle_wait(const Inbox::Taken& taken, bool progressed) {
  constexpr auto kSpinWindow = std::chrono::milliseconds(5);
  idle_polls_ = progressed ? 0 : idle_polls_ + 1;
  const bool busy = !pending_.empty() || (coordinator_ && (ready_since_ || coordinator_->has_unready()));
  const auto now = Clock::now();
  if (busy || progressed) busy_at_ = now;
  if (progressed) progress_at_ = now;
  if (taken.app_blocked && busy && now - progress_at_ < kSpinWindow) {
    if (!progressed) std::this_thread::yield();
    return;
  }
  auto nap = busy ? std::chrono::microseconds(std::min(20 << std::min(idle_polls_, 4), 200))
                  : std::chrono::microseconds(seconds_since(busy_at_, now) < 0.1 ? 2000 : 10000);
  if (!unsent_.empty()) {
    const auto due = std::chrono::duration_cast<std::chrono::microseconds>(unsent_since_ + cycle_ - now);
    nap = std::max(std::chrono::microseconds(0), std::min(nap, due));
  }
  inbox_.sleep(nap, taken, !unsent_.empty());
}

[[noreturn]] void Background::coordinator_abort(const std::string& reason,
                                                const std::vector<int>& unreachable) {
  // Print first: the launcher may kill this process as soon as a worker exits.
  liveness_quiet();
  std::fprintf(stderr, "lockstep-rt: rank 0: aborting every rank: %s\n", reason.c_str());
  std::fflush(stderr);
  Plan p;
  p.kind = Plan::kAbort;
  p.message = reason;
  // Wait (briefly) until every worker has printed its own line, so each rank's log says why.
  channel_.send_abort(p, unreachable, std::chrono::seconds(2));
  fatal(reason, true);
}

[[noreturn]] void Background::worker_abort(const std::string& reason) {
  std::fprintf(stderr, "lockstep-rt: rank %d: aborting: %s\n", world_rank_, reason.c_str());
  std::fflush(stderr);
  liveness_quiet();
  channel_.ack_abort(std::chrono::milliseconds(500));
  // fatal() notes the reason in the trace (its exit hook cannot see the status) and exits, leaving
  // anyway should an exit hook block.
  fatal(reason, true);
}

}  // namespace lockstep::rt::internal
