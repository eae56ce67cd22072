// What both ingests (model.cc, stream.cc) compute per record: the range check of the fields they use,
// whether a call is done, and its alignment signature. Inline: these run once per record.
#pragma once

#include <fmt/format.h>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "lockstep/check/model.h"
#include "lockstep/check/op_semantics.h"
#include "lockstep/format/fnv.h"
#include "lockstep/format/layout.h"
#include "lockstep/format/record_check.h"

namespace lockstep::check::recordsig {

inline uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  x ^= x >> 33;
  return x;
}

// Multiplier that spreads a site key over the signature's bits before it is folded in.
inline constexpr uint64_t kSiteSpread = 0x9e3779b97f4a7c15ull;

inline bool reducing(uint8_t op) {
  switch (op) {
    case LST_OP_REDUCE:
    case LST_OP_ALLREDUCE:
    case LST_OP_REDUCE_SCATTER:
    case LST_OP_REDUCE_SCATTER_BLOCK:
    case LST_OP_SCAN:
    case LST_OP_EXSCAN:
      return true;
    default:
      return false;
  }
}

inline bool v_variant(uint8_t op, uint8_t flags) {
  switch (op) {
    case LST_OP_GATHERV:
    case LST_OP_SCATTERV:
    case LST_OP_ALLGATHERV:
    case LST_OP_ALLTOALLV:
    case LST_OP_ALLTOALLW:
    case LST_OP_REDUCE_SCATTER:
      return true;
    default:
      return (flags & LST_F_VCOUNTS) != 0;
  }
}

// A call is done when nothing more will happen to it: MPI nonblocking calls need their Wait/Test;
// NCCL and runtime calls count as done once they returned (device completion is optional).
inline bool done(uint32_t word, uint8_t api) {
  uint8_t state = LST_WORD_STATE(word);
  if (state == LST_STATE_COMPLETED || state == LST_STATE_FAILED) return true;
  if (state != LST_STATE_RETURNED) return false;
  return !((LST_WORD_FLAGS(word) & LST_F_NONBLOCKING) && api == LST_API_MPI);
}
inline bool done(const lst_record& r) { return done(__atomic_load_n(&r.word, __ATOMIC_RELAXED), r.api); }

// The published record at `id`, its word in `word`; nullptr when the slot is not published yet (or
// was being rewritten while read). A record that does not match its check (2.x) or whose magic is
// wrong (1.x) is damage: one error naming the record.
inline const lst_record* load_record(const RecordSource& src, const lst_record* slots, uint64_t first,
                                     uint64_t id, uint32_t major, uint32_t& word) {
  const lst_record* r;
  word = 0;
  if (slots) {
    r = slots + (id - first);
    word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
    if (word == 0) return nullptr;
  } else {
    r = src.record(id);
    if (!r) return nullptr;
    word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  }
  switch (format::verify_record(r, word, major)) {
    case format::RecordVerdict::kIntact:
      return r;
    case format::RecordVerdict::kChanged:
      return nullptr;
    case format::RecordVerdict::kDamaged:
      break;
  }
  throw std::runtime_error(
      fmt::format("record {}: {} (word {:#010x})", id,
                  major < 2 ? "bad slot word" : "does not match its check (damaged in its 64 bytes)", word));
}

// The fields an ingest relies on, range-checked, so a damaged file is a one-line error even when the
// reader's separate validation pass is skipped.
inline bool record_ok(const lst_record& r, uint32_t word) {
  const uint8_t st = LST_WORD_STATE(word);
  switch (LST_WORD_KIND(word)) {
    case LST_KIND_COLLECTIVE:
      return r.op < LST_OP__COUNT && st >= LST_STATE_ENTERED && st <= LST_STATE_FAILED &&
             (r.dtype <= LST_DT_PAIR || r.dtype >= LST_DT_DERIVED) &&
             (r.redop <= LST_RED_PREMULSUM || r.redop >= LST_RED_USER);
    case LST_KIND_COMM:
      return r.op > 0 && r.op < LST_COMM__COUNT;
    case LST_KIND_MARKER:
      return r.op > 0 && r.op < LST_MARK__COUNT;
    case LST_KIND_WAIT:
    case LST_KIND_DEVICE:
    case LST_KIND_STACK:
      return true;
    default:
      return false;
  }
}

// Messages pair by peer and tag, not by position: never part of the collective sequence.
inline bool is_message(const lst_record& r, uint32_t word) {
  return (LST_WORD_FLAGS(word) & LST_F_P2P) || r.op == LST_OP_SEND || r.op == LST_OP_RECV ||
         r.op == LST_OP_PROBE;
}

inline __attribute__((always_inline)) uint64_t semantic(const lst_record& r, std::string_view name) {
  uint8_t flags = LST_WORD_FLAGS(r.word);
  uint64_t h =
      mix(uint64_t(r.api) << 16 | uint64_t(r.op) << 8 | (flags & (LST_F_NONBLOCKING | LST_F_CONTROL)));
  if (!v_variant(r.op, flags)) h = mix(h ^ (r.u.coll.count * uint64_t(r.u.coll.dtype_size)));
  if (!(flags & LST_F_DERIVED) && r.dtype != LST_DT_DERIVED) h = mix(h ^ (uint64_t(r.dtype) << 40));
  if (is_rooted(r.op)) h = mix(h ^ (uint64_t(uint32_t(r.u.coll.root_or_peer)) << 8));
  if (reducing(r.op)) h = mix(h ^ (uint64_t(r.redop) << 48));
  if (!name.empty()) h = mix(h ^ format::fnv1a(name));
  return h;
}

// The runtime tensor name a signature includes ("" when none).
template <class Source>
inline std::string_view call_name(const Source& src, const lst_record& r) {
  return r.api == LST_API_RT && r.aux ? src.string(r.aux) : std::string_view();
}

// Everything but collectives and messages: communicators, markers, waits.
void ingest_event(Rank& rank, const RecordSource& src, const lst_record& r, uint32_t word, RecordRef ref);
// A message record (is_message) as the checker keeps it.
P2P message(const lst_record& r, uint32_t word, RecordRef ref);
// Counts a message in its rank's tally (and keeps it in p2p_open while ENTERED); returns its key's count.
uint64_t* tally_message(Rank& rank, const P2P& p);
// After a walk over the rank's messages: adds to p2p_open the nonblocking one its last MPI_Wait names.
void finish_messages(Rank& rank);

}  // namespace lockstep::check::recordsig
