// TEST FIXTURE, NOT NCCL: a CPU stand-in for libnccl.so.2 that implements the NCCL API on host memory
// over MPI, so multi-rank NCCL programs run under mpirun without a GPU and still reach NCCL through
// ordinary dynamic linking (and so through the tracer's interposition). Never install it. See README.md.
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include <unistd.h>

#include "standin_reduce.h"

// The stand-in is built against the real nccl.h when a toolkit is present and against the copy in
// fallback_include/ otherwise; both must carry NCCL's ABI values.
static_assert(sizeof(ncclUniqueId) == 128);
static_assert(ncclFloat8e5m2 == 11 && ncclBfloat16 == 9 && ncclFloat16 == 6 && ncclFloat64 == 8);
static_assert(ncclAvg == 4 && ncclMin == 3 && ncclMax == 2 && ncclNumOps == 5);
static_assert(ncclUnhandledCudaError == 1 && ncclInProgress == 7);

// An NCCL communicator is an MPI communicator whose ranks are the NCCL ranks.
struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0;
  int nranks = 0;
  bool finalized = false;
};

namespace {

using nccl_standin::Op;

constexpr char kIdMagic[8] = {'L', 'S', 'N', 'C', 'C', 'L', 'I', 'D'};
struct IdPayload {  // the leading bytes of an ncclUniqueId made by this stand-in
  char magic[8];
  int32_t creator;  // world rank of the process that called ncclGetUniqueId: the rendezvous point
  uint32_t seq;     // ids made by that process so far: picks the rendezvous tag
  uint64_t nonce;   // tells ids of different jobs and processes apart
};
static_assert(sizeof(IdPayload) <= sizeof(ncclUniqueId));

// Tags on MPI_COMM_WORLD used by the ncclCommInitRank rendezvous; see README.md.
constexpr int kRendezvousTagBase = 20000;
constexpr int kRendezvousTags = 10000;
constexpr int kShrinkTag = 7;
constexpr int kP2PTag = 1;

thread_local char t_last_error[256] = "";

ncclResult_t fail(ncclResult_t rc, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
ncclResult_t fail(ncclResult_t rc, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(t_last_error, sizeof t_last_error, fmt, ap);
  va_end(ap);
  return rc;
}

bool mpi_usable() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

// Imitates real NCCL on a machine without a GPU, where communicator creation fails.
bool no_device() {
  const char* v = std::getenv("LOCKSTEP_NCCL_STANDIN_NO_DEVICE");
  return v && *v && std::strcmp(v, "0") != 0;
}

size_t dtype_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

void reduce(const uint8_t* blocks, size_t nblocks, size_t block_bytes, size_t count, ncclDataType_t t,
            ncclRedOp_t op, uint8_t* out) {
  using namespace nccl_standin;
  const Op o = Op(int(op));
  const size_t e = dtype_size(t);
  switch (t) {
    case ncclInt8:
      reduce_blocks<Plain<int8_t>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclUint8:
      reduce_blocks<Plain<uint8_t>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclInt32:
      reduce_blocks<Plain<int32_t>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclUint32:
      reduce_blocks<Plain<uint32_t>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclInt64:
      reduce_blocks<Plain<int64_t>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclUint64:
      reduce_blocks<Plain<uint64_t>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclFloat32:
      reduce_blocks<Plain<float>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclFloat64:
      reduce_blocks<Plain<double>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclFloat16:
      reduce_blocks<Narrow<uint16_t, kHalf>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclBfloat16:
      reduce_blocks<Narrow<uint16_t, kBf16>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclFloat8e4m3:
      reduce_blocks<Narrow<uint8_t, kE4M3>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    case ncclFloat8e5m2:
      reduce_blocks<Narrow<uint8_t, kE5M2>>(blocks, nblocks, block_bytes, count, e, o, out);
      break;
    default:
      break;
  }
}

enum class Kind {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv
};

const char* kind_name(Kind k) {
  static const char* const names[] = {"ncclAllReduce",     "ncclBroadcast", "ncclReduce", "ncclAllGather",
                                      "ncclReduceScatter", "ncclAlltoAll",  "ncclGather", "ncclScatter",
                                      "ncclSend",          "ncclRecv"};
  return names[int(k)];
}

// One NCCL operation, as called; inside a group it waits in the thread's queue until ncclGroupEnd.
struct Work {
  Kind kind;
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  int root;  // root, or peer for Send/Recv
  ncclComm* comm;
};

thread_local int t_group_depth = 0;
thread_local std::vector<Work> t_group;

bool rooted(Kind k) {
  return k == Kind::kBroadcast || k == Kind::kReduce || k == Kind::kGather || k == Kind::kScatter;
}
bool reduces(Kind k) { return k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter; }

ncclResult_t validate(const Work& w) {
  const char* name = kind_name(w.kind);
  if (!w.comm) return fail(ncclInvalidArgument, "%s: comm is NULL", name);
  if (w.comm->finalized) return fail(ncclInvalidUsage, "%s: communicator was finalized", name);
  if (!mpi_usable())
    return fail(ncclInvalidUsage, "%s: the stand-in needs MPI initialized and not finalized", name);
  const size_t e = dtype_size(w.dtype);
  if (e == 0) return fail(ncclInvalidArgument, "%s: invalid datatype %d", name, int(w.dtype));
  if (reduces(w.kind) && (int(w.op) < 0 || int(w.op) >= int(ncclNumOps)))
    return fail(ncclInvalidArgument, "%s: reduction op %d is not a built-in op", name, int(w.op));
  if ((rooted(w.kind) || w.kind == Kind::kSend || w.kind == Kind::kRecv) &&
      (w.root < 0 || w.root >= w.comm->nranks))
    return fail(ncclInvalidArgument, "%s: rank %d out of range [0, %d)", name, w.root, w.comm->nranks);
  // MPI counts are int: the whole of any one buffer must stay below 2 GiB.
  const size_t total = w.count * e * size_t(w.comm->nranks);
  if (w.count != 0 && (total / w.count / e != size_t(w.comm->nranks) || total > size_t(INT32_MAX)))
    return fail(ncclInvalidArgument, "%s: the stand-in supports buffers up to 2 GiB", name);
  return ncclSuccess;
}

// MPI forbids aliased send and receive buffers; NCCL's in-place forms alias them on purpose.
void* in_place_or(const void* send, const void* in_place_at, const void* buf) {
  return send == in_place_at ? MPI_IN_PLACE : const_cast<void*>(buf);
}

void execute(const Work& w) {
  ncclComm* c = w.comm;
  const int n = c->nranks;
  const size_t e = dtype_size(w.dtype);
  const int bytes = int(w.count * e);
  auto* recv = static_cast<uint8_t*>(w.recv);
  const auto* send = static_cast<const uint8_t*>(w.send);
  std::vector<uint8_t> tmp;
  switch (w.kind) {
    case Kind::kAllReduce:
      tmp.resize(size_t(bytes) * n);
      MPI_Allgather(send, bytes, MPI_BYTE, tmp.data(), bytes, MPI_BYTE, c->mpi);
      reduce(tmp.data(), n, bytes, w.count, w.dtype, w.op, recv);
      break;
    case Kind::kReduce:
      if (c->rank == w.root) tmp.resize(size_t(bytes) * n);
      MPI_Gather(send, bytes, MPI_BYTE, tmp.data(), bytes, MPI_BYTE, w.root, c->mpi);
      if (c->rank == w.root) reduce(tmp.data(), n, bytes, w.count, w.dtype, w.op, recv);
      break;
    case Kind::kBroadcast:
      if (c->rank == w.root && send != recv && bytes) std::memmove(recv, send, bytes);
      MPI_Bcast(recv, bytes, MPI_BYTE, w.root, c->mpi);
      break;
    case Kind::kAllGather:
      MPI_Allgather(in_place_or(send, recv + size_t(bytes) * c->rank, send), bytes, MPI_BYTE, recv, bytes,
                    MPI_BYTE, c->mpi);
      break;
    case Kind::kReduceScatter:
      tmp.resize(size_t(bytes) * n);
      MPI_Alltoall(send, bytes, MPI_BYTE, tmp.data(), bytes, MPI_BYTE, c->mpi);
      reduce(tmp.data(), n, bytes, w.count, w.dtype, w.op, recv);
      break;
    case Kind::kAlltoAll:
      if (send == recv) {
        tmp.assign(send, send + size_t(bytes) * n);
        send = tmp.data();
      }
      MPI_Alltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, c->mpi);
      break;
    case Kind::kGather:
      MPI_Gather(c->rank == w.root ? in_place_or(send, recv + size_t(bytes) * w.root, send)
                                   : const_cast<uint8_t*>(send),
                 bytes, MPI_BYTE, recv, bytes, MPI_BYTE, w.root, c->mpi);
      break;
    case Kind::kScatter:
      MPI_Scatter(send, bytes, MPI_BYTE,
                  c->rank == w.root ? in_place_or(recv, send + size_t(bytes) * w.root, recv) : recv, bytes,
                  MPI_BYTE, w.root, c->mpi);
      break;
    case Kind::kSend:
      MPI_Send(send, bytes, MPI_BYTE, w.root, kP2PTag, c->mpi);
      break;
    case Kind::kRecv:
      MPI_Recv(recv, bytes, MPI_BYTE, w.root, kP2PTag, c->mpi, MPI_STATUS_IGNORE);
      break;
  }
}

// A group runs its point-to-point operations concurrently (so a ring of Send/Recv cannot deadlock)
// and its collectives in the order they were called, as every rank queued them in the same order.
void execute_group(const std::vector<Work>& group) {
  std::vector<MPI_Request> reqs;
  for (const Work& w : group) {
    const int bytes = int(w.count * dtype_size(w.dtype));
    if (w.kind == Kind::kSend) {
      reqs.emplace_back();
      MPI_Isend(w.send, bytes, MPI_BYTE, w.root, kP2PTag, w.comm->mpi, &reqs.back());
    } else if (w.kind == Kind::kRecv) {
      reqs.emplace_back();
      MPI_Irecv(w.recv, bytes, MPI_BYTE, w.root, kP2PTag, w.comm->mpi, &reqs.back());
    }
  }
  for (const Work& w : group)
    if (w.kind != Kind::kSend && w.kind != Kind::kRecv) execute(w);
  if (!reqs.empty()) MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
}

ncclResult_t submit(const Work& w) {
  if (ncclResult_t rc = validate(w); rc != ncclSuccess) return rc;
  if (t_group_depth > 0) {
    t_group.push_back(w);
  } else {
    execute(w);
  }
  return ncclSuccess;
}

ncclResult_t init_rank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const char* who) {
  if (!out) return fail(ncclInvalidArgument, "%s: comm is NULL", who);
  *out = nullptr;
  if (no_device())
    return fail(ncclUnhandledCudaError,
                "%s: Cuda failure 'no CUDA-capable device is detected' (stand-in without a device)", who);
  if (!mpi_usable())
    return fail(ncclInvalidUsage, "%s: the stand-in needs MPI initialized and not finalized", who);
  IdPayload p;
  std::memcpy(&p, id.internal, sizeof p);
  if (std::memcmp(p.magic, kIdMagic, sizeof kIdMagic) != 0)
    return fail(ncclInvalidArgument, "%s: unique id was not made by ncclGetUniqueId", who);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "%s: rank %d / nranks %d out of range", who, rank, nranks);
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (nranks > world_size || p.creator < 0 || p.creator >= world_size)
    return fail(ncclInvalidArgument, "%s: %d ranks do not fit a job of %d processes", who, nranks,
                world_size);

  // Rendezvous at the id's creator, which is one of the members: it learns every member's world
  // rank and tells them all, so that only the members take part (MPI_Comm_create_group).
  const int tag = kRendezvousTagBase + int(p.seq % kRendezvousTags);
  std::vector<int> members(nranks, -1);
  if (world_rank == p.creator) {
    bool ok = true;
    members[rank] = world_rank;
    for (int i = 1; i < nranks; ++i) {
      int msg[2];
      MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (msg[0] < 0 || msg[0] >= nranks || members[msg[0]] != -1) {
        ok = false;
      } else {
        members[msg[0]] = msg[1];
      }
    }
    std::vector<int> reply = members;
    if (!ok) reply.assign(nranks, -1);
    for (int r = 0; r < nranks; ++r)
      if (r != rank && members[r] >= 0)
        MPI_Send(reply.data(), nranks, MPI_INT, members[r], tag, MPI_COMM_WORLD);
    if (!ok) return fail(ncclInvalidArgument, "%s: two processes claimed the same rank", who);
  } else {
    int msg[2] = {rank, world_rank};
    MPI_Send(msg, 2, MPI_INT, p.creator, tag, MPI_COMM_WORLD);
    MPI_Recv(members.data(), nranks, MPI_INT, p.creator, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (members[rank] != world_rank)
      return fail(ncclInvalidArgument, "%s: two processes claimed the same rank", who);
  }
  MPI_Group world_group, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, nranks, members.data(), &group);
  MPI_Comm mpi = MPI_COMM_NULL;
  MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &mpi);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  *out = new ncclComm{mpi, rank, nranks, false};
  return ncclSuccess;
}

ncclComm* wrap(MPI_Comm mpi) {
  auto* c = new ncclComm;
  c->mpi = mpi;
  MPI_Comm_rank(mpi, &c->rank);
  MPI_Comm_size(mpi, &c->nranks);
  return c;
}

void release(ncclComm* c) {
  if (c->mpi != MPI_COMM_NULL && mpi_usable()) MPI_Comm_free(&c->mpi);
  delete c;
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (!uniqueId) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  if (!mpi_usable()) return fail(ncclInvalidUsage, "ncclGetUniqueId: the stand-in needs MPI initialized");
  static std::atomic<uint32_t> seq{0};
  IdPayload p;
  std::memcpy(p.magic, kIdMagic, sizeof kIdMagic);
  MPI_Comm_rank(MPI_COMM_WORLD, &p.creator);
  p.seq = seq.fetch_add(1);
  std::random_device rd;
  p.nonce = (uint64_t(rd()) << 32) ^ rd() ^ (uint64_t(getpid()) << 16) ^ uint64_t(std::time(nullptr));
  std::memset(uniqueId->internal, 0, sizeof uniqueId->internal);
  std::memcpy(uniqueId->internal, &p, sizeof p);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank(comm, nranks, commId, rank, "ncclCommInitRank");
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  if (config && config->magic != 0xcafebeef)
    return fail(ncclInvalidArgument,
                "ncclCommInitRankConfig: config not initialized with NCCL_CONFIG_INITIALIZER");
  return init_rank(comm, nranks, commId, rank, "ncclCommInitRankConfig");
}

// Several ids only speed up real NCCL's bootstrap; the first one is enough to meet here.
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || !commIds) return fail(ncclInvalidArgument, "ncclCommInitRankScalable: no unique ids");
  if (config && config->magic != 0xcafebeef)
    return fail(ncclInvalidArgument,
                "ncclCommInitRankScalable: config not initialized with NCCL_CONFIG_INITIALIZER");
  return init_rank(newcomm, nranks, commIds[0], myrank, "ncclCommInitRankScalable");
}

ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  if (!comm) return fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL");
  if (ndev < 1) return fail(ncclInvalidArgument, "ncclCommInitAll: ndev %d < 1", ndev);
  if (no_device())
    return fail(ncclUnhandledCudaError, "ncclCommInitAll: Cuda failure 'no CUDA-capable device is detected'");
  if (ndev > 1)
    return fail(ncclInvalidUsage,
                "ncclCommInitAll: the stand-in holds one rank per process (ndev must be 1)");
  if (!mpi_usable()) return fail(ncclInvalidUsage, "ncclCommInitAll: the stand-in needs MPI initialized");
  MPI_Comm self;
  MPI_Comm_dup(MPI_COMM_SELF, &self);
  comm[0] = wrap(self);
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (!comm) return fail(ncclInvalidArgument, "ncclCommFinalize: comm is NULL");
  comm->finalized = true;  // operations are synchronous: nothing is left to flush
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
  release(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  release(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  if (!comm || !newcomm) return fail(ncclInvalidArgument, "ncclCommSplit: comm or newcomm is NULL");
  if (!mpi_usable()) return fail(ncclInvalidUsage, "ncclCommSplit: the stand-in needs MPI initialized");
  if (color < NCCL_SPLIT_NOCOLOR)
    return fail(ncclInvalidArgument, "ncclCommSplit: color %d is negative", color);
  MPI_Comm mpi = MPI_COMM_NULL;
  MPI_Comm_split(comm->mpi, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key, &mpi);
  *newcomm = mpi == MPI_COMM_NULL ? nullptr : wrap(mpi);
  return ncclSuccess;
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  if (!comm || !newcomm) return fail(ncclInvalidArgument, "ncclCommShrink: comm or newcomm is NULL");
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
    return fail(ncclInvalidArgument, "ncclCommShrink: bad exclude list");
  if (!mpi_usable()) return fail(ncclInvalidUsage, "ncclCommShrink: the stand-in needs MPI initialized");
  std::vector<char> excluded(comm->nranks, 0);
  for (int i = 0; i < excludeRanksCount; ++i) {
    const int r = excludeRanksList[i];
    if (r < 0 || r >= comm->nranks || excluded[r])
      return fail(ncclInvalidArgument, "ncclCommShrink: excluded rank %d invalid or repeated", r);
    excluded[r] = 1;
  }
  *newcomm = nullptr;
  if (excluded[comm->rank]) return ncclSuccess;  // an excluded rank gets no communicator
  std::vector<int> keep;
  for (int r = 0; r < comm->nranks; ++r)
    if (!excluded[r]) keep.push_back(r);
  MPI_Group parent, group;
  MPI_Comm_group(comm->mpi, &parent);
  MPI_Group_incl(parent, int(keep.size()), keep.data(), &group);
  MPI_Comm mpi = MPI_COMM_NULL;
  MPI_Comm_create_group(comm->mpi, group, kShrinkTag, &mpi);
  MPI_Group_free(&group);
  MPI_Group_free(&parent);
  *newcomm = wrap(mpi);
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) { return t_last_error; }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!comm || !asyncError) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: NULL argument");
  *asyncError = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return fail(ncclInvalidArgument, "ncclCommCount: NULL argument");
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return fail(ncclInvalidArgument, "ncclCommCuDevice: NULL argument");
  *device = 0;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return fail(ncclInvalidArgument, "ncclCommUserRank: NULL argument");
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  return submit({Kind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm});
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           int root, ncclComm_t comm, cudaStream_t) {
  return submit({Kind::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm});
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t) {
  return submit({Kind::kBroadcast, buff, buff, count, datatype, ncclSum, root, comm});
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t) {
  return submit({Kind::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm});
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t) {
  return submit({Kind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm});
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  return submit({Kind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm});
}

ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t) {
  return submit({Kind::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm});
}

ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t) {
  return submit({Kind::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm});
}

ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                         int root, ncclComm_t comm, cudaStream_t) {
  return submit({Kind::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm});
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t) {
  return submit({Kind::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, comm});
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t) {
  return submit({Kind::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm});
}

ncclResult_t ncclGroupStart() {
  ++t_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (t_group_depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd: not in a group");
  if (--t_group_depth > 0) return ncclSuccess;
  std::vector<Work> group;
  group.swap(t_group);
  if (!group.empty()) {
    if (!mpi_usable()) return fail(ncclInvalidUsage, "ncclGroupEnd: the stand-in needs MPI initialized");
    execute_group(group);
  }
  return ncclSuccess;
}

}  // extern "C"
