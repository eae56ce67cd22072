// Added cost per intercepted NCCL call, in one process: ncclAllReduce of one float on a one-rank
// communicator of the CPU stand-in (tests/nccl_standin), through liblockstep_trace.so (linked first,
// so ncclAllReduce resolves to the tracer) against the stand-in's own ncclAllReduce called directly.
// The same call inside ncclGroupStart/ncclGroupEnd (a group of one, as a framework's coalesced
// collectives are issued), direct and intercepted: the group's start and end pass through the tracer too.
// Four child processes: tracing off, tracing on (a growing file), tracing on into a ring of 65,536
// records (the MPI paths' figures are a ring's: bench/tracer/path_time.sh), and tracing on with
// LOCKSTEP_TRACE_STACK=8 (the tracer reads its environment when it is loaded).
// LOCKSTEP_BENCH_CPUS=A,B (a child's): the calling thread runs on CPU A and the threads the tracer starts
// at the first watched collective (its GPU thread) on CPU B, so that what they pass between them is
// measured the same way in every process (the scheduler otherwise puts them on one CPU in some runs and
// on two in others). A = B puts both on one CPU.
//   bench_nccl [google benchmark flags]
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <sched.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
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

// LOCKSTEP_BENCH_CPUS (above): this thread on B for a first intercepted call, which starts the tracer's
// GPU thread where device tracking is on (it inherits the mask), then on A. False on a malformed value or
// a CPU this process may not use.
bool place_threads() {
  const char* v = getenv("LOCKSTEP_BENCH_CPUS");
  if (!v) return true;
  char* end = nullptr;
  const long a = std::strtol(v, &end, 10);
  if (end == v || *end != ',') return false;
  const char* second = end + 1;
  const long b = std::strtol(second, &end, 10);
  if (end == second || *end != '\0' || a < 0 || b < 0 || a >= CPU_SETSIZE || b >= CPU_SETSIZE) return false;
  auto pin = [](long cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set) == 0;
  };
  if (!pin(b)) return false;
  float x = 1, y = 0;
  ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, g_comm, nullptr);
  return pin(a);
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
  if (!place_threads()) {
    std::fprintf(stderr, "bench_nccl: LOCKSTEP_BENCH_CPUS=%s: want A,B, two CPUs this process may use\n",
                 getenv("LOCKSTEP_BENCH_CPUS"));
    return 2;
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
