// TEST FIXTURE, NOT NCCL: element types and reductions of the CPU stand-in libnccl.so.2. Narrow
// floating-point types (half, bfloat16, fp8) are reduced in float and rounded once, to nearest even.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nccl_standin {

// A binary floating-point format narrower than float: `ieee` formats keep the top exponent for
// inf/NaN (half, bfloat16, e5m2); the others (e4m3, "FN") have no inf and one NaN per sign.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee;
};
inline constexpr MiniFloat kHalf{5, 10, 15, true};
inline constexpr MiniFloat kBf16{8, 7, 127, true};
inline constexpr MiniFloat kE4M3{4, 3, 7, false};
inline constexpr MiniFloat kE5M2{5, 2, 15, true};

inline double mini_decode(uint32_t bits, MiniFloat f) {
  const uint32_t man_mask = (1u << f.man_bits) - 1;
  const uint32_t exp_max = (1u << f.exp_bits) - 1;
  const bool neg = (bits >> (f.exp_bits + f.man_bits)) & 1u;
  const uint32_t e = (bits >> f.man_bits) & exp_max;
  const uint32_t m = bits & man_mask;
  double v;
  if (f.ieee && e == exp_max) {
    v = m ? NAN : INFINITY;
  } else if (!f.ieee && e == exp_max && m == man_mask) {
    v = NAN;
  } else if (e == 0) {
    v = std::ldexp(double(m), 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(double(m | (1u << f.man_bits)), int(e) - f.bias - f.man_bits);
  }
  return neg ? -v : v;
}

// Round to nearest even; overflow goes to inf (ieee) or saturates to the largest finite value (FN),
// as CUDA's __NV_SATFINITE conversions do.
inline uint32_t mini_encode(double x, MiniFloat f) {
  const uint32_t sign = std::signbit(x) ? 1u << (f.exp_bits + f.man_bits) : 0u;
  const uint32_t exp_max = (1u << f.exp_bits) - 1;
  const uint32_t man_mask = (1u << f.man_bits) - 1;
  const uint32_t inf_bits = exp_max << f.man_bits;
  const uint32_t max_finite = f.ieee ? inf_bits - 1 : (exp_max << f.man_bits) | (man_mask - 1);
  if (std::isnan(x))
    return sign | (f.ieee ? inf_bits | (1u << (f.man_bits - 1)) : (exp_max << f.man_bits) | man_mask);
  double a = std::fabs(x);
  if (std::isinf(a)) return sign | (f.ieee ? inf_bits : max_finite);
  if (a == 0) return sign;
  int e2;
  std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  int unbiased = e2 - 1;
  uint32_t bits;
  if (unbiased < 1 - f.bias) {  // subnormal; rounding up to the smallest normal gives its encoding
    bits = uint32_t(std::nearbyint(std::ldexp(a, f.bias - 1 + f.man_bits)));
  } else {
    double q = std::nearbyint(std::ldexp(a, f.man_bits - unbiased));
    if (q >= double(2u << f.man_bits)) {
      q /= 2;
      ++unbiased;
    }
    const int64_t biased = int64_t(unbiased) + f.bias;
    if (biased >= int64_t(exp_max) + (f.ieee ? 0 : 1)) return sign | (f.ieee ? inf_bits : max_finite);
    bits = (uint32_t(biased) << f.man_bits) | (uint32_t(q) & man_mask);
  }
  if (bits > max_finite) return sign | (f.ieee ? inf_bits : max_finite);
  return sign | bits;
}

enum class Op { kSum, kProd, kMax, kMin, kAvg };

template <class T>
struct Plain {  // integers and float/double: load, combine and store in the type itself
  using Acc = T;
  static Acc load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(uint8_t* p, Acc v) { std::memcpy(p, &v, sizeof v); }
};

template <class Storage, const MiniFloat& F>
struct Narrow {
  using Acc = float;
  static Acc load(const uint8_t* p) {
    Storage v;
    std::memcpy(&v, p, sizeof v);
    return float(mini_decode(v, F));
  }
  static void store(uint8_t* p, Acc v) {
    Storage s = Storage(mini_encode(v, F));
    std::memcpy(p, &s, sizeof s);
  }
};

template <class A>
A combine(Op op, A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;  // wrap-around like the device does, without signed overflow
    switch (op) {
      case Op::kSum:
      case Op::kAvg:
        return A(U(a) + U(b));
      case Op::kProd:
        return A(U(a) * U(b));
      case Op::kMax:
        return a > b ? a : b;
      case Op::kMin:
        return a < b ? a : b;
    }
  } else {
    switch (op) {
      case Op::kSum:
      case Op::kAvg:
        return a + b;
      case Op::kProd:
        return a * b;
      case Op::kMax:
        return std::fmax(a, b);
      case Op::kMin:
        return std::fmin(a, b);
    }
  }
  return a;
}

// out[i] = op over k in [0, nblocks) of block k's element i, combined in rank order, so every rank
// computes bit-identical results.
template <class E>
void reduce_blocks(const uint8_t* blocks, size_t nblocks, size_t block_bytes, size_t count, size_t elem,
                   Op op, uint8_t* out) {
  for (size_t i = 0; i < count; ++i) {
    typename E::Acc acc = E::load(blocks + i * elem);
    for (size_t k = 1; k < nblocks; ++k) acc = combine(op, acc, E::load(blocks + k * block_bytes + i * elem));
    if (op == Op::kAvg) acc = typename E::Acc(acc / typename E::Acc(nblocks));
    E::store(out + i * elem, acc);
  }
}

}  // namespace nccl_standin
