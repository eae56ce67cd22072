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
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "../common/tracer_modes.h"

namespace {

// Each benchmark below is one body for both sides: kTraced calls MPI_* (through the tracer), otherwise
// the PMPI_* twin directly; the same loop, so the difference is the tracer's.
template <bool kTraced>
void BM_Allreduce(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    if (kTraced)
      MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    else
      PMPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    benchmark::DoNotOptimize(y);
  }
}

// A nonblocking collective and its wait: two intercepted calls and the request map.
template <bool kTraced>
void BM_Iallreduce_Wait(benchmark::State& state) {
  int x = 1, y = 0;
  for (auto _ : state) {
    MPI_Request r;
    if (kTraced) {
      MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      PMPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &r);
      PMPI_Wait(&r, MPI_STATUS_IGNORE);
    }
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

// One benchmark's two sides, registered as PMPI_<name>/<mode> and MPI_<name>/<mode>.
// Each run also counts the page faults the calling thread took per iteration ("faults": a growing
// trace's new pages faulted in on the record path rather than by the growth helper; prefaulting
// with madvise counts as the faults it makes).
void register_pair(const std::string& name, const char* mode, void (*untraced)(benchmark::State&),
                   void (*traced)(benchmark::State&)) {
  for (auto fn : {untraced, traced}) {
    auto* b = benchmark::RegisterBenchmark(
        ((fn == traced ? "MPI_" : "PMPI_") + name + "/" + mode).c_str(), [fn](benchmark::State& state) {
          rusage before{}, after{};
          getrusage(RUSAGE_THREAD, &before);
          fn(state);
          getrusage(RUSAGE_THREAD, &after);
          state.counters["faults"] = benchmark::Counter(double(after.ru_minflt - before.ru_minflt),
                                                        benchmark::Counter::kAvgIterations);
        });
    b->Iterations(kIterations)->Repetitions(7)->ReportAggregatesOnly(true);
  }
}

int child(int argc, char** argv, const char* mode) {
  MPI_Init(&argc, &argv);
  benchmark::AddCustomContext("tracer", mode);
  register_pair("Allreduce", mode, BM_Allreduce<false>, BM_Allreduce<true>);
  register_pair("Iallreduce_Wait", mode, BM_Iallreduce_Wait<false>, BM_Iallreduce_Wait<true>);
  const int32_t me = 0;
  lockstep_rt_process_set(7, "self", &me, 1, 0);
  register_pair("Iallreduce_Test", mode, BM_Iallreduce_Test<false>, BM_Iallreduce_Test<true>);
  register_pair("Annotate", mode, BM_Annotate<false>, BM_Annotate<true>);
  register_pair("Rt_Collective", mode, BM_Rt_Collective<false>, BM_Rt_Collective<true>);
  register_pair("Send_Recv", mode, BM_Send_Recv<false>, BM_Send_Recv<true>);
  register_pair("Sendrecv", mode, BM_Sendrecv<false>, BM_Sendrecv<true>);
  register_pair("Isend_Irecv_Waitall", mode, BM_Isend_Irecv_Waitall<false>, BM_Isend_Irecv_Waitall<true>);
  register_pair("Allreduce_8deep_fp", mode, BM_Deep<fp_allreduce, false>, BM_Deep<fp_allreduce, true>);
  register_pair("Allreduce_8deep_nofp", mode, BM_Deep<nofp_allreduce, false>, BM_Deep<nofp_allreduce, true>);
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
