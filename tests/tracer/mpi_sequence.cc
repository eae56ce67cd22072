// A 4-rank MPI program with a known, deterministic sequence of mixed collectives (every MPI-3 kind,
// blocking and nonblocking, every completion call) on three communicators: world, a split and a dup.
// Each rank writes what it called, with the source line of each call, to EXPECTED_DIR/rank-<r>.txt
// before making the call; trace_check compares that with the rank's trace.
//   mpi_sequence EXPECTED_DIR STEPS
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "lockstep/format/layout.h"

namespace {

enum { W = 0, S = 1, D = 2 };
const char kCommTag[] = {'W', 'S', 'D'};

MPI_Comm g_comm[3];
int g_rank[3], g_size[3];
std::FILE* g_expected = nullptr;
MPI_Datatype g_triple;  // a derived type: 3 contiguous ints

uint64_t g_rng = 0x9e3779b97f4a7c15ull;  // the same seed on every rank: the same sequence everywhere
uint32_t next() {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return static_cast<uint32_t>(g_rng >> 11);
}

// One expected collective: op, flags (nonblocking, v-counts, derived), comm, count, dtype, dtype size,
// root, reduction op and the line of the call.
void expect(int op, int flags, int ci, long long count, int dtype, int dtype_size, int root, int redop, int line) {
  if (dtype == LST_DT_DERIVED) flags |= LST_F_DERIVED;  // derived types are compared by bytes
  std::fprintf(g_expected, "C %d %d %c %lld %d %d %d %d %d\n", op, flags, kCommTag[ci], count, dtype, dtype_size,
               root, redop, line);
}
#define AT(op, flags, ci, count, dtype, size, root, redop) expect(op, flags, ci, count, dtype, size, root, redop, __LINE__)

// One expected point-to-point record: op, flags (P2P added), comm, count, dtype, dtype size, peer as
// recorded (LST_ANY_SOURCE, LST_PROC_NULL), tag as recorded, and the line of the call.
// With LOCKSTEP_TRACE_P2P=0 the same calls are made and none is expected in the trace.
bool p2p_off() {
  static const bool off = [] {
    const char* v = std::getenv("LOCKSTEP_TRACE_P2P");
    return v && std::strcmp(v, "0") == 0;
  }();
  return off;
}
void expect_p2p(int op, int flags, int ci, long long count, int dtype, int dtype_size, int peer, int tag, int line) {
  if (p2p_off()) return;
  std::fprintf(g_expected, "P %d %d %c %lld %d %d %d %d %d\n", op, flags | LST_F_P2P, kCommTag[ci], count, dtype,
               dtype_size, peer, tag, line);
}
#define P2P(op, flags, ci, count, dtype, size, peer, tag) expect_p2p(op, flags, ci, count, dtype, size, peer, tag, __LINE__)
// The last two expected records are one call's (MPI_Sendrecv's SEND and RECV): consecutive ids, one
// entry time, one duration and one state.
void expect_pair() {
  if (!p2p_off()) std::fprintf(g_expected, "pair\n");
}

struct Type {
  MPI_Datatype t;
  int lst;
  int size;
  bool reducible;
};
Type pick_type(bool reduction) {
  static const Type types[] = {{MPI_INT, LST_DT_INT32, 4, true},       {MPI_DOUBLE, LST_DT_FLOAT64, 8, true},
                               {MPI_FLOAT, LST_DT_FLOAT32, 4, true},   {MPI_LONG, LST_DT_INT64, 8, true},
                               {MPI_BYTE, LST_DT_BYTE, 1, false},      {MPI_DATATYPE_NULL, LST_DT_DERIVED, 12, false}};
  for (;;) {
    Type t = types[next() % 6];
    if (t.lst == LST_DT_DERIVED) t.t = g_triple;
    if (!reduction || t.reducible) return t;
  }
}
struct Op {
  MPI_Op op;
  int lst;
};
Op pick_op() {
  static const Op ops[] = {{MPI_SUM, LST_RED_SUM}, {MPI_MAX, LST_RED_MAX}, {MPI_MIN, LST_RED_MIN},
                           {MPI_PROD, LST_RED_PROD}};
  return ops[next() % 4];
}

// Big enough for any count below times any comm size and element size.
alignas(16) char sbuf[64 * 4 * 16 * 4];
alignas(16) char rbuf[64 * 4 * 16 * 4];
int counts[4], displs[4], rcounts[4], rdispls[4];
MPI_Datatype wtypes[4], rwtypes[4];

void fill_v(int n, int base, int* c, int* d) {
  int off = 0;
  for (int i = 0; i < n; ++i) {
    c[i] = base + i;
    d[i] = off;
    off += c[i];
  }
}

void blocking_step() {
  int ci = static_cast<int>(next() % 3);
  MPI_Comm c = g_comm[ci];
  int n = g_size[ci], me = g_rank[ci];
  int count = 1 + static_cast<int>(next() % 16);
  int root = static_cast<int>(next() % static_cast<uint32_t>(n));
  const int V = LST_F_VCOUNTS;
  switch (next() % 17) {
    case 0: { AT(LST_OP_BARRIER, 0, ci, 0, LST_DT_NONE, 0, LST_NONE, LST_RED_NONE); MPI_Barrier(c); break; }
    case 1: { Type t = pick_type(false); AT(LST_OP_BCAST, 0, ci, count, t.lst, t.size, root, LST_RED_NONE); MPI_Bcast(sbuf, count, t.t, root, c); break; }
    case 2: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_REDUCE, 0, ci, count, t.lst, t.size, root, o.lst); MPI_Reduce(sbuf, rbuf, count, t.t, o.op, root, c); break; }
    case 3: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_ALLREDUCE, 0, ci, count, t.lst, t.size, LST_NONE, o.lst); MPI_Allreduce(sbuf, rbuf, count, t.t, o.op, c); break; }
    case 4: { Type t = pick_type(false); AT(LST_OP_GATHER, 0, ci, count, t.lst, t.size, root, LST_RED_NONE); MPI_Gather(sbuf, count, t.t, rbuf, count, t.t, root, c); break; }
    case 5: { fill_v(n, count, rcounts, rdispls); int mine = count + me; AT(LST_OP_GATHERV, V, ci, mine, LST_DT_INT32, 4, root, LST_RED_NONE); MPI_Gatherv(sbuf, mine, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, root, c); break; }
    case 6: { Type t = pick_type(false); AT(LST_OP_SCATTER, 0, ci, count, t.lst, t.size, root, LST_RED_NONE); MPI_Scatter(sbuf, count, t.t, rbuf, count, t.t, root, c); break; }
    case 7: { fill_v(n, count, counts, displs); int mine = count + me; AT(LST_OP_SCATTERV, V, ci, mine, LST_DT_FLOAT64, 8, root, LST_RED_NONE); MPI_Scatterv(sbuf, counts, displs, MPI_DOUBLE, rbuf, mine, MPI_DOUBLE, root, c); break; }
    case 8: { Type t = pick_type(false); AT(LST_OP_ALLGATHER, 0, ci, count, t.lst, t.size, LST_NONE, LST_RED_NONE); MPI_Allgather(sbuf, count, t.t, rbuf, count, t.t, c); break; }
    case 9: { fill_v(n, count, rcounts, rdispls); int mine = count + me; AT(LST_OP_ALLGATHERV, V, ci, mine, LST_DT_INT32, 4, LST_NONE, LST_RED_NONE); MPI_Allgatherv(sbuf, mine, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, c); break; }
    case 10: { Type t = pick_type(false); AT(LST_OP_ALLTOALL, 0, ci, count, t.lst, t.size, LST_NONE, LST_RED_NONE); MPI_Alltoall(sbuf, count, t.t, rbuf, count, t.t, c); break; }
    case 11: {
      // Every rank sends count+i to rank i and receives count+me from each.
      int total = 0;
      for (int i = 0, off = 0; i < n; ++i) { counts[i] = count + i; displs[i] = off; off += counts[i]; total += counts[i]; }
      for (int i = 0; i < n; ++i) { rcounts[i] = count + me; rdispls[i] = i * (count + me); }
      AT(LST_OP_ALLTOALLV, V, ci, total, LST_DT_INT32, 4, LST_NONE, LST_RED_NONE); MPI_Alltoallv(sbuf, counts, displs, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, c); break;
    }
    case 12: {
      int bytes = 0;
      for (int i = 0; i < n; ++i) { counts[i] = count; displs[i] = i * count * 8; wtypes[i] = MPI_DOUBLE; bytes += count * 8; rcounts[i] = count; rdispls[i] = i * count * 8; rwtypes[i] = MPI_DOUBLE; }
      AT(LST_OP_ALLTOALLW, V | LST_F_DERIVED, ci, bytes, LST_DT_DERIVED, 1, LST_NONE, LST_RED_NONE); MPI_Alltoallw(sbuf, counts, displs, wtypes, rbuf, rcounts, rdispls, rwtypes, c); break;
    }
    case 13: { fill_v(n, count, rcounts, rdispls); int total = 0; for (int i = 0; i < n; ++i) total += rcounts[i]; Op o = pick_op(); AT(LST_OP_REDUCE_SCATTER, V, ci, total, LST_DT_INT32, 4, LST_NONE, o.lst); MPI_Reduce_scatter(sbuf, rbuf, rcounts, MPI_INT, o.op, c); break; }
    case 14: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_REDUCE_SCATTER_BLOCK, 0, ci, count, t.lst, t.size, LST_NONE, o.lst); MPI_Reduce_scatter_block(sbuf, rbuf, count, t.t, o.op, c); break; }
    case 15: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_SCAN, 0, ci, count, t.lst, t.size, LST_NONE, o.lst); MPI_Scan(sbuf, rbuf, count, t.t, o.op, c); break; }
    default: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_EXSCAN, 0, ci, count, t.lst, t.size, LST_NONE, o.lst); MPI_Exscan(sbuf, rbuf, count, t.t, o.op, c); break; }
  }
}

// Nonblocking: one collective per call, each into its own buffers, completed by one of the eight
// Wait/Test calls.
alignas(16) char nsbuf[3][64 * 4 * 16];
alignas(16) char nrbuf[3][64 * 4 * 16 * 4];
int ncounts[3][4], ndispls[3][4], nrcounts[3][4], nrdispls[3][4];
MPI_Datatype nwtypes[3][4];

void start_one(int k, MPI_Request* req) {
  int ci = static_cast<int>(next() % 3);
  MPI_Comm c = g_comm[ci];
  int n = g_size[ci], me = g_rank[ci];
  int count = 1 + static_cast<int>(next() % 16);
  int root = static_cast<int>(next() % static_cast<uint32_t>(n));
  const int N = LST_F_NONBLOCKING, V = LST_F_VCOUNTS;
  char *sb = nsbuf[k], *rb = nrbuf[k];
  switch (next() % 12) {
    case 0: { AT(LST_OP_BARRIER, N, ci, 0, LST_DT_NONE, 0, LST_NONE, LST_RED_NONE); MPI_Ibarrier(c, req); break; }
    case 1: { Type t = pick_type(false); AT(LST_OP_BCAST, N, ci, count, t.lst, t.size, root, LST_RED_NONE); MPI_Ibcast(sb, count, t.t, root, c, req); break; }
    case 2: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_REDUCE, N, ci, count, t.lst, t.size, root, o.lst); MPI_Ireduce(sb, rb, count, t.t, o.op, root, c, req); break; }
    case 3: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_ALLREDUCE, N, ci, count, t.lst, t.size, LST_NONE, o.lst); MPI_Iallreduce(sb, rb, count, t.t, o.op, c, req); break; }
    case 4: { Type t = pick_type(false); AT(LST_OP_GATHER, N, ci, count, t.lst, t.size, root, LST_RED_NONE); MPI_Igather(sb, count, t.t, rb, count, t.t, root, c, req); break; }
    case 5: { fill_v(n, count, nrcounts[k], nrdispls[k]); int mine = count + me; AT(LST_OP_GATHERV, N | V, ci, mine, LST_DT_INT32, 4, root, LST_RED_NONE); MPI_Igatherv(sb, mine, MPI_INT, rb, nrcounts[k], nrdispls[k], MPI_INT, root, c, req); break; }
    case 6: { Type t = pick_type(false); AT(LST_OP_SCATTER, N, ci, count, t.lst, t.size, root, LST_RED_NONE); MPI_Iscatter(sb, count, t.t, rb, count, t.t, root, c, req); break; }
    case 7: { fill_v(n, count, ncounts[k], ndispls[k]); int mine = count + me; AT(LST_OP_SCATTERV, N | V, ci, mine, LST_DT_INT32, 4, root, LST_RED_NONE); MPI_Iscatterv(sb, ncounts[k], ndispls[k], MPI_INT, rb, mine, MPI_INT, root, c, req); break; }
    case 8: { Type t = pick_type(false); AT(LST_OP_ALLGATHER, N, ci, count, t.lst, t.size, LST_NONE, LST_RED_NONE); MPI_Iallgather(sb, count, t.t, rb, count, t.t, c, req); break; }
    case 9: { Type t = pick_type(false); AT(LST_OP_ALLTOALL, N, ci, count, t.lst, t.size, LST_NONE, LST_RED_NONE); MPI_Ialltoall(sb, count, t.t, rb, count, t.t, c, req); break; }
    case 10: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_SCAN, N, ci, count, t.lst, t.size, LST_NONE, o.lst); MPI_Iscan(sb, rb, count, t.t, o.op, c, req); break; }
    default: {
      switch (next() % 6) {
        case 4: {
          int total = 0;
          for (int i = 0; i < n; ++i) { ncounts[k][i] = count; ndispls[k][i] = i * count; total += count; nrcounts[k][i] = count; nrdispls[k][i] = i * count; }
          AT(LST_OP_ALLTOALLV, N | V, ci, total, LST_DT_INT32, 4, LST_NONE, LST_RED_NONE); MPI_Ialltoallv(sb, ncounts[k], ndispls[k], MPI_INT, rb, nrcounts[k], nrdispls[k], MPI_INT, c, req); break;
        }
        case 5: {
          int bytes = 0;
          for (int i = 0; i < n; ++i) { ncounts[k][i] = count; ndispls[k][i] = i * count * 4; nwtypes[k][i] = MPI_INT; bytes += count * 4; nrcounts[k][i] = count; nrdispls[k][i] = i * count * 4; }
          AT(LST_OP_ALLTOALLW, N | V | LST_F_DERIVED, ci, bytes, LST_DT_DERIVED, 1, LST_NONE, LST_RED_NONE); MPI_Ialltoallw(sb, ncounts[k], ndispls[k], nwtypes[k], rb, nrcounts[k], nrdispls[k], nwtypes[k], c, req); break;
        }
        case 0: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_EXSCAN, N, ci, count, t.lst, t.size, LST_NONE, o.lst); MPI_Iexscan(sb, rb, count, t.t, o.op, c, req); break; }
        case 1: { fill_v(n, count, nrcounts[k], nrdispls[k]); int mine = count + me; AT(LST_OP_ALLGATHERV, N | V, ci, mine, LST_DT_INT32, 4, LST_NONE, LST_RED_NONE); MPI_Iallgatherv(sb, mine, MPI_INT, rb, nrcounts[k], nrdispls[k], MPI_INT, c, req); break; }
        case 2: { Type t = pick_type(true); Op o = pick_op(); AT(LST_OP_REDUCE_SCATTER_BLOCK, N, ci, count, t.lst, t.size, LST_NONE, o.lst); MPI_Ireduce_scatter_block(sb, rb, count, t.t, o.op, c, req); break; }
        default: {
          int total = 0;
          for (int i = 0; i < n; ++i) { nrcounts[k][i] = count; total += count; }
          Op o = pick_op(); AT(LST_OP_REDUCE_SCATTER, N | V, ci, total, LST_DT_INT32, 4, LST_NONE, o.lst); MPI_Ireduce_scatter(sb, rb, nrcounts[k], MPI_INT, o.op, c, req); break;
        }
      }
      break;
    }
  }
}

void nonblocking_step() {
  int k = 1 + static_cast<int>(next() % 3);
  MPI_Request reqs[3];
  for (int i = 0; i < k; ++i) start_one(i, &reqs[i]);
  int flag = 0, index = 0, outcount = 0, indices[3];
  switch (next() % 8) {
    case 0: MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE); break;
    case 1: for (int i = 0; i < k; ++i) MPI_Wait(&reqs[i], MPI_STATUS_IGNORE); break;
    case 2: for (int i = 0; i < k; ++i) do MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE); while (!flag); break;
    case 3: do MPI_Testall(k, reqs, &flag, MPI_STATUSES_IGNORE); while (!flag); break;
    case 4: for (int i = 0; i < k; ++i) MPI_Waitany(k, reqs, &index, MPI_STATUS_IGNORE); break;
    case 5: for (int done = 0; done < k; done += outcount) MPI_Waitsome(k, reqs, &outcount, indices, MPI_STATUSES_IGNORE); break;
    case 6:
      for (int done = 0; done < k;) {
        MPI_Testany(k, reqs, &index, &flag, MPI_STATUS_IGNORE);
        if (flag && index != MPI_UNDEFINED) ++done;
      }
      break;
    default:
      for (int done = 0; done < k;) {
        MPI_Testsome(k, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
        if (outcount != MPI_UNDEFINED) done += outcount;
      }
      break;
  }
}

}  // namespace

// Point-to-point on one communicator, in a ring: every kind of send, receive and probe the tracer
// records. Even ranks send first, odd ranks receive first, so blocking pairs never deadlock.
// A blocking exchange around the ring without deadlock: the ranks that send first, then receive, and
// the others the other way round.
template <typename Send, typename Recv>
void in_order(bool send_first, Send&& send, Recv&& recv) {
  for (int pass = 0; pass < 2; ++pass) {
    if ((pass == 0) == send_first)
      send();
    else
      recv();
  }
}

void p2p_step() {
  const int ci = static_cast<int>(next() % 3);
  MPI_Comm c = g_comm[ci];
  const int n = g_size[ci], me = g_rank[ci];
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const int count = 1 + static_cast<int>(next() % 16);
  const int tag = static_cast<int>(next() % 1000);
  const bool first = me % 2 == 0;
  int kind = static_cast<int>(next() % 8);
  if (n == 1 && (kind < 2 || kind > 4)) kind = 4;  // alone: only calls that cannot wait for themselves
  const int N = LST_F_NONBLOCKING;
  int* sb = reinterpret_cast<int*>(sbuf);
  int* rb = reinterpret_cast<int*>(rbuf);
  MPI_Status st;
  // With an odd ring the last even rank and rank 0 are both "first": rank 0 then receives first.
  const bool send_first = first && !(n % 2 == 1 && me == 0);
  switch (kind) {
    case 0:
      in_order(send_first,
               [&] { P2P(LST_OP_SEND, 0, ci, count, LST_DT_INT32, 4, right, tag); MPI_Send(sb, count, MPI_INT, right, tag, c); },
               [&] { P2P(LST_OP_RECV, 0, ci, count, LST_DT_INT32, 4, left, tag); MPI_Recv(rb, count, MPI_INT, left, tag, c, &st); });
      break;
    case 1:
      in_order(send_first,
               [&] { P2P(LST_OP_SEND, 0, ci, count, LST_DT_FLOAT64, 8, right, tag); MPI_Ssend(sbuf, count, MPI_DOUBLE, right, tag, c); },
               [&] { P2P(LST_OP_RECV, 0, ci, count, LST_DT_FLOAT64, 8, LST_ANY_SOURCE, LST_ANY_TAG); MPI_Recv(rbuf, count, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st); });
      break;
    case 2: {
      // One call, two records (SEND then RECV), both at the call's line. With an odd tag the send is
      // of the derived type (3 ints each): then the SEND record alone is DERIVED.
      const bool triples = tag % 2 == 1;
      const int line = __LINE__ + 6;
      if (triples)
        expect_p2p(LST_OP_SEND, LST_F_DERIVED, ci, count, LST_DT_DERIVED, 12, right, tag, line);
      else
        expect_p2p(LST_OP_SEND, 0, ci, count, LST_DT_INT32, 4, right, tag, line);
      expect_p2p(LST_OP_RECV, 0, ci, 3 * count + 1, LST_DT_INT32, 4, left, tag, line);
      MPI_Sendrecv(sb, count, triples ? g_triple : MPI_INT, right, tag, rb, 3 * count + 1, MPI_INT, left, tag, c, &st);
      expect_pair();
      break;
    }
    case 3:
      expect_p2p(LST_OP_SEND, 0, ci, count, LST_DT_INT32, 4, right, tag + 1, __LINE__ + 2);
      expect_p2p(LST_OP_RECV, 0, ci, count, LST_DT_INT32, 4, left, tag + 1, __LINE__ + 1);
      MPI_Sendrecv_replace(rb, count, MPI_INT, right, tag + 1, left, tag + 1, c, &st);
      expect_pair();
      break;
    case 4: {
      MPI_Request reqs[2];
      P2P(LST_OP_RECV, N, ci, count, LST_DT_INT32, 4, left, tag); MPI_Irecv(rb, count, MPI_INT, left, tag, c, &reqs[0]);
      P2P(LST_OP_SEND, N, ci, count, LST_DT_INT32, 4, right, tag); MPI_Isend(sb, count, MPI_INT, right, tag, c, &reqs[1]);
      MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
      break;
    }
    case 5:
      for (int pass = 0; pass < 2; ++pass) {
        if ((pass == 0) == send_first) {
          MPI_Request r;
          P2P(LST_OP_SEND, N, ci, count, LST_DT_INT32, 4, right, tag); MPI_Issend(sb, count, MPI_INT, right, tag, c, &r);
          int flag = 0;
          do MPI_Test(&r, &flag, MPI_STATUS_IGNORE); while (!flag);
        } else {
          P2P(LST_OP_PROBE, 0, ci, 0, LST_DT_NONE, 0, left, LST_ANY_TAG); MPI_Probe(left, MPI_ANY_TAG, c, &st);
          P2P(LST_OP_RECV, 0, ci, count, LST_DT_INT32, 4, left, tag); MPI_Recv(rb, count, MPI_INT, left, tag, c, &st);
        }
      }
      break;
    case 6:
      for (int pass = 0; pass < 2; ++pass) {
        if ((pass == 0) == send_first) {
          P2P(LST_OP_SEND, 0, ci, count, LST_DT_INT32, 4, right, tag); MPI_Send(sb, count, MPI_INT, right, tag, c);
        } else {
          MPI_Message m;
          P2P(LST_OP_PROBE, 0, ci, 0, LST_DT_NONE, 0, LST_ANY_SOURCE, tag); MPI_Mprobe(MPI_ANY_SOURCE, tag, c, &m, &st);
          P2P(LST_OP_RECV, 0, ci, count, LST_DT_INT32, 4, left, tag); MPI_Mrecv(rb, count, MPI_INT, &m, &st);
        }
      }
      break;
    default:
      for (int pass = 0; pass < 2; ++pass) {
        if ((pass == 0) == send_first) {
          P2P(LST_OP_SEND, 0, ci, count, LST_DT_INT32, 4, right, tag); MPI_Send(sb, count, MPI_INT, right, tag, c);
        } else {
          // A polling loop: one PROBE record if the first poll found nothing, none otherwise.
          int flag = 0, polls = 0, line = 0;
          while (!flag) {
            line = __LINE__ + 1;
            MPI_Iprobe(left, tag, c, &flag, &st);
            ++polls;
          }
          if (polls > 1) expect_p2p(LST_OP_PROBE, N, ci, 0, LST_DT_NONE, 0, left, tag, line);
          P2P(LST_OP_RECV, 0, ci, count, LST_DT_INT32, 4, left, tag); MPI_Recv(rb, count, MPI_INT, left, tag, c, &st);
        }
      }
      // And sends to nobody: complete at once, recorded with the null peer.
      P2P(LST_OP_SEND, 0, ci, count, LST_DT_INT32, 4, LST_PROC_NULL, tag); MPI_Send(sb, count, MPI_INT, MPI_PROC_NULL, tag, c);
      P2P(LST_OP_RECV, 0, ci, count, LST_DT_INT32, 4, LST_PROC_NULL, LST_ANY_TAG); MPI_Recv(rb, count, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, c, &st);
      break;
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mpi_sequence EXPECTED_DIR STEPS\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int wrank;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  char path[4096];
  std::snprintf(path, sizeof path, "%s/rank-%d.txt", argv[1], wrank);
  g_expected = std::fopen(path, "w");
  if (!g_expected) {
    std::perror(path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Type_contiguous(3, MPI_INT, &g_triple);
  MPI_Type_commit(&g_triple);
  g_comm[W] = MPI_COMM_WORLD;
  MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &g_comm[S]);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm[D]);
  for (int i = 0; i < 3; ++i) {
    MPI_Comm_rank(g_comm[i], &g_rank[i]);
    MPI_Comm_size(g_comm[i], &g_size[i]);
  }
  std::fprintf(g_expected, "split_color %d\n", wrank % 2);
  std::memset(sbuf, 1, sizeof sbuf);
  int steps = std::atoi(argv[2]);
  for (int s = 0; s < steps; ++s) {
    const uint32_t pick = next() % 6;
    if (pick < 2) nonblocking_step();
    else if (pick == 2) p2p_step();
    else blocking_step();
  }
  std::fclose(g_expected);
  MPI_Comm_free(&g_comm[D]);
  MPI_Comm_free(&g_comm[S]);
  MPI_Type_free(&g_triple);
  MPI_Finalize();
  return 0;
}
