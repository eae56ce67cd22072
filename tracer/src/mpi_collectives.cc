// The MPI collectives: one argument mapper per family, so that a blocking call and its MPI_I* twin
// record alike, and every wrapper is PASSTHROUGH plus the record helper of its kind (mpi_common.h).
#include "mpi_common.h"

namespace lockstep::trace::mpi {
namespace {

inline int32_t my_rank(const CollectiveArgs& a) noexcept { return a.comm ? a.comm->rank : 0; }
inline int32_t comm_size(const CollectiveArgs& a) noexcept {
  return a.comm && a.comm->size > 0 ? a.comm->size : 0;
}

// A root as the caller gave it (an invalid one too: the checker names it), with the intercommunicator
// roles in trace terms. LST_NONE stays "no root" only for the operations that have none.
inline int32_t root_of(int root) noexcept {
  if (root == MPI_ROOT) return LST_ROOT;
  if (root == MPI_PROC_NULL) return LST_PROC_NULL;
  return root;
}

int64_t sum(const int* counts, int n) noexcept {
  int64_t s = 0;
  if (counts)
    for (int i = 0; i < n; ++i) s += counts[i];
  return s;
}

CollectiveArgs bcast_args(int count, MPI_Datatype dt, int root, MPI_Comm comm) noexcept {
  CollectiveArgs a = args(LST_OP_BCAST, comm, count, dt);
  a.root_or_peer = root_of(root);
  return a;
}

// Reduce (root >= 0), Allreduce, Scan, Exscan, Reduce_scatter_block.
CollectiveArgs reduce_args(uint8_t lst_op, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                           int root = LST_NONE) noexcept {
  CollectiveArgs a = args(lst_op, comm, count, dt);
  a.redop = redop_of(op);
  a.root_or_peer = root_of(root);
  return a;
}

// Gather, Allgather, Alltoall: this rank's send count (with MPI_IN_PLACE: its receive count).
CollectiveArgs gather_args(uint8_t op, const void* sbuf, int scount, MPI_Datatype stype, int rcount,
                           MPI_Datatype rtype, MPI_Comm comm, int root = LST_NONE) noexcept {
  const bool in_place = sbuf == MPI_IN_PLACE;
  CollectiveArgs a = args(op, comm, in_place ? rcount : scount, in_place ? rtype : stype);
  a.root_or_peer = root_of(root);
  return a;
}

// Gatherv, Allgatherv, Scatterv: this rank's count, or with MPI_IN_PLACE its own entry of the counts
// array the call was given.
CollectiveArgs vcounts_args(uint8_t op, int count, MPI_Datatype dt, bool in_place, const int counts[],
                            int root, MPI_Comm comm) noexcept {
  CollectiveArgs a = args(op, comm, count, dt);
  if (in_place && counts) a.count = static_cast<uint64_t>(counts[my_rank(a)]);
  a.flags |= LST_F_VCOUNTS;
  a.root_or_peer = root_of(root);
  return a;
}

// Gatherv, Allgatherv: this rank's send count (with MPI_IN_PLACE: its own entry of recvcounts).
CollectiveArgs gatherv_args(uint8_t op, const void* sbuf, int scount, MPI_Datatype stype, const int rcounts[],
                            MPI_Datatype rtype, MPI_Comm comm, int root = LST_NONE) noexcept {
  const bool in_place = sbuf == MPI_IN_PLACE;
  return vcounts_args(op, scount, in_place ? rtype : stype, in_place, rcounts, root, comm);
}

// Scatter: this rank's receive count (the root with MPI_IN_PLACE: its send count).
CollectiveArgs scatter_args(int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
                            int root, MPI_Comm comm) noexcept {
  const bool in_place = rbuf == MPI_IN_PLACE;
  CollectiveArgs a = args(LST_OP_SCATTER, comm, in_place ? scount : rcount, in_place ? stype : rtype);
  a.root_or_peer = root_of(root);
  return a;
}

// Scatterv: only the root sends, so every rank records what it receives.
CollectiveArgs scatterv_args(const int scounts[], MPI_Datatype stype, void* rbuf, int rcount,
                             MPI_Datatype rtype, int root, MPI_Comm comm) noexcept {
  const bool in_place = rbuf == MPI_IN_PLACE;
  return vcounts_args(LST_OP_SCATTERV, rcount, in_place ? stype : rtype, in_place, scounts, root, comm);
}

// Alltoallv: the total this rank sends (sum of its send counts).
CollectiveArgs alltoallv_args(const void* sbuf, const int scounts[], MPI_Datatype stype, const int rcounts[],
                              MPI_Datatype rtype, MPI_Comm comm) noexcept {
  const bool in_place = sbuf == MPI_IN_PLACE;
  CollectiveArgs a = args(LST_OP_ALLTOALLV, comm, 0, in_place ? rtype : stype);
  a.count = static_cast<uint64_t>(sum(in_place ? rcounts : scounts, comm_size(a)));
  a.flags |= LST_F_VCOUNTS;
  return a;
}

// Alltoallw: the bytes this rank sends, as a derived-type record of 1-byte elements.
CollectiveArgs alltoallw_args(const void* sbuf, const int scounts[], const MPI_Datatype stypes[],
                              const int rcounts[], const MPI_Datatype rtypes[], MPI_Comm comm) noexcept {
  CollectiveArgs a = args(LST_OP_ALLTOALLW, comm, 0, nullptr);
  const bool in_place = sbuf == MPI_IN_PLACE;
  const int* counts = in_place ? rcounts : scounts;
  const MPI_Datatype* types = in_place ? rtypes : stypes;
  int64_t bytes = 0;
  if (counts && types)
    for (int i = 0; i < comm_size(a); ++i) {
      int sz = 0;
      if (counts[i] > 0) REAL(MPI_Type_size)(types[i], &sz);
      bytes += static_cast<int64_t>(counts[i]) * sz;
    }
  a.count = static_cast<uint64_t>(bytes);
  a.dtype = LST_DT_DERIVED;
  a.dtype_size = 1;
  a.flags |= LST_F_VCOUNTS | LST_F_DERIVED;
  return a;
}

// Reduce_scatter: the elements this rank contributes (the sum of recvcounts, equal on every rank).
CollectiveArgs reduce_scatter_args(const int rcounts[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm) noexcept {
  CollectiveArgs a = args(LST_OP_REDUCE_SCATTER, comm, 0, dt);
  a.count = static_cast<uint64_t>(sum(rcounts, comm_size(a)));
  a.redop = redop_of(op);
  a.flags |= LST_F_VCOUNTS;
  return a;
}

}  // namespace
}  // namespace lockstep::trace::mpi

// ---- families of one signature: the blocking call and its MPI_I* twin from one body ----------------

// (sendbuf, recvbuf, count, datatype, op, comm): Allreduce, Scan, Exscan, Reduce_scatter_block.
#define REDUCING(BLOCKING, NONBLOCKING, LST_OP)                                                    \
  WRAP_EXPORT int BLOCKING(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op,    \
                           MPI_Comm comm) {                                                        \
    PASSTHROUGH(BLOCKING, sbuf, rbuf, count, dt, op, comm);                                        \
    return blocking(reduce_args(LST_OP, count, dt, op, comm), caller,                              \
                    CALL_REAL(sbuf, rbuf, count, dt, op, comm));                                   \
  }                                                                                                \
  WRAP_EXPORT int NONBLOCKING(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op, \
                              MPI_Comm comm, MPI_Request* req) {                                   \
    PASSTHROUGH(NONBLOCKING, sbuf, rbuf, count, dt, op, comm, req);                                \
    return nonblocking(reduce_args(LST_OP, count, dt, op, comm), caller, req,                      \
                       CALL_REAL(sbuf, rbuf, count, dt, op, comm, req));                           \
  }
REDUCING(MPI_Allreduce, MPI_Iallreduce, LST_OP_ALLREDUCE)
REDUCING(MPI_Scan, MPI_Iscan, LST_OP_SCAN)
REDUCING(MPI_Exscan, MPI_Iexscan, LST_OP_EXSCAN)
REDUCING(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, LST_OP_REDUCE_SCATTER_BLOCK)

// (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm): Allgather, Alltoall.
#define EVERY_TO_EVERY(BLOCKING, NONBLOCKING, LST_OP)                                                   \
  WRAP_EXPORT int BLOCKING(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,    \
                           MPI_Datatype rtype, MPI_Comm comm) {                                         \
    PASSTHROUGH(BLOCKING, sbuf, scount, stype, rbuf, rcount, rtype, comm);                              \
    return blocking(gather_args(LST_OP, sbuf, scount, stype, rcount, rtype, comm), caller,              \
                    CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, comm));                         \
  }                                                                                                     \
  WRAP_EXPORT int NONBLOCKING(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, \
                              MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req) {                    \
    PASSTHROUGH(NONBLOCKING, sbuf, scount, stype, rbuf, rcount, rtype, comm, req);                      \
    return nonblocking(gather_args(LST_OP, sbuf, scount, stype, rcount, rtype, comm), caller, req,      \
                       CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, comm, req));                 \
  }
EVERY_TO_EVERY(MPI_Allgather, MPI_Iallgather, LST_OP_ALLGATHER)
EVERY_TO_EVERY(MPI_Alltoall, MPI_Ialltoall, LST_OP_ALLTOALL)

// ---- the other collectives: blocking, then nonblocking ---------------------------------------------

WRAP_EXPORT int MPI_Barrier(MPI_Comm comm) {
  PASSTHROUGH(MPI_Barrier, comm);
  return blocking(args(LST_OP_BARRIER, comm, 0, nullptr), caller, CALL_REAL(comm));
}

WRAP_EXPORT int MPI_Bcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Bcast, buf, count, dt, root, comm);
  return blocking(bcast_args(count, dt, root, comm), caller, CALL_REAL(buf, count, dt, root, comm));
}

WRAP_EXPORT int MPI_Reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                           MPI_Comm comm) {
  PASSTHROUGH(MPI_Reduce, sbuf, rbuf, count, dt, op, root, comm);
  return blocking(reduce_args(LST_OP_REDUCE, count, dt, op, comm, root), caller,
                  CALL_REAL(sbuf, rbuf, count, dt, op, root, comm));
}

WRAP_EXPORT int MPI_Gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                           MPI_Datatype rtype, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Gather, sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
  return blocking(gather_args(LST_OP_GATHER, sbuf, scount, stype, rcount, rtype, comm, root), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

WRAP_EXPORT int MPI_Gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int rcounts[],
                            const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Gatherv, sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
  return blocking(gatherv_args(LST_OP_GATHERV, sbuf, scount, stype, rcounts, rtype, comm, root), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm));
}

WRAP_EXPORT int MPI_Scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                            MPI_Datatype rtype, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Scatter, sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
  return blocking(scatter_args(scount, stype, rbuf, rcount, rtype, root, comm), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

WRAP_EXPORT int MPI_Scatterv(const void* sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                             void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm) {
  PASSTHROUGH(MPI_Scatterv, sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
  return blocking(scatterv_args(scounts, stype, rbuf, rcount, rtype, root, comm), caller,
                  CALL_REAL(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm));
}

WRAP_EXPORT int MPI_Allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                               const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm) {
  PASSTHROUGH(MPI_Allgatherv, sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
  return blocking(gatherv_args(LST_OP_ALLGATHERV, sbuf, scount, stype, rcounts, rtype, comm), caller,
                  CALL_REAL(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

WRAP_EXPORT int MPI_Alltoallv(const void* sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                              void* rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                              MPI_Comm comm) {
  PASSTHROUGH(MPI_Alltoallv, sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
  return blocking(alltoallv_args(sbuf, scounts, stype, rcounts, rtype, comm), caller,
                  CALL_REAL(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
}

WRAP_EXPORT int MPI_Alltoallw(const void* sbuf, const int scounts[], const int sdispls[],
                              const MPI_Datatype stypes[], void* rbuf, const int rcounts[],
                              const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm) {
  PASSTHROUGH(MPI_Alltoallw, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm);
  return blocking(alltoallw_args(sbuf, scounts, stypes, rcounts, rtypes, comm), caller,
                  CALL_REAL(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm));
}

WRAP_EXPORT int MPI_Reduce_scatter(const void* sbuf, void* rbuf, const int rcounts[], MPI_Datatype dt,
                                   MPI_Op op, MPI_Comm comm) {
  PASSTHROUGH(MPI_Reduce_scatter, sbuf, rbuf, rcounts, dt, op, comm);
  return blocking(reduce_scatter_args(rcounts, dt, op, comm), caller,
                  CALL_REAL(sbuf, rbuf, rcounts, dt, op, comm));
}

WRAP_EXPORT int MPI_Ibarrier(MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ibarrier, comm, req);
  return nonblocking(args(LST_OP_BARRIER, comm, 0, nullptr), caller, req, CALL_REAL(comm, req));
}

WRAP_EXPORT int MPI_Ibcast(void* buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ibcast, buf, count, dt, root, comm, req);
  return nonblocking(bcast_args(count, dt, root, comm), caller, req,
                     CALL_REAL(buf, count, dt, root, comm, req));
}

WRAP_EXPORT int MPI_Ireduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                            MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ireduce, sbuf, rbuf, count, dt, op, root, comm, req);
  return nonblocking(reduce_args(LST_OP_REDUCE, count, dt, op, comm, root), caller, req,
                     CALL_REAL(sbuf, rbuf, count, dt, op, root, comm, req));
}

WRAP_EXPORT int MPI_Igather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                            MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Igather, sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
  return nonblocking(gather_args(LST_OP_GATHER, sbuf, scount, stype, rcount, rtype, comm, root), caller, req,
                     CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req));
}

WRAP_EXPORT int MPI_Igatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                             const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                             MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Igatherv, sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req);
  return nonblocking(gatherv_args(LST_OP_GATHERV, sbuf, scount, stype, rcounts, rtype, comm, root), caller,
                     req, CALL_REAL(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req));
}

WRAP_EXPORT int MPI_Iscatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                             MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Iscatter, sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
  return nonblocking(scatter_args(scount, stype, rbuf, rcount, rtype, root, comm), caller, req,
                     CALL_REAL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req));
}

WRAP_EXPORT int MPI_Iscatterv(const void* sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                              void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                              MPI_Request* req) {
  PASSTHROUGH(MPI_Iscatterv, sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req);
  return nonblocking(scatterv_args(scounts, stype, rbuf, rcount, rtype, root, comm), caller, req,
                     CALL_REAL(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req));
}

WRAP_EXPORT int MPI_Iallgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                                const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm,
                                MPI_Request* req) {
  PASSTHROUGH(MPI_Iallgatherv, sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);
  return nonblocking(gatherv_args(LST_OP_ALLGATHERV, sbuf, scount, stype, rcounts, rtype, comm), caller, req,
                     CALL_REAL(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req));
}

WRAP_EXPORT int MPI_Ialltoallv(const void* sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                               void* rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                               MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ialltoallv, sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req);
  return nonblocking(alltoallv_args(sbuf, scounts, stype, rcounts, rtype, comm), caller, req,
                     CALL_REAL(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req));
}

WRAP_EXPORT int MPI_Ialltoallw(const void* sbuf, const int scounts[], const int sdispls[],
                               const MPI_Datatype stypes[], void* rbuf, const int rcounts[],
                               const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
                               MPI_Request* req) {
  PASSTHROUGH(MPI_Ialltoallw, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, req);
  return nonblocking(alltoallw_args(sbuf, scounts, stypes, rcounts, rtypes, comm), caller, req,
                     CALL_REAL(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, req));
}

WRAP_EXPORT int MPI_Ireduce_scatter(const void* sbuf, void* rbuf, const int rcounts[], MPI_Datatype dt,
                                    MPI_Op op, MPI_Comm comm, MPI_Request* req) {
  PASSTHROUGH(MPI_Ireduce_scatter, sbuf, rbuf, rcounts, dt, op, comm, req);
  return nonblocking(reduce_scatter_args(rcounts, dt, op, comm), caller, req,
                     CALL_REAL(sbuf, rbuf, rcounts, dt, op, comm, req));
}
