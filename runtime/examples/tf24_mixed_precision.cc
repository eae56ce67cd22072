// The TensorFlow 2.4 + Horovod mixed-precision deadlock (Horovod PR 2647, TensorFlow issue 46863),
// rebuilt on lockstep's runtime: a data-parallel training loop with fp16 gradients and dynamic loss
// scaling. --variant=buggy decides on each rank's LOCAL gradients whether to apply the step, and the
// gradient allreduce sits inside that decision; --variant=fixed reduces first, then decides.
//
//   mpirun -np 4 tf24_mixed_precision --variant=buggy --overflow-rank 1 --overflow-step 3
//
// Every step: a synchronized batch-norm allreduce of the batch moments (forward pass, every rank),
// three fp16 gradient tensors, and dynamic loss scaling (halve the scale and skip the update on
// overflow; double it after a run of good steps), as Keras' LossScaleOptimizer does.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "example_args.h"
#include "lockstep/annotate.h"
#include "lockstep/rt.h"

namespace rt = lockstep::rt;

namespace {

constexpr int kLayers = 3;
constexpr size_t kWidth = 1024;  // elements per gradient tensor (and of the batch moments)
const char* const kGradNames[kLayers] = {"grad/dense0/kernel", "grad/dense1/kernel", "grad/dense2/kernel"};
constexpr rt::DType kF16 = rt::DType::f16;
constexpr rt::ReduceOp kAverage = rt::ReduceOp::average;

uint16_t to_half(float f) {
  _Float16 h = static_cast<_Float16>(f);  // overflows to inf beyond 65504, as an fp16 gradient does
  uint16_t bits;
  __builtin_memcpy(&bits, &h, 2);
  return bits;
}
float from_half(uint16_t bits) {
  _Float16 h;
  __builtin_memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

struct Model {
  std::vector<float> weights[kLayers];   // fp32 master weights
  std::vector<float> target[kLayers];    // what the synthetic data was generated from
  std::vector<uint16_t> grads[kLayers];  // fp16 gradients, scaled by the loss scale
  std::vector<uint16_t> moments = std::vector<uint16_t>(kWidth);
  std::vector<uint16_t> moments_avg = std::vector<uint16_t>(kWidth);
};

bool all_finite(const std::vector<uint16_t>* grads) {
  for (int l = 0; l < kLayers; ++l) {
    for (uint16_t g : grads[l]) {
      if ((g & 0x7C00u) == 0x7C00u) return false;  // fp16 exponent all ones: inf or NaN
    }
  }
  return true;
}

int fail(const rt::Status& s, int step, const char* what) {
  std::fprintf(stderr, "rank %d: step %d: %s failed: %s\n", rt::rank(), step, what, s.message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  lockstep::examples::Args args(
      argc, argv,
      "The TensorFlow 2.4 + Horovod mixed-precision hang: a rank whose fp16 gradients overflow skips the "
      "gradient allreduce (buggy), or every rank reduces first and skips together (fixed).",
      {{"variant", "buggy", "buggy: decide on local gradients; fixed: reduce them unconditionally"},
       {"overflow-rank", "1", "the rank whose gradients overflow"},
       {"overflow-step", "3", "the step at which they overflow"},
       {"steps", "8", "training steps"},
       {"matching", "name", "name: the runtime negotiates; order: run in submission order, as raw MPI"}});
  const std::string variant = args.str("variant");
  if (variant != "buggy" && variant != "fixed") args.usage("--variant must be buggy or fixed");
  if (args.str("matching") != "name" && args.str("matching") != "order") {
    args.usage("--matching must be name or order");
  }
  const bool buggy = variant == "buggy";
  const int overflow_rank = args.num("overflow-rank"), overflow_step = args.num("overflow-step");
  const int steps = args.num("steps");

  rt::Options options;
  options.matching = args.str("matching") == "order" ? rt::Matching::order : rt::Matching::name;
  rt::init(&argc, &argv, options);
  const int rank = rt::rank(), size = rt::size();

  Model m;
  for (int l = 0; l < kLayers; ++l) {
    m.weights[l].assign(kWidth, 0.0f);
    m.target[l].resize(kWidth);
    m.grads[l].resize(kWidth);
    for (size_t i = 0; i < kWidth; ++i) m.target[l][i] = 0.01f * static_cast<float>((i * 7 + l * 13L) % 17);
  }
  float loss_scale = 32768.0f;  // Keras' initial dynamic loss scale (2^15)
  int good_steps = 0, skipped = 0;
  const float lr = 0.5f;

  for (int step = 0; step < steps; ++step) {
    const std::string marker = "step " + std::to_string(step);
    LOCKSTEP_ANNOTATE(marker.c_str());

    // Forward pass: synchronized batch norm averages the batch moments over all ranks, every step.
    for (size_t i = 0; i < kWidth; ++i) {
      m.moments[i] = to_half(1.0f + 0.001f * static_cast<float>((rank * 31 + step * 7 + i) % 11));
    }
    rt::Status s = rt::allreduce("bn/moments", m.moments.data(), m.moments_avg.data(), kWidth, rt::DType::f16,
                                 rt::ReduceOp::average)
                       .wait();
    if (!s.ok()) return fail(s, step, "allreduce 'bn/moments'");
    const float norm = from_half(m.moments_avg[0]);

    // Backward pass: fp16 gradients of the scaled loss. One rank's batch overflows once.
    const float blowup = (rank == overflow_rank && step == overflow_step) ? 1e4f : 1.0f;
    float loss = 0;
    for (int l = 0; l < kLayers; ++l) {
      for (size_t i = 0; i < kWidth; ++i) {
        const float noise = 1.0f + 0.01f * static_cast<float>((rank + step + i) % 5);
        const float g = (m.weights[l][i] - m.target[l][i]) * noise * norm - 0.01f;
        loss += 0.5f * g * g;
        m.grads[l][i] = to_half(g * loss_scale * blowup);
      }
    }

    if (!buggy) {
      // FIX (Horovod PR 2647): reduce during gradient computation, unconditionally. A non-finite
      // gradient on any rank makes the reduced gradients non-finite on every rank, so the finiteness
      // check below gives the same answer everywhere and all ranks skip the step together.
      std::vector<rt::Handle> hs;
      for (int l = 0; l < kLayers; ++l) {
        hs.push_back(rt::allreduce(kGradNames[l], m.grads[l].data(), m.grads[l].data(), kWidth,
                                   rt::DType::f16, rt::ReduceOp::average));
      }
      for (auto& h : hs) {
        if (rt::Status st = h.wait(); !st.ok())
          return fail(st, step, ("allreduce '" + h.name() + "'").c_str());
      }
    }

    // Dynamic loss scaling. BUG (buggy variant): all_finite() looks at this rank's LOCAL gradients,
    // which differ between ranks, so ranks can disagree about taking the branch below.
    const bool finite = all_finite(m.grads);
    if (finite) {
      if (buggy) {
        // BUG: the gradient allreduce runs only on ranks whose local gradients were finite (TF 2.4's
        // LossScaleOptimizer applied the step, and with it Horovod's allreduce, under this condition).
        // A rank that overflowed skips these collectives; the others wait for it here forever (name
        // matching), or their allreduce pairs with its next step's (matching by order).
        std::vector<rt::Handle> hs;
        for (int l = 0; l < kLayers; ++l) {
          auto* g = m.grads[l].data();
          hs.push_back(rt::allreduce(kGradNames[l], g, g, kWidth, kF16, kAverage));  // skipped on overflow
        }
        for (auto& h : hs) {
          if (rt::Status st = h.wait(); !st.ok())
            return fail(st, step, ("allreduce '" + h.name() + "'").c_str());
        }
      }
      for (int l = 0; l < kLayers; ++l) {
        for (size_t i = 0; i < kWidth; ++i) m.weights[l][i] -= lr * from_half(m.grads[l][i]) / loss_scale;
      }
      if (++good_steps == 4) {  // Keras grows the scale after 2000 good steps; 4 keeps the demo short
        loss_scale *= 2;
        good_steps = 0;
      }
    } else {
      std::printf("rank %d: step %d: gradients not finite: skipping the update, loss scale %.0f -> %.0f\n",
                  rank, step, loss_scale, loss_scale / 2);
      std::fflush(stdout);
      loss_scale /= 2;
      good_steps = 0;
      ++skipped;
    }
    if (rank == 0) {
      std::printf("step %d: loss %.5f, loss scale %.0f\n", step, loss / (kLayers * kWidth), loss_scale);
      std::fflush(stdout);
    }
  }

  // Replicas must still agree: the spread of a weight checksum across ranks is exactly zero.
  double checksum = 0;
  for (int l = 0; l < kLayers; ++l) {
    for (float w : m.weights[l]) checksum += w;
  }
  double lo = 0, hi = 0;
  rt::Status a = rt::allreduce("check/min", &checksum, &lo, 1, rt::DType::f64, rt::ReduceOp::min).wait();
  rt::Status b = rt::allreduce("check/max", &checksum, &hi, 1, rt::DType::f64, rt::ReduceOp::max).wait();
  if (!a.ok() || !b.ok()) return fail(a.ok() ? b : a, steps, "weight check");
  rt::finalize();
  if (lo != hi) {
    std::fprintf(stderr, "rank %d: replicas diverged: weight checksums range from %.9g to %.9g\n", rank, lo,
                 hi);
    return 1;
  }
  if (rank == 0) {
    std::printf("training finished: %d steps on %d ranks, %d skipped, replicas identical\n", steps, size,
                skipped);
  }
  return 0;
}
