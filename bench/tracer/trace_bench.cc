// Added cost per intercepted MPI call, in one process: MPI_Allreduce of one int on MPI_COMM_SELF
// through liblockstep_trace.so (linked in, so MPI_* resolves to the tracer) against PMPI_Allreduce
// called directly, in four child processes: tracing off, tracing on, tracing on in ring mode
// (LOCKSTEP_TRACE_RING=65536: no first-touch page faults once the ring has wrapped), tracing on with
// LOCKSTEP_TRACE_STACK=8. The tracer reads its environment when it is loaded, hence the children.
//   trace_bench [google benchmark flags]
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <stdlib.h>

#include <cstdio>
#include <string>

#include "../common/tracer_modes.h"

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
  return lockstep::bench::run_modes(argv, {"off", "traced", "traced+ring", "traced+stack8"}, tmpl);
}
