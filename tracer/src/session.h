// The tracer's process-wide state, shared by the interposers (mpi.cc, nccl.cc, annotate.cc, the CUDA
// parts): where the trace goes, the communicator registry, and the functions that turn one intercepted
// call into one record. Everything here is noexcept and safe to call before main and after exit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "lockstep/format/layout.h"
#include "lockstep/format/writer.h"

namespace lockstep::trace {

// The globals that every intercepted call reads (the writer, MPI's and Python's state, the clock's
// calibration, the Fortran bindings' range, the settings) are defined with this: the linker puts the
// section's pieces from every file side by side, so a call made between other work fetches three
// cache lines of them again rather than nine (docs/tracer.md, "Hot data together"). Writable data only.
#define LOCKSTEP_HOT_DATA __attribute__((section("lockstep_hot")))

// The process's writer, opened on first use from LOCKSTEP_TRACE_DIR; nullptr when tracing is off or
// the directory is not writable (one warning is printed, then the tracer is a no-op). Inline: every
// intercepted call asks, and the answer is one load once the trace is open.
extern std::atomic<format::Writer*> g_live_writer;  // the writer this process opened, else nullptr
extern std::atomic<bool> g_tracing_off;             // known for good: nothing will be recorded
format::Writer* writer_slow() noexcept;
inline format::Writer* writer() noexcept {
  if (format::Writer* w = g_live_writer.load(std::memory_order_acquire); __builtin_expect(w != nullptr, 1))
    return w;
  if (g_tracing_off.load(std::memory_order_relaxed)) return nullptr;
  return writer_slow();
}

uint64_t now_ns() noexcept;  // CLOCK_MONOTONIC
// A record's timestamp: CLOCK_MONOTONIC ns derived from one TSC read where the kernel keeps time with
// the TSC (docs/tracer.md), else now_ns(); `ticks` gets the TSC reading (0 without it) for durations.
uint64_t record_clock(uint64_t* ticks) noexcept;
// Changes each time this process opens a trace (a forked child opens its own): a record pointer kept
// across calls is only good for the generation it was made in.
extern std::atomic<uint32_t> g_writer_gen;
inline uint32_t writer_generation() noexcept { return g_writer_gen.load(std::memory_order_relaxed); }

// Set while this thread is inside an intercepted call, so that calls the library makes internally
// (NCCL implemented over MPI in tests, MPI collectives built from other MPI calls) are not recorded
// as the application's. Also carries the runtime's control-plane depth (LST_F_CONTROL).
struct ThreadState {
  int depth;
  int control;
  int nccl_group_depth;
  // Inside the tracer itself: a signal that lands there must not re-enter the writer (it may hold the
  // growth lock), it only marks the end state.
  int in_tracer;
  uint64_t inside;  // id + 1 of the record whose real call this thread is in (0: none)
};
inline ThreadState& thread_state() noexcept;  // below, in the thread's hot block

class CallGuard {  // RAII: outermost() is true for the application's own call
 public:
  CallGuard() noexcept : st_(thread_state()) { outer_ = st_.depth++ == 0; }
  ~CallGuard() { --st_.depth; }
  bool outermost() const noexcept { return outer_; }

 private:
  ThreadState& st_;
  bool outer_;
};

// A communicator as the tracer knows it: its cross-rank id (docs/tracer.md, "identity without communication":
// the same id on every member) and the per-rank sequence counter of its collectives.
struct CommEntry {
  uint64_t id = 0;
  int32_t size = LST_NONE;
  int32_t rank = LST_NONE;
  uint8_t api = LST_API_NONE;
  std::atomic<uint32_t> next_seq{0};
  std::atomic<uint32_t> children{0};  // communicators created from this one so far (identity of the next)
  // A runtime process set's positions are counted by one thread without a locked add while it is the
  // only thread that has used the set (session.cc, next_rt_seq): that thread (its thread pointer; 0:
  // none yet), whether it is between its load and store of next_seq, and kOwned, kTakingOver or kShared.
  std::atomic<uintptr_t> owner{0};
  std::atomic<uint8_t> owner_counting{0};
  std::atomic<uint8_t> sharing{0};
  // No thread owns the set (a set registered afresh, or every set in a forked child).
  void unown() noexcept {
    owner.store(0, std::memory_order_relaxed);
    owner_counting.store(0, std::memory_order_relaxed);
    sharing.store(0, std::memory_order_relaxed);
  }
};

// Registry keyed by (api, handle): lock-free lookup, insertion under a lock (creation is rare).
// comm_find returns nullptr for an unknown handle. The communicator a thread looked up last is kept,
// valid while g_comm_gen (bumped by every registration and removal) is unchanged: a loop's calls find
// theirs inline, and only another handle probes the table (comm_find_slow).
struct LastComm {
  uint32_t gen;
  uint64_t key;
  CommEntry* entry;
};
extern std::atomic<uint32_t> g_comm_gen;

// A record's clock on this thread (session.cc, stamp()): the TSC anchor it extrapolates from.
struct ThreadClock {
  uint64_t tsc0;   // 0: no anchor yet
  uint64_t ns0;    // CLOCK_MONOTONIC at tsc0
  uint64_t floor;  // the last estimate before this anchor: timestamps never go back on a thread
  uint64_t last;   // per-CPU anchors: the last timestamp given (the floor when the CPU changes)
  uint32_t cpu;    // per-CPU anchors: the CPU tsc0 was read on
};
// The predefined handle (an MPI datatype or reduction op) this thread passed last, and what it maps to
// (mpi.cc): a loop passes the same one. Predefined handles are never freed, so an entry never goes stale.
struct LastHandle {
  const void* handle;
  uint32_t size;  // a datatype's size
  uint8_t code;   // its lst_dtype, or an op's lst_redop
};
// Everything of its own thread's state that an intercepted call reads, in one block: three cache lines,
// and one GOT entry for the address of all of it, where eight separate variables took eight GOT entries
// and up to seven lines, which a call made between other work fetched again (docs/tracer.md, "Hot data
// together").
// constinit: zero-initialised, never dynamically, so other files reach it directly, without the test for
// a TLS init function that an extern thread_local otherwise costs on every use; initial-exec: the library
// is loaded at start-up (LD_PRELOAD), never with dlopen late.
// The call sites this thread passed to Writer::note_module lately (session.cc, note()), in one line of
// their own.
constexpr unsigned kNotedSites = 8;
struct alignas(64) HotThread {
  ThreadState state;
  LastComm last_comm;
  LastHandle last_type, last_op;
  ThreadClock clock;
  uint32_t noted_gen;  // the writer generation of noted[] (g_writer_gen): another one empties it
  bool polling;        // mpi_p2p.cc: a polling loop's PROBE record is open (every send and receive asks)
  alignas(64) uint64_t noted[kNotedSites];
};
static_assert(sizeof(HotThread) == 192, "three cache lines: tests/tracer/hot_layout.py");
extern constinit __attribute__((tls_model("initial-exec"))) thread_local HotThread t_hot;
inline ThreadState& thread_state() noexcept { return t_hot.state; }

inline uint64_t comm_key(uint8_t api, uintptr_t handle) noexcept {
  return (static_cast<uint64_t>(handle) ^ (static_cast<uint64_t>(api) << 58)) | 1ull << 63;
}
CommEntry* comm_find_slow(uint8_t api, uintptr_t handle) noexcept;
inline CommEntry* comm_find(uint8_t api, uintptr_t handle) noexcept {
  const LastComm& last = t_hot.last_comm;
  if (__builtin_expect(
          last.key == comm_key(api, handle) && last.gen == g_comm_gen.load(std::memory_order_acquire), 1))
    return last.entry;
  return comm_find_slow(api, handle);
}
// Registers a handle and writes its COMM record (parent, colour, key, members as world ranks).
CommEntry* comm_add(uint8_t api, uintptr_t handle, uint8_t comm_op, uint64_t id, uint64_t parent_id,
                    int32_t color, int32_t key, int32_t size, int32_t rank, const int32_t* members,
                    const char* name, uint64_t caller) noexcept;
// Writes the destruction record and forgets the handle.
void comm_remove(uint8_t api, uintptr_t handle, uint8_t comm_op, uint64_t caller) noexcept;

// One collective call: enter() reserves, fills and publishes the record in state ENTERED (and, with
// LOCKSTEP_TRACE_STACK, the extra frames); ret() moves it to RETURNED or FAILED.
// Fields that the record holds side by side are kept in its order (op to redop; a point-to-point
// record's tag and peer), so that the record path reads each group as one word.
struct CollectiveArgs {
  uint8_t op = LST_OP_UNKNOWN;
  uint8_t api = LST_API_NONE;
  uint8_t dtype = LST_DT_NONE;
  uint8_t redop = LST_RED_NONE;
  uint8_t flags = 0;  // LST_F_*; IN_GROUP and CONTROL are added from the thread state
  uint32_t dtype_size = 0;
  CommEntry* comm = nullptr;
  uint64_t count = 0;
  int32_t tag = 0;  // LST_F_P2P: the message tag, recorded in place of a sequence number
  int32_t root_or_peer = LST_NONE;
  uint32_t name = 0;  // interned string id
};
struct Pending {
  lst_record* rec = nullptr;
  uint64_t id = 0;
  uint64_t t0 = 0;
  uint64_t ticks0 = 0;  // cycle counter at entry: the call's duration without a second clock read
};
Pending collective_enter(const CollectiveArgs& a, uint64_t caller) noexcept;
// collective_enter() for a record named by a text (a runtime's tensor name): a.name becomes the text's
// interned id once the slot is reserved. Interning a text at an address the thread has not met is a
// chain of dependent steps (its length, hash, table entry, comparison); done before the slot's locked
// add, the add waited for all of it, where after it the chain overlaps the rest of the record's work.
Pending collective_enter_named(CollectiveArgs& a, const char* name, uint64_t caller) noexcept;
// `to = from` for a Pending just returned by collective_enter and kept in a thread-local (the runtime's
// last collective, a probe's poll), eight bytes at a time. The compiler's copy read it with 16-byte
// loads of what collective_enter had just stored eight bytes at a time, which the processor cannot
// forward from its store buffer: the loads waited for the stores to reach the cache.
inline void keep_pending(Pending& to, const Pending& from) noexcept {
  lst_record* rec = from.rec;
  uint64_t id = from.id, t0 = from.t0, ticks0 = from.ticks0;
  asm("" : "+r"(rec), "+r"(id), "+r"(t0), "+r"(ticks0));  // in four registers, not two vector ones
  to.rec = rec;
  to.id = id;
  to.t0 = t0;
  to.ticks0 = ticks0;
}
void collective_return(Pending& p, bool ok) noexcept;
// While the thread is inside the real call of record `id`: a process that ends there (an error handler
// that aborts, a signal) names that record in its end marker, and a kernel launched there (CUPTI,
// tracer/cuda) is that record's.
struct InsideCall {
  explicit InsideCall(const Pending& p) noexcept : InsideCall(p.rec != nullptr, p.id) {}
  InsideCall(bool recorded, uint64_t id) noexcept : st(thread_state()), saved(st.inside) {
    if (recorded) st.inside = id + 1;
  }
  ~InsideCall() { st.inside = saved; }
  ThreadState& st;
  uint64_t saved;
};
// One point-to-point call that writes two records (MPI_Sendrecv: its SEND and its RECV): both reserved
// with one atomic add (consecutive ids, `a` first; with extra frames each keeps its STACK records
// after it) and stamped with one clock reading, so they hold the same entry time. `b` differs from
// `a` only in op, count, datatype (and with it LST_F_DERIVED), peer and tag: one communicator, both
// LST_F_P2P; its record is derived from a's. collective_return_pair ends both with one reading too:
// the same state and duration.
struct PendingPair {
  lst_record* rec[2] = {nullptr, nullptr};  // null where record k was not written
  uint64_t id[2] = {0, 0};
  uint64_t t0 = 0;
  uint64_t ticks0 = 0;
};
void collective_enter_pair(const CollectiveArgs& a, const CollectiveArgs& b, uint64_t caller,
                           PendingPair& out) noexcept;
void collective_return_pair(const PendingPair& p, bool ok) noexcept;
// Marks an earlier record COMPLETED where other threads may update it too (device completions); no-op
// if it was overwritten.
void collective_complete(uint64_t id) noexcept;
// The same for records `ids[0..n)`, all reserved before `next` was read from the record cursor (or
// returned by a reservation): the cursor is not read again for each.
void collective_complete(const uint64_t* ids, size_t n, uint64_t next) noexcept;
// The same for the one thread that completes a nonblocking call's request (MPI Wait/Test): the call's
// own return came before (the request was handed out after it) and no other thread updates the record,
// so in a growing file, whose slots are never reused, this is one release store.
void complete_request(uint64_t id) noexcept;

// The interned id of a NUL-terminated text (0 for null or empty). A thread remembers the last few
// texts it interned, by address, each checked against the stored string before it is used again, so a
// name passed on every call is hashed once; other texts met before are found without a lock.
uint32_t intern_nonempty_text(format::Writer* w, const char* text) noexcept;
inline uint32_t intern_text(format::Writer* w, const char* text) noexcept {
  return text && *text ? intern_nonempty_text(w, text) : 0;  // no call for a call without a name
}

// Markers (process lifecycle, MPI_Init/Finalize, NCCL groups, annotations).
uint64_t marker(uint8_t op, uint64_t value, const char* text, uint64_t caller) noexcept;
// A marker with every field; `state` is 0, or LST_STATE_ENTERED for a marker that marker_return()
// later moves to RETURNED (MPI_Finalize). Returns the record id, UINT64_MAX when nothing was written.
uint64_t marker_ex(uint8_t op, uint64_t value, uint64_t ref, uint64_t extra, const char* text,
                   uint64_t caller, uint8_t state, uint64_t comm = 0) noexcept;
// Moves a marker written ENTERED to RETURNED, or to FAILED when !ok.
void marker_return(uint64_t id, bool ok = true) noexcept;
// collective_return() for a record known only by id (tokens handed to other libraries).
void collective_return_id(uint64_t id, bool ok) noexcept;
// One MPI Wait/Test family call (kind WAIT): entered before the call, returned with the number of
// collectives it completed.
// `start_ns` (0: now) and `start_ticks` are the entry time of a call recorded only after it returned
// (MPI_Test*): every field is in place before the record is published, as its check
// (docs/trace-format.md) needs.
Pending wait_enter(uint8_t wait_op, uint64_t first_ref, uint32_t nrequests, uint64_t caller,
                   uint64_t start_ns = 0, uint64_t start_ticks = 0) noexcept;
// `us` is the call's duration (wait_elapsed_us). A Wait call reads it before it settles its requests:
// settling takes locked instructions, and on some processors a clock read right after them waits for
// them. (A Test call settles first: it is recorded only when it completed a request.)
void wait_return(Pending& p, uint32_t ncompleted, bool ok, uint32_t us) noexcept;
uint32_t wait_elapsed_us(const Pending& p) noexcept;  // microseconds since p was entered (0: not recorded)

// The job id the files are grouped by and the launcher's rank hint (LST_NONE when unknown).
const char* job_id() noexcept;
int32_t rank_hint() noexcept;
// Tells the writer the world rank and size (renames a rank-less file); no-op when tracing is off.
void set_world(int32_t rank, int32_t size) noexcept;
// Records how the process ended (LST_END_ABORT before MPI_Abort, for example).
void set_end_state(uint32_t state) noexcept;
// Puts the tracer's fatal-signal handlers back in front after a library installed its own (MPI_Init);
// the library's handlers are chained to, never replaced.
void reinstall_signal_handlers() noexcept;
// Points the MPI Fortran binding libraries' PMPI_* calls at the tracer's wrappers (mpi_fortran.cc);
// returns how many call slots now lead to a wrapper. Once, at load.
namespace mpi {
int redirect_fortran_bindings() noexcept;
}

// FNV-1a, for communicator identities: start with kHashSeed.
constexpr uint64_t kHashSeed = 0xcbf29ce484222325ull;
uint64_t hash_bytes(uint64_t h, const void* data, size_t len) noexcept;

}  // namespace lockstep::trace

// The return address of the intercepted function's caller: use in the interposer's own frame.
#define LOCKSTEP_CALLER() (reinterpret_cast<uint64_t>(__builtin_return_address(0)))
