// The tracer's process-wide state, shared by the interposers (mpi.cc, nccl.cc, annotate.cc, the CUDA
// parts): where the trace goes, the communicator registry, and the functions that turn one intercepted
// call into one record. Everything here is noexcept and safe to call before main and after exit.
#pragma once

#include <atomic>
#include <cstdint>

#include "lockstep/format/layout.h"
#include "lockstep/format/writer.h"

namespace lockstep::trace {

// The process's writer, opened on first use from LOCKSTEP_TRACE_DIR; nullptr when tracing is off or
// the directory is not writable (one warning is printed, then the tracer is a no-op).
format::Writer* writer() noexcept;

uint64_t now_ns() noexcept;  // CLOCK_MONOTONIC

// Set while this thread is inside an intercepted call, so that calls the library makes internally
// (NCCL implemented over MPI in tests, MPI collectives built from other MPI calls) are not recorded
// as the application's. Also carries the runtime's control-plane depth (LST_F_CONTROL).
struct ThreadState {
  int depth = 0;
  int control = 0;
  int nccl_group_depth = 0;
};
ThreadState& thread_state() noexcept;

class CallGuard {  // RAII: outermost() is true for the application's own call
 public:
  CallGuard() noexcept : st_(thread_state()) { outer_ = st_.depth++ == 0; }
  ~CallGuard() { --st_.depth; }
  bool outermost() const noexcept { return outer_; }

 private:
  ThreadState& st_;
  bool outer_;
};

// A communicator as the tracer knows it: its cross-rank id (DESIGN.md "communicators get a cross-rank
// identity") and the per-rank sequence counter of its collectives.
struct CommEntry {
  uint64_t id = 0;
  int32_t size = LST_NONE;
  int32_t rank = LST_NONE;
  uint8_t api = LST_API_NONE;
  std::atomic<uint32_t> next_seq{0};
  std::atomic<uint32_t> children{0};  // communicators created from this one so far (identity of the next)
};

// Registry keyed by (api, handle): lock-free lookup, insertion under a lock (creation is rare).
// Returns nullptr for an unknown handle.
CommEntry* comm_find(uint8_t api, uintptr_t handle) noexcept;
// Registers a handle and writes its COMM record (parent, colour, key, members as world ranks).
CommEntry* comm_add(uint8_t api, uintptr_t handle, uint8_t comm_op, uint64_t id, uint64_t parent_id,
                    int32_t color, int32_t key, int32_t size, int32_t rank, const int32_t* members,
                    const char* name, uint64_t caller) noexcept;
// Writes the destruction record and forgets the handle.
void comm_remove(uint8_t api, uintptr_t handle, uint8_t comm_op, uint64_t caller) noexcept;

// One collective call: enter() reserves, fills and publishes the record in state ENTERED (and, with
// LOCKSTEP_TRACE_STACK, the extra frames); ret() moves it to RETURNED or FAILED.
struct CollectiveArgs {
  uint8_t api = LST_API_NONE;
  uint8_t op = LST_OP_UNKNOWN;
  uint8_t flags = 0;  // LST_F_*; IN_GROUP and CONTROL are added from the thread state
  CommEntry* comm = nullptr;
  uint64_t count = 0;
  uint8_t dtype = LST_DT_NONE;
  uint32_t dtype_size = 0;
  uint8_t redop = LST_RED_NONE;
  int32_t root_or_peer = LST_NONE;
  uint32_t name = 0;  // interned string id
};
struct Pending {
  lst_record* rec = nullptr;
  uint64_t id = 0;
  uint64_t t0 = 0;
};
Pending collective_enter(const CollectiveArgs& a, uint64_t caller) noexcept;
void collective_return(Pending& p, bool ok) noexcept;
// Marks an earlier record COMPLETED (MPI Wait/Test, device completion); no-op if it was overwritten.
void collective_complete(uint64_t id) noexcept;

// Markers (process lifecycle, MPI_Init/Finalize, NCCL groups, annotations).
uint64_t marker(uint8_t op, uint64_t value, const char* text, uint64_t caller) noexcept;

}  // namespace lockstep::trace

// The return address of the intercepted function's caller: use in the interposer's own frame.
#define LOCKSTEP_CALLER() (reinterpret_cast<uint64_t>(__builtin_return_address(0)))
