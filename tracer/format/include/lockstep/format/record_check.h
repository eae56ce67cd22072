// The per-record check of format 2.0: a 16-bit hash of a record's 64 bytes, kept in the spare bits of
// its word (LST_REC_CHECK_MASK) so that it is published by the same release store as the state it
// covers. Shared by the writer (which seals every word it stores) and every reader (verify_record).
#pragma once

#include <stdint.h>
#include <string.h>

#include "lockstep/format/layout.h"

namespace lockstep::format {
namespace detail {

inline uint64_t fold_mul(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return uint64_t(p) ^ uint64_t(p >> 64);
}

// Four independent 64x64->128 multiplies over the eight words, then one mixing round: a few cycles of
// latency, and any change to any byte moves all 16 check bits like a random function would.
inline uint32_t check_of(const uint64_t v[8]) {
  uint64_t h = fold_mul(v[0] ^ 0x9E3779B97F4A7C15ull, v[1] ^ 0xC2B2AE3D27D4EB4Full) +
               fold_mul(v[2] ^ 0x165667B19E3779F9ull, v[3] ^ 0xD6E8FEB86659FD93ull) +
               fold_mul(v[4] ^ 0xA0761D6478BD642Full, v[5] ^ 0xE7037ED1A0B428DBull) +
               fold_mul(v[6] ^ 0x8EBC6AF09C88C6E3ull, v[7] ^ 0x589965CC75374CC3ull);
  h ^= h >> 32;
  h *= 0x9FB21C651E98DF25ull;
  const uint32_t c = uint32_t(h >> 48);
  // Check bits 0-7, 8-10 and 11-15 go to word bits 0-7, 13-15 and 19-23.
  return (c & 0xFFu) | ((c & 0x700u) << 5) | ((c & 0xF800u) << 8);
}

// The record's words with `word` (check bits cleared) in place of the stored one.
inline void load_words(const lst_record* r, uint32_t word, uint64_t v[8]) {
  memcpy(v, r, sizeof(lst_record));
  v[0] = (v[0] & ~0xFFFFFFFFull) | (word & ~LST_REC_CHECK_MASK);
}

}  // namespace detail

// `word` (kind, state and flags; its check bits are ignored) with the check of the record's current
// fields. The writer stores nothing else into a 2.x record's word.
inline uint32_t seal_record_word(const lst_record* r, uint32_t word) {
  uint64_t v[8];
  detail::load_words(r, word, v);
  return (word & ~LST_REC_CHECK_MASK) | detail::check_of(v);
}

enum class RecordVerdict {
  kIntact,   // the word's check matches the fields (or the fields of an ENTERED record mid-return)
  kChanged,  // the word changed while the fields were read: a slot being refilled or updated; unpublished
  kDamaged,  // the bytes are not what the writer published
};

// The one verification of a published record (word != 0, loaded with acquire order), for files of
// format `major`. 1.x records have no check: their magic byte and the spare bits of kind and state
// must hold what a 1.x writer stored. A 2.x record must match its check, with one exception that
// keeps a torn record readable: a collective, wait or marker returns by writing t_return_us (a wait
// also ncompleted) and then storing the new word, so a process killed between the two, or a reader
// racing the return, sees an ENTERED word with those fields already written. Such a record matches
// its check once they read as the zeros they were at ENTERED (writers leave them zero until the
// return); it is read as ENTERED, as before.
inline RecordVerdict verify_record(const lst_record* r, uint32_t word, uint32_t major) {
  if (major < 2)
    return (word & LST_REC_CHECK_MASK) == LST_SLOT_MAGIC ? RecordVerdict::kIntact : RecordVerdict::kDamaged;
  uint64_t v[8];
  detail::load_words(r, word, v);
  const uint32_t check = word & LST_REC_CHECK_MASK;
  if (__builtin_expect(detail::check_of(v) == check, 1)) return RecordVerdict::kIntact;
  const uint32_t kind = LST_WORD_KIND(word);
  if (LST_WORD_STATE(word) == LST_STATE_ENTERED &&
      (kind == LST_KIND_COLLECTIVE || kind == LST_KIND_WAIT || kind == LST_KIND_MARKER)) {
    v[7] &= ~0xFFFFFFFFull;                            // t_return_us (offset 56)
    if (kind == LST_KIND_WAIT) v[3] &= 0xFFFFFFFFull;  // u.wait.ncompleted (offset 28)
    if (detail::check_of(v) == check) return RecordVerdict::kIntact;
  }
  // The fields were read after the word: if the word is no longer the one checked, a writer was
  // refilling (ring) or updating the slot meanwhile, which is no damage.
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (__atomic_load_n(&r->word, __ATOMIC_RELAXED) != word) return RecordVerdict::kChanged;
  return RecordVerdict::kDamaged;
}

}  // namespace lockstep::format
