// The per-record check of format 2.0: a 16-bit hash of a record's 64 bytes, kept in the spare bits of
// its word (LST_REC_CHECK_MASK) so that it is published by the same release store as the state it
// covers. Shared by the writer (which seals every word it stores) and every reader (verify_record).
#pragma once

#include <stdint.h>
#include <string.h>

#include "lockstep/format/layout.h"

namespace lockstep::format {
namespace detail {

#define LST_CHECK_INLINE inline __attribute__((always_inline))

LST_CHECK_INLINE uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// The eight words, each rotated by its own number of bits (8, 7, 14, ... 53), XORed, and folded to
// 16 bits. Only one-cycle operations, so the chain from the record's last store to its word store is
// short. A changed byte flips bits in 8 consecutive positions of the 64-bit XOR, which the fold keeps
// in 8 distinct check bits: every single-byte change is caught; wider random damage slips through
// about once in 65,536. Word 0 turns by 8 so that its kind and state bits fold onto check bits other
// than the ones stored in the same byte (a byte holding both can never change them alike).
LST_CHECK_INLINE uint32_t check_of(uint64_t v0, uint64_t v1, uint64_t v2, uint64_t v3, uint64_t v4,
                                   uint64_t v5, uint64_t v6, uint64_t v7) {
  uint64_t h = ((rotl(v0, 8) ^ rotl(v1, 7)) ^ (rotl(v2, 14) ^ rotl(v3, 21))) ^
               ((rotl(v4, 29) ^ rotl(v5, 37)) ^ (rotl(v6, 45) ^ rotl(v7, 53)));
  h ^= h >> 32;
  h ^= h >> 16;
  const uint32_t c = uint32_t(h) & 0xFFFFu;
  // Check bits 0-7, 8-10 and 11-15 go to word bits 0-7, 13-15 and 19-23.
  return (c & 0xFFu) | ((c & 0x700u) << 5) | ((c & 0xF800u) << 8);
}
LST_CHECK_INLINE uint32_t check_of(const uint64_t v[8]) {
  return check_of(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
}

// The record's words with `word` (check bits cleared) in place of the stored one.
LST_CHECK_INLINE void load_words(const lst_record* r, uint32_t word, uint64_t v[8]) {
  memcpy(v, r, sizeof(lst_record));
  v[0] = (v[0] & ~0xFFFFFFFFull) | (word & ~LST_REC_CHECK_MASK);
}

template <class T>
LST_CHECK_INLINE uint64_t ld(const void* p) {
  return __atomic_load_n(static_cast<const T*>(p), __ATOMIC_RELAXED);
}

// The check of a record the calling thread has just filled, read the way it stored it: the four
// bytes at 4 one by one, the rest in 4-byte pieces, each inside one earlier store (every field is 1,
// 4 or 8 bytes and aligned), so that each load is forwarded from the store buffer rather than waiting
// for the stores to reach the cache. Relaxed atomic loads, so the compiler does not merge them.
LST_CHECK_INLINE uint32_t check_as_stored(const lst_record* r, uint32_t word) {
  const auto* b = reinterpret_cast<const uint8_t*>(r);
  auto pair = [b](int at) { return ld<uint32_t>(b + at) | ld<uint32_t>(b + at + 4) << 32; };
  const uint64_t head =
      ld<uint8_t>(b + 4) | ld<uint8_t>(b + 5) << 8 | ld<uint8_t>(b + 6) << 16 | ld<uint8_t>(b + 7) << 24;
  return check_of((head << 32) | (word & ~LST_REC_CHECK_MASK), pair(8), pair(16), pair(24), pair(32),
                  pair(40), pair(48), pair(56));
}

}  // namespace detail

// `word` (kind, state and flags; its check bits are ignored) with the check of the record's current
// fields. The writer stores nothing else into a 2.x record's word.
inline uint32_t seal_record_word(const lst_record* r, uint32_t word) {
  return (word & ~LST_REC_CHECK_MASK) | detail::check_as_stored(r, word);
}

// `word` sealed with the check of a record given as its eight little-endian words, bytes 4-7 in the
// high half of v0 (its low half is ignored): for a writer that holds the fields in registers and so
// need not read back what it just stored.
inline uint32_t seal_words(uint32_t word, uint64_t v0, uint64_t v1, uint64_t v2, uint64_t v3, uint64_t v4,
                           uint64_t v5, uint64_t v6, uint64_t v7) {
  const uint32_t fields = word & ~LST_REC_CHECK_MASK;
  return fields | detail::check_of((v0 & ~0xFFFFFFFFull) | fields, v1, v2, v3, v4, v5, v6, v7);
}

// `word` sealed for a record that differs from one whose word was sealed as `sealed` (seal_words) only
// in its word fields and by the XOR deltas d0 (bytes 4-7, in its high half; its low half is ignored),
// d2, d3 and d4 of words 0, 2, 3 and 4: the check is linear, so it is the other's changed by the check
// of the differences alone (two records of one call, which share their other words, are hashed once).
inline uint32_t reseal_words(uint32_t sealed, uint32_t word, uint64_t d0, uint64_t d2, uint64_t d3,
                             uint64_t d4) {
  const uint32_t fields = word & ~LST_REC_CHECK_MASK;
  const uint64_t dw = (d0 & ~0xFFFFFFFFull) | ((sealed ^ fields) & ~LST_REC_CHECK_MASK);
  return fields | ((sealed & LST_REC_CHECK_MASK) ^ detail::check_of(dw, 0, d2, d3, d4, 0, 0, 0));
}

// The check bits of a record whose word fields changed from `old_word`'s to `new_fields` and whose
// words 3 and 7 changed by the XOR deltas d3 and d7, from `old_word`'s check alone: the check is
// linear (rotations, XOR, fold), so nothing is read back. Updates that each apply their own change
// compose in any order.
LST_CHECK_INLINE uint32_t updated_check(uint32_t old_word, uint32_t new_fields, uint64_t d3, uint64_t d7) {
  const uint64_t d0 = (old_word ^ new_fields) & ~LST_REC_CHECK_MASK;
  return (old_word & LST_REC_CHECK_MASK) ^ detail::check_of(d0, 0, 0, d3, 0, 0, 0, d7);
}

// The word a record moves to when its call returns (`state`: RETURNED or FAILED), from the word `old`
// it holds and the XOR delta `d7` of its word 7 (t_return_us and aux), and `d3` of word 3 (a WAIT
// record's ncompleted): RETURNED or FAILED only from ENTERED (a record returns once), otherwise the
// state it has, with the check updated for the new fields either way.
LST_CHECK_INLINE uint32_t returned_word(uint32_t old, uint8_t state, uint64_t d3, uint64_t d7) {
  const uint32_t cur = LST_WORD_STATE(old);
  const uint32_t s = cur < LST_STATE_RETURNED ? state : cur;
  const uint32_t fields = (old & ~(LST_REC_CHECK_MASK | (0x07u << 16))) | s << 16;
  return fields | updated_check(old, fields, d3, d7);
}

// returned_word's change, as an XOR, to the word of a record that returns from ENTERED (to `state`)
// and whose t_return_us goes from 0 to `t_return_us`, its only other change: the same for every such
// record, since the check is linear, so the records of one call share it.
LST_CHECK_INLINE uint32_t return_change(uint8_t state, uint32_t t_return_us) {
  const uint32_t d = uint32_t(LST_STATE_ENTERED ^ state) << 16;
  return d ^ detail::check_of(d, 0, 0, 0, 0, 0, 0, t_return_us);
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
