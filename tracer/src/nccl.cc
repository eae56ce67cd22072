// NCCL capture: liblockstep_trace.so defines the NCCL entry points an application calls, records each
// call and forwards it to the real library found at run time with dlsym(RTLD_NEXT). Nothing here
// links against NCCL or CUDA or needs nccl.h (nccl_abi.h declares the ABI it relies on).
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "gpu_hooks.h"
#include "nccl_abi.h"
#include "session.h"
#include "wrap.h"

namespace lockstep::trace {
namespace {

using nccl::Comm;
using nccl::Config;
using nccl::Stream;
using nccl::UniqueId;

// ---- the real functions ----------------------------------------------------------------------------

void warn_no_nccl(const char* name) noexcept {
  static std::atomic<bool> warned{false};
  char text[160];
  std::snprintf(text, sizeof text,
                "lockstep: %s: no NCCL library behind the tracer; NCCL calls return ncclSystemError", name);
  warn_once(warned, text);
}

void* lookup_nccl(const char* name) noexcept {
  void* fn = dlsym(RTLD_NEXT, name);
  if (!fn) {
    // NCCL loaded by dlopen() after this library is not "next" in every lookup scope; only an
    // already loaded one is used, never loaded from here.
    if (void* h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD)) {
      fn = dlsym(h, name);
      dlclose(h);
    }
  }
  if (fn && in_this_library(fn)) fn = nullptr;  // our own wrapper: there is no NCCL behind us
  return fn;
}

// wrap.h's contract: with no NCCL behind the tracer, calls say so once and return ncclSystemError.
struct WrapApi {
  static uint64_t caller(uint64_t ret, void*) noexcept { return ret; }
  static void* lookup(const char* name) noexcept { return lookup_nccl(name); }
  static void missing(const char* name) noexcept { warn_no_nccl(name); }
  static int unavailable() noexcept { return nccl::kSystemError; }
  static bool tracing() noexcept { return writer() != nullptr; }
};
#define REAL_TYPE(fn) fn##_fn
#define REAL_NAME(fn) #fn
// `params` is a parenthesised parameter list: wrapping it again would make it an expression.
#define NCCL_SYMBOL(fn, ret, params) using fn##_fn = ret(*) params;  // NOLINT(bugprone-macro-parentheses)

NCCL_SYMBOL(ncclCommInitRank, int, (Comm*, int, UniqueId, int))
NCCL_SYMBOL(ncclCommInitRankConfig, int, (Comm*, int, UniqueId, int, Config*))
NCCL_SYMBOL(ncclCommInitRankScalable, int, (Comm*, int, int, int, UniqueId*, Config*))
NCCL_SYMBOL(ncclCommInitAll, int, (Comm*, int, const int*))
NCCL_SYMBOL(ncclCommSplit, int, (Comm, int, int, Comm*, Config*))
NCCL_SYMBOL(ncclCommShrink, int, (Comm, int*, int, Comm*, Config*, int))
NCCL_SYMBOL(ncclCommDestroy, int, (Comm))
NCCL_SYMBOL(ncclCommAbort, int, (Comm))
NCCL_SYMBOL(ncclCommFinalize, int, (Comm))
NCCL_SYMBOL(ncclCommCount, int, (Comm, int*))
NCCL_SYMBOL(ncclCommUserRank, int, (Comm, int*))
NCCL_SYMBOL(ncclAllReduce, int, (const void*, void*, size_t, int, int, Comm, Stream))
NCCL_SYMBOL(ncclBroadcast, int, (const void*, void*, size_t, int, int, Comm, Stream))
NCCL_SYMBOL(ncclBcast, int, (void*, size_t, int, int, Comm, Stream))
NCCL_SYMBOL(ncclReduce, int, (const void*, void*, size_t, int, int, int, Comm, Stream))
NCCL_SYMBOL(ncclAllGather, int, (const void*, void*, size_t, int, Comm, Stream))
NCCL_SYMBOL(ncclReduceScatter, int, (const void*, void*, size_t, int, int, Comm, Stream))
NCCL_SYMBOL(ncclAlltoAll, int, (const void*, void*, size_t, int, Comm, Stream))
NCCL_SYMBOL(ncclGather, int, (const void*, void*, size_t, int, int, Comm, Stream))
NCCL_SYMBOL(ncclScatter, int, (const void*, void*, size_t, int, int, Comm, Stream))
NCCL_SYMBOL(ncclSend, int, (const void*, size_t, int, int, Comm, Stream))
NCCL_SYMBOL(ncclRecv, int, (void*, size_t, int, int, Comm, Stream))
NCCL_SYMBOL(ncclGroupStart, int, ())
NCCL_SYMBOL(ncclGroupEnd, int, ())

// ---- arguments as the trace spells them --------------------------------------------------------

uint8_t map_dtype(int t, uint32_t* size) noexcept {
  struct Entry {
    uint8_t dtype;
    uint32_t size;
  };
  static constexpr Entry kMap[nccl::kNumTypes] = {
      {LST_DT_INT8, 1},    {LST_DT_UINT8, 1},    {LST_DT_INT32, 4},    {LST_DT_UINT32, 4},
      {LST_DT_INT64, 8},   {LST_DT_UINT64, 8},   {LST_DT_FLOAT16, 2},  {LST_DT_FLOAT32, 4},
      {LST_DT_FLOAT64, 8}, {LST_DT_BFLOAT16, 2}, {LST_DT_FP8_E4M3, 1}, {LST_DT_FP8_E5M2, 1},
  };
  if (t < 0 || t >= nccl::kNumTypes) {
    *size = 0;
    return LST_DT_UNKNOWN;
  }
  *size = kMap[t].size;
  return kMap[t].dtype;
}

uint8_t map_redop(int op) noexcept {
  switch (op) {
    case nccl::kSum:
      return LST_RED_SUM;
    case nccl::kProd:
      return LST_RED_PROD;
    case nccl::kMax:
      return LST_RED_MAX;
    case nccl::kMin:
      return LST_RED_MIN;
    case nccl::kAvg:
      return LST_RED_AVG;
    default:
      return op >= nccl::kNumOps ? LST_RED_USER : LST_RED_UNKNOWN;  // PreMulSum and other created ops
  }
}

constexpr int kNoRedop = -1;

bool succeeded(int rc) noexcept { return rc == nccl::kSuccess || rc == nccl::kInProgress; }

// One collective or point-to-point call: recorded ENTERED before the real call, RETURNED or FAILED
// after, then handed to the GPU side.
template <typename Call>
__attribute__((always_inline)) inline int collective(uint8_t op, Comm comm, uint64_t count, int dtype,
                                                     int redop, int32_t root_or_peer, Stream stream,
                                                     uint64_t caller, Call&& call) noexcept {
  CollectiveArgs a;
  a.api = LST_API_NCCL;
  a.op = op;
  a.comm = comm_find(LST_API_NCCL, reinterpret_cast<uintptr_t>(comm));
  a.count = count;
  a.dtype = map_dtype(dtype, &a.dtype_size);
  a.redop = redop == kNoRedop ? uint8_t(LST_RED_NONE) : map_redop(redop);
  a.root_or_peer = root_or_peer;
  if (thread_state().nccl_group_depth > 0) a.flags |= LST_F_IN_GROUP;
  Pending p = collective_enter(a, caller);
  const bool recorded = p.rec != nullptr;  // collective_return() clears p.rec
  int rc;
  {
    InsideCall in(p);
    rc = call();
  }
  collective_return(p, succeeded(rc));
  if (recorded && succeeded(rc)) after_nccl_collective(p.id, stream);
  return rc;
}

// ---- communicator identity (docs/nccl.md) ----------------------------------------------------------

uint64_t hash_u64(uint64_t h, uint64_t v) noexcept { return hash_bytes(h, &v, sizeof v); }

uint64_t mix(uint64_t x) noexcept {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Every member passes the same unique id, so its bytes name the communicator on every rank.
uint64_t id_from_unique_id(const UniqueId& uid) noexcept {
  return hash_bytes(kHashSeed, uid.internal, sizeof uid.internal);
}

// ncclCommInitRankScalable: every member passes the same ids in the same order.
uint64_t id_from_unique_ids(const UniqueId* uids, int n) noexcept {
  return hash_bytes(kHashSeed, uids, sizeof(UniqueId) * size_t(n));
}

// The members of a split agree on the parent, on how many communicators were made from it before,
// and on the colour; the members of a shrink on the parent, that count and the excluded ranks.
uint64_t id_from_split(uint64_t parent, uint32_t index, int32_t color) noexcept {
  uint64_t h = hash_bytes(kHashSeed, "nccl-split", 10);
  return hash_u64(hash_u64(hash_u64(h, parent), index), uint64_t(uint32_t(color)));
}

uint64_t id_from_shrink(uint64_t parent, uint32_t index, const int* excluded, int n) noexcept {
  uint64_t sum = 0, x = 0;  // order-independent over the excluded list, without sorting a copy
  for (int i = 0; excluded && i < n; ++i) {
    sum += mix(uint64_t(uint32_t(excluded[i])));
    x ^= mix(uint64_t(uint32_t(excluded[i])) + 0x51ed27);
  }
  uint64_t h = hash_bytes(kHashSeed, "nccl-shrink", 11);
  return hash_u64(hash_u64(hash_u64(hash_u64(h, parent), index), sum), x);
}

// ncclCommInitAll's clique lives in this one process: its id only has to differ from every other.
uint64_t id_for_init_all() noexcept {
  static std::atomic<uint32_t> calls{0};
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  uint64_t h = hash_bytes(kHashSeed, "nccl-init-all", 13);
  h = hash_bytes(h, host, std::strlen(host));
  return hash_u64(hash_u64(h, uint64_t(getpid())), calls.fetch_add(1));
}

// A communicator made from `parent` (split, shrink): the parent's id and how many were made from it before.
// Counted before the real call, by every member, so that the next creation is numbered alike everywhere.
struct Child {
  uint64_t parent_id = 0;
  uint32_t index = 0;
};
Child child_of(Comm parent) noexcept {
  Child c;
  if (CommEntry* p = comm_find(LST_API_NCCL, reinterpret_cast<uintptr_t>(parent))) {
    c.parent_id = p->id;
    c.index = p->children.fetch_add(1, std::memory_order_relaxed);
  }
  return c;
}

const char* config_name(const Config* config) noexcept {
  const auto* c = reinterpret_cast<const nccl::ConfigPrefix*>(config);
  if (!c || c->magic != nccl::kConfigMagic || c->size < nccl::kConfigCommNameEnd) return nullptr;
  return c->commName;
}

int32_t query(ncclCommCount_fn fn, Comm comm) noexcept {
  int v = LST_NONE;
  if (!fn || fn(comm, &v) != nccl::kSuccess) return LST_NONE;
  return v;
}

void register_comm(Comm comm, uint8_t comm_op, uint64_t id, uint64_t parent, int32_t color, int32_t key,
                   int32_t size, int32_t rank, const char* name, uint64_t caller) noexcept {
  if (size == LST_NONE) size = query(REAL(ncclCommCount), comm);
  if (rank == LST_NONE) rank = query(REAL(ncclCommUserRank), comm);
  // A one-rank communicator's only member is this process; otherwise NCCL does not say who is in it.
  int32_t self = rank_hint();
  const int32_t* members = (size == 1 && self != LST_NONE) ? &self : nullptr;
  comm_add(LST_API_NCCL, reinterpret_cast<uintptr_t>(comm), comm_op, id, parent, color, key, size, rank,
           members, name, caller);
}

}  // namespace
}  // namespace lockstep::trace

using namespace lockstep::trace;

// ---- communicators -------------------------------------------------------------------------------

// A failed creation (ncclUnhandledCudaError on a machine without a GPU, for one) is passed back
// unchanged and registers nothing: collectives on it could not run.
WRAP_EXPORT int ncclCommInitRank(Comm* comm, int nranks, UniqueId id, int rank) {
  PASSTHROUGH(ncclCommInitRank, comm, nranks, id, rank);
  int rc = FORWARD(comm, nranks, id, rank);
  if (succeeded(rc) && comm && *comm)
    register_comm(*comm, LST_COMM_NCCL_INIT_RANK, id_from_unique_id(id), 0, LST_NONE, LST_NONE, nranks, rank,
                  nullptr, caller);
  return rc;
}

WRAP_EXPORT int ncclCommInitRankConfig(Comm* comm, int nranks, UniqueId id, int rank, Config* config) {
  PASSTHROUGH(ncclCommInitRankConfig, comm, nranks, id, rank, config);
  int rc = FORWARD(comm, nranks, id, rank, config);
  if (succeeded(rc) && comm && *comm)
    register_comm(*comm, LST_COMM_NCCL_INIT_RANK, id_from_unique_id(id), 0, LST_NONE, LST_NONE, nranks, rank,
                  config_name(config), caller);
  return rc;
}

WRAP_EXPORT int ncclCommInitRankScalable(Comm* comm, int nranks, int rank, int nids, UniqueId* ids,
                                         Config* config) {
  PASSTHROUGH(ncclCommInitRankScalable, comm, nranks, rank, nids, ids, config);
  int rc = FORWARD(comm, nranks, rank, nids, ids, config);
  if (succeeded(rc) && comm && *comm && ids && nids > 0)
    register_comm(*comm, LST_COMM_NCCL_INIT_RANK, id_from_unique_ids(ids, nids), 0, LST_NONE, LST_NONE,
                  nranks, rank, config_name(config), caller);
  return rc;
}

WRAP_EXPORT int ncclCommInitAll(Comm* comms, int ndev, const int* devlist) {
  PASSTHROUGH(ncclCommInitAll, comms, ndev, devlist);
  int rc = FORWARD(comms, ndev, devlist);
  if (succeeded(rc) && comms && ndev > 0) {
    const uint64_t id = id_for_init_all();
    for (int i = 0; i < ndev; ++i)
      if (comms[i])
        register_comm(comms[i], LST_COMM_NCCL_INIT_ALL, id, 0, LST_NONE, LST_NONE, ndev, i, nullptr, caller);
  }
  return rc;
}

WRAP_EXPORT int ncclCommSplit(Comm comm, int color, int key, Comm* newcomm, Config* config) {
  PASSTHROUGH(ncclCommSplit, comm, color, key, newcomm, config);
  // Every member of the parent calls the split, also with NCCL_SPLIT_NOCOLOR, so all of them count it.
  const Child child = child_of(comm);
  int rc = FORWARD(comm, color, key, newcomm, config);
  if (succeeded(rc) && newcomm && *newcomm && color != nccl::kSplitNoColor)
    register_comm(*newcomm, LST_COMM_NCCL_SPLIT, id_from_split(child.parent_id, child.index, color),
                  child.parent_id, color, key, LST_NONE, LST_NONE, config_name(config), caller);
  return rc;
}

WRAP_EXPORT int ncclCommShrink(Comm comm, int* exclude, int nexclude, Comm* newcomm, Config* config,
                               int flags) {
  PASSTHROUGH(ncclCommShrink, comm, exclude, nexclude, newcomm, config, flags);
  const Child child = child_of(comm);
  int rc = FORWARD(comm, exclude, nexclude, newcomm, config, flags);
  if (succeeded(rc) && newcomm && *newcomm)
    register_comm(*newcomm, LST_COMM_NCCL_SHRINK,
                  id_from_shrink(child.parent_id, child.index, exclude, nexclude), child.parent_id, LST_NONE,
                  LST_NONE, LST_NONE, LST_NONE, config_name(config), caller);
  return rc;
}

// The communicator is forgotten before the real call frees it, so a handle NCCL reuses at once for a
// new communicator on another thread cannot be mistaken for this one.
WRAP_EXPORT int ncclCommDestroy(Comm comm) {
  PASSTHROUGH(ncclCommDestroy, comm);
  comm_remove(LST_API_NCCL, reinterpret_cast<uintptr_t>(comm), LST_COMM_NCCL_DESTROY, caller);
  return FORWARD(comm);
}

WRAP_EXPORT int ncclCommAbort(Comm comm) {
  PASSTHROUGH(ncclCommAbort, comm);
  comm_remove(LST_API_NCCL, reinterpret_cast<uintptr_t>(comm), LST_COMM_NCCL_ABORT, caller);
  return FORWARD(comm);
}

// After ncclCommFinalize a communicator takes no more collectives: it ends here, and the later
// ncclCommDestroy finds nothing left to record.
WRAP_EXPORT int ncclCommFinalize(Comm comm) {
  PASSTHROUGH(ncclCommFinalize, comm);
  int rc = FORWARD(comm);
  if (succeeded(rc))
    comm_remove(LST_API_NCCL, reinterpret_cast<uintptr_t>(comm), LST_COMM_NCCL_FINALIZE, caller);
  return rc;
}

// ---- collectives ---------------------------------------------------------------------------------

// One body per signature; each call is one line of (name, operation) below it.
// (sendbuff, recvbuff, count, datatype, op, comm, stream)
#define NCCL_REDUCING(NAME, LST_OP)                                                                          \
  WRAP_EXPORT int NAME(const void* sbuf, void* rbuf, size_t count, int dtype, int op, Comm comm, Stream s) { \
    PASSTHROUGH(NAME, sbuf, rbuf, count, dtype, op, comm, s);                                                \
    return collective(LST_OP, comm, count, dtype, op, LST_NONE, s, caller,                                   \
                      CALL_REAL(sbuf, rbuf, count, dtype, op, comm, s));                                     \
  }
// (sendbuff, recvbuff, count, datatype, root, comm, stream)
#define NCCL_ROOTED(NAME, LST_OP)                                                                  \
  WRAP_EXPORT int NAME(const void* sbuf, void* rbuf, size_t count, int dtype, int root, Comm comm, \
                       Stream s) {                                                                 \
    PASSTHROUGH(NAME, sbuf, rbuf, count, dtype, root, comm, s);                                    \
    return collective(LST_OP, comm, count, dtype, kNoRedop, root, s, caller,                       \
                      CALL_REAL(sbuf, rbuf, count, dtype, root, comm, s));                         \
  }
// (sendbuff, recvbuff, count, datatype, comm, stream)
#define NCCL_UNROOTED(NAME, LST_OP)                                                                  \
  WRAP_EXPORT int NAME(const void* sbuf, void* rbuf, size_t count, int dtype, Comm comm, Stream s) { \
    PASSTHROUGH(NAME, sbuf, rbuf, count, dtype, comm, s);                                            \
    return collective(LST_OP, comm, count, dtype, kNoRedop, LST_NONE, s, caller,                     \
                      CALL_REAL(sbuf, rbuf, count, dtype, comm, s));                                 \
  }
// (buff, count, datatype, root or peer, comm, stream)
#define NCCL_ONE_BUFFER(NAME, BUFFER, LST_OP)                                                \
  WRAP_EXPORT int NAME(BUFFER buf, size_t count, int dtype, int peer, Comm comm, Stream s) { \
    PASSTHROUGH(NAME, buf, count, dtype, peer, comm, s);                                     \
    return collective(LST_OP, comm, count, dtype, kNoRedop, peer, s, caller,                 \
                      CALL_REAL(buf, count, dtype, peer, comm, s));                          \
  }

NCCL_REDUCING(ncclAllReduce, LST_OP_ALLREDUCE)
NCCL_REDUCING(ncclReduceScatter, LST_OP_REDUCE_SCATTER)  // count: the receive count
NCCL_ROOTED(ncclBroadcast, LST_OP_BCAST)
NCCL_ROOTED(ncclGather, LST_OP_GATHER)
NCCL_ROOTED(ncclScatter, LST_OP_SCATTER)
NCCL_UNROOTED(ncclAllGather, LST_OP_ALLGATHER)  // count: the send count
NCCL_UNROOTED(ncclAlltoAll, LST_OP_ALLTOALL)
NCCL_ONE_BUFFER(ncclBcast, void*, LST_OP_BCAST)
NCCL_ONE_BUFFER(ncclSend, const void*, LST_OP_SEND)
NCCL_ONE_BUFFER(ncclRecv, void*, LST_OP_RECV)

// Reduce alone takes both an op and a root.
WRAP_EXPORT int ncclReduce(const void* sbuf, void* rbuf, size_t count, int dtype, int op, int root, Comm comm,
                           Stream s) {
  PASSTHROUGH(ncclReduce, sbuf, rbuf, count, dtype, op, root, comm, s);
  return collective(LST_OP_REDUCE, comm, count, dtype, op, root, s, caller,
                    CALL_REAL(sbuf, rbuf, count, dtype, op, root, comm, s));
}

// ---- groups --------------------------------------------------------------------------------------

// GROUP_START and GROUP_END markers carry the depth after the call; the calls between them are
// recorded with LST_F_IN_GROUP. The group's work runs inside ncclGroupEnd, so its marker is entered
// before the real call and returned after: a rank hung there shows the group it is stuck in.
WRAP_EXPORT int ncclGroupStart() {
  PASSTHROUGH(ncclGroupStart);
  int rc = FORWARD();
  if (rc == nccl::kSuccess) {
    ThreadState& ts = thread_state();
    ++ts.nccl_group_depth;
    marker(LST_MARK_NCCL_GROUP_START, uint64_t(ts.nccl_group_depth), nullptr, caller);
  }
  return rc;
}

WRAP_EXPORT int ncclGroupEnd() {
  PASSTHROUGH(ncclGroupEnd);
  ThreadState& ts = thread_state();
  if (ts.nccl_group_depth > 0) --ts.nccl_group_depth;  // NCCL leaves the group even when the end fails
  const uint64_t id = marker_ex(LST_MARK_NCCL_GROUP_END, uint64_t(ts.nccl_group_depth), 0, 0, nullptr, caller,
                                LST_STATE_ENTERED);
  int rc;
  {
    InsideCall in(id != UINT64_MAX, id);
    rc = FORWARD();
  }
  marker_return(id);
  if (succeeded(rc)) after_nccl_group_end(id);
  return rc;
}
