// Trace writer used inside the traced process (liblockstep_trace.so): creates the per-process file
// and appends records through a MAP_SHARED mapping, so that whatever was published survives a hang,
// a crash or kill -9. No exceptions; no allocation or lock on the record path (growth and interning
// take a lock; interning is off the per-call path for everything but runtime tensor names).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "lockstep/format/layout.h"
#include "lockstep/format/record_check.h"

namespace lockstep::format {

struct WriterConfig {
  const char* dir = nullptr;          // trace directory; created 0700 when missing
  int32_t rank_hint = LST_NONE;       // world rank known from the launcher's environment, if any
  int32_t size_hint = LST_NONE;       // world size known from it with that rank, if any
  uint64_t ring_records = 0;          // 0: growing file; N: keep the last N records
  uint64_t initial_records = 4096;    // growing file: records it holds at first (256 KiB)
  uint64_t chunk_records = 1u << 16;  // largest growth step (records); steps double up to it
  uint64_t meta_slots = 1u << 16;     // metadata region size (slots; blocks allocated as it fills)
  uint64_t max_records = 1u << 26;  // growing file: records it may hold at most (address range reserved once)
  const char* job_id = "";          // groups the files of one job
  const char* cmdline = "";
};

class Writer {
 public:
  Writer() = default;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();

  // Creates <dir>/rank-<r>.<host>.<pid>.lstrace with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, writes the
  // header and maps the file. On failure returns false with a one-line reason in `err`.
  bool open(const WriterConfig& config, char* err, size_t err_len);
  bool is_open() const { return header_ != nullptr; }
  const char* path() const { return path_; }

  // Reserves the next record slot (one atomic add). Returns nullptr when the file cannot grow (the
  // drop is counted in the header). The slot's word is zero until publish(); u.coll.id_lo already
  // holds the id's low 32 bits (collective records keep it: it tells a ring reader the slot's owner).
  // Async-signal-safe: no allocation, no lock (growth is a bounded wait on the growing thread).
  // Inline for a power-of-two ring and for a growing file whose next slot is mapped (every record but
  // a few); the rest in reserve_slow.
  lst_record* reserve(uint64_t* id) {
    if (__builtin_expect(hot_.records != nullptr, 1))
      return place(__atomic_fetch_add(&header_->record_next, 1, __ATOMIC_RELAXED), id);
    return reserve_any(id);
  }
  // Reserves `n` consecutive records with one atomic add (the STACK records of one call): out[k] is
  // the slot of record *first + k, nullptr where it was dropped. Async-signal-safe, like reserve().
  void reserve_n(lst_record** out, int n, uint64_t* first) {
    if (__builtin_expect(header_ == nullptr || n <= 0, 0)) {
      for (int k = 0; k < n; ++k) out[k] = nullptr;
      return;
    }
    const uint64_t id0 = __atomic_fetch_add(&header_->record_next, uint64_t(n), __ATOMIC_RELAXED);
    *first = id0;
    uint64_t id;
    for (int k = 0; k < n; ++k)
      out[k] = hot_.records != nullptr ? place(id0 + uint64_t(k), &id) : reserve_slow(id0 + uint64_t(k), &id);
  }
  // reserve_n of the two records of one call (MPI_Sendrecv), without the loop where reserve() is inline.
  void reserve_pair(lst_record** out, uint64_t* first) {
    if (__builtin_expect(hot_.records == nullptr, 0)) return reserve_n(out, 2, first);
    const uint64_t id0 = __atomic_fetch_add(&header_->record_next, uint64_t(2), __ATOMIC_RELAXED);
    *first = id0;
    // A copy, read once: the first slot's stores could alias hot_ as far as the compiler can tell.
    const Hot hot = hot_;
    uint64_t id;
    out[0] = place(hot, id0, &id);
    out[1] = place(hot, id0 + 1, &id);
  }
  // Stores `word` (LST_WORD: kind, state, flags) sealed with the check of the record's fields (format
  // 2.0, record_check.h), with release order: every field written before is visible to a reader that
  // sees the word, and covered by its check. Fields changed later go through advance or finish.
  static void publish(lst_record* r, uint32_t word);
  // publish() of a word already sealed by the caller (seal_words in record_check.h, from the values it
  // stored), so that the record is not read back.
  static void publish_sealed(lst_record* r, uint32_t sealed) {
    __atomic_store_n(&r->word, sealed, __ATOMIC_RELEASE);
  }
  // In-place updates of a published record, lock-free. Each applies its own change to the word's
  // check (record_check.h, updated_check), so updates racing on one record compose; a field changed
  // after publish must go through one of them. advance: moves to `state` unless already further.
  // finish: stores the duration, then returns the record (RETURNED or FAILED) unless it has already
  // returned (or completed). finish_wait: the same for a WAIT record and its count.
  static void advance(lst_record* r, uint8_t state) {
    uint32_t old = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
    for (;;) {
      if (LST_WORD_STATE(old) >= state) return;
      const uint32_t fields = (old & ~(LST_REC_CHECK_MASK | (0x07u << 16))) | uint32_t(state) << 16;
      const uint32_t next = fields | updated_check(old, fields, 0, 0);
      if (__atomic_compare_exchange_n(&r->word, &old, next, true, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) return;
    }
  }
  static void finish(lst_record* r, uint8_t state, uint32_t t_return_us);
  static void finish_wait(lst_record* r, uint8_t state, uint32_t t_return_us, uint32_t ncompleted);
  // finish and finish_wait for the thread that wrote the record, while no other thread can update it:
  // a call's own return, which comes before any completion another thread could record (a Wait finds
  // the request only after the return; a device completion is handed the record after it). `word` is
  // the record's word as loaded by the caller. One release store instead of a compare-and-swap loop,
  // the same fields and check; t_return_us is stored first, so a reader that sees the old word reads
  // an ENTERED record (verify_record).
  static void finish_own(lst_record* r, uint32_t word, uint8_t state, uint32_t t_return_us) {
    const uint32_t was = r->t_return_us;
    r->t_return_us = t_return_us;
    __atomic_store_n(&r->word, returned_word(word, state, 0, uint64_t(was ^ t_return_us)), __ATOMIC_RELEASE);
  }
  static void finish_wait_own(lst_record* r, uint32_t word, uint8_t state, uint32_t t_return_us,
                              uint32_t ncompleted) {
    const uint32_t was_t = r->t_return_us, was_n = r->u.wait.ncompleted;
    r->u.wait.ncompleted = ncompleted;
    r->t_return_us = t_return_us;
    __atomic_store_n(
        &r->word,
        returned_word(word, state, uint64_t(was_n ^ ncompleted) << 32, uint64_t(was_t ^ t_return_us)),
        __ATOMIC_RELEASE);
  }
  // The slot of a record reserved earlier, for in-place updates; nullptr when a ring has since
  // reused it.
  lst_record* at(uint64_t id) {
    if (__builtin_expect(hot_.records == nullptr, 0)) return at_any(id);
    return at_mapped(id, __atomic_load_n(&header_->record_next, __ATOMIC_ACQUIRE));
  }
  // at() with `next`, a value of the record cursor read (or returned by a reservation) after record
  // `id` was reserved, instead of reading the cursor again: for a thread that updates many records in
  // a row and must not take the cursor's cache line from the threads adding to it on every call. A
  // ring slot reused since `next` was read is told by its word, as in at().
  lst_record* at(uint64_t id, uint64_t next) {
    if (__builtin_expect(hot_.records == nullptr, 0)) return id < next ? at_any(id) : nullptr;
    return at_mapped(id, next);
  }

 private:
  // at(id, next) once the records are known to be mapped (hot_.records set): each at() checks that once.
  lst_record* at_mapped(uint64_t id, uint64_t next) {
    if (id >= next) return nullptr;
    if (hot_.ring_mask) {
      if (next - id > hot_.ring_mask + 1) return nullptr;
      auto* r = reinterpret_cast<lst_record*>(hot_.records + (id & hot_.ring_mask) * LST_SLOT_SIZE);
      const uint32_t w = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
      return LST_WORD_KIND(w) == LST_KIND_COLLECTIVE && r->u.coll.id_lo != uint32_t(id) ? nullptr : r;
    }
    if (id >= hot_.capacity->load(std::memory_order_acquire)) return nullptr;
    return reinterpret_cast<lst_record*>(hot_.records + id * LST_SLOT_SIZE);
  }

 public:
  // Interns bytes into the metadata region; returns the string id (0 when the region is full or the
  // file system has no room for its page).
  // A string met before is found without the lock (a table keyed by its hash, each hit compared with the
  // stored string); a new one is written under the metadata lock.
  uint32_t intern(const void* bytes, size_t len, uint8_t subkind = LST_STR_TEXT);
  // The bytes of string `id` (returned by intern() of this writer) as stored, not NUL terminated: for a
  // caller that keeps a text's id and checks that the text still says the same before using it again.
  const char* string_bytes(uint32_t id) const {
    return reinterpret_cast<const char*>(base_ + header_->meta_offset + uint64_t(id - 1) * LST_SLOT_SIZE +
                                         sizeof(lst_meta_string));
  }
  // (2.2) The id of a LST_STR_FRAMES blob holding `frames` (n return addresses), for a STACK record's
  // aux: each distinct list is written once and found again without a lock (a table keyed by the
  // list's hash, each hit compared with the blob itself). `added` says whether this call wrote it.
  // Returns 0, and writes nothing, when the list is new and cannot be kept: the metadata lock stays busy,
  // the table's neighbourhood is full, or the blobs would take more than half of the metadata region
  // (the rest stays for names and modules); the caller then writes the frames into records.
  // Async-signal-safe, as intern() is: the lock is waited for a bounded time only (a signal handler may
  // have interrupted its holder).
  uint32_t intern_frames(const uint64_t* frames, size_t n, bool* added);
  // Makes sure the module containing `addr` is in the module table (dl_iterate_phdr on a miss). Returns
  // false only when it could not look now (the metadata lock was busy): a later call may add it.
  bool note_module(uint64_t addr);
  // Adds a Python code object's module entry (layout.h, LST_MOD_PYTHON) for [lo, lo + LST_PY_LINE_SPAN).
  // Returns false when the metadata region is full or busy.
  bool add_python_module(const char* file, size_t file_len, const char* function, size_t function_len,
                         uint64_t lo);

  // Once MPI (or NCCL) tells the world rank and size; renames a rank-less file to its final name.
  void set_world(int32_t rank, int32_t size);
  void set_end_state(uint32_t state);
  lst_header* header() { return header_; }
  // Unmaps and closes; the file stays. Only when no other thread can still write a record. After
  // fork() the child calls abandon() instead: it unmaps without touching the parent's file.
  void close();
  void abandon();

 private:
  lst_header* header_ = nullptr;
  uint8_t* base_ = nullptr;  // start of the reserved address range the file is mapped into
  int fd_ = -1;
  void* impl_ = nullptr;  // growth lock, module ranges, intern table (writer.cc)
  // What the inline reserve needs of impl_: records null where it does not apply (closed, or a ring
  // whose size is not a power of two); ring_mask 0 for a growing file, whose capacity and growth mark
  // are impl_'s atomics.
  struct Hot {
    uint8_t* records = nullptr;
    uint64_t ring_mask = 0;
    const std::atomic<uint64_t>* capacity = nullptr;
    const std::atomic<uint64_t>* ahead_mark = nullptr;
  } hot_;
  // The slot of record n, just taken from record_next, where hot_ applies (hot_.records set).
  lst_record* place(uint64_t n, uint64_t* id) { return place(hot_, n, id); }
  lst_record* place(const Hot& hot, uint64_t n, uint64_t* id) {
    lst_record* r;
    if (hot.ring_mask) {
      r = reinterpret_cast<lst_record*>(hot.records + (n & hot.ring_mask) * LST_SLOT_SIZE);
      // The slot was last written a whole ring ago and is likely out of the cache: start fetching the
      // slot a few records ahead, so that its miss overlaps the calls in between.
      __builtin_prefetch(hot.records + ((n + 8) & hot.ring_mask) * LST_SLOT_SIZE, 1, 3);
      // Unpublish first, so a reader never pairs the old word with the new fields: the release fence
      // keeps the stores that refill the slot after the store of 0 (free on x86).
      __atomic_store_n(&r->word, 0u, __ATOMIC_RELAXED);
      __atomic_thread_fence(__ATOMIC_RELEASE);
    } else if (__builtin_expect(n != hot.ahead_mark->load(std::memory_order_relaxed) &&
                                    n < hot.capacity->load(std::memory_order_acquire),
                                1)) {
      r = reinterpret_cast<lst_record*>(hot.records + n * LST_SLOT_SIZE);
      // A growing file's slots are new memory, last touched when the page was faulted in, often on
      // another core: fetch the slot a few records ahead as the ring does (a prefetch past the
      // mapped capacity is dropped, never a fault).
      __builtin_prefetch(hot.records + (n + 8) * LST_SLOT_SIZE, 1, 3);
    } else {
      return reserve_slow(n, id);
    }
    r->u.coll.id_lo = uint32_t(n);
    *id = n;
    return r;
  }
  // Last: the fields a record's reservation reads (header_, hot_) share one cache line.
  char path_[4096] = {};
  lst_record* at_any(uint64_t id);
  lst_record* reserve_any(uint64_t* id);                    // the whole reservation, out of line
  lst_record* reserve_slow(uint64_t id, uint64_t* id_out);  // after the id is taken: growth, drops
};

}  // namespace lockstep::format
