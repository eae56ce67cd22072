// Added cost per intercepted MPI call, in one process: MPI_Allreduce of one int on MPI_COMM_SELF
// through liblockstep_trace.so (linked in, so MPI_* resolves to the tracer) against PMPI_Allreduce
// called directly, in four child processes: tracing off, tracing on, tracing on in ring mode
// (LOCKSTEP_TRACE_RING=65536: no first-touch page faults once the ring has wrapped), tracing on with
// LOCKSTEP_TRACE_STACK=8. The tracer reads its environment when it is loaded, hence the children.
//   trace_bench [google benchmark flags]
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

void BM_PMPI_Allreduce(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    PMPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    benchmark::DoNotOptimize(y);
  }
}

void BM_MPI_Allreduce(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    benchmark::DoNotOptimize(y);
  }
}

// A nonblocking collective and its wait: two intercepted calls and the request map.
void BM_PMPI_Iallreduce_Wait(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    MPI_Request r;
    PMPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
    PMPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

void BM_MPI_Iallreduce_Wait(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    MPI_Request r;
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

// A nonblocking collective completed by MPI_Test (one Test completes it on MPI_COMM_SELF).
template <bool kTraced>
void BM_Iallreduce_Test(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    MPI_Request r;
    int flag = 0;
    if (kTraced) {
      MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
      while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    } else {
      PMPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
      while (!flag) PMPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    }
  }
}

// The annotation API and a runtime collective (begin + end, two records' worth of calls): their
// untraced twin is the empty loop, since nothing else runs in them.
extern "C" void lockstep_annotate(const char* text);
extern "C" void lockstep_rt_process_set(uint64_t id, const char* name, const int32_t* members, int32_t size,
                                        int32_t my_rank);
extern "C" uint64_t lockstep_rt_collective_begin(uint64_t process_set, int op, const char* name,
                                                 uint64_t count, int dtype, uint32_t dtype_size, int redop,
                                                 int root);
extern "C" void lockstep_rt_collective_end(uint64_t token, int ok);
template <bool kTraced>
void BM_Annotate(benchmark::State& state) {
  for (auto _ : state) {
    if (kTraced) lockstep_annotate("step");
    benchmark::ClobberMemory();
  }
}
template <bool kTraced>
void BM_Rt_Collective(benchmark::State& state) {
  for (auto _ : state) {
    if (kTraced) lockstep_rt_collective_end(lockstep_rt_collective_begin(7, 3, nullptr, 1, 0, 4, 1, -1), 1);
    benchmark::ClobberMemory();
  }
}

// Point-to-point to self: a blocking send and receive (two calls, two records), MPI_Sendrecv (one
// call, a SEND and a RECV record), and Isend + Irecv + Waitall (three calls, three records).
template <bool kTraced>
void BM_Send_Recv(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    if (kTraced) {
      MPI_Send(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF);
      MPI_Recv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    } else {
      PMPI_Send(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF);
      PMPI_Recv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    }
    benchmark::DoNotOptimize(y);
  }
}

template <bool kTraced>
void BM_Sendrecv(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    if (kTraced)
      MPI_Sendrecv(&x, 1, MPI_INT, 0, 7, &y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    else
      PMPI_Sendrecv(&x, 1, MPI_INT, 0, 7, &y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    benchmark::DoNotOptimize(y);
  }
}

template <bool kTraced>
void BM_Isend_Irecv_Waitall(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    MPI_Request r[2];
    if (kTraced) {
      MPI_Irecv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &r[0]);
      MPI_Isend(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &r[1]);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    } else {
      PMPI_Irecv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &r[0]);
      PMPI_Isend(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &r[1]);
      PMPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    benchmark::DoNotOptimize(y);
  }
}

// MPI_Allreduce 8 frames deep (call_chain.c), in code built with and without frame pointers: what
// LOCKSTEP_TRACE_STACK=8 costs on each (the frame-pointer walk, or the DWARF unwinder).
extern "C" int fp_allreduce(int traced);
extern "C" int nofp_allreduce(int traced);
template <int (*kChain)(int), bool kTraced>
void BM_Deep(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(kChain(kTraced));
}

// Fixed iterations keep the trace file bounded (64 bytes per record).
constexpr int kIterations = 300000;

int child(int argc, char** argv, const char* mode) {
  MPI_Init(&argc, &argv);
  benchmark::AddCustomContext("tracer", mode);
  for (auto* b :
       {benchmark::RegisterBenchmark((std::string("PMPI_Allreduce/") + mode).c_str(), BM_PMPI_Allreduce),
        benchmark::RegisterBenchmark((std::string("MPI_Allreduce/") + mode).c_str(), BM_MPI_Allreduce),
        benchmark::RegisterBenchmark((std::string("PMPI_Iallreduce_Wait/") + mode).c_str(),
                                     BM_PMPI_Iallreduce_Wait),
        benchmark::RegisterBenchmark((std::string("MPI_Iallreduce_Wait/") + mode).c_str(),
                                     BM_MPI_Iallreduce_Wait)})
    b->Iterations(kIterations)->Repetitions(7)->ReportAggregatesOnly(true);
  const int32_t me = 0;
  lockstep_rt_process_set(7, "self", &me, 1, 0);
  for (auto* b :
       {benchmark::RegisterBenchmark((std::string("PMPI_Iallreduce_Test/") + mode).c_str(),
                                     BM_Iallreduce_Test<false>),
        benchmark::RegisterBenchmark((std::string("MPI_Iallreduce_Test/") + mode).c_str(),
                                     BM_Iallreduce_Test<true>),
        benchmark::RegisterBenchmark((std::string("PMPI_Annotate/") + mode).c_str(), BM_Annotate<false>),
        benchmark::RegisterBenchmark((std::string("MPI_Annotate/") + mode).c_str(), BM_Annotate<true>),
        benchmark::RegisterBenchmark((std::string("PMPI_Rt_Collective/") + mode).c_str(),
                                     BM_Rt_Collective<false>),
        benchmark::RegisterBenchmark((std::string("MPI_Rt_Collective/") + mode).c_str(),
                                     BM_Rt_Collective<true>)})
    b->Iterations(kIterations)->Repetitions(7)->ReportAggregatesOnly(true);
  for (auto* b :
       {benchmark::RegisterBenchmark((std::string("PMPI_Send_Recv/") + mode).c_str(), BM_Send_Recv<false>),
        benchmark::RegisterBenchmark((std::string("MPI_Send_Recv/") + mode).c_str(), BM_Send_Recv<true>),
        benchmark::RegisterBenchmark((std::string("PMPI_Sendrecv/") + mode).c_str(), BM_Sendrecv<false>),
        benchmark::RegisterBenchmark((std::string("MPI_Sendrecv/") + mode).c_str(), BM_Sendrecv<true>),
        benchmark::RegisterBenchmark((std::string("PMPI_Isend_Irecv_Waitall/") + mode).c_str(),
                                     BM_Isend_Irecv_Waitall<false>),
        benchmark::RegisterBenchmark((std::string("MPI_Isend_Irecv_Waitall/") + mode).c_str(),
                                     BM_Isend_Irecv_Waitall<true>)})
    b->Iterations(kIterations)->Repetitions(7)->ReportAggregatesOnly(true);
  for (auto* b : {benchmark::RegisterBenchmark((std::string("PMPI_Allreduce_8deep_fp/") + mode).c_str(),
                                               BM_Deep<fp_allreduce, false>),
                  benchmark::RegisterBenchmark((std::string("MPI_Allreduce_8deep_fp/") + mode).c_str(),
                                               BM_Deep<fp_allreduce, true>),
                  benchmark::RegisterBenchmark((std::string("PMPI_Allreduce_8deep_nofp/") + mode).c_str(),
                                               BM_Deep<nofp_allreduce, false>),
                  benchmark::RegisterBenchmark((std::string("MPI_Allreduce_8deep_nofp/") + mode).c_str(),
                                               BM_Deep<nofp_allreduce, true>)})
    b->Iterations(kIterations)->Repetitions(7)->ReportAggregatesOnly(true);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* mode = getenv("LOCKSTEP_BENCH_MODE")) return child(argc, argv, mode);
  char tmpl[] = "/tmp/lockstep-bench-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  int rc = 0;
  for (const char* mode : {"off", "traced", "traced+ring", "traced+stack8"}) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("LOCKSTEP_BENCH_MODE", mode, 1);
      setenv("OMPI_MCA_btl", "self", 0);
      if (std::strcmp(mode, "off") != 0) setenv("LOCKSTEP_TRACE_DIR", tmpl, 1);
      if (std::strcmp(mode, "traced+stack8") == 0) setenv("LOCKSTEP_TRACE_STACK", "8", 1);
      if (std::strcmp(mode, "traced+ring") == 0) setenv("LOCKSTEP_TRACE_RING", "65536", 1);
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
