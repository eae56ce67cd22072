// The integrity checks a writer stores and a reader verifies (format 1.1, LST_HDR_CHECKED): FNV-1a 32
// over the header fields that never change after creation, over each module entry, and folded to one
// byte over each string. docs/trace-format.md ("Integrity checks") gives the exact byte ranges.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lockstep/format/layout.h"

namespace lockstep::format {

inline uint32_t fnv32(const void* p, size_t n, uint32_t h = 2166136261u) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 16777619u;
  return h;
}

// Bytes [8, 20) versions and sizes, [24, 48) region offsets and sizes, [80, 112) pid, ppid, start
// times and job hash, [128, end of lst_header) job id, host, command line and tracer version. Not
// covered: the magic (compared whole), flags and every field that changes while the job runs.
inline uint32_t header_check(const lst_header* h) {
  const auto* b = reinterpret_cast<const uint8_t*>(h);
  uint32_t c = fnv32(b + 8, 12);
  c = fnv32(b + 24, 24, c);
  c = fnv32(b + 80, 32, c);
  return fnv32(b + 128, sizeof(lst_header) - 128, c);
}

// One byte over a string's length and payload, stored in the state byte of its word.
inline uint8_t string_check(uint32_t len, const void* bytes) {
  const uint32_t h = fnv32(bytes, len, fnv32(&len, 4));
  return uint8_t(h ^ (h >> 8) ^ (h >> 16) ^ (h >> 24));
}

// Bytes [4, 36) of a module entry (path, base, lo, hi, build id), stored in its `reserved` field.
inline uint32_t module_check(const lst_meta_module* m) {
  return fnv32(reinterpret_cast<const uint8_t*>(m) + 4, 36);  // path .. function
}

}  // namespace lockstep::format
