// Element types on the host: f16/bf16 conversion and the reductions the MPI backend runs in its user
// operations and the average post-pass. Device reductions belong to NCCL.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lockstep/rt.h"

namespace lockstep::rt::internal {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // round to nearest even; overflow gives infinity, as fp16 hardware does
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);  // round to nearest even, NaN kept quiet

// inout[i] = op(inout[i], in[i]) for count elements (sum, min or max; average reduces as sum).
void reduce_into(void* inout, const void* in, size_t count, DType dtype, ReduceOp op);
// buf[i] /= divisor (average's second half; integer division for i32/i64).
void divide(void* buf, size_t count, DType dtype, int divisor);

}  // namespace lockstep::rt::internal
