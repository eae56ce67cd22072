// The runtime's process-wide state and its background thread. All of the runtime's MPI runs on that
// one thread (as in Horovod), so the application thread only queues requests and waits on handles,
// and MPI needs no more than MPI_THREAD_SERIALIZED.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "backend.h"
#include "config.h"
#include "controller.h"
#include "liveness.h"
#include "request.h"

namespace lockstep::rt {

size_t dtype_size(DType d) {
  return d == DType::f16 || d == DType::bf16 ? 2 : (d == DType::f32 || d == DType::i32 ? 4 : 8);
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::average: return "average";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
  }
  return "?";
}

namespace internal {
namespace {

constexpr int kTagReady = 1;  // worker -> coordinator: Readiness
constexpr int kTagPlan = 2;   // coordinator -> workers: Plan
constexpr int kTagAck = 3;    // worker -> coordinator: abort received and printed

double seconds_since(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

// Marks the calling thread's MPI calls as control plane for the tracer while in scope.
struct ControlPlane {
  ControlPlane() { LOCKSTEP_CONTROL_PLANE(1); }
  ~ControlPlane() { LOCKSTEP_CONTROL_PLANE(0); }
};

class Runtime {
 public:
  Config cfg;
  int world_rank = 0;
  int world_size = 1;
  bool owns_mpi = false;
  std::unique_ptr<Backend> backend;
  MPI_Comm control = MPI_COMM_NULL;  // negotiation: MPI_Comm_dup of the global set's communicator

  std::mutex mu;  // guards everything below that the application thread touches
  std::condition_variable wake;
  std::vector<std::shared_ptr<RequestState>> queue;  // submitted, not yet taken by the background thread
  std::set<std::pair<uint64_t, std::string>> in_flight;  // names that may not be submitted again yet
  std::map<uint64_t, std::unique_ptr<SetComm>> sets;
  bool finalize_requested = false;
  bool stopped = false;
  // Application threads blocked in a wait on an unfinished request, and a counter bumped each time
  // one starts waiting: the background thread then reports at once instead of batching further.
  int app_waiting = 0;
  uint64_t flush_epoch = 0;
  // The background thread sleeps with nothing submitted: the next submission must wake it (later
  // ones in the same burst need not, which saves a futex wake per request).
  bool wants_submissions = true;
  uint64_t process_sets_requested = 0;  // application thread only

  std::thread background;
  std::thread watchdog;
  std::atomic<bool> watchdog_stop{false};
  // The data-plane collective running now (for the watchdog): start time in ns, 0 when none.
  std::atomic<int64_t> inflight_since_ns{0};
  std::atomic<uint64_t> collectives_run{0}, tensors_run{0};
  std::string inflight_what;  // guarded by inflight_mu
  std::mutex inflight_mu;

  void start();
  void loop_negotiated();
  void loop_ordered();
  void execute(const Plan& plan);
  void run_response(const Response& r, std::vector<std::shared_ptr<RequestState>>& states);
  Status run_collective(SetComm& set, Op op, std::vector<std::shared_ptr<RequestState>>& states);
  void create_set(RequestState& st);
  void complete(RequestState& st, Status status);
  void complete_all(RequestState* const* states, size_t n, const Status& status);
  void complete_all(std::vector<std::shared_ptr<RequestState>>& states, const Status& status);
  void watch();
  void agree_to_finalize();
  [[noreturn]] void coordinator_abort(const std::string& reason, const std::vector<int>& unreachable);

  // background-thread state
  std::map<std::pair<uint64_t, std::string>, std::shared_ptr<RequestState>> pending;
  std::unique_ptr<Coordinator> coordinator;  // world rank 0 only
  uint64_t next_set_id = 1;
  void* fusion = nullptr;
  size_t fusion_size = 0;
};

Runtime* g_rt = nullptr;  // never destroyed: the abort path exits from the background thread

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

[[noreturn]] void fatal(const std::string& why, bool printed) {
  static std::atomic<bool> once{false};
  if (once.exchange(true)) {
    for (;;) pause();  // another thread is already exiting
  }
  liveness_quiet();
  if (!printed) std::fprintf(stderr, "lockstep-rt: rank %d: aborting: %s\n", g_rt ? g_rt->world_rank : -1, why.c_str());
  std::fflush(stderr);
  const std::string note = LOCKSTEP_RT_ABORT_PREFIX + why;
  LOCKSTEP_ANNOTATE(note.c_str());
  // exit() runs the tracer's exit hook; should something in it block, leave anyway.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::_Exit(kAbortExitCode);
  }).detach();
  std::exit(kAbortExitCode);
}

namespace {

void Runtime::complete(RequestState& st, Status status) {
  RequestState* one = &st;
  complete_all(&one, 1, status);
}

// Completes a response's requests together: every one is marked done before any waiter is woken, so
// an application waiting on them in turn wakes once instead of once per request.
void Runtime::complete_all(RequestState* const* states, size_t n, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < n; ++i) in_flight.erase({states[i]->sub.set, states[i]->sub.name});
  }
  for (size_t i = 0; i < n; ++i) {
    RequestState& st = *states[i];
    if (lockstep_rt_collective_end && st.sub.trace_token) lockstep_rt_collective_end(st.sub.trace_token, status.ok());
    LOCKSTEP_RT_EVENT(status.ok() ? LST_RT_COMPLETED : LST_RT_ERROR, st.sub.name.c_str(), st.sub.count, st.sub.set);
    std::lock_guard<std::mutex> lock(st.mu);
    st.status = status;
    st.done = true;
  }
  for (size_t i = 0; i < n; ++i) states[i]->cv.notify_all();
}

void Runtime::complete_all(std::vector<std::shared_ptr<RequestState>>& states, const Status& status) {
  std::vector<RequestState*> raw;
  raw.reserve(states.size());
  for (auto& st : states) raw.push_back(st.get());
  complete_all(raw.data(), raw.size(), status);
}

void Runtime::start() {
  background = std::thread([this] {
    if (cfg.matching == Matching::order) {
      loop_ordered();
    } else {
      loop_negotiated();
    }
  });
  watchdog = std::thread([this] { watch(); });
}

// The watchdog only looks at the data plane: negotiation has its own deadlines.
void Runtime::watch() {
  bool warned = false;
  int64_t warned_for = 0;
  while (!watchdog_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const int64_t since = inflight_since_ns.load();
    if (since == 0) continue;
    const double age =
        (std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count() - since) / 1e9;
    std::string what;
    {
      std::lock_guard<std::mutex> lock(inflight_mu);
      what = inflight_what;
    }
    const char* order_note = cfg.matching == Matching::order
                                 ? " (matching by order: without negotiation the runtime cannot tell which rank is "
                                   "missing; 'lockstep check' on a trace can)"
                                 : "";
    if (cfg.stall_abort_s > 0 && age >= cfg.stall_abort_s) {
      fatal(what + " has not completed after " + std::to_string(static_cast<int>(age)) +
            " s (LOCKSTEP_RT_STALL_ABORT): a peer rank died or runs a different collective" + order_note);
    }
    if (age >= cfg.stall_warn_s && !(warned && warned_for == since)) {
      warned = true;
      warned_for = since;
      std::fprintf(stderr, "lockstep-rt: rank %d: stall warning: %s has not completed after %.0f s%s\n", world_rank,
                   what.c_str(), age, order_note);
      std::fflush(stderr);
    }
  }
}

// Matching by order has no shutdown plan telling a rank that every other one is finalizing, and
// MPI_Finalize would wait for them with no deadline. A rank that left its loop early (the bug this mode
// reproduces) would then sit in it while the ranks still waiting in a collective abort, and OpenMPI's
// launcher can crash or wedge tearing down a job with a rank inside MPI_Finalize. So the ranks first
// agree, over the control communicator and within the abort time, that all of them are finalizing.
void Runtime::agree_to_finalize() {
  ControlPlane cp;
  MPI_Request rq;
  MPI_Ibarrier(control, &rq);
  const auto start = Clock::now();
  bool warned = false;
  for (;;) {
    int done = 0;
    MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (done) return;
    const double age = seconds_since(start, Clock::now());
    const char* why = "some rank has not called finalize (matching by order: it may still be waiting in a "
                      "collective this rank skipped; 'lockstep check' on a trace tells which)";
    if (cfg.stall_abort_s > 0 && age >= cfg.stall_abort_s) {
      fatal("finalize has waited " + std::to_string(static_cast<int>(age)) +
            " s for the other ranks (LOCKSTEP_RT_STALL_ABORT): " + why);
    }
    if (!warned && cfg.stall_warn_s > 0 && age >= cfg.stall_warn_s) {
      warned = true;
      std::fprintf(stderr, "lockstep-rt: rank %d: stall warning: finalize has waited %.0f s for the other ranks: %s\n",
                   world_rank, age, why);
      std::fflush(stderr);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status Runtime::run_collective(SetComm& set, Op op, std::vector<std::shared_ptr<RequestState>>& states) {
  const Submission& first = states.front()->sub;
  {
    std::lock_guard<std::mutex> lock(inflight_mu);
    inflight_what = std::string(op_name(op)) + " '" + first.name + "'" +
                    (states.size() > 1 ? " (fused with " + std::to_string(states.size() - 1) + " more)" : "") +
                    " on process set " + std::to_string(set.id);
  }
  inflight_since_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
  for (auto& st : states) LOCKSTEP_RT_EVENT(LST_RT_EXECUTED, st->sub.name.c_str(), st->sub.count, st->sub.set);
  Status s;
  switch (op) {
    case Op::allreduce:
      if (states.size() == 1) {
        s = backend->allreduce(set, first.in, first.out, first.count, first.dtype, first.reduce);
      } else {
        // Fusion: one collective over a buffer holding every small tensor back to back.
        const size_t esz = dtype_size(first.dtype);
        size_t total = 0;
        for (auto& st : states) total += st->sub.count;
        if (total * esz > fusion_size) {
          if (fusion) backend->release(fusion);
          fusion_size = std::max(total * esz, cfg.fusion_bytes);
          fusion = backend->alloc(fusion_size);
        }
        size_t off = 0;
        for (auto& st : states) {
          if (s.ok()) s = backend->copy(static_cast<char*>(fusion) + off, st->sub.in, st->sub.count * esz);
          off += st->sub.count * esz;
        }
        if (s.ok()) s = backend->allreduce(set, fusion, fusion, total, first.dtype, first.reduce);
        off = 0;
        for (auto& st : states) {
          if (s.ok()) s = backend->copy(st->sub.out, static_cast<char*>(fusion) + off, st->sub.count * esz);
          off += st->sub.count * esz;
        }
      }
      break;
    case Op::allgather: s = backend->allgather(set, first.in, first.out, first.count, first.dtype); break;
    case Op::broadcast: s = backend->broadcast(set, first.out, first.count, first.dtype, first.root); break;
    case Op::barrier: {
      const int rc = MPI_Barrier(set.data);
      if (rc != MPI_SUCCESS) s.message = "MPI_Barrier failed: " + mpi_error_text(rc);
      break;
    }
    case Op::create_set: break;
  }
  inflight_since_ns.store(0);
  collectives_run.fetch_add(1);
  tensors_run.fetch_add(states.size());
  return s;
}

void Runtime::create_set(RequestState& st) {
  const std::vector<int>& members = st.members;
  auto it = std::find(members.begin(), members.end(), world_rank);
  const bool member = it != members.end();
  auto sc = std::make_unique<SetComm>();
  sc->id = next_set_id++;
  sc->members = members;
  sc->rank = member ? static_cast<int>(it - members.begin()) : -1;
  Status s;
  {
    ControlPlane cp;
    const int rc = MPI_Comm_split(sets.at(0)->data, member ? 0 : MPI_UNDEFINED, sc->rank, &sc->data);
    if (rc != MPI_SUCCESS) s.message = "MPI_Comm_split failed: " + mpi_error_text(rc);
    if (s.ok() && member) {
      MPI_Comm_set_errhandler(sc->data, MPI_ERRORS_RETURN);
      s = backend->add_set(*sc);
    }
  }
  if (s.ok()) {
    if (member && lockstep_rt_process_set) {
      const std::string name = "process_set." + std::to_string(sc->id);
      std::vector<int32_t> m(members.begin(), members.end());
      lockstep_rt_process_set(sc->id, name.c_str(), m.data(), static_cast<int32_t>(m.size()), sc->rank);
    }
    if (coordinator) coordinator->add_set(sc->id, members);
    st.new_set = sc->id;
    std::lock_guard<std::mutex> lock(mu);
    sets[sc->id] = std::move(sc);
  }
  complete(st, std::move(s));
}

void Runtime::run_response(const Response& r, std::vector<std::shared_ptr<RequestState>>& states) {
  if (r.kind == Response::kError) {
    complete_all(states, {r.error});
    return;
  }
  if (r.op == Op::create_set) {
    create_set(*states.front());
    return;
  }
  SetComm* set;
  {
    std::lock_guard<std::mutex> lock(mu);
    set = sets.at(r.set).get();
  }
  complete_all(states, run_collective(*set, r.op, states));
}

void Runtime::execute(const Plan& plan) {
  for (const Response& r : plan.responses) {
    std::vector<std::shared_ptr<RequestState>> states;
    for (const auto& name : r.names) {
      auto it = pending.find({r.set, name});
      if (it == pending.end()) {
        // Responses for sets this rank is not in carry names it never submitted.
        continue;
      }
      LOCKSTEP_RT_EVENT(LST_RT_NEGOTIATED, name.c_str(), it->second->sub.count, r.set);
      states.push_back(std::move(it->second));
      pending.erase(it);
    }
    if (states.empty()) continue;
    if (states.size() != r.names.size()) {
      fatal("negotiation out of step: a plan names tensors this rank never submitted");
    }
    run_response(r, states);
  }
}

[[noreturn]] void Runtime::coordinator_abort(const std::string& reason, const std::vector<int>& unreachable) {
  // Print first: the launcher may kill this process as soon as a worker exits.
  liveness_quiet();
  std::fprintf(stderr, "lockstep-rt: rank 0: aborting every rank: %s\n", reason.c_str());
  std::fflush(stderr);
  Plan p;
  p.kind = Plan::kAbort;
  p.message = reason;
  const std::vector<uint8_t> bytes = encode(p);
  ControlPlane cp;
  std::vector<MPI_Request> reqs;
  std::vector<int> told;
  for (int w = 1; w < world_size; ++w) {
    if (std::find(unreachable.begin(), unreachable.end(), w) != unreachable.end()) continue;
    MPI_Request rq;
    MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, w, kTagPlan, control, &rq);
    reqs.push_back(rq);
    told.push_back(w);
  }
  // Wait (briefly) until every worker has printed its own line, so each rank's log says why.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  std::set<int> acked;
  while (acked.size() < told.size() && Clock::now() < deadline) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagAck, control, &flag, &st);
    if (flag) {
      char b;
      MPI_Recv(&b, 1, MPI_BYTE, st.MPI_SOURCE, kTagAck, control, MPI_STATUS_IGNORE);
      acked.insert(st.MPI_SOURCE);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  fatal(reason, true);
}

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
void Runtime::loop_negotiated() {
  const bool coord = world_rank == 0;
  const auto heartbeat_every = std::chrono::duration<double>(std::max(0.05, cfg.heartbeat_s / 4));
  const auto cycle = std::chrono::duration<double, std::milli>(cfg.cycle_ms);
  constexpr auto kSpinWindow = std::chrono::milliseconds(5);
  auto now = Clock::now();
  auto last_sent = now;
  std::vector<Clock::time_point> last_heard(static_cast<size_t>(world_size), now);
  std::optional<Clock::time_point> ready_since;
  bool sent_finalizing = false;
  bool coord_finalize_seen = false;
  bool told_blocked = false;  // worker: the coordinator was last told this rank is blocked
  std::vector<RequestInfo> unsent;  // worker: submitted, not yet reported
  Clock::time_point unsent_since = now;
  std::vector<MPI_Request> sends;
  std::vector<std::vector<uint8_t>> send_bufs;
  int idle_polls = 0;
  auto busy_at = now;
  auto progress_at = now;
  uint64_t seen_flush = 0;

  auto reap_sends = [&] {
    if (sends.empty()) return;
    int done = 0;
    MPI_Testall(static_cast<int>(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE);
    if (done) {
      sends.clear();
      send_bufs.clear();
    }
  };

  for (;;) {
    std::vector<std::shared_ptr<RequestState>> fresh;
    bool finalizing, app_blocked;
    {
      std::unique_lock<std::mutex> lock(mu);
      fresh.swap(queue);
      finalizing = finalize_requested;
      app_blocked = app_waiting > 0;
      seen_flush = flush_epoch;
    }
    now = Clock::now();
    bool progressed = !fresh.empty();
    std::vector<RequestInfo> mine;
    for (auto& st : fresh) {
      mine.push_back(info_of(*st));
      pending[{st->sub.set, st->sub.name}] = std::move(st);
    }
    // Blocked only while something of this rank's is still waiting for a plan.
    const bool blocked = app_blocked && !pending.empty();
    ControlPlane cp;
    reap_sends();

    if (coord) {
      coordinator->set_blocked(0, blocked);
      if (!mine.empty() || (finalizing && !coord_finalize_seen)) {
        coord_finalize_seen = finalizing;
        Readiness r;
        r.finalizing = finalizing;
        r.blocked = blocked;
        r.requests = std::move(mine);
        coordinator->add(0, r, now);
        if (finalizing) ready_since = ready_since.value_or(now);
      }
      for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, kTagReady, control, &flag, &st);
        if (!flag) break;
        int bytes = 0;
        MPI_Get_count(&st, MPI_BYTE, &bytes);
        std::vector<uint8_t> buf(static_cast<size_t>(std::max(bytes, 0)));
        MPI_Recv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, kTagReady, control, MPI_STATUS_IGNORE);
        now = Clock::now();
        last_heard[static_cast<size_t>(st.MPI_SOURCE)] = now;
        try {
          Readiness r = decode_readiness(buf.data(), buf.size());
          if (r.finalizing || !r.requests.empty()) ready_since = ready_since.value_or(now);
          coordinator->add(st.MPI_SOURCE, r, now);
        } catch (const std::exception& e) {
          coordinator_abort(std::string("bad control message from rank ") + std::to_string(st.MPI_SOURCE) + ": " +
                                e.what(),
                            {});
        }
        progressed = true;
      }
      if (coordinator->has_ready() && !ready_since) ready_since = now;
      const bool batch_due = ready_since && (now - *ready_since >= cycle ||
                                             coordinator->ready_bytes() >= cfg.fusion_bytes ||
                                             coordinator->ready_set_blocked() || coordinator->all_finalizing());
      const bool heartbeat_due = now - last_sent >= heartbeat_every;
      if (batch_due || heartbeat_due) {
        Plan plan = coordinator->plan(now);
        ready_since.reset();
        if (plan.kind == Plan::kAbort) coordinator_abort(plan.message, {});
        const std::vector<uint8_t> bytes = encode(plan);
        for (int w = 1; w < world_size; ++w) {
          send_bufs.push_back(bytes);
          MPI_Request rq;
          MPI_Isend(send_bufs.back().data(), static_cast<int>(bytes.size()), MPI_BYTE, w, kTagPlan, control, &rq);
          sends.push_back(rq);
        }
        last_sent = now;
        execute(plan);
        if (!plan.responses.empty()) {
          // Everyone took part in those collectives, so everyone was alive a moment ago.
          std::fill(last_heard.begin(), last_heard.end(), Clock::now());
          progressed = true;
        }
        if (plan.kind == Plan::kShutdown) {
          MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
          return;
        }
      }
      std::vector<int> silent;
      now = Clock::now();
      for (int w = 1; w < world_size; ++w) {
        if (seconds_since(last_heard[static_cast<size_t>(w)], now) > cfg.heartbeat_s) silent.push_back(w);
      }
      if (!silent.empty()) {
        std::string who;
        for (int w : silent) who += (who.empty() ? "" : "; ") + describe_silent_rank(w, cfg.heartbeat_s);
        coordinator_abort(who, silent);
      }
    } else {
      if (unsent.empty()) unsent_since = now;
      for (auto& q : mine) unsent.push_back(std::move(q));
      const bool report = !unsent.empty() && (blocked || finalizing || now - unsent_since >= cycle);
      if (report || finalizing != sent_finalizing || (blocked && !told_blocked) || now - last_sent >= heartbeat_every) {
        Readiness r;
        r.finalizing = finalizing;
        r.blocked = blocked;
        if (report) r.requests.swap(unsent);
        send_bufs.push_back(encode(r));
        MPI_Request rq;
        MPI_Isend(send_bufs.back().data(), static_cast<int>(send_bufs.back().size()), MPI_BYTE, 0, kTagReady,
                  control, &rq);
        sends.push_back(rq);
        sent_finalizing = finalizing;
        told_blocked = blocked;
        last_sent = now;
      }
      for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(0, kTagPlan, control, &flag, &st);
        if (!flag) break;
        int bytes = 0;
        MPI_Get_count(&st, MPI_BYTE, &bytes);
        std::vector<uint8_t> buf(static_cast<size_t>(std::max(bytes, 0)));
        MPI_Recv(buf.data(), bytes, MPI_BYTE, 0, kTagPlan, control, MPI_STATUS_IGNORE);
        Plan plan;
        try {
          plan = decode_plan(buf.data(), buf.size());
        } catch (const std::exception& e) {
          fatal(std::string("bad control message from rank 0: ") + e.what());
        }
        if (plan.kind == Plan::kAbort) {
          std::fprintf(stderr, "lockstep-rt: rank %d: aborting: %s\n", world_rank, plan.message.c_str());
          std::fflush(stderr);
          // The trace must say why this rank stopped, as fatal() does: its exit hook cannot see the status.
          const std::string note = LOCKSTEP_RT_ABORT_PREFIX + plan.message;
          LOCKSTEP_ANNOTATE(note.c_str());
          char b = 1;
          MPI_Request rq;
          MPI_Isend(&b, 1, MPI_BYTE, 0, kTagAck, control, &rq);
          const auto deadline = Clock::now() + std::chrono::milliseconds(500);
          int done = 0;
          while (!done && Clock::now() < deadline) {
            MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
            if (!done) std::this_thread::sleep_for(std::chrono::microseconds(200));
          }
          liveness_quiet();
          std::exit(kAbortExitCode);
        }
        // The coordinator forgets who was blocked whenever a plan runs something.
        if (!plan.responses.empty()) told_blocked = false;
        execute(plan);
        last_heard[0] = Clock::now();
        progressed = true;
        if (plan.kind == Plan::kShutdown) {
          MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
          return;
        }
      }
      // The coordinator checks the workers at heartbeat_s; waiting longer here lets it speak first.
      if (seconds_since(last_heard[0], Clock::now()) > cfg.heartbeat_s * 1.5) {
        fatal(describe_silent_rank(0, cfg.heartbeat_s * 1.5) + " (rank 0 coordinates negotiation)");
      }
    }

    idle_polls = progressed ? 0 : idle_polls + 1;
    const bool busy = !pending.empty() || (coord && (ready_since || coordinator->has_unready()));
    now = Clock::now();
    if (busy || progressed) busy_at = now;
    if (progressed) progress_at = now;
    // The application waits for a plan: poll without sleeping, yielding the core to the other ranks'
    // threads, until a few milliseconds pass without progress (a slow or stalled peer).
    if (app_blocked && busy && now - progress_at < kSpinWindow) {
      if (!progressed) std::this_thread::yield();
      continue;
    }
    // Otherwise poll fast while requests are pending, slower when idle and slower still after 100 ms of
    // idleness (spinning ranks share the cores with these wake-ups). The first submission of a burst,
    // and an application thread starting to wait, wake the thread at once.
    auto nap = busy ? std::chrono::microseconds(std::min(20 << std::min(idle_polls, 4), 200))
                    : std::chrono::microseconds(seconds_since(busy_at, now) < 0.1 ? 2000 : 10000);
    if (!unsent.empty()) {
      const auto due = std::chrono::duration_cast<std::chrono::microseconds>(unsent_since + cycle - now);
      nap = std::max(std::chrono::microseconds(0), std::min(nap, due));
    }
    std::unique_lock<std::mutex> lock(mu);
    if (unsent.empty() && queue.empty()) wants_submissions = true;
    // A non-empty queue wakes the thread only when it is not batching already (unsent is empty).
    wake.wait_for(lock, nap, [&] {
      return flush_epoch != seen_flush || finalize_requested != finalizing || (unsent.empty() && !queue.empty());
    });
    wants_submissions = false;
  }
}

// Matching by order: no negotiation and no fusion; each request runs as soon as it is this rank's
// next one, exactly like a raw MPI or NCCL program. Only the watchdog stands between a mismatch and a
// hang here.
void Runtime::loop_ordered() {
  for (;;) {
    std::vector<std::shared_ptr<RequestState>> fresh;
    {
      std::unique_lock<std::mutex> lock(mu);
      wake.wait(lock, [&] { return !queue.empty() || finalize_requested; });
      fresh.swap(queue);
      if (fresh.empty() && finalize_requested) return;
    }
    for (auto& st : fresh) {
      std::vector<std::shared_ptr<RequestState>> one{st};
      Response r;
      r.set = st->sub.set;
      r.op = st->sub.op;
      r.names = {st->sub.name};
      run_response(r, one);
    }
  }
}

Runtime& rt() {
  if (!g_rt || g_rt->stopped) throw std::runtime_error("lockstep::rt is not initialized");
  return *g_rt;
}

std::shared_ptr<RequestState> failed(std::shared_ptr<RequestState> st, std::string why) {
  if (lockstep_rt_collective_end && st->sub.trace_token) lockstep_rt_collective_end(st->sub.trace_token, 0);
  LOCKSTEP_RT_EVENT(LST_RT_ERROR, st->sub.name.c_str(), st->sub.count, st->sub.set);
  st->status.message = std::move(why);
  st->done = true;
  return st;
}

std::shared_ptr<RequestState> enqueue(std::shared_ptr<RequestState> st) {
  Runtime* r = g_rt;
  const Submission& s = st->sub;
  const std::string what = std::string(op_name(s.op)) + " '" + s.name + "'";
  if (!r) return failed(std::move(st), what + ": lockstep::rt is not initialized");
  if (s.name.empty()) return failed(std::move(st), std::string(op_name(s.op)) + ": the tensor name is empty");
  if (s.count > 0 && (s.op == Op::allreduce || s.op == Op::allgather || s.op == Op::broadcast) &&
      (!s.out || (s.op != Op::broadcast && !s.in))) {
    return failed(std::move(st), what + ": null buffer");
  }
  std::unique_lock<std::mutex> lock(r->mu);
  if (r->stopped || r->finalize_requested) return failed(std::move(st), what + ": the runtime is finalizing");
  auto set = r->sets.find(s.set);
  if (set == r->sets.end()) {
    return failed(std::move(st), what + ": no process set " + std::to_string(s.set));
  }
  if (set->second->rank < 0) {
    return failed(std::move(st), what + ": rank " + std::to_string(r->world_rank) + " is not in process set " +
                                     std::to_string(s.set));
  }
  if (s.op == Op::broadcast && (s.root < 0 || s.root >= set->second->size())) {
    return failed(std::move(st), what + ": root " + std::to_string(s.root) + " is not a rank of the process set");
  }
  if (!r->in_flight.insert({s.set, s.name}).second) {
    return failed(std::move(st), what + ": a request of that name is still pending on this rank");
  }
  r->queue.push_back(st);
  const bool wake = r->wants_submissions;
  r->wants_submissions = false;
  lock.unlock();
  if (wake) r->wake.notify_one();
  return st;
}

}  // namespace
}  // namespace internal

using internal::g_rt;

namespace internal {
namespace {
// Blocks until `st` is done; while it blocks, the background thread knows the application is waiting.
void wait_done(RequestState& st) {
  std::unique_lock<std::mutex> lock(st.mu);
  if (st.done) return;
  lock.unlock();
  Runtime* r = g_rt;
  if (r) {
    {
      std::lock_guard<std::mutex> g(r->mu);
      ++r->app_waiting;
      ++r->flush_epoch;
    }
    r->wake.notify_one();
  }
  lock.lock();
  st.cv.wait(lock, [&] { return st.done; });
  lock.unlock();
  if (r) {
    std::lock_guard<std::mutex> g(r->mu);
    --r->app_waiting;
  }
}
}  // namespace
}  // namespace internal

Status Handle::wait() {
  if (!state_) return {"wait on an empty handle"};
  internal::wait_done(*state_);
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->status;
}

bool Handle::test() const {
  if (!state_) return true;
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->done;
}

const std::string& Handle::name() const {
  static const std::string empty;
  return state_ ? state_->sub.name : empty;
}

namespace {
uint8_t lst_dtype(DType d) {
  switch (d) {
    case DType::f16: return LST_DT_FLOAT16;
    case DType::bf16: return LST_DT_BFLOAT16;
    case DType::f32: return LST_DT_FLOAT32;
    case DType::f64: return LST_DT_FLOAT64;
    case DType::i32: return LST_DT_INT32;
    case DType::i64: return LST_DT_INT64;
  }
  return LST_DT_UNKNOWN;
}
uint8_t lst_redop(ReduceOp r) {
  switch (r) {
    case ReduceOp::sum: return LST_RED_SUM;
    case ReduceOp::average: return LST_RED_AVG;
    case ReduceOp::min: return LST_RED_MIN;
    case ReduceOp::max: return LST_RED_MAX;
  }
  return LST_RED_UNKNOWN;
}
}  // namespace

// The tracer record opens at submission (the program's order, in the application's thread) and closes
// on completion; a request that never ran stays "entered", which is what a hang post-mortem needs.
Handle submit(detail::Submission&& s, uint64_t caller) {
  static const uint8_t kLstOp[] = {LST_OP_ALLREDUCE, LST_OP_ALLGATHER, LST_OP_BCAST, LST_OP_BARRIER, LST_OP_UNKNOWN};
  const uint8_t op = kLstOp[static_cast<int>(s.op)];
  const uint8_t redop = s.op == detail::Op::allreduce ? lst_redop(s.reduce) : static_cast<uint8_t>(LST_RED_NONE);
  const uint32_t esz = s.op == detail::Op::barrier ? 0 : static_cast<uint32_t>(dtype_size(s.dtype));
  const uint8_t dt = s.op == detail::Op::barrier ? static_cast<uint8_t>(LST_DT_NONE) : lst_dtype(s.dtype);
  if (lockstep_rt_collective_begin_at) {
    s.trace_token = lockstep_rt_collective_begin_at(s.set, op, s.name.c_str(), s.count, dt, esz, redop, s.root, caller);
  } else if (lockstep_rt_collective_begin) {
    s.trace_token = lockstep_rt_collective_begin(s.set, op, s.name.c_str(), s.count, dt, esz, redop, s.root);
  }
  LOCKSTEP_RT_EVENT(LST_RT_SUBMITTED, s.name.c_str(), s.count, s.set);
  auto st = std::make_shared<detail::RequestState>();
  st->sub = std::move(s);
  st->submitted_at = internal::Clock::now();
  Handle h;
  h.state_ = internal::enqueue(std::move(st));
  return h;
}

#define LOCKSTEP_RT_CALLER reinterpret_cast<uint64_t>(__builtin_return_address(0))

__attribute__((noinline)) Handle allreduce(const std::string& name, const void* in, void* out, size_t count,
                                           DType dtype, ReduceOp op, ProcessSet set) {
  return submit({detail::Op::allreduce, name, in, out, count, dtype, op, -1, set.id()}, LOCKSTEP_RT_CALLER);
}
__attribute__((noinline)) Handle allgather(const std::string& name, const void* in, void* out, size_t count,
                                           DType dtype, ProcessSet set) {
  return submit({detail::Op::allgather, name, in, out, count, dtype, ReduceOp::sum, -1, set.id()},
                LOCKSTEP_RT_CALLER);
}
__attribute__((noinline)) Handle broadcast(const std::string& name, void* buf, size_t count, DType dtype, int root,
                                           ProcessSet set) {
  return submit({detail::Op::broadcast, name, buf, buf, count, dtype, ReduceOp::sum, root, set.id()},
                LOCKSTEP_RT_CALLER);
}
__attribute__((noinline)) Handle barrier(const std::string& name, ProcessSet set) {
  return submit({detail::Op::barrier, name, nullptr, nullptr, 0, DType::f32, ReduceOp::sum, -1, set.id()},
                LOCKSTEP_RT_CALLER);
}

void init(int* argc, char*** argv, const Options& options) {
  using namespace internal;
  if (g_rt && !g_rt->stopped) throw std::runtime_error("lockstep::rt::init called twice");
  auto* r = new Runtime();
  r->cfg = load_config(options);
  int inited = 0;
  MPI_Initialized(&inited);
  int provided = 0;
  if (!inited) {
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    r->owns_mpi = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    throw std::runtime_error("lockstep::rt needs MPI_THREAD_SERIALIZED or better (MPI was initialized with less)");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &r->world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r->world_size);
  auto global = std::make_unique<SetComm>();
  global->id = 0;
  global->rank = r->world_rank;
  for (int i = 0; i < r->world_size; ++i) global->members.push_back(i);
  {
    ControlPlane cp;
    MPI_Comm_dup(MPI_COMM_WORLD, &global->data);
    MPI_Comm_dup(global->data, &r->control);
    MPI_Comm_set_errhandler(global->data, MPI_ERRORS_RETURN);
    liveness_init(r->control, r->world_rank, r->world_size);
  }

  std::string tried;
  for (const std::string& name : r->cfg.backends) {
    std::unique_ptr<Backend> b;
    std::string why;
    if (name == "mpi") {
      b = make_mpi_backend();
    } else if (name == "nccl") {
      b = make_nccl_backend(&why);
    } else {
      why = "unknown backend (known: mpi, nccl)";
    }
    if (b) {
      ControlPlane cp;
      Status s = b->add_set(*global);
      if (!s.ok()) {
        why = s.message;
        b.reset();
      }
    }
    if (b) {
      r->backend = std::move(b);
      break;
    }
    tried += (tried.empty() ? "" : "; ") + name + ": " + why;
  }
  if (!r->backend) throw std::runtime_error("lockstep::rt: no backend could start (" + tried + ")");
  if (!tried.empty() && r->world_rank == 0) {
    std::fprintf(stderr, "lockstep-rt: using the %s backend (%s)\n", r->backend->name(), tried.c_str());
  }
  if (lockstep_rt_process_set) {
    std::vector<int32_t> m(global->members.begin(), global->members.end());
    lockstep_rt_process_set(0, "process_set.0", m.data(), static_cast<int32_t>(m.size()), r->world_rank);
  }
  if (r->world_rank == 0) {
    r->coordinator = std::make_unique<Coordinator>(r->cfg.fusion_bytes, r->cfg.stall_warn_s, r->cfg.stall_abort_s);
    r->coordinator->add_set(0, global->members);
  }
  r->sets[0] = std::move(global);
  g_rt = r;
  r->start();
}

void finalize() {
  using namespace internal;
  Runtime& r = rt();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.finalize_requested = true;
  }
  r.wake.notify_all();
  r.background.join();
  r.watchdog_stop = true;
  r.watchdog.join();
  if (r.cfg.matching == Matching::order) r.agree_to_finalize();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.stopped = true;
  }
  // Requests that never ran fail instead of leaving their waiters blocked.
  for (auto& [key, st] : r.pending) r.complete(*st, {"the runtime was finalized before this request ran"});
  r.pending.clear();
  ControlPlane cp;
  for (auto& [id, set] : r.sets) {
    r.backend->remove_set(*set);
    if (set->data != MPI_COMM_NULL) MPI_Comm_free(&set->data);
  }
  MPI_Comm_free(&r.control);
  if (r.fusion) r.backend->release(r.fusion);
  r.backend.reset();
  liveness_quiet();
  if (r.owns_mpi) MPI_Finalize();
}

bool initialized() { return g_rt && !g_rt->stopped; }
int rank() { return internal::rt().world_rank; }
int size() { return internal::rt().world_size; }
const char* backend_name() { return internal::rt().backend->name(); }
Matching matching() { return internal::rt().cfg.matching; }
Stats stats() {
  internal::Runtime& r = internal::rt();
  return {r.collectives_run.load(), r.tensors_run.load()};
}

namespace {
const internal::SetComm* find_set(uint64_t id) {
  internal::Runtime& r = internal::rt();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.sets.find(id);
  return it == r.sets.end() ? nullptr : it->second.get();
}
}  // namespace

bool ProcessSet::included() const {
  const auto* s = find_set(id_);
  return s && s->rank >= 0;
}
int ProcessSet::rank() const {
  const auto* s = find_set(id_);
  return s ? s->rank : -1;
}
int ProcessSet::size() const {
  const auto* s = find_set(id_);
  return s ? s->size() : 0;
}
std::vector<int> ProcessSet::members() const {
  const auto* s = find_set(id_);
  return s ? s->members : std::vector<int>{};
}

ProcessSet add_process_set(const std::vector<int>& world_ranks) {
  using namespace internal;
  Runtime& r = rt();
  std::set<int> seen;
  for (int w : world_ranks) {
    if (w < 0 || w >= r.world_size || !seen.insert(w).second) {
      throw std::runtime_error("add_process_set: bad member list [" + format_ranks(world_ranks) +
                               "] (world ranks must be distinct and below " + std::to_string(r.world_size) + ")");
    }
  }
  if (world_ranks.empty()) throw std::runtime_error("add_process_set: empty member list");
  auto st = std::make_shared<RequestState>();
  st->sub.op = Op::create_set;
  // Named by call order, not by members, so that ranks passing different lists get a mismatch error.
  st->sub.name = "add_process_set#" + std::to_string(r.process_sets_requested++);
  st->sub.set = 0;
  st->members = world_ranks;
  st->submitted_at = Clock::now();
  st = enqueue(std::move(st));
  wait_done(*st);
  std::lock_guard<std::mutex> lock(st->mu);
  if (!st->status.ok()) throw std::runtime_error("add_process_set: " + st->status.message);
  return ProcessSet(st->new_set);
}

}  // namespace lockstep::rt

#ifndef LOCKSTEP_RT_WITH_NCCL
namespace lockstep::rt::internal {
std::unique_ptr<Backend> make_nccl_backend(std::string* why_not) {
  *why_not = "not built (no CUDA toolkit at build time)";
  return nullptr;
}
}  // namespace lockstep::rt::internal
#endif
