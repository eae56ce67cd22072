// Myers' O(ND) difference algorithm ("An O(ND) Difference Algorithm and Its Variations", 1986) over
// two signature arrays, returning the hunks where they differ. Used to align a rank's collectives
// with the majority's, so one skipped call is one edit, not a cascade of mismatches after it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace lockstep::check {

// a[a0, a1) was replaced by b[b0, b1); a pure deletion has b0 == b1, a pure insertion a0 == a1.
struct Hunk {
  uint32_t a0, a1, b0, b1;
};

// Minimal edit script from `a` to `b` as hunks in order; nullopt when more than `max_edits` edits
// would be needed (the caller then falls back to comparing positions).
std::optional<std::vector<Hunk>> diff(std::span<const uint64_t> a, std::span<const uint64_t> b,
                                      int max_edits);

}  // namespace lockstep::check
