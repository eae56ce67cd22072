// Element types: their sizes and names, and the host-side arithmetic of the MPI backend (f16/bf16
// reduce through float, like Horovod's float16 sum, so a sum of halves loses no more than the final
// rounding).
#include "dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace lockstep::rt {

size_t dtype_size(DType d) {
  return d == DType::f16 || d == DType::bf16 ? 2 : (d == DType::f32 || d == DType::i32 ? 4 : 8);
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::average:
      return "average";
    case ReduceOp::min:
      return "min";
    case ReduceOp::max:
      return "max";
  }
  return "?";
}

}  // namespace lockstep::rt

namespace lockstep::rt::internal {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf or NaN
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FFu) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) {  // inf or NaN
    return sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u);
  }
  if (absx >= 0x477FF000u) return sign | 0x7C00u;  // rounds past 65504: overflow to infinity
  if (absx < 0x38800000u) {                        // below the smallest normal half: subnormal or zero
    if (absx < 0x33000000u) return sign;           // below half the smallest subnormal
    const uint32_t mant = (absx & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - static_cast<int>(absx >> 23);  // 14..24
    uint32_t v = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (v & 1u))) ++v;
    return sign | static_cast<uint16_t>(v);
  }
  uint32_t v = ((absx >> 13) - ((127 - 15) << 10));
  const uint32_t rem = absx & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;  // may carry into the exponent: correct
  return sign | static_cast<uint16_t>(v);
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7FFFu + lsb) >> 16);
}

namespace {

template <typename T>
void reduce_typed(T* a, const T* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::average:
      for (size_t i = 0; i < n; ++i) a[i] = a[i] + b[i];
      break;
    case ReduceOp::min:
      for (size_t i = 0; i < n; ++i) a[i] = std::min(a[i], b[i]);
      break;
    case ReduceOp::max:
      for (size_t i = 0; i < n; ++i) a[i] = std::max(a[i], b[i]);
      break;
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void reduce_16(uint16_t* a, const uint16_t* b, size_t n, ReduceOp op) {
  for (size_t i = 0; i < n; ++i) {
    const float x = ToF(a[i]), y = ToF(b[i]);
    float r;
    switch (op) {
      case ReduceOp::min:
        r = std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
        break;
      case ReduceOp::max:
        r = std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
        break;
      default:
        r = x + y;
        break;
    }
    a[i] = FromF(r);
  }
}

}  // namespace

void reduce_into(void* inout, const void* in, size_t count, DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::f16:
      reduce_16<half_to_float, float_to_half>(static_cast<uint16_t*>(inout), static_cast<const uint16_t*>(in),
                                              count, op);
      break;
    case DType::bf16:
      reduce_16<bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(inout), static_cast<const uint16_t*>(in),
                                              count, op);
      break;
    case DType::f32:
      reduce_typed(static_cast<float*>(inout), static_cast<const float*>(in), count, op);
      break;
    case DType::f64:
      reduce_typed(static_cast<double*>(inout), static_cast<const double*>(in), count, op);
      break;
    case DType::i32:
      reduce_typed(static_cast<int32_t*>(inout), static_cast<const int32_t*>(in), count, op);
      break;
    case DType::i64:
      reduce_typed(static_cast<int64_t*>(inout), static_cast<const int64_t*>(in), count, op);
      break;
  }
}

void divide(void* buf, size_t count, DType dtype, int divisor) {
  switch (dtype) {
    case DType::f16: {
      auto* p = static_cast<uint16_t*>(buf);
      for (size_t i = 0; i < count; ++i)
        p[i] = float_to_half(half_to_float(p[i]) / static_cast<float>(divisor));
      break;
    }
    case DType::bf16: {
      auto* p = static_cast<uint16_t*>(buf);
      for (size_t i = 0; i < count; ++i)
        p[i] = float_to_bf16(bf16_to_float(p[i]) / static_cast<float>(divisor));
      break;
    }
    case DType::f32: {
      auto* p = static_cast<float*>(buf);
      const float d = static_cast<float>(divisor);
      for (size_t i = 0; i < count; ++i) p[i] /= d;
      break;
    }
    case DType::f64: {
      auto* p = static_cast<double*>(buf);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      break;
    }
    case DType::i32: {
      auto* p = static_cast<int32_t*>(buf);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      break;
    }
    case DType::i64: {
      auto* p = static_cast<int64_t*>(buf);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      break;
    }
  }
}

}  // namespace lockstep::rt::internal
