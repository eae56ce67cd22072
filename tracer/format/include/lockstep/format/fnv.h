/* FNV-1a, 64-bit: the one string/byte hash of the trace format and its tools (job ids, interned
 * strings, call-site module names, progress signatures). Header-only and allocation-free, so
 * the tracer may use it in any context, signal handlers included. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lockstep::format {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;  // 14695981039346656037
inline constexpr uint64_t kFnvPrime = 0x100000001b3ull;        // 1099511628211

// Continues hash `h` over `n` bytes at `p` (start with kFnvOffset).
inline uint64_t fnv1a(const void* p, size_t n, uint64_t h = kFnvOffset) noexcept {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnvPrime;
  return h;
}

inline constexpr uint64_t fnv1a(std::string_view s, uint64_t h = kFnvOffset) noexcept {
  for (unsigned char c : s) h = (h ^ c) * kFnvPrime;
  return h;
}

// One 64-bit word folded in as a single step (cheaper than its 8 bytes; not byte-compatible with them).
inline constexpr uint64_t fnv1a_word(uint64_t w, uint64_t h) noexcept { return (h ^ w) * kFnvPrime; }

}  // namespace lockstep::format
