// The record loop every pass over a rank shares (both ingests, materialize, rehash): a 2.x file's slots
// copied with pread, a piece at a time, into a buffer the walk reads (a ring's in at most two runs
// where it wrapped); where that cannot be done, read in place, with each window of pages mapped in
// ahead of the walk and released behind it.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "lockstep/check/model.h"
#include "lockstep/format/fnv.h"
#include "lockstep/format/record_check.h"
#include "record_sig.h"

namespace lockstep::check::walk {

// The per-record lambdas of these loops are inlined into them: a call per record costs more than the
// record's own work.
#define LOCKSTEP_INLINE __attribute__((always_inline))

constexpr uint64_t kWindow = 1u << 16;  // records per prefetch and release step
constexpr uint64_t kAhead = 32;         // records between the one read and the one prefetched
constexpr uint64_t kPiece = 4096;       // records per pread (256 KiB: the buffer stays in a core's L2)

// A ring slot still holding an earlier id (overwritten in the ring but not refilled yet) is not this
// id's record -- unless the id it carries is damage, which the record's check then reports.
inline bool stale(const lst_record& r, uint32_t word, uint64_t id, uint32_t major) {
  return LST_WORD_KIND(word) == LST_KIND_COLLECTIVE && r.u.coll.id_lo != uint32_t(id) &&
         format::verify_record(&r, word, major) != format::RecordVerdict::kDamaged;
}

// Whether a 2.x record matches its check, computed from eight loads in registers: the common case,
// inline. Anything else goes to format::verify_record (recordsig::load_record) for the verdict.
inline bool intact(const lst_record* r, uint32_t word) {
  const auto* b = reinterpret_cast<const uint8_t*>(r);
  auto at = [b](size_t i) {
    uint64_t v;
    std::memcpy(&v, b + 8 * i, 8);
    return v;
  };
  const uint64_t v0 = (at(0) & ~0xFFFFFFFFull) | (word & ~LST_REC_CHECK_MASK);
  return format::detail::check_of(v0, at(1), at(2), at(3), at(4), at(5), at(6), at(7)) ==
         (word & LST_REC_CHECK_MASK);
}

// The check bits (in the word's positions) of a record's words 0, 1, 4 and 5 alone, the others taken
// as zero: the check is linear (rotations, XOR, a fold), so a record whose words 0 (check bits
// cleared), 1, 4 and 5 are known to equal those of a record seen before needs only the rest read and
// folded in (intact_with).
inline uint32_t check_part(uint64_t v0, uint64_t v1, uint64_t v4, uint64_t v5) {
  return format::detail::check_of(v0, v1, 0, 0, v4, v5, 0, 0);
}

// intact() of a record whose words 0, 1, 4 and 5 give `part` (check_part).
inline bool intact_with(const lst_record* r, uint32_t word, uint32_t part) {
  const auto* b = reinterpret_cast<const uint8_t*>(r);
  auto at = [b](size_t i) {
    uint64_t v;
    std::memcpy(&v, b + 8 * i, 8);
    return v;
  };
  return (format::detail::check_of(0, 0, at(2), at(3), 0, 0, at(6), at(7)) ^ part) ==
         (word & LST_REC_CHECK_MASK);
}

// A record's first eight bytes with the check bits cleared: kind, state, flags, op, api, datatype,
// reduction. Two records equal in these are the same kind of call in the same state.
inline uint64_t first_word(const lst_record& r, uint32_t word) {
  uint32_t head;
  std::memcpy(&head, &r.op, sizeof head);
  return uint64_t(head) << 32 | (word & ~LST_REC_CHECK_MASK);
}

// A trace file's slots by pread, for a walk (RecordSource::open_slots): reading the page cache into
// one small buffer costs a fraction of mapping its pages in (8 GiB of traces: 0.45 s of pread against
// 3.2 s to touch every record through the mapping, on a KVM guest whose page faults exit to the
// hypervisor). Slots past the end of the file read as zeros: not published.
class SlotCopy {
 public:
  explicit SlotCopy(const RecordSource& src) : fd_(src.open_slots(offset_)) {}
  ~SlotCopy() {
    if (fd_ >= 0) ::close(fd_);
  }
  SlotCopy(const SlotCopy&) = delete;
  SlotCopy& operator=(const SlotCopy&) = delete;
  bool ok() const { return fd_ >= 0; }
  // Slots [slot, slot + n) into out[0 .. n); false when the file cannot be read (the walk then maps it).
  bool read(uint64_t slot, uint64_t n, lst_record* out) const {
    auto* bytes = reinterpret_cast<char*>(out);
    const size_t want = n * sizeof(lst_record);
    size_t got = 0;
    while (got < want) {
      const ssize_t r =
          ::pread(fd_, bytes + got, want - got, off_t(offset_ + slot * sizeof(lst_record) + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return false;
      if (r == 0) break;
      got += size_t(r);
    }
    std::memset(bytes + got, 0, want - got);
    return true;
  }

 private:
  uint64_t offset_ = 0;
  int fd_ = -1;
};

// A walk without a bulk step (for_each_slot's `bulk`): never called.
struct NoBulk {};

// Calls fn(id, record, word) for ids [lo, hi) in order: record is nullptr (and word 0) where the slot is
// not published or a ring's stale one. fn returns false to stop the walk; so does for_each_slot. A walk
// that usually stops early passes ahead = false: its windows are not mapped in ahead of it.
// `record` may be a copy, valid until the next call of `piece_done`, which the walk calls after each
// piece of records it handed to fn (a caller that keeps records past fn lets them go there).
// bulk(p, id, n, wraps), where given, is offered the slots p[0 .. n) (ids id ..) before fn sees the
// first of them: it takes the longest run from p[0] it can handle on its own (published, not stale:
// with `wraps`, a slot whose id_lo is not its id's is not bulk's) and returns its length; fn then gets
// the slot after that run, and bulk the rest.
template <class Fn, class PieceDone, class Bulk = NoBulk>
bool for_each_slot(const RecordSource& src, uint64_t lo, uint64_t hi, Fn&& fn, bool ahead,
                   PieceDone&& piece_done, Bulk&& bulk = {}) {
  const uint64_t first = src.first_id();
  const uint32_t major = src.format_major();
  uint64_t capacity = 0;
  const lst_record* ring = src.ring(capacity);
  const lst_record* flat = ring ? nullptr : src.contiguous();
  // One run of slots in memory: ids [a, b) in slots p[0 .. b - a).
  auto run = [&](const lst_record* p, uint64_t a, uint64_t b, bool wraps) LOCKSTEP_INLINE {
    for (uint64_t id = a; id < b; ++id, ++p) {
      if constexpr (!std::is_same_v<std::decay_t<Bulk>, NoBulk>) {
        const uint64_t k = bulk(p, id, b - id, wraps);
        id += k;
        p += k;
        if (id == b) break;
      }
      // The hardware's prefetcher stops at each 4 KiB page: asking for the record 2 KiB ahead starts
      // the next page's translation and first line before the walk waits on them. (A prefetch past
      // the mapping is dropped, never a fault; the address is computed as an integer, since a pointer
      // past the array's end is not one C++ allows.)
      __builtin_prefetch(
          reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + kAhead * sizeof(lst_record)));
      const uint32_t word = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
      const bool there = word != 0 && !(wraps && stale(*p, word, id, major));
      if (!fn(id, there ? p : nullptr, there ? word : 0u)) return false;
    }
    return true;
  };
  // 2.x only: a record that fails its check is then read again through the mapping (ingest_records),
  // where a record a live job is changing shows as changed, not damaged.
  if ((flat || ring) && major >= 2 && lo < hi) {
    const SlotCopy copy(src);
    if (copy.ok()) {
      std::unique_ptr<lst_record[]> piece(new lst_record[kPiece]);
      uint64_t a = lo, released = lo;
      for (uint64_t b; a < hi; a = b) {
        // A ring's piece stops where its slots wrap.
        const uint64_t slot = ring ? a % capacity : a;
        b = std::min(hi, a + (ring ? std::min(kPiece, capacity - slot) : kPiece));
        if (!copy.read(slot, b - a, piece.get())) break;
        const bool go = run(piece.get(), a, b, ring != nullptr);
        piece_done();
        // Pages an earlier pass mapped in (a --validate pass, a record read again on a failed check)
        // go too, a window at a time, as in the mapped walk below.
        if (b - released >= kWindow || b == hi || !go) {
          src.release(released, b);
          released = b;
        }
        if (!go) return false;
      }
      if (a >= hi) return true;
      src.release(released, a);
      lo = a;  // a read failed: the rest through the mapping
    }
  }
  for (uint64_t w0 = lo; w0 < hi;) {
    const uint64_t w1 = std::min(hi, w0 + kWindow);
    if (ahead) src.prefetch(w0, w1);
    bool go = true;
    if (flat) {
      go = run(flat + (w0 - first), w0, w1, false);
    } else if (ring) {
      for (uint64_t a = w0; go && a < w1;) {
        const uint64_t slot = a % capacity, b = std::min(w1, a + (capacity - slot));
        go = run(ring + slot, a, b, true);
        a = b;
      }
    } else {
      for (uint64_t id = w0; go && id < w1; ++id) {
        const lst_record* r = src.record(id);
        go = fn(id, r, r ? __atomic_load_n(&r->word, __ATOMIC_ACQUIRE) : 0u);
      }
    }
    src.release(w0, w1);  // in the page cache still; out of this process
    piece_done();
    if (!go) return false;
    w0 = w1;
  }
  return true;
}

template <class Fn>
bool for_each_slot(const RecordSource& src, uint64_t lo, uint64_t hi, Fn&& fn, bool ahead = true) {
  return for_each_slot(src, lo, hi, std::forward<Fn>(fn), ahead, [] {});
}

// The ingest loop both ingests share: sets up the rank, then takes every published record of the
// trace, verified against its check and range-checked, so that a damaged file is a one-line error
// naming the record even when the reader's separate validation pass is skipped. Collectives go to
// fn(record, word, ref), which is what differs between the ingests; messages to recordsig::tally_message,
// everything else to recordsig::ingest_event. A published 2.x record is first offered to fast(record, word,
// ref), which takes it (returns true) only where it is intact (its own test: intact_with) and fn would do
// with it exactly what fn did with an earlier record whose kind, state, flags and every other field fn and
// the range check read were the same: such a record passed that check already, so it is skipped here. `bulk`,
// where given, is for_each_slot's, with the time of the latest record it took kept in its last argument:
// bulk(p, id, n, wraps, last_t_ns) (its records are counted here).
template <class Fn, class Fast, class Bulk = NoBulk>
void ingest_records(Rank& rank, std::shared_ptr<const RecordSource> source, Fn&& fn, Fast&& fast,
                    Bulk&& bulk = {}) {
  const RecordSource& src = *source;
  rank.source = std::move(source);
  for (auto& m : rank.modules)
    if (!m.path_hash) m.path_hash = format::fnv1a(m.path.substr(m.path.rfind('/') + 1));
  const uint64_t first = src.first_id();
  const uint32_t major = src.format_major();
  const uint64_t end = src.end_id();
  rank.end_id = end;
  // In registers for the walk, not stored per record.
  uint64_t records = rank.records, last_t_ns = rank.last_t_ns;
  // Messages: a point-to-point benchmark's records are almost all sends and receives to one peer. A
  // 2.x message whose first eight bytes (kind, state, flags, op, api, datatype, reduction: all the range
  // check reads), communicator and peer equal those of the last send (or receive) tallied, not ENTERED,
  // and that is intact, is that key again: counted here, without the general path.
  struct MessageHit {
    uint64_t v0 = 0, comm = 0;
    int32_t peer = 0;
    uint64_t* n = nullptr;
  };
  MessageHit hits[2];
  // first and major by value: through a reference they would be loaded again for every record.
  auto each = [&, first, major](uint64_t id, const lst_record* slot, uint32_t seen) LOCKSTEP_INLINE {
    uint32_t word = seen;
    const lst_record* r = slot;
    if (slot) {
      const MessageHit& h = hits[slot->op == LST_OP_SEND];
      if (h.n && first_word(*slot, seen) == h.v0 && slot->comm == h.comm &&
          slot->u.coll.root_or_peer == h.peer && intact(slot, seen)) {
        rank.messages.add_to(h.n);
        ++records;
        last_t_ns = std::max(last_t_ns, slot->t_ns);
        return true;
      }
      if (major >= 2 && fast(*slot, seen, RecordRef(id - first))) {
        ++records;
        last_t_ns = std::max(last_t_ns, slot->t_ns);
        return true;
      }
      // A 2.x slot may be a copy, which a live job cannot change: read again through the
      // mapping (a ring's slot refilled since then reads as not published).
      if (!(major >= 2 && intact(slot, seen)))
        r = major >= 2 ? recordsig::load_record(src, nullptr, first, id, major, word)
                       : recordsig::load_record(src, slot, id, id, major, word);
    }
    if (!r) {
      ++rank.unpublished;
      return true;
    }
    ++records;
    if (!recordsig::record_ok(*r, word))
      throw std::runtime_error(fmt::format("record {}: bad record (word {:#010x})", id, word));
    last_t_ns = std::max(last_t_ns, r->t_ns);
    const RecordRef ref = RecordRef(id - first);
    if (LST_WORD_KIND(word) != LST_KIND_COLLECTIVE) {
      recordsig::ingest_event(rank, src, *r, word, ref);
    } else if (recordsig::is_message(*r, word)) {
      uint64_t* n = recordsig::tally_message(rank, recordsig::message(*r, word, ref));
      if (major >= 2 && LST_WORD_STATE(word) != LST_STATE_ENTERED && r == slot)
        hits[r->op == LST_OP_SEND] = {first_word(*r, word), r->comm, r->u.coll.root_or_peer, n};
    } else {
      fn(*r, word, ref);
    }
    return true;
  };
  if constexpr (std::is_same_v<std::decay_t<Bulk>, NoBulk>) {
    for_each_slot(src, first, end, each);
  } else {
    for_each_slot(
        src, first, end, each, true, [] {},
        [&, major](const lst_record* p, uint64_t id, uint64_t n, bool wraps) LOCKSTEP_INLINE {
          if (major < 2) return uint64_t(0);
          const uint64_t k = bulk(p, id, n, wraps, last_t_ns);
          records += k;
          return k;
        });
  }
  rank.records = records;
  rank.last_t_ns = last_t_ns;
  recordsig::finish_messages(rank);
}

template <class Fn>
void ingest_records(Rank& rank, std::shared_ptr<const RecordSource> source, Fn&& fn) {
  ingest_records(rank, std::move(source), std::forward<Fn>(fn),
                 [](const lst_record&, uint32_t, RecordRef) LOCKSTEP_INLINE { return false; });
}

}  // namespace lockstep::check::walk
