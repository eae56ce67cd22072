// A rank-0-only checkpoint routine that hides a collective: save_checkpoint() computes the global
// gradient norm for the checkpoint's metadata with an allreduce, but --variant=buggy calls it only on
// rank 0 ("only one rank writes files"). Rank 0 then waits in that allreduce while the others have
// moved on to the next step's. --variant=fixed computes the norm on every rank and writes on rank 0.
//
//   mpirun -np 4 checkpoint_rank0 --variant=buggy
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "example_args.h"
#include "lockstep/annotate.h"
#include "lockstep/rt.h"

namespace rt = lockstep::rt;

namespace {

double global_norm(const std::vector<float>& grad) {
  double local = 0, total = 0;
  for (float g : grad) local += static_cast<double>(g) * g;
  // The hidden collective: every rank of the job has to be here.
  rt::Status s =
      rt::allreduce("checkpoint/global_norm", &local, &total, 1, rt::DType::f64, rt::ReduceOp::sum).wait();
  if (!s.ok()) std::fprintf(stderr, "rank %d: %s\n", rt::rank(), s.message.c_str());
  return std::sqrt(total);
}

void save_checkpoint(int step, const std::vector<float>& grad, double norm) {
  std::printf("rank %d: checkpoint at step %d (gradient norm %.4f, %zu weights)\n", rt::rank(), step, norm,
              grad.size());
}

}  // namespace

int main(int argc, char** argv) {
  lockstep::examples::Args args(
      argc, argv,
      "A checkpoint written by rank 0 hides an allreduce (buggy: only rank 0 calls it; fixed: all do).",
      {{"variant", "buggy", "buggy: checkpoint on rank 0 only; fixed: compute the norm on every rank"},
       {"steps", "6", "training steps"},
       {"every", "3", "checkpoint every K steps"}});
  const std::string variant = args.str("variant");
  if (variant != "buggy" && variant != "fixed") args.usage("--variant must be buggy or fixed");
  const int steps = args.num("steps"), every = std::max(1, args.num("every"));
  rt::init(&argc, &argv);
  const int rank = rt::rank();
  std::vector<float> w(512, 0.0f), grad(512);
  for (int step = 1; step <= steps; ++step) {
    // Tells a traced run which step each rank was in (no cost without the tracer).
    const std::string marker = "step " + std::to_string(step);
    LOCKSTEP_ANNOTATE(marker.c_str());
    for (size_t i = 0; i < w.size(); ++i) grad[i] = w[i] - 1.0f + 0.01f * static_cast<float>(rank);
    rt::Status s =
        rt::allreduce("grad/w", grad.data(), grad.data(), grad.size(), rt::DType::f32, rt::ReduceOp::average)
            .wait();
    if (!s.ok()) {
      std::fprintf(stderr, "rank %d: step %d: %s\n", rank, step, s.message.c_str());
      return 1;
    }
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.5f * grad[i];
    if (step % every == 0) {
      if (variant == "buggy") {
        if (rank == 0) save_checkpoint(step, grad, global_norm(grad));  // BUG: global_norm() is a collective
      } else {
        const double norm = global_norm(grad);             // FIX: every rank takes part in the collective ...
        if (rank == 0) save_checkpoint(step, grad, norm);  // ... and only rank 0 writes
      }
    }
  }
  rt::finalize();
  if (rank == 0) std::printf("training finished\n");
  return 0;
}
