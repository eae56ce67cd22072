// NCCL point to point (run on the CPU NCCL stand-in): rank 0 sends to rank 1, but rank 1 receives from
// rank 2, which sends nothing. MPI point-to-point calls are not traced, so this scenario uses NCCL's.
#include <mpi.h>
#include <nccl.h>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id;
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, size, id, rank) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommInitRank failed\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  float buf[16] = {0};
  if (rank == 0) ncclSend(buf, 16, ncclFloat32, 1, comm, nullptr);
  if (rank == 1) ncclRecv(buf, 16, ncclFloat32, 2, comm, nullptr);
  MPI_Finalize();
  return 0;
}
