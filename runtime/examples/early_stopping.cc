// Early stopping decided on one rank's metric: each rank evaluates its own validation shard, and
// --variant=buggy leaves the training loop as soon as ITS metric is good enough. That rank stops
// calling the gradient allreduce; the others wait for it. --variant=fixed averages the metric first,
// so every rank sees the same number and stops at the same epoch.
//
//   mpirun -np 4 early_stopping --variant=buggy
#include <cstdio>
#include <string>
#include <vector>

#include "example_args.h"
#include "lockstep/annotate.h"
#include "lockstep/rt.h"

namespace rt = lockstep::rt;

int main(int argc, char** argv) {
  lockstep::examples::Args args(
      argc, argv,
      "Each rank leaves training when its own validation loss is low enough (buggy), or when the "
      "averaged loss is (fixed).",
      {{"variant", "buggy", "buggy: decide on the local metric; fixed: average it first"},
       {"epochs", "20", "most epochs to train"}});
  const std::string variant = args.str("variant");
  if (variant != "buggy" && variant != "fixed") args.usage("--variant must be buggy or fixed");
  const int epochs = args.num("epochs");
  rt::init(&argc, &argv);
  const int rank = rt::rank();

  std::vector<float> w(256, 0.0f), grad(256);
  const float target = 1.0f;
  int epoch = 0;
  for (; epoch < epochs; ++epoch) {
    // Tells a traced run which epoch each rank was in (no cost without the tracer).
    const std::string marker = "epoch " + std::to_string(epoch);
    LOCKSTEP_ANNOTATE(marker.c_str());
    for (size_t i = 0; i < w.size(); ++i) grad[i] = w[i] - target;
    rt::Status s =
        rt::allreduce("grad/w", grad.data(), grad.data(), grad.size(), rt::DType::f32, rt::ReduceOp::average)
            .wait();
    if (!s.ok()) {
      std::fprintf(stderr, "rank %d: epoch %d: %s\n", rank, epoch, s.message.c_str());
      return 1;
    }
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.3f * grad[i];

    // Validation on this rank's own shard: ranks with easier shards see a lower loss sooner.
    float val_loss = 0;
    for (float x : w) val_loss += (x - target) * (x - target) / static_cast<float>(w.size());
    val_loss *= 1.0f + 0.5f * static_cast<float>(rank);
    if (variant == "fixed") {
      // FIX: agree on the metric before deciding, so the decision is the same on every rank.
      s = rt::allreduce("metric/val_loss", &val_loss, &val_loss, 1, rt::DType::f32, rt::ReduceOp::average)
              .wait();
      if (!s.ok()) return 1;
    }
    if (val_loss <
        0.01f) {  // BUG (buggy variant): a rank-local value decides whether this rank leaves the loop
      std::printf("rank %d: stopping early after epoch %d (validation loss %.4f)\n", rank, epoch, val_loss);
      break;
    }
  }
  rt::finalize();
  if (rank == 0) std::printf("training finished\n");
  return 0;
}
