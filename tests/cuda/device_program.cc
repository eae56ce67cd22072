// An NCCL program (on the CPU stand-in) for the device-completion tests: 2 ranks, 8 collectives on one
// stream. With the fake CUDA runtime (argument "fake") it completes the first 6 on the "device" and
// leaves the last 2 stuck, and checks that the tracer records the events of a group's members only
// once ncclGroupEnd has launched the group. Other arguments: the runtime is absent, or has no device.
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "device_program: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

int main(int argc, char** argv) {
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
