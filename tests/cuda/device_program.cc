// An NCCL program (on the CPU stand-in) for the device-completion tests: 2 ranks, 8 collectives on one
// stream. With the fake CUDA runtime (argument "fake") it completes the first 6 on the "device" and
// leaves the last 2 stuck, and checks that the tracer records the events of a group's members only
// once ncclGroupEnd has launched the group. Other arguments: the runtime is absent, or has no device;
// "threads" (below): many threads' collectives while the tracer's GPU thread stands still.
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "device_program: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// "threads THREADS CALLS" (fake runtime): each thread its own communicator and stream, CALLS collectives
// each while the runtime holds every event query, so the tracer's GPU thread stands still and takes
// none of the recorded events off their way to it; more than its lock-free ring holds, so the rest go
// to its locked overflow list. Then the streams run and the queries go on: every collective must end
// COMPLETED (device_check all). Exit 77 without MPI_THREAD_MULTIPLE.
int threads_main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::printf("MPI_THREAD_MULTIPLE not provided: skipped\n");
    MPI_Finalize();
    return 77;
  }
  CHECK(argc == 4);
  const int nthreads = std::atoi(argv[2]), calls = std::atoi(argv[3]);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  void* rt = dlopen(std::getenv("LOCKSTEP_CUDART"), RTLD_NOW);
  CHECK(rt != nullptr);
  auto create = reinterpret_cast<void* (*)()>(dlsym(rt, "fake_cuda_stream_create"));
  auto release = reinterpret_cast<void (*)(void*, uint64_t)>(dlsym(rt, "fake_cuda_stream_release"));
  auto recorded = reinterpret_cast<uint64_t (*)(void*)>(dlsym(rt, "fake_cuda_stream_recorded"));
  auto hold = reinterpret_cast<void (*)(int)>(dlsym(rt, "fake_cuda_hold_queries"));
  CHECK(create && release && recorded && hold);
  std::vector<ncclUniqueId> ids(nthreads);
  if (rank == 0)
    for (auto& id : ids) CHECK(ncclGetUniqueId(&id) == ncclSuccess);
  MPI_Bcast(ids.data(), int(ids.size() * sizeof(ncclUniqueId)), MPI_BYTE, 0, MPI_COMM_WORLD);
  std::vector<void*> streams(nthreads);
  for (auto& s : streams) s = create();
  hold(1);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      ncclComm_t comm = nullptr;
      if (ncclCommInitRank(&comm, size, ids[t], rank) != ncclSuccess) {
        ++failures;
        return;
      }
      float x = 1;
      for (int i = 0; i < calls; ++i)
        if (ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, static_cast<cudaStream_t>(streams[t])) !=
            ncclSuccess)
          ++failures;
      if (ncclCommDestroy(comm) != ncclSuccess) ++failures;
    });
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  for (auto* s : streams) {
    CHECK(recorded(s) == uint64_t(calls));  // one event per collective, none dropped
    release(s, uint64_t(calls));
  }
  hold(0);
  // The GPU thread polls every 50 us while collectives are in flight; exit makes a last pass too.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "threads") == 0) return threads_main(argc, argv);
  bool fake = argc > 1 && std::strcmp(argv[1], "fake") == 0;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id;
  if (rank == 0) CHECK(ncclGetUniqueId(&id) == ncclSuccess);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, size, id, rank) == ncclSuccess);

  using Create = void* (*)();
  using Release = void (*)(void*, uint64_t);
  using Recorded = uint64_t (*)(void*);
  Release release = nullptr;
  Recorded recorded = nullptr;
  cudaStream_t stream = nullptr;
  if (fake) {
    // The same library the tracer loads (dlopen by path returns the loaded instance).
    void* rt = dlopen(std::getenv("LOCKSTEP_CUDART"), RTLD_NOW);
    CHECK(rt != nullptr);
    stream = static_cast<cudaStream_t>(reinterpret_cast<Create>(dlsym(rt, "fake_cuda_stream_create"))());
    release = reinterpret_cast<Release>(dlsym(rt, "fake_cuda_stream_release"));
    recorded = reinterpret_cast<Recorded>(dlsym(rt, "fake_cuda_stream_recorded"));
    CHECK(release && recorded);
  }

  std::vector<float> buf(64, 1.0f);
  for (int i = 0; i < 4; ++i)
    CHECK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, stream) ==
          ncclSuccess);
  if (fake) {
    CHECK(recorded(stream) == 4);  // one event per collective, recorded as it returned
    release(stream, 4);
  }

  CHECK(ncclGroupStart() == ncclSuccess);
  CHECK(ncclAllReduce(buf.data(), buf.data(), 8, ncclFloat32, ncclSum, comm, stream) == ncclSuccess);
  CHECK(ncclBroadcast(buf.data(), buf.data(), 8, ncclFloat32, 0, comm, stream) == ncclSuccess);
  if (fake) CHECK(recorded(stream) == 4);  // the group has not run yet: nothing to watch
  CHECK(ncclGroupEnd() == ncclSuccess);
  if (fake) {
    CHECK(recorded(stream) == 6);
    release(stream, 2);
  }

  // Two collectives that never finish on the device: their records must stay RETURNED.
  for (int i = 0; i < 2; ++i)
    CHECK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, stream) ==
          ncclSuccess);
  if (fake) CHECK(recorded(stream) == 8);

  MPI_Barrier(MPI_COMM_WORLD);
  ncclCommDestroy(comm);
  MPI_Finalize();
  return 0;
}
