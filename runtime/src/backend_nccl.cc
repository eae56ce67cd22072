// The NCCL data plane (GPU): tensors are device buffers, collectives run on one stream per process and
// the background thread waits for them before completing the handles. libnccl.so.2 and libcudart are
// loaded at run time; symbols are looked up in the global scope first so that an interposing tracer
// (LD_PRELOAD) sees the runtime's NCCL calls. Without a usable GPU, buffers are host memory: that only
// works with the CPU stand-in libnccl.so.2 of tests/nccl_standin (real NCCL then fails to initialize
// and the next backend in LOCKSTEP_RT_BACKEND is tried).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backend.h"
#include "config.h"

namespace lockstep::rt::internal {

namespace {

void* lookup(void* lib, const char* name) {
  void* f = dlsym(RTLD_DEFAULT, name);
  return f ? f : (lib ? dlsym(lib, name) : nullptr);
}

struct Nccl {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
};

struct Cuda {
  decltype(&cudaGetDeviceCount) get_device_count = nullptr;
  decltype(&cudaSetDevice) set_device = nullptr;
  decltype(&cudaStreamCreate) stream_create = nullptr;
  decltype(&cudaStreamSynchronize) stream_synchronize = nullptr;
  decltype(&cudaStreamQuery) stream_query = nullptr;
  cudaError_t (*malloc)(void**, size_t) = nullptr;
  decltype(&cudaFree) free = nullptr;
  decltype(&cudaMemcpyAsync) memcpy_async = nullptr;
  decltype(&cudaGetErrorString) error_string = nullptr;
};

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::average:
      return ncclAvg;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

class NcclBackend final : public Backend {
 public:
  Nccl nccl;
  Cuda cuda;
  bool device = false;  // device buffers (a GPU is present) or host buffers (the CPU stand-in)
  cudaStream_t stream = nullptr;

  const char* name() const override { return "nccl"; }

  bool has_stream_query() const { return cuda.stream_query != nullptr; }
  Status nccl_check(ncclResult_t rc, const char* what) {
    if (rc == ncclSuccess) return {};
    return {std::string(what) + " failed: " + (nccl.error_string ? nccl.error_string(rc) : "NCCL error")};
  }
  Status finish(ncclResult_t rc, const char* what) {
    Status s = nccl_check(rc, what);
    if (!s.ok() || !device) return s;
    // Polled rather than synchronized, so that the control plane is answered while the collective
    // runs and a peer that died inside it is named (cudaStreamSynchronize would block, spinning).
    const auto started = std::chrono::steady_clock::now();
    cudaError_t e = cudaErrorNotReady;
    while (has_stream_query() && (e = cuda.stream_query(stream)) == cudaErrorNotReady) {
      if (waiter_) {
        waiter_->between_polls(started);
      } else {
        std::this_thread::yield();
      }
    }
    if (!has_stream_query()) e = cuda.stream_synchronize(stream);
    if (e != cudaSuccess)
      s.message = std::string("waiting for the NCCL stream failed: ") + cuda.error_string(e);
    return s;
  }

  Status add_set(SetComm& set) override {
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (set.rank == 0) {
      Status s = nccl_check(nccl.get_unique_id(&id), "ncclGetUniqueId");
      if (!s.ok()) return s;
    }
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, set.data);
    ncclComm_t comm = nullptr;
    Status s = nccl_check(nccl.comm_init_rank(&comm, set.size(), id, set.rank), "ncclCommInitRank");
    if (s.ok()) set.backend_comm = comm;
    return s;
  }
  void remove_set(SetComm& set) override {
    if (set.backend_comm) nccl.comm_destroy(static_cast<ncclComm_t>(set.backend_comm));
    set.backend_comm = nullptr;
  }

  Status allreduce(SetComm& set, const void* in, void* out, size_t count, DType dtype, ReduceOp op) override {
    return finish(nccl.all_reduce(in, out, count, nccl_type(dtype), nccl_op(op),
                                  static_cast<ncclComm_t>(set.backend_comm), stream),
                  "ncclAllReduce");
  }
  Status allgather(SetComm& set, const void* in, void* out, size_t count, DType dtype) override {
    return finish(
        nccl.all_gather(in, out, count, nccl_type(dtype), static_cast<ncclComm_t>(set.backend_comm), stream),
        "ncclAllGather");
  }
  Status broadcast(SetComm& set, void* buf, size_t count, DType dtype, int root) override {
    return finish(nccl.broadcast(buf, buf, count, nccl_type(dtype), root,
                                 static_cast<ncclComm_t>(set.backend_comm), stream),
                  "ncclBroadcast");
  }

  void* alloc(size_t bytes) override {
    if (!device) return ::operator new(bytes);
    void* p = nullptr;
    if (cuda.malloc(&p, bytes) != cudaSuccess) fatal("cudaMalloc of the fusion buffer failed");
    return p;
  }
  void release(void* p) override {
    if (!device) {
      ::operator delete(p);
    } else {
      cuda.free(p);
    }
  }
  Status copy(void* dst, const void* src, size_t bytes) override {
    if (!device) {
      std::memcpy(dst, src, bytes);
      return {};
    }
    const cudaError_t e = cuda.memcpy_async(dst, src, bytes, cudaMemcpyDefault, stream);
    if (e != cudaSuccess) return {std::string("cudaMemcpyAsync failed: ") + cuda.error_string(e)};
    return {};
  }
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(std::string* why_not) {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
  if (!lib && !dlsym(RTLD_DEFAULT, "ncclAllReduce")) {
    *why_not = std::string("libnccl.so.2 not found (") + dlerror() + ")";
    return nullptr;
  }
  auto b = std::make_unique<NcclBackend>();
  Nccl& n = b->nccl;
  n.get_unique_id = reinterpret_cast<decltype(n.get_unique_id)>(lookup(lib, "ncclGetUniqueId"));
  n.comm_init_rank = reinterpret_cast<decltype(n.comm_init_rank)>(lookup(lib, "ncclCommInitRank"));
  n.comm_destroy = reinterpret_cast<decltype(n.comm_destroy)>(lookup(lib, "ncclCommDestroy"));
  n.all_reduce = reinterpret_cast<decltype(n.all_reduce)>(lookup(lib, "ncclAllReduce"));
  n.all_gather = reinterpret_cast<decltype(n.all_gather)>(lookup(lib, "ncclAllGather"));
  n.broadcast = reinterpret_cast<decltype(n.broadcast)>(lookup(lib, "ncclBroadcast"));
  n.error_string = reinterpret_cast<decltype(n.error_string)>(lookup(lib, "ncclGetErrorString"));
  if (!n.get_unique_id || !n.comm_init_rank || !n.comm_destroy || !n.all_reduce || !n.all_gather ||
      !n.broadcast) {
    *why_not = "libnccl.so.2 lacks a function the runtime needs";
    return nullptr;
  }

  // A GPU makes buffers device memory; the CUDA runtime is optional only for the host stand-in.
  void* cudart = nullptr;
  for (const char* so : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    if ((cudart = dlopen(so, RTLD_NOW | RTLD_GLOBAL))) break;
  }
  Cuda& c = b->cuda;
  if (cudart) {
    c.get_device_count = reinterpret_cast<decltype(c.get_device_count)>(lookup(cudart, "cudaGetDeviceCount"));
    c.set_device = reinterpret_cast<decltype(c.set_device)>(lookup(cudart, "cudaSetDevice"));
    c.stream_create = reinterpret_cast<decltype(c.stream_create)>(lookup(cudart, "cudaStreamCreate"));
    c.stream_synchronize =
        reinterpret_cast<decltype(c.stream_synchronize)>(lookup(cudart, "cudaStreamSynchronize"));
    c.stream_query = reinterpret_cast<decltype(c.stream_query)>(lookup(cudart, "cudaStreamQuery"));
    c.malloc = reinterpret_cast<decltype(c.malloc)>(lookup(cudart, "cudaMalloc"));
    c.free = reinterpret_cast<decltype(c.free)>(lookup(cudart, "cudaFree"));
    c.memcpy_async = reinterpret_cast<decltype(c.memcpy_async)>(lookup(cudart, "cudaMemcpyAsync"));
    c.error_string = reinterpret_cast<decltype(c.error_string)>(lookup(cudart, "cudaGetErrorString"));
  }
  int devices = 0;
  if (c.get_device_count && c.set_device && c.stream_create && c.stream_synchronize && c.malloc && c.free &&
      c.memcpy_async && c.error_string && c.get_device_count(&devices) == cudaSuccess && devices > 0) {
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    const int local_rank = local ? static_cast<int>(std::strtol(local, nullptr, 10)) : 0;
    if (c.set_device(local_rank % devices) != cudaSuccess || c.stream_create(&b->stream) != cudaSuccess) {
      *why_not = "could not select a CUDA device or create a stream";
      return nullptr;
    }
    b->device = true;
  }
  return b;
}

}  // namespace lockstep::rt::internal
