// The runtime's NCCL backend, end to end: allreduce (alone and fused), allgather and broadcast checked
// against references. With --device the buffers are cudaMalloc'ed (tests/gpu/run.sh on a GPU machine);
// with --host they are host memory, for the CPU stand-in libnccl.so.2 of tests/nccl_standin.
//   LOCKSTEP_RT_BACKEND=nccl mpirun -np 2 rt_nccl_smoke --device
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lockstep/rt.h"

namespace rt = lockstep::rt;

namespace {

bool device = false;
int failures = 0;

void* buffer(size_t bytes) {
  if (!device) return ::operator new(bytes);
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    std::exit(1);
  }
  return p;
}
void put(void* dst, const void* src, size_t bytes) {
  if (device) {
    cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  } else {
    std::memcpy(dst, src, bytes);
  }
}
void get(void* dst, const void* src, size_t bytes) {
  if (device) {
    cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  } else {
    std::memcpy(dst, src, bytes);
  }
}
void expect(bool ok, const std::string& what) {
  if (!ok && failures++ < 10) std::fprintf(stderr, "rank %d: FAILED: %s\n", rt::rank(), what.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "--device") != 0 && std::strcmp(argv[1], "--host") != 0)) {
    std::fprintf(stderr, "usage: rt_nccl_smoke --device|--host\n");
    return 2;
  }
  device = std::strcmp(argv[1], "--device") == 0;
  rt::init(&argc, &argv);
  const int rank = rt::rank(), n = rt::size();
  if (std::strcmp(rt::backend_name(), "nccl") != 0) {
    std::fprintf(stderr, "rank %d: backend is '%s', not nccl (set LOCKSTEP_RT_BACKEND=nccl)\n", rank,
                 rt::backend_name());
    return 1;
  }

  // One large f32 sum, run alone.
  const size_t big = 1 << 20;
  std::vector<float> host(big);
  for (size_t i = 0; i < big; ++i) host[i] = static_cast<float>((rank + 1) * (i % 13));
  void* d_big = buffer(big * 4);
  put(d_big, host.data(), big * 4);
  expect(rt::allreduce("smoke/big", d_big, d_big, big, rt::DType::f32, rt::ReduceOp::sum).wait().ok(),
         "big allreduce");
  get(host.data(), d_big, big * 4);
  for (size_t i = 0; i < big; ++i) {
    const size_t want = n * (n + 1) / 2 * (i % 13);  // n(n+1) is even: the division is exact
    if (host[i] != static_cast<float>(want)) {
      expect(false, "big allreduce element " + std::to_string(i));
      break;
    }
  }

  // Ten small f64 max tensors at once: fused through the device fusion buffer.
  std::vector<void*> small_in, small_out;
  std::vector<rt::Handle> hs;
  for (int t = 0; t < 10; ++t) {
    std::vector<double> v(100, static_cast<double>(rank * 10 + t));
    small_in.push_back(buffer(800));
    small_out.push_back(buffer(800));
    put(small_in.back(), v.data(), 800);
    hs.push_back(rt::allreduce("smoke/small/" + std::to_string(t), small_in.back(), small_out.back(), 100,
                               rt::DType::f64, rt::ReduceOp::max));
  }
  for (int t = 0; t < 10; ++t) {
    expect(hs[static_cast<size_t>(t)].wait().ok(), "small allreduce");
    std::vector<double> v(100);
    get(v.data(), small_out[static_cast<size_t>(t)], 800);
    expect(v[0] == (n - 1) * 10 + t && v[99] == (n - 1) * 10 + t, "fused max of tensor " + std::to_string(t));
  }

  // Allgather and broadcast.
  int32_t mine = 100 + rank;
  void* d_one = buffer(4);
  void* d_all = buffer(4 * static_cast<size_t>(n));
  put(d_one, &mine, 4);
  expect(rt::allgather("smoke/gather", d_one, d_all, 1, rt::DType::i32).wait().ok(), "allgather");
  std::vector<int32_t> all(static_cast<size_t>(n));
  get(all.data(), d_all, 4 * static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    expect(all[static_cast<size_t>(r)] == 100 + r, "allgather slot " + std::to_string(r));
  float value = rank == n - 1 ? 42.5f : -1.0f;
  void* d_b = buffer(4);
  put(d_b, &value, 4);
  expect(rt::broadcast("smoke/bcast", d_b, 1, rt::DType::f32, n - 1).wait().ok(), "broadcast");
  get(&value, d_b, 4);
  expect(value == 42.5f, "broadcast value");

  rt::finalize();
  if (failures) return 1;
  if (rank == 0) std::printf("nccl smoke ok: %d ranks, %s buffers\n", n, device ? "device" : "host");
  return 0;
}
