// Several threads per rank, each with its own NCCL communicator (its own unique id), issuing
// collectives at the same time: `trace_check threads` then checks that every call is in the trace
// exactly once, in each communicator's order. Needs MPI_THREAD_MULTIPLE (exit 77 = skipped without).
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3) {
    if (rank == 0) std::fprintf(stderr, "usage: %s THREADS CALLS\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) std::printf("MPI_THREAD_MULTIPLE not provided: skipped\n");
    MPI_Finalize();
    return 77;
  }
  const int nthreads = std::atoi(argv[1]), calls = std::atoi(argv[2]);
  std::vector<ncclUniqueId> ids(nthreads);
  if (rank == 0)
    for (auto& id : ids) ncclGetUniqueId(&id);
  MPI_Bcast(ids.data(), int(ids.size() * sizeof(ncclUniqueId)), MPI_BYTE, 0, MPI_COMM_WORLD);

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      ncclComm_t comm = nullptr;
      // Odd threads create theirs with ncclCommInitRankScalable, which takes an array of ids.
      const ncclResult_t init = t % 2 ? ncclCommInitRankScalable(&comm, size, rank, 1, &ids[t], nullptr)
                                      : ncclCommInitRank(&comm, size, ids[t], rank);
      if (init != ncclSuccess) {
        ++failures;
        return;
      }
      // Thread t's collectives have t + 1 elements: the checker tells the communicators apart by it.
      const size_t count = size_t(t) + 1;
      std::vector<float> in(count * size, float(rank + 1)), out(count * size);
      for (int i = 0; i < calls; ++i) {
        ncclResult_t rc =
            i % 2 == 0 ? ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr)
                       : ncclAllGather(in.data(), out.data(), count, ncclFloat32, comm, nullptr);
        const float want = i % 2 == 0 ? float(size * (size + 1)) / 2 : float(size);
        const float got = i % 2 == 0 ? out[count - 1] : out.back();  // allgather: the last rank's block
        if (rc != ncclSuccess || got != want) ++failures;
      }
      if (ncclCommDestroy(comm) != ncclSuccess) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  int local = failures.load(), total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d failures\n", total ? "FAIL" : "PASS", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
