// The GPU check's workload (tests/gpu/run.sh): one rank on GPU 0 calls every NCCL collective once on
// device buffers, then, with --bench N, times N small ncclAllReduce calls on the host, and N more made
// straight to libnccl.so.2's own ncclAllReduce, past any interposer, in alternating batches of the
// same process: what the tracer adds per call is their difference, measured where both kinds of call
// meet the same machine state (separate processes differ by more than the tracer costs).
//   nccl_all_collectives [--bypass] [--bench N]
// --bypass calls NCCL through dlopen/dlsym of libnccl.so.2 itself, past any interposer, as a program
// with a statically linked NCCL would. Prints "collectives=K" (the calls made before the benchmark)
// and "bench ..." (host_ns_per_call: the median batch of the calls made the normal way; direct_ns_per_call:
// of the direct ones; added_ns_per_call: the median of each round's difference). Exit 0 on success.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "nccl_all_collectives: %s: %s\n", #call, cudaGetErrorString(e_)); \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)
#define NCCL_OK(call)                                                                        \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      std::fprintf(stderr, "nccl_all_collectives: %s: %s\n", #call, ncclGetErrorString(r_)); \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

static double now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// Every NCCL entry point used, resolved once: through the normal symbol lookup (an LD_PRELOADed
// interposer first) or, with --bypass, from libnccl.so.2's own handle.
#define NCCL_FUNCS(X)  \
  X(ncclCommInitAll)   \
  X(ncclCommDestroy)   \
  X(ncclAllReduce)     \
  X(ncclBroadcast)     \
  X(ncclReduce)        \
  X(ncclAllGather)     \
  X(ncclReduceScatter) \
  X(ncclAlltoAll)      \
  X(ncclGather)        \
  X(ncclScatter)       \
  X(ncclSend)          \
  X(ncclRecv)          \
  X(ncclGroupStart)    \
  X(ncclGroupEnd)
#define DECLARE(fn) static decltype(&::fn) p_##fn = nullptr;
NCCL_FUNCS(DECLARE)

// libnccl.so.2's own ncclAllReduce, whatever is preloaded: the benchmark's baseline.
using AllReduceFn = decltype(&::ncclAllReduce);
static AllReduceFn p_direct_allreduce = nullptr;

static bool resolve(bool bypass) {
  void* own = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!own) return false;
  void* h = bypass ? own : RTLD_DEFAULT;  // a null handle: not an error
  bool ok = true;
#define RESOLVE(fn) ok = ok && (p_##fn = reinterpret_cast<decltype(&::fn)>(dlsym(h, #fn))) != nullptr;
  NCCL_FUNCS(RESOLVE)
  p_direct_allreduce = reinterpret_cast<AllReduceFn>(dlsym(own, "ncclAllReduce"));
  return ok && p_direct_allreduce;
}
#define ncclCommInitAll p_ncclCommInitAll
#define ncclCommDestroy p_ncclCommDestroy
#define ncclAllReduce p_ncclAllReduce
#define ncclBroadcast p_ncclBroadcast
#define ncclReduce p_ncclReduce
#define ncclAllGather p_ncclAllGather
#define ncclReduceScatter p_ncclReduceScatter
#define ncclAlltoAll p_ncclAlltoAll
#define ncclGather p_ncclGather
#define ncclScatter p_ncclScatter
#define ncclSend p_ncclSend
#define ncclRecv p_ncclRecv
#define ncclGroupStart p_ncclGroupStart
#define ncclGroupEnd p_ncclGroupEnd

int main(int argc, char** argv) {
  long bench = 0;
  bool bypass = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bypass") == 0) bypass = true;
    if (std::strcmp(argv[i], "--bench") == 0 && i + 1 < argc) bench = std::atol(argv[++i]);
  }
  if (!resolve(bypass)) {
    std::fprintf(stderr, "nccl_all_collectives: cannot resolve the NCCL API: %s\n", dlerror());
    return 1;
  }
  constexpr size_t kCount = 1 << 20;
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float *send = nullptr, *recv = nullptr;
  CUDA_OK(cudaMalloc(&send, kCount * sizeof(float)));
  CUDA_OK(cudaMalloc(&recv, kCount * sizeof(float)));
  CUDA_OK(cudaMemset(send, 0, kCount * sizeof(float)));
  ncclComm_t comm;
  int dev = 0;
  NCCL_OK(ncclCommInitAll(&comm, 1, &dev));

  int calls = 0;
  NCCL_OK(ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, s));
  ++calls;
  // Average over floats is a pre-multiplied sum: one rank runs it as a kernel, not a copy.
  NCCL_OK(ncclAllReduce(send, recv, kCount, ncclFloat32, ncclAvg, comm, s));
  ++calls;
  NCCL_OK(ncclBroadcast(send, recv, kCount, ncclFloat32, 0, comm, s));
  ++calls;
  NCCL_OK(ncclReduce(send, recv, kCount, ncclFloat32, ncclMax, 0, comm, s));
  ++calls;
  NCCL_OK(ncclAllGather(send, recv, kCount, ncclFloat32, comm, s));
  ++calls;
  NCCL_OK(ncclReduceScatter(send, recv, kCount, ncclFloat32, ncclSum, comm, s));
  ++calls;
  NCCL_OK(ncclAlltoAll(send, recv, kCount, ncclFloat32, comm, s));
  ++calls;
  NCCL_OK(ncclGather(send, recv, kCount, ncclFloat32, 0, comm, s));
  ++calls;
  NCCL_OK(ncclScatter(send, recv, kCount, ncclFloat32, 0, comm, s));
  ++calls;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(send, kCount, ncclFloat32, 0, comm, s));
  ++calls;
  NCCL_OK(ncclRecv(recv, kCount, ncclFloat32, 0, comm, s));
  ++calls;
  NCCL_OK(ncclGroupEnd());
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(send, recv, 4096, ncclBfloat16, ncclSum, comm, s));
  ++calls;
  NCCL_OK(ncclAllReduce(recv, recv, 4096, ncclInt32, ncclMin, comm, s));
  ++calls;
  NCCL_OK(ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s));
  std::printf("collectives=%d\n", calls);

  if (bench > 0) {
    // Host time of the calls alone, in batches that the device drains between them (so the launch
    // queue never fills and blocks a call). Each round times a batch of each kind, the order flipped
    // every round; e2e is the normal calls' time with the device's share, per call.
    constexpr long kBatch = 50;
    std::vector<double> normal, direct, added;
    double e2e_ns = 0;
    auto batch = [&](bool is_normal) -> int {
      const AllReduceFn fn = is_normal ? ncclAllReduce : p_direct_allreduce;
      const double t0 = now_ns();
      for (long i = 0; i < kBatch; ++i) NCCL_OK(fn(send, recv, 256, ncclFloat32, ncclSum, comm, s));
      (is_normal ? normal : direct).push_back((now_ns() - t0) / kBatch);
      CUDA_OK(cudaStreamSynchronize(s));
      if (is_normal) e2e_ns += now_ns() - t0;
      return 0;
    };
    for (long done = 0, round = 0; done < bench; done += kBatch, ++round) {
      const bool normal_first = round % 2 == 0;
      if (batch(normal_first) || batch(!normal_first)) return 1;
      added.push_back(normal.back() - direct.back());
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf(
        "bench calls=%ld host_ns_per_call=%.0f direct_ns_per_call=%.0f added_ns_per_call=%.0f "
        "e2e_ns_per_call=%.0f\n",
        static_cast<long>(normal.size()) * kBatch, median(normal), median(direct), median(added),
        e2e_ns / static_cast<double>(normal.size() * kBatch));
  }
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaFree(send));
  CUDA_OK(cudaFree(recv));
  CUDA_OK(cudaStreamDestroy(s));
  return 0;
}
