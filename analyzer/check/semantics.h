// MPI semantics the checker needs in more than one file: which operations reduce or may have per-rank
// counts, and when a call is done (which ones are rooted: lockstep/check/op_semantics.h).
#pragma once

#include <cstdint>

#include "lockstep/check/op_semantics.h"
#include "lockstep/format/layout.h"

namespace lockstep::check {
bool is_reducing(uint8_t op);
bool is_v_variant(uint8_t op, uint8_t flags);
bool is_done(const lst_record& r);
}  // namespace lockstep::check
