// Added cost per intercepted NCCL call, in one process: ncclAllReduce of one float on a one-rank
// communicator of the CPU stand-in (tests/nccl_standin), through liblockstep_trace.so (linked first,
// so ncclAllReduce resolves to the tracer) against the stand-in's own ncclAllReduce called directly.
// Three child processes: tracing off, tracing on, tracing on with LOCKSTEP_TRACE_STACK=8 (the tracer
// reads its environment when it is loaded).
//   bench_nccl [google benchmark flags]
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

using AllReduceFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                     cudaStream_t);
ncclComm_t g_comm = nullptr;
AllReduceFn g_direct = nullptr;

void BM_direct(benchmark::State& state) {
  float x = 1, y = 0;
  for (auto _ : state) {
    g_direct(&x, &y, 1, ncclFloat32, ncclSum, g_comm, nullptr);
    benchmark::DoNotOptimize(y);
  }
}

void BM_intercepted(benchmark::State& state) {
  float x = 1, y = 0;
  for (auto _ : state) {
    ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, g_comm, nullptr);
    benchmark::DoNotOptimize(y);
  }
}

// Fixed iterations keep the trace file bounded (64 bytes per record).
constexpr int kIterations = 300000;

int child(int argc, char** argv, const char* mode) {
  MPI_Init(&argc, &argv);
  void* nccl = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  g_direct = nccl ? reinterpret_cast<AllReduceFn>(dlsym(nccl, "ncclAllReduce")) : nullptr;
  if (!g_direct || reinterpret_cast<void*>(g_direct) == reinterpret_cast<void*>(&ncclAllReduce) ||
      ncclCommInitAll(&g_comm, 1, nullptr) != ncclSuccess) {
    std::fprintf(stderr, "bench_nccl: the NCCL stand-in is not behind the tracer\n");
    return 1;
  }
  benchmark::AddCustomContext("tracer", mode);
  for (auto* b :
       {benchmark::RegisterBenchmark((std::string("ncclAllReduce_direct/") + mode).c_str(), BM_direct),
        benchmark::RegisterBenchmark((std::string("ncclAllReduce_intercepted/") + mode).c_str(),
                                     BM_intercepted)})
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
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  int rc = 0;
  for (const char* mode : {"off", "traced", "traced+stack8"}) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("LOCKSTEP_BENCH_MODE", mode, 1);
      setenv("OMPI_MCA_btl", "self", 0);
      if (std::strcmp(mode, "off") != 0) setenv("LOCKSTEP_TRACE_DIR", tmpl, 1);
      if (std::strcmp(mode, "traced+stack8") == 0) setenv("LOCKSTEP_TRACE_STACK", "8", 1);
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return rc;
}
