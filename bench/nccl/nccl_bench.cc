// Added cost per intercepted NCCL call, in one process: ncclAllReduce of one float on a one-rank
// communicator of the CPU stand-in (tests/nccl_standin), through liblockstep_trace.so (linked first,
// so ncclAllReduce resolves to the tracer) against the stand-in's own ncclAllReduce called directly.
// The same call inside ncclGroupStart/ncclGroupEnd (a group of one, as a framework's coalesced
// collectives are issued), direct and intercepted: the group's start and end pass through the tracer too.
// Four child processes: tracing off, tracing on (a growing file), tracing on into a ring of 65,536
// records (the MPI paths' figures are a ring's: bench/tracer/path_time.sh), and tracing on with
// LOCKSTEP_TRACE_STACK=8 (the tracer reads its environment when it is loaded).
//   bench_nccl [google benchmark flags]
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <stdlib.h>

#include <cstdio>
#include <string>

#include "../common/tracer_modes.h"

namespace {

using AllReduceFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                     cudaStream_t);
using GroupFn = ncclResult_t (*)();
ncclComm_t g_comm = nullptr;
AllReduceFn g_direct = nullptr;
GroupFn g_group_start = nullptr, g_group_end = nullptr;

// One ncclAllReduce per iteration, alone or as a group of one: the stand-in's own functions (direct)
// or the names the tracer intercepts.
template <bool kGrouped>
void BM_direct(benchmark::State& state) {
  float x = 1, y = 0;
  for (auto _ : state) {
    if constexpr (kGrouped) g_group_start();
    g_direct(&x, &y, 1, ncclFloat32, ncclSum, g_comm, nullptr);
    if constexpr (kGrouped) g_group_end();
    benchmark::DoNotOptimize(y);
  }
}

template <bool kGrouped>
void BM_intercepted(benchmark::State& state) {
  float x = 1, y = 0;
  for (auto _ : state) {
    if constexpr (kGrouped) ncclGroupStart();
    ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, g_comm, nullptr);
    if constexpr (kGrouped) ncclGroupEnd();
    benchmark::DoNotOptimize(y);
  }
}

// Fixed iterations keep the trace file bounded (64 bytes per record).
constexpr int kIterations = 300000;

int child(int argc, char** argv, const char* mode) {
  MPI_Init(&argc, &argv);
  void* nccl = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  g_direct = nccl ? reinterpret_cast<AllReduceFn>(dlsym(nccl, "ncclAllReduce")) : nullptr;
  g_group_start = nccl ? reinterpret_cast<GroupFn>(dlsym(nccl, "ncclGroupStart")) : nullptr;
  g_group_end = nccl ? reinterpret_cast<GroupFn>(dlsym(nccl, "ncclGroupEnd")) : nullptr;
  if (!g_direct || reinterpret_cast<void*>(g_direct) == reinterpret_cast<void*>(&ncclAllReduce) ||
      !g_group_start || !g_group_end ||
      reinterpret_cast<void*>(g_group_end) == reinterpret_cast<void*>(&ncclGroupEnd) ||
      ncclCommInitAll(&g_comm, 1, nullptr) != ncclSuccess) {
    std::fprintf(stderr, "bench_nccl: the NCCL stand-in is not behind the tracer\n");
    return 1;
  }
  benchmark::AddCustomContext("tracer", mode);
  for (auto* b :
       {benchmark::RegisterBenchmark((std::string("ncclAllReduce_direct/") + mode).c_str(), BM_direct<false>),
        benchmark::RegisterBenchmark((std::string("ncclAllReduce_intercepted/") + mode).c_str(),
                                     BM_intercepted<false>),
        benchmark::RegisterBenchmark((std::string("grouped_direct/") + mode).c_str(), BM_direct<true>),
        benchmark::RegisterBenchmark((std::string("grouped_intercepted/") + mode).c_str(),
                                     BM_intercepted<true>)})
    b->Iterations(kIterations)->Repetitions(7)->ReportAggregatesOnly(true);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ncclCommDestroy(g_comm);
  MPI_Finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* mode = getenv("LOCKSTEP_BENCH_MODE")) return child(argc, argv, mode);
  char tmpl[] = "/tmp/lockstep-bench-nccl-XXXXXX";
  return lockstep::bench::run_modes(argv, {"off", "traced", "traced+ring", "traced+stack8"}, tmpl);
}
