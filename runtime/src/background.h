// The background thread: it alone runs the runtime's MPI (as in Horovod), so the application threads
// only queue requests and wait on handles, and MPI needs no more than MPI_THREAD_SERIALIZED. It takes
// submissions from the Inbox, negotiates them (negotiation.cc: coordinator_step on world rank 0,
// worker_step elsewhere, idle_wait between polls) or runs them in order, and executes what is planned.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend.h"
#include "config.h"
#include "control_channel.h"
#include "controller.h"
#include "fusion.h"
#include "inbox.h"
#include "watchdog.h"

namespace lockstep::rt::internal {

class Background final : public DataPlaneWait {
 public:
  Background(const Config& cfg, int world_rank, int world_size, Backend& backend, MPI_Comm control,
             Inbox& inbox, Watchdog& watchdog);
  // The thread's body: returns once every rank finalized (negotiated) or finalize was requested (order).
  void run();
  // After run() returned: fails the requests that never ran, frees the fusion buffer.
  void finish();
  uint64_t collectives_run() const { return collectives_run_.load(); }
  uint64_t tensors_run() const { return tensors_run_.load(); }
  // While a data-plane collective runs: keeps the control plane answered and paces the polls.
  void between_polls(Clock::time_point started) override;

 private:
  // ---- negotiation (negotiation.cc)
  void loop_negotiated();
  // One pass of the coordinator (world rank 0) or of a worker over the control channel; true once the
  // shutdown plan ran.
  bool coordinator_step(std::vector<RequestInfo> mine, const Inbox::Taken& taken, bool blocked,
                        bool& progressed);
  bool worker_step(std::vector<RequestInfo> mine, const Inbox::Taken& taken, bool blocked, bool& progressed);
  // The sleep policy between two passes.
  void idle_wait(const Inbox::Taken& taken, bool progressed);
  // The control plane while a collective is in flight: heartbeats both ways, the coordinator's reading
  // of the workers' messages, a worker's reading of plans (kept for later, or an abort), silence checks.
  void keepalive();
  // Worker: the next plan, from those received during a collective or from the channel.
  std::optional<Plan> next_plan();
  std::optional<Plan> receive_plan();
  void check_silence();
  [[noreturn]] void coordinator_abort(const std::string& reason, const std::vector<int>& unreachable);
  [[noreturn]] void worker_abort(const std::string& reason);

  // ---- matching by order
  void loop_ordered();

  // ---- execution (background.cc)
  void execute(const Plan& plan);
  void run_response(const Response& r, std::vector<std::shared_ptr<RequestState>>& states);
  Status run_collective(SetComm& set, Op op, std::vector<std::shared_ptr<RequestState>>& states);
  void create_set(RequestState& st);
  void complete(RequestState& st, const Status& status);
  void complete_all(std::vector<std::shared_ptr<RequestState>>& states, const Status& status);
  void complete_all(RequestState* const* states, size_t n, const Status& status);

  const Config& cfg_;
  const int world_rank_;
  const int world_size_;
  Backend& backend_;
  Inbox& inbox_;
  Watchdog& watchdog_;
  ControlChannel channel_;
  FusionBuffer fusion_;
  std::atomic<uint64_t> collectives_run_{0}, tensors_run_{0};  // read by stats()

  std::map<std::pair<uint64_t, std::string>, std::shared_ptr<RequestState>> pending_;  // taken, not yet run
  std::unique_ptr<Coordinator> coordinator_;                                           // world rank 0 only
  uint64_t next_set_id_ = 1;

  // Negotiation's clocks and what each side last told the other.
  std::chrono::duration<double> heartbeat_every_;
  std::chrono::duration<double, std::milli> cycle_;
  Clock::time_point last_sent_;
  std::vector<Clock::time_point> last_heard_;     // by world rank
  std::optional<Clock::time_point> ready_since_;  // coordinator: a request became ready, not yet planned
  bool coord_finalize_seen_ = false;              // coordinator: its own finalize is in the table
  bool sent_finalizing_ = false;                  // worker
  bool told_blocked_ = false;        // worker: the coordinator was last told this rank is blocked
  std::vector<RequestInfo> unsent_;  // worker: submitted, not yet reported
  Clock::time_point unsent_since_;
  std::deque<Plan> deferred_plans_;  // worker: received while a collective ran, not executed yet
  Clock::time_point last_keepalive_;
  // idle_wait's state.
  int idle_polls_ = 0;
  Clock::time_point busy_at_, progress_at_;
};

}  // namespace lockstep::rt::internal
