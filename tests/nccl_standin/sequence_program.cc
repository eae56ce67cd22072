// A 4-rank NCCL program with a known, deterministic sequence of mixed NCCL calls (every collective,
// grouped Send/Recv rings, nested groups) on three communicators: A from one unique id (all ranks), B
// from a second id (world ranks 3, 2, 1 as NCCL ranks 0, 1, 2) and S, A split by parity. Every rank
// writes what it called, with the source line of each call, to <expected-dir>/expected.<rank>; the
// trace checker (trace_check.cc) compares that with the rank's trace. Runs on the CPU stand-in.
#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lockstep/format/layout.h"

namespace {

int g_rank = 0;
FILE* g_out = nullptr;

void check(ncclResult_t rc, const char* what, int line) {
  if (rc == ncclSuccess) return;
  std::fprintf(stderr, "rank %d: line %d: %s failed: %s\n", g_rank, line, what, ncclGetErrorString(rc));
  MPI_Abort(MPI_COMM_WORLD, 3);
}

// The trace's spelling of NCCL's dtypes and ops, as the trace format documents them.
const int kLstDtype[] = {LST_DT_INT8,    LST_DT_UINT8,    LST_DT_INT32,    LST_DT_UINT32,
                         LST_DT_INT64,   LST_DT_UINT64,   LST_DT_FLOAT16,  LST_DT_FLOAT32,
                         LST_DT_FLOAT64, LST_DT_BFLOAT16, LST_DT_FP8_E4M3, LST_DT_FP8_E5M2};
const int kDtypeSize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
const int kLstRedop[] = {LST_RED_SUM, LST_RED_PROD, LST_RED_MAX, LST_RED_MIN, LST_RED_AVG};

// Expected-record lines, one per record the tracer should write for this rank:
//   coll <comm> <lst_op> <count> <lst_dtype> <dtype_size> <lst_redop> <root_or_peer> <in_group> <line>
//   mark <lst_marker> <value> <line>
//   comm <label> <lst_comm_op> <size> <rank> <color> <line>
//   mpi <lst_op> <line>
void coll(char comm, int op, size_t count, ncclDataType_t dt, int redop, int root, bool in_group, int line) {
  std::fprintf(g_out, "coll %c %d %zu %d %d %d %d %d %d\n", comm, op, count, kLstDtype[dt], kDtypeSize[dt],
               redop < 0 ? LST_RED_NONE : kLstRedop[redop], root, in_group ? 1 : 0, line);
}
void mark(int marker, int value, int line) { std::fprintf(g_out, "mark %d %d %d\n", marker, value, line); }
void comm_event(char label, int op, int size, int rank, int color, int line) {
  std::fprintf(g_out, "comm %c %d %d %d %d %d\n", label, op, size, rank, color, line);
}

// Each call site is one source line: the macro records that line and makes the call on it.
#define AT(call) (check((call), #call, __LINE__), __LINE__)

struct Rng {  // splitmix64: the same stream on every rank
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int below(int n) { return int(next() % uint64_t(n)); }
};

struct Comm {
  char label;
  ncclComm_t comm = nullptr;  // null where this rank is not a member
  int size = 0;
  int rank = -1;
};

enum Kind {
  kAllReduce,
  kBroadcast,
  kBcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kRing,
  kNestedGroup,
  kKinds
};

std::vector<uint8_t> g_send(64 * 8 * 4), g_recv(64 * 8 * 4);

void step(Rng& rng, Comm* comms) {
  Comm& c = comms[rng.below(3)];
  const Kind kind = Kind(rng.below(kKinds));
  const size_t count = 1 + size_t(rng.below(64));
  const auto dt = ncclDataType_t(rng.below(int(ncclNumTypes)));
  const int redop = rng.below(5);
  const int root_pick = rng.below(1 << 20);
  if (!c.comm) return;  // the others still drew the same numbers
  const int root = root_pick % c.size;
  const auto op = ncclRedOp_t(redop);
  void* s = g_send.data();
  void* r = g_recv.data();
  ncclComm_t k = c.comm;
  switch (kind) {
    case kAllReduce:
      coll(c.label, LST_OP_ALLREDUCE, count, dt, redop, LST_NONE, false,
           AT(ncclAllReduce(s, r, count, dt, op, k, nullptr)));
      break;
    case kBroadcast:
      coll(c.label, LST_OP_BCAST, count, dt, -1, root, false,
           AT(ncclBroadcast(s, r, count, dt, root, k, nullptr)));
      break;
    case kBcast:
      coll(c.label, LST_OP_BCAST, count, dt, -1, root, false, AT(ncclBcast(r, count, dt, root, k, nullptr)));
      break;
    case kReduce:
      coll(c.label, LST_OP_REDUCE, count, dt, redop, root, false,
           AT(ncclReduce(s, r, count, dt, op, root, k, nullptr)));
      break;
    case kAllGather:
      coll(c.label, LST_OP_ALLGATHER, count, dt, -1, LST_NONE, false,
           AT(ncclAllGather(s, r, count, dt, k, nullptr)));
      break;
    case kReduceScatter:
      coll(c.label, LST_OP_REDUCE_SCATTER, count, dt, redop, LST_NONE, false,
           AT(ncclReduceScatter(s, r, count, dt, op, k, nullptr)));
      break;
    case kAlltoAll:
      coll(c.label, LST_OP_ALLTOALL, count, dt, -1, LST_NONE, false,
           AT(ncclAlltoAll(s, r, count, dt, k, nullptr)));
      break;
    case kGather:
      coll(c.label, LST_OP_GATHER, count, dt, -1, root, false,
           AT(ncclGather(s, r, count, dt, root, k, nullptr)));
      break;
    case kScatter:
      coll(c.label, LST_OP_SCATTER, count, dt, -1, root, false,
           AT(ncclScatter(s, r, count, dt, root, k, nullptr)));
      break;
    case kRing: {  // both neighbours in one group: deadlocks unless the group runs them together
      const int next = (c.rank + 1) % c.size, prev = (c.rank + c.size - 1) % c.size;
      mark(LST_MARK_NCCL_GROUP_START, 1, AT(ncclGroupStart()));
      coll(c.label, LST_OP_SEND, count, dt, -1, next, true, AT(ncclSend(s, count, dt, next, k, nullptr)));
      coll(c.label, LST_OP_RECV, count, dt, -1, prev, true, AT(ncclRecv(r, count, dt, prev, k, nullptr)));
      mark(LST_MARK_NCCL_GROUP_END, 0, AT(ncclGroupEnd()));
      break;
    }
    case kNestedGroup: {
      mark(LST_MARK_NCCL_GROUP_START, 1, AT(ncclGroupStart()));
      coll(c.label, LST_OP_ALLREDUCE, count, dt, redop, LST_NONE, true,
           AT(ncclAllReduce(s, r, count, dt, op, k, nullptr)));
      mark(LST_MARK_NCCL_GROUP_START, 2, AT(ncclGroupStart()));
      coll(c.label, LST_OP_ALLGATHER, count, dt, -1, LST_NONE, true,
           AT(ncclAllGather(s, r, count, dt, k, nullptr)));
      mark(LST_MARK_NCCL_GROUP_END, 1, AT(ncclGroupEnd()));
      mark(LST_MARK_NCCL_GROUP_END, 0, AT(ncclGroupEnd()));
      break;
    }
    default:
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || size != 4) {
    if (g_rank == 0) std::fprintf(stderr, "usage: mpirun -np 4 %s EXPECTED_DIR STEPS\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  const int steps = std::atoi(argv[2]);
  const std::string path = std::string(argv[1]) + "/expected." + std::to_string(g_rank);
  g_out = std::fopen(path.c_str(), "w");
  if (!g_out) {
    std::fprintf(stderr, "rank %d: %s: cannot write\n", g_rank, path.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  ncclUniqueId id_a, id_b;
  if (g_rank == 0) check(ncclGetUniqueId(&id_a), "ncclGetUniqueId", __LINE__);
  if (g_rank == 3) check(ncclGetUniqueId(&id_b), "ncclGetUniqueId", __LINE__);
  std::fprintf(g_out, "mpi %d %d\n", LST_OP_BCAST,
               (MPI_Bcast(&id_a, sizeof id_a, MPI_BYTE, 0, MPI_COMM_WORLD), __LINE__));
  std::fprintf(g_out, "mpi %d %d\n", LST_OP_BCAST,
               (MPI_Bcast(&id_b, sizeof id_b, MPI_BYTE, 3, MPI_COMM_WORLD), __LINE__));

  Comm comms[3] = {{'A'}, {'B'}, {'S'}};
  comms[0].size = 4;
  comms[0].rank = g_rank;
  comm_event('A', LST_COMM_NCCL_INIT_RANK, 4, g_rank, LST_NONE,
             AT(ncclCommInitRank(&comms[0].comm, 4, id_a, g_rank)));
  if (g_rank != 0) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.commName = "B";
    comms[1].size = 3;
    comms[1].rank = 3 - g_rank;
    comm_event('B', LST_COMM_NCCL_INIT_RANK, 3, 3 - g_rank, LST_NONE,
               AT(ncclCommInitRankConfig(&comms[1].comm, 3, id_b, 3 - g_rank, &config)));
  }
  comms[2].size = 2;
  comms[2].rank = g_rank / 2;
  comm_event('S', LST_COMM_NCCL_SPLIT, 2, g_rank / 2, g_rank % 2,
             AT(ncclCommSplit(comms[0].comm, g_rank % 2, g_rank, &comms[2].comm, nullptr)));

  Rng rng{20250611};
  for (int i = 0; i < steps; ++i) step(rng, comms);

  comm_event('S', LST_COMM_NCCL_DESTROY, 2, g_rank / 2, LST_NONE, AT(ncclCommDestroy(comms[2].comm)));
  if (comms[1].comm) {
    comm_event('B', LST_COMM_NCCL_FINALIZE, 3, comms[1].rank, LST_NONE, AT(ncclCommFinalize(comms[1].comm)));
    check(ncclCommDestroy(comms[1].comm), "ncclCommDestroy",
          __LINE__);  // after Finalize: nothing more to record
  }
  comm_event('A', LST_COMM_NCCL_DESTROY, 4, g_rank, LST_NONE, AT(ncclCommDestroy(comms[0].comm)));
  std::fprintf(g_out, "mpi %d %d\n", LST_OP_BARRIER, (MPI_Barrier(MPI_COMM_WORLD), __LINE__));
  std::fclose(g_out);
  MPI_Finalize();
  return 0;
}
