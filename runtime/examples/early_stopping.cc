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

namespace {

constexpr float kTarget = 1.0f;       // what the weights learn
constexpr float kGoodEnough = 0.01f;  // validation loss at which training stops

// One epoch of training: every rank reduces its gradient. False (after saying why) when the
// allreduce failed.
bool train_epoch(int rank, int epoch, std::vector<float>& w, std::vector<float>& grad) {
  // Tells a traced run which epoch each rank was in (no cost without the tracer).
  const std::string marker = "epoch " + std::to_string(epoch);
  LOCKSTEP_ANNOTATE(marker.c_str());
  for (size_t i = 0; i < w.size(); ++i) grad[i] = w[i] - kTarget;
  rt::Status s =
      rt::allreduce("grad/w", grad.data(), grad.data(), grad.size(), rt::DType::f32, rt::ReduceOp::average)
          .wait();
  if (!s.ok()) {
    std::fprintf(stderr, "rank %d: epoch %d: %s\n", rank, epoch, s.message.c_str());
    return false;
  }
  for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.3f * grad[i];
  return true;
}

// Validation on this rank's own shard: ranks with easier shards see a lower loss sooner.
float validation_loss(const std::vector<float>& w, int rank) {
  float loss = 0;
  for (float x : w) loss += (x - kTarget) * (x - kTarget) / static_cast<float>(w.size());
  return loss * (1.0f + 0.5f * static_cast<float>(rank));
}

// --variant=buggy: each rank stops on ITS OWN validation loss.
int train_buggy(int epochs, int rank) {
  std::vector<float> w(256, 0.0f), grad(256);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    if (!train_epoch(rank, epoch, w, grad)) return 1;
    const float val_loss = validation_loss(w, rank);
    if (val_loss < kGoodEnough) {  // BUG: a rank-local value decides whether this rank leaves the loop
      std::printf("rank %d: stopping early after epoch %d (validation loss %.4f)\n", rank, epoch, val_loss);
      break;
    }
  }
  return 0;
}

// --variant=fixed: the same loop, deciding on the averaged loss.
int train_fixed(int epochs, int rank) {
  std::vector<float> w(256, 0.0f), grad(256);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    if (!train_epoch(rank, epoch, w, grad)) return 1;
    float val_loss = validation_loss(w, rank);
    // FIX: agree on the metric before deciding, so the decision is the same on every rank.
    rt::Status s =
        rt::allreduce("metric/val_loss", &val_loss, &val_loss, 1, rt::DType::f32, rt::ReduceOp::average)
            .wait();
    if (!s.ok()) return 1;
    if (val_loss < kGoodEnough) {
      std::printf("rank %d: stopping early after epoch %d (validation loss %.4f)\n", rank, epoch, val_loss);
      break;
    }
  }
  return 0;
}

}  // namespace

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
  const int rc = variant == "buggy" ? train_buggy(epochs, rank) : train_fixed(epochs, rank);
  if (rc != 0) return rc;
  rt::finalize();
  if (rank == 0) std::printf("training finished\n");
  return 0;
}
