// The runtime's entry points and its process-wide state. The application threads only queue requests
// (Inbox) and wait on handles; all of the runtime's MPI runs on the background thread (background.h),
// so MPI needs no more than MPI_THREAD_SERIALIZED.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <thread>

#include "backend.h"
#include "background.h"
#include "config.h"
#include "control_channel.h"
#include "inbox.h"
#include "liveness.h"
#include "request.h"
#include "watchdog.h"

namespace lockstep::rt {
namespace internal {
namespace {

class Runtime {
 public:
  Runtime(Config cfg, int world_rank, int world_size, bool owns_mpi)
      : cfg_(std::move(cfg)),
        world_rank_(world_rank),
        world_size_(world_size),
        owns_mpi_(owns_mpi),
        watchdog_(cfg_, world_rank) {}

  // ---- init (application thread, before the background thread starts)
  void start(std::unique_ptr<Backend> backend, MPI_Comm control, std::unique_ptr<SetComm> global);

  // ---- application threads
  int rank() const { return world_rank_; }
  int size() const { return world_size_; }
  const Config& cfg() const { return cfg_; }
  const char* backend_name() const { return backend_->name(); }
  bool stopped() const { return inbox_.stopped(); }
  Stats stats() const { return {background_->collectives_run(), background_->tensors_run()}; }
  std::string submit(const std::shared_ptr<RequestState>& st) { return inbox_.submit(st, world_rank_); }
  void wait_done(RequestState& st);
  const SetComm* find_set(uint64_t id) const { return inbox_.set(id); }
  uint64_t next_process_set_call() { return process_sets_requested_++; }
  void finalize();

 private:
  void agree_to_finalize();

  const Config cfg_;
  const int world_rank_;
  const int world_size_;
  const bool owns_mpi_;
  std::unique_ptr<Backend> backend_;
  MPI_Comm control_ = MPI_COMM_NULL;  // negotiation: MPI_Comm_dup of the global set's communicator
  Inbox inbox_;                       // what the application and background threads share
  Watchdog watchdog_;
  std::unique_ptr<Background> background_;  // touched by the background thread only, until it is joined
  std::thread thread_;
  uint64_t process_sets_requested_ = 0;  // application thread only
};

Runtime* g_rt = nullptr;  // never destroyed: the abort path exits from the background thread

}  // namespace

[[noreturn]] void fatal(const std::string& why, bool printed) {
  static std::atomic<bool> once{false};
  if (once.exchange(true)) {
    for (;;) pause();  // another thread is already exiting
  }
  liveness_quiet();
  if (!printed)
    std::fprintf(stderr, "lockstep-rt: rank %d: aborting: %s\n", g_rt ? g_rt->rank() : -1, why.c_str());
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

void Runtime::start(std::unique_ptr<Backend> backend, MPI_Comm control, std::unique_ptr<SetComm> global) {
  backend_ = std::move(backend);
  control_ = control;
  inbox_.add_set(std::move(global));
  background_ =
      std::make_unique<Background>(cfg_, world_rank_, world_size_, *backend_, control_, inbox_, watchdog_);
  thread_ = std::thread([this] { background_->run(); });
  watchdog_.start();
}

// Blocks until `st` is done; while it blocks, the background thread knows the application is waiting.
void Runtime::wait_done(RequestState& st) {
  std::unique_lock<std::mutex> lock(st.mu);
  if (st.done) return;
  lock.unlock();
  inbox_.begin_wait();
  lock.lock();
  st.cv.wait(lock, [&] { return st.done; });
  lock.unlock();
  inbox_.end_wait();
}

// Matching by order has no shutdown plan telling a rank that every other one is finalizing, and
// MPI_Finalize would wait for them with no deadline. A rank that left its loop early (the bug this mode
// reproduces) would then sit in it while the ranks still waiting in a collective abort, and OpenMPI's
// launcher can crash or wedge tearing down a job with a rank inside MPI_Finalize. So the ranks first
// agree, over the control communicator and within the abort time, that all of them are finalizing.
void Runtime::agree_to_finalize() {
  ControlPlane cp;
  MPI_Request rq;
  MPI_Ibarrier(control_, &rq);
  const auto start = Clock::now();
  bool warned = false;
  for (;;) {
    int done = 0;
    MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (done) return;
    const double age = std::chrono::duration<double>(Clock::now() - start).count();
    const char* why =
        "some rank has not called finalize (matching by order: it may still be waiting in a "
        "collective this rank skipped; 'lockstep check' on a trace tells which)";
    if (cfg_.stall_abort_s > 0 && age >= cfg_.stall_abort_s) {
      fatal("finalize has waited " + std::to_string(static_cast<int>(age)) +
            " s for the other ranks (LOCKSTEP_RT_STALL_ABORT): " + why);
    }
    if (!warned && cfg_.stall_warn_s > 0 && age >= cfg_.stall_warn_s) {
      warned = true;
      std::fprintf(
          stderr, "lockstep-rt: rank %d: stall warning: finalize has waited %.0f s for the other ranks: %s\n",
          world_rank_, age, why);
      std::fflush(stderr);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void Runtime::finalize() {
  inbox_.request_finalize();
  thread_.join();
  watchdog_.stop();
  if (cfg_.matching == Matching::order) agree_to_finalize();
  inbox_.mark_stopped();
  background_->finish();
  ControlPlane cp;
  for (auto& [id, set] : inbox_.sets_at_finalize()) {
    backend_->remove_set(*set);
    if (set->data != MPI_COMM_NULL) MPI_Comm_free(&set->data);
  }
  MPI_Comm_free(&control_);
  backend_.reset();
  liveness_quiet();
  if (owns_mpi_) MPI_Finalize();
}

Runtime& rt() {
  if (!g_rt || g_rt->stopped()) throw std::runtime_error("lockstep::rt is not initialized");
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
  std::string why = r->submit(st);
  if (!why.empty()) return failed(std::move(st), std::move(why));
  return st;
}

void wait_done(RequestState& st) {
  if (g_rt) {
    g_rt->wait_done(st);
    return;
  }
  std::unique_lock<std::mutex> lock(st.mu);
  st.cv.wait(lock, [&] { return st.done; });
}

}  // namespace
}  // namespace internal

using internal::g_rt;

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
    case DType::f16:
      return LST_DT_FLOAT16;
    case DType::bf16:
      return LST_DT_BFLOAT16;
    case DType::f32:
      return LST_DT_FLOAT32;
    case DType::f64:
      return LST_DT_FLOAT64;
    case DType::i32:
      return LST_DT_INT32;
    case DType::i64:
      return LST_DT_INT64;
  }
  return LST_DT_UNKNOWN;
}
uint8_t lst_redop(ReduceOp r) {
  switch (r) {
    case ReduceOp::sum:
      return LST_RED_SUM;
    case ReduceOp::average:
      return LST_RED_AVG;
    case ReduceOp::min:
      return LST_RED_MIN;
    case ReduceOp::max:
      return LST_RED_MAX;
  }
  return LST_RED_UNKNOWN;
}
}  // namespace

// The tracer record opens at submission (the program's order, in the application's thread) and closes
// on completion; a request that never ran stays "entered", which is what a hang post-mortem needs.
Handle submit(detail::Submission&& s, uint64_t caller) {
  static const uint8_t kLstOp[] = {LST_OP_ALLREDUCE, LST_OP_ALLGATHER, LST_OP_BCAST, LST_OP_BARRIER,
                                   LST_OP_UNKNOWN};
  const uint8_t op = kLstOp[static_cast<int>(s.op)];
  const uint8_t redop =
      s.op == detail::Op::allreduce ? lst_redop(s.reduce) : static_cast<uint8_t>(LST_RED_NONE);
  const uint32_t esz = s.op == detail::Op::barrier ? 0 : static_cast<uint32_t>(dtype_size(s.dtype));
  const uint8_t dt = s.op == detail::Op::barrier ? static_cast<uint8_t>(LST_DT_NONE) : lst_dtype(s.dtype);
  if (lockstep_rt_collective_begin_at) {
    s.trace_token =
        lockstep_rt_collective_begin_at(s.set, op, s.name.c_str(), s.count, dt, esz, redop, s.root, caller);
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
__attribute__((noinline)) Handle broadcast(const std::string& name, void* buf, size_t count, DType dtype,
                                           int root, ProcessSet set) {
  return submit({detail::Op::broadcast, name, buf, buf, count, dtype, ReduceOp::sum, root, set.id()},
                LOCKSTEP_RT_CALLER);
}
__attribute__((noinline)) Handle barrier(const std::string& name, ProcessSet set) {
  return submit({detail::Op::barrier, name, nullptr, nullptr, 0, DType::f32, ReduceOp::sum, -1, set.id()},
                LOCKSTEP_RT_CALLER);
}

void init(int* argc, char*** argv, const Options& options) {
  using namespace internal;
  if (g_rt && !g_rt->stopped()) throw std::runtime_error("lockstep::rt::init called twice");
  Config cfg = load_config(options);
  int inited = 0;
  MPI_Initialized(&inited);
  int provided = 0;
  if (!inited) {
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    throw std::runtime_error(
        "lockstep::rt needs MPI_THREAD_SERIALIZED or better (MPI was initialized with less)");
  }
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  auto global = std::make_unique<SetComm>();
  global->id = 0;
  global->rank = world_rank;
  for (int i = 0; i < world_size; ++i) global->members.push_back(i);
  MPI_Comm control = MPI_COMM_NULL;
  {
    ControlPlane cp;
    MPI_Comm_dup(MPI_COMM_WORLD, &global->data);
    MPI_Comm_dup(global->data, &control);
    MPI_Comm_set_errhandler(global->data, MPI_ERRORS_RETURN);
    liveness_init(control, world_rank, world_size);
  }

  std::unique_ptr<Backend> backend;
  std::string tried;
  for (const std::string& name : cfg.backends) {
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
      backend = std::move(b);
      break;
    }
    tried += (tried.empty() ? "" : "; ") + name + ": " + why;
  }
  if (!backend) throw std::runtime_error("lockstep::rt: no backend could start (" + tried + ")");
  if (!tried.empty() && world_rank == 0) {
    std::fprintf(stderr, "lockstep-rt: using the %s backend (%s)\n", backend->name(), tried.c_str());
  }
  if (lockstep_rt_process_set) {
    std::vector<int32_t> m(global->members.begin(), global->members.end());
    lockstep_rt_process_set(0, "process_set.0", m.data(), static_cast<int32_t>(m.size()), world_rank);
  }
  auto* r = new Runtime(std::move(cfg), world_rank, world_size, !inited);
  g_rt = r;
  r->start(std::move(backend), control, std::move(global));
}

void finalize() { internal::rt().finalize(); }

bool initialized() { return g_rt && !g_rt->stopped(); }
int rank() { return internal::rt().rank(); }
int size() { return internal::rt().size(); }
const char* backend_name() { return internal::rt().backend_name(); }
Matching matching() { return internal::rt().cfg().matching; }
Stats stats() { return internal::rt().stats(); }

namespace {
const internal::SetComm* find_set(uint64_t id) { return internal::rt().find_set(id); }
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
    if (w < 0 || w >= r.size() || !seen.insert(w).second) {
      throw std::runtime_error("add_process_set: bad member list [" + format_ranks(world_ranks) +
                               "] (world ranks must be distinct and below " + std::to_string(r.size()) + ")");
    }
  }
  if (world_ranks.empty()) throw std::runtime_error("add_process_set: empty member list");
  auto st = std::make_shared<RequestState>();
  st->sub.op = Op::create_set;
  // Named by call order, not by members, so that ranks passing different lists get a mismatch error.
  st->sub.name = "add_process_set#" + std::to_string(r.next_process_set_call());
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
