// Local API failures that abort or return (NCCLCHECK and CUDACHECK macros, MPI error codes) are not
// conditional collectives: see collective-after-error-exit, off by default.
#include <mpi.h>
#include <nccl.h>

#define CUDACHECK(cmd) do { cudaError_t e = cmd; if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); exit(1); } } while (0)
#define NCCLCHECK(cmd) do { ncclResult_t r = cmd; if (r != ncclSuccess) { printf("%s\n", ncclGetErrorString(r)); exit(1); } } while (0)

int run(float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  CUDACHECK(cudaSetDevice(rank % 8));
  void* scratch = 0;
  CUDACHECK(cudaMalloc(&scratch, n));
  NCCLCHECK(ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s));
  int err = MPI_Barrier(MPI_COMM_WORLD);
  if (err != MPI_SUCCESS) return err;
  NCCLCHECK(ncclBroadcast(dev, dev, n, ncclFloat, 0, comm, s));
  return 0;
}
