// What the MPI interposer's files share (mpi.cc: the real MPI, datatypes, communicators, completion and
// lifecycle; mpi_collectives.cc; mpi_p2p.cc): the lookup of the real library, its predefined handles,
// the argument helpers and the record path of one call.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

#include "request_table.h"
#include "session.h"
#include "wrap.h"

// Every use of a predefined handle in the tracer reads the value looked up at run time (above).
#undef MPI_COMM_WORLD
#undef MPI_COMM_SELF
#undef MPI_COMM_NULL
#undef MPI_REQUEST_NULL
#undef MPI_GROUP_NULL
#undef MPI_DATATYPE_NULL
#undef MPI_OP_NULL
#undef MPI_MESSAGE_NULL
#undef MPI_MESSAGE_NO_PROC
#define MPI_COMM_WORLD (::lockstep::trace::mpi::g_predefined.comm_world)
#define MPI_COMM_SELF (::lockstep::trace::mpi::g_predefined.comm_self)
#define MPI_COMM_NULL (::lockstep::trace::mpi::g_predefined.comm_null)
#define MPI_REQUEST_NULL (::lockstep::trace::mpi::g_predefined.request_null)
#define MPI_GROUP_NULL (::lockstep::trace::mpi::g_predefined.group_null)
#define MPI_DATATYPE_NULL (::lockstep::trace::mpi::g_predefined.datatype_null)
#define MPI_OP_NULL (::lockstep::trace::mpi::g_predefined.op_null)
#define MPI_MESSAGE_NULL (::lockstep::trace::mpi::g_predefined.message_null)
#define MPI_MESSAGE_NO_PROC (::lockstep::trace::mpi::g_predefined.message_no_proc)
// Open MPI's other handle macros (MPI_INT, MPI_SUM, ...) would bind libmpi's objects at load: the
// tracer names them through the table in mpi.cc instead.

namespace lockstep::trace::mpi {

// Open MPI's predefined handles are addresses of objects inside libmpi. They are looked up in the
// library that defines PMPI_Init when the tracer first needs them, never bound when it is loaded: a
// Python process loads libmpi after start-up and RTLD_LOCAL, where a load-time reference stays 0.
struct Predefined {
  MPI_Comm comm_world = nullptr, comm_self = nullptr, comm_null = nullptr;
  MPI_Request request_null = nullptr;
  MPI_Group group_null = nullptr;
  MPI_Datatype datatype_null = nullptr;
  MPI_Op op_null = nullptr;
  MPI_Message message_null = nullptr, message_no_proc = nullptr;
};
extern Predefined g_predefined;

// 0: handles not looked up yet; 1: ready; 2: MPI cannot be traced here (said once), calls pass through.
extern std::atomic<int> g_mpi_state;
bool resolve_mpi() noexcept;  // the lookup behind state 0; true when it ends in state 1

void* lookup_pmpi(const char* name) noexcept;
void no_pmpi(const char* name) noexcept;

// Calls from Fortran (mpi_fortran.cc): the address range that holds every MPI Fortran binding library
// in the process (empty without one), and the Fortran program's return address found above a binding's.
struct FortranBindings {
  uintptr_t lo, span;
};
extern constinit FortranBindings g_fortran;
uint64_t fortran_caller(uint64_t ret, uintptr_t cfa) noexcept;
// The call site to record for a wrapper whose return address is `ret` and whose canonical frame address
// is `cfa`: `ret`, unless a binding library made the call for the program. One compare for C callers.
inline uint64_t app_caller(uint64_t ret, void* cfa) noexcept {
  if (__builtin_expect(ret - g_fortran.lo < g_fortran.span, 0))
    return fortran_caller(ret, reinterpret_cast<uintptr_t>(cfa));
  return ret;
}

// wrap.h's contract. A call with no PMPI_* behind it returns MPI_ERR_OTHER (said once), never aborts.
struct WrapApi {
  static uint64_t caller(uint64_t ret, void* cfa) noexcept { return app_caller(ret, cfa); }
  static void* lookup(const char* name) noexcept { return lookup_pmpi(name); }
  static void missing(const char* name) noexcept { no_pmpi(name); }
  static int unavailable() noexcept { return MPI_ERR_OTHER; }
  static bool tracing() noexcept {
    if (writer() == nullptr) return false;
    const int s = g_mpi_state.load(std::memory_order_acquire);
    return __builtin_expect(s == 1, 1) || (s == 0 && resolve_mpi());
  }
};
inline bool tracing() noexcept { return WrapApi::tracing(); }

// P2P tracing (LOCKSTEP_TRACE_P2P, on unless "0").
extern bool g_trace_p2p;

// The application's argument values, datatypes and communicators in trace terms.
// The predefined datatype this thread passed last: t_hot.last_type (session.h), without the index probe.
void set_dtype_slow(CollectiveArgs& a, MPI_Datatype t) noexcept;
inline void set_dtype(CollectiveArgs& a, MPI_Datatype t) noexcept {
  const LastHandle& last = t_hot.last_type;
  if (__builtin_expect(last.handle == t && t != nullptr, 1)) {
    a.dtype = last.code;
    a.dtype_size = last.size;
    return;
  }
  set_dtype_slow(a, t);
}
uint8_t redop_of(MPI_Op op) noexcept;
CommEntry* adopt_comm(MPI_Comm c) noexcept;
inline CommEntry* comm_of(MPI_Comm c) noexcept {
  CommEntry* e = comm_find(LST_API_MPI, reinterpret_cast<uintptr_t>(c));
  return e ? e : adopt_comm(c);
}
// The base of every argument mapper: api, op, communicator, count and datatype. Inline, so that a
// wrapper fills its arguments in place.
// args_on: the same on a communicator already looked up (the two records of one MPI_Sendrecv).
inline CollectiveArgs args_on(uint8_t op, CommEntry* comm, int64_t count, MPI_Datatype dt) noexcept {
  CollectiveArgs a;
  a.api = LST_API_MPI;
  a.op = op;
  a.comm = comm;
  a.count = count < 0 ? 0 : static_cast<uint64_t>(count);
  if (dt) set_dtype(a, dt);
  return a;
}
inline CollectiveArgs args(uint8_t op, MPI_Comm comm, int64_t count, MPI_Datatype dt) noexcept {
  return args_on(op, comm_of(comm), count, dt);
}

// ---- the record path of one call -------------------------------------------------------------------

extern RequestTable g_requests;  // request -> record id, until a Wait/Test completes it
inline uintptr_t key_of(MPI_Request r) noexcept { return reinterpret_cast<uintptr_t>(r); }

// An error code returned by the call of record `id`: its MPI error class and text, in an MPI_ERROR
// marker after the record (left FAILED). Never on the success path.
void record_error(uint64_t id, int rc) noexcept;

// The one way a call's record ends (collectives, point-to-point, probes; Wait/Test and communicator
// creations end their own kind of record the same way): RETURNED, or FAILED and followed by the
// MPI_ERROR marker of the code the call returned.
__attribute__((always_inline)) inline void returned(Pending& p, int rc) noexcept {
  const uint64_t id = p.id;
  const bool recorded = p.rec != nullptr;  // collective_return() clears p.rec
  collective_return(p, rc == MPI_SUCCESS);
  if (__builtin_expect(rc != MPI_SUCCESS, 0) && recorded) record_error(id, rc);
}

// The same for a Wait/Test record (`done`: the nonblocking calls it completed) and for a marker entered
// before its call (communicator creations, MPI_Finalize).
// `us`: the call's duration, read before its completions were settled (wait_return).
__attribute__((always_inline)) inline void wait_returned(Pending& p, uint32_t done, int rc,
                                                         uint32_t us) noexcept {
  const uint64_t id = p.id;
  const bool recorded = p.rec != nullptr;
  wait_return(p, done, rc == MPI_SUCCESS, us);
  if (__builtin_expect(rc != MPI_SUCCESS, 0) && recorded) record_error(id, rc);
}
inline void marker_returned(uint64_t id, int rc) noexcept {
  if (id == UINT64_MAX) return;  // not recorded
  marker_return(id, rc == MPI_SUCCESS);
  if (rc != MPI_SUCCESS) record_error(id, rc);
}

template <typename Call>
__attribute__((always_inline)) inline int blocking(const CollectiveArgs& a, uint64_t caller, Call&& call) {
  Pending p = collective_enter(a, caller);
  int rc;
  {
    InsideCall in(p);
    rc = call();
  }
  returned(p, rc);
  return rc;
}

// A nonblocking call: RETURNED when it has started, COMPLETED by the Wait/Test that finishes its request.
template <typename Call>
__attribute__((always_inline)) inline int nonblocking(CollectiveArgs a, uint64_t caller, MPI_Request* req,
                                                      Call&& call) {
  a.flags |= LST_F_NONBLOCKING;
  Pending p = collective_enter(a, caller);
  const uint64_t id = p.id;
  const bool recorded = p.rec != nullptr;
  int rc;
  {
    InsideCall in(p);
    rc = call();
  }
  returned(p, rc);
  if (recorded && rc == MPI_SUCCESS && req && *req != MPI_REQUEST_NULL) g_requests.insert(key_of(*req), id);
  return rc;
}

}  // namespace lockstep::trace::mpi

#define REAL_TYPE(fn) decltype(&P##fn)
#define REAL_NAME(fn) "P" #fn

using namespace lockstep::trace;
using namespace lockstep::trace::mpi;
