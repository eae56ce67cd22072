// Runtime vs direct MPI_Allreduce in one run on the same ranks: 100 tensors x 4 KiB per step (where
// fusion should win) and one 64 MiB tensor (where the runtime should cost next to nothing). The MPI
// baselines run before init and after finalize (their repetitions pooled), so the runtime's background
// thread is not running while they are measured, and the 64 MiB one once more interleaved with the
// runtime's own repetitions. Prints one line per case with the ratio; docs/benchmarks.md has results.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lockstep/rt.h"

namespace rt = lockstep::rt;

namespace {

constexpr int kTensors = 100;
constexpr size_t kSmall = 1024;             // floats: 4 KiB
constexpr size_t kLarge = (64u << 20) / 4;  // floats: 64 MiB

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The slowest rank's time for each of `reps` repetitions.
template <typename F>
std::vector<double> samples(int reps, F&& body) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    body();
    double dt = now_s() - t0, slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.push_back(slowest);
  }
  return t;
}

template <typename F>
double measure(int reps, F&& body) {
  return median(samples(reps, body));
}

// Median of the repetitions before init and after finalize together (the faster of the two
// medians would be a best-of-two, biased low against a single median).
double pooled(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return median(a);
}

void check(const rt::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "runtime error: %s\n", s.message.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const int small_steps = argc > 1 ? static_cast<int>(std::strtol(argv[1], nullptr, 10)) : 30;
  const int large_reps = argc > 2 ? static_cast<int>(std::strtol(argv[2], nullptr, 10)) : 7;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  std::vector<std::vector<float>> small(kTensors, std::vector<float>(kSmall, 1.0f));
  std::vector<std::vector<float>> small_out(kTensors, std::vector<float>(kSmall));
  std::vector<float> large(kLarge, 1.0f), large_out(kLarge);

  auto mpi_small = [&] {
    for (int t = 0; t < kTensors; ++t) {
      MPI_Allreduce(small[t].data(), small_out[t].data(), kSmall, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
  };
  auto mpi_large = [&] {
    MPI_Allreduce(large.data(), large_out.data(), kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };

  mpi_small();  // warm-up
  mpi_large();
  const std::vector<double> mpi_small_1 = samples(small_steps, mpi_small);
  const std::vector<double> mpi_large_1 = samples(large_reps, mpi_large);

  rt::init(&argc, &argv);
  std::vector<std::string> names;
  for (int t = 0; t < kTensors; ++t) names.push_back("bench/small/" + std::to_string(t));
  auto rt_small = [&] {
    std::vector<rt::Handle> hs;
    hs.reserve(kTensors);
    for (int t = 0; t < kTensors; ++t) {
      hs.push_back(rt::allreduce(names[t], small[t].data(), small_out[t].data(), kSmall, rt::DType::f32,
                                 rt::ReduceOp::sum));
    }
    for (auto& h : hs) check(h.wait());
  };
  auto rt_large = [&] {
    check(rt::allreduce("bench/large", large.data(), large_out.data(), kLarge, rt::DType::f32,
                        rt::ReduceOp::sum)
              .wait());
  };
  rt_small();
  rt_large();
  const rt::Stats before = rt::stats();
  const double rt_small_t = measure(small_steps, rt_small);
  const rt::Stats after = rt::stats();
  // Interleaved with the runtime's own repetitions: the same machine load for both.
  std::vector<double> inter_mpi, inter_rt;
  for (int i = 0; i < large_reps; ++i) {
    inter_mpi.push_back(measure(1, mpi_large));
    inter_rt.push_back(measure(1, rt_large));
  }
  std::sort(inter_mpi.begin(), inter_mpi.end());
  std::sort(inter_rt.begin(), inter_rt.end());
  const double rt_large_t = inter_rt[inter_rt.size() / 2], mpi_large_during = inter_mpi[inter_mpi.size() / 2];
  rt::finalize();

  const double mpi_small_t = pooled(mpi_small_1, samples(small_steps, mpi_small));
  const double mpi_large_t = pooled(mpi_large_1, samples(large_reps, mpi_large));
  if (rank == 0) {
    const double per_step = static_cast<double>(after.collectives - before.collectives) / small_steps;
    std::printf(
        "ranks %d; medians of the slowest rank; MPI alone = repetitions before init and after finalize\n",
        size);
    std::printf(
        "100 x 4 KiB per step: MPI_Allreduce %.3f ms, runtime %.3f ms (%.1f fused collectives/step): runtime "
        "%.2fx faster\n",
        mpi_small_t * 1e3, rt_small_t * 1e3, per_step, mpi_small_t / rt_small_t);
    std::printf(
        "1 x 64 MiB:           MPI_Allreduce %.1f ms alone, %.1f ms interleaved with the runtime's; runtime "
        "%.1f ms: "
        "runtime/MPI = %.3f (interleaved), %.3f (alone)\n",
        mpi_large_t * 1e3, mpi_large_during * 1e3, rt_large_t * 1e3, rt_large_t / mpi_large_during,
        rt_large_t / mpi_large_t);
  }
  MPI_Finalize();
  return 0;
}
