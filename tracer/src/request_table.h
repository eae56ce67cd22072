// The requests of pending nonblocking calls (MPI_I* collectives and point-to-point), each mapped to
// the id of the record it completes. Every start inserts, every Wait/Test looks up and erases, so the
// common case is one cache line and at most one locked instruction per request (the start's claim of a
// way; none where one thread at a time calls MPI): a lock-free direct-mapped front of 4-way buckets,
// with a sharded, locked table behind it for the handles whose bucket is full.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace lockstep::trace {

class RequestTable {
 public:
  static constexpr size_t kBuckets = 1024;  // power of two
  static constexpr size_t kWays = 4;        // one bucket is one cache line
  static constexpr size_t kShards = 64;     // the overflow table
  static constexpr size_t kShardSlots = 256;

  // Maps a request handle to a record id. A handle already present (its completion was not seen)
  // takes the newer id. Returns false when both the handle's bucket and its overflow shard are full:
  // that completion goes unrecorded.
  bool insert(uintptr_t request, uint64_t id) noexcept {
    Bucket& b = bucket(request);
    for (;;) {
      unsigned same = 0, free = 0;  // bit i: way i holds this handle / nothing
#pragma GCC unroll 4
      for (unsigned i = 0; i < kWays; ++i) {
        const uintptr_t k = b.keys[i].load(std::memory_order_relaxed);
        same |= unsigned(k == request) << i;
        free |= unsigned(k == 0) << i;
      }
      const bool one = one_caller_.load(std::memory_order_relaxed);
      if (__builtin_expect(same != 0, 0)) {
        const unsigned way = static_cast<unsigned>(__builtin_ctz(same));
        if (one) {  // no erase can run meanwhile
          b.ids[way].store(id, std::memory_order_relaxed);
          return true;
        }
        // Taken while the id changes, so that an erase of the handle's previous request, on the thread
        // that completed it, finds either the old id (and frees the way before this start looks) or
        // the new one. (A way taken by that erase is neither this handle nor free: the start goes to
        // another way, and the erase frees the old one.)
        uintptr_t expected = request;
        if (!b.keys[way].compare_exchange_strong(expected, taken(request), std::memory_order_acquire,
                                                 std::memory_order_relaxed))
          continue;  // taken by the erase meanwhile: look again
        b.ids[way].store(id, std::memory_order_relaxed);
        b.keys[way].store(request, std::memory_order_release);
        return true;
      }
      if (__builtin_expect(!used_.load(std::memory_order_relaxed), 0))
        used_.store(true, std::memory_order_relaxed);
      if (__builtin_expect(free != 0, 1)) {
        const unsigned way = static_cast<unsigned>(__builtin_ctz(free));
        uintptr_t expected = 0;
        // Two starts on other threads may claim the same free way: the compare-and-swap picks one. With
        // one caller at a time, the way is the start's: a plain store, as take() frees it (a locked
        // instruction costs a record path about 10 ns on some processors, docs/benchmarks.md).
        if (__builtin_expect(one, 1)) {
          b.ids[way].store(id, std::memory_order_relaxed);
          b.keys[way].store(request, std::memory_order_release);
          if (__builtin_expect(overflow_.pending() > 0, 0)) overflow_.erase(request, kAnyId);
          return true;
        }
        if (b.keys[way].compare_exchange_strong(expected, request, std::memory_order_relaxed)) {
          b.ids[way].store(id, std::memory_order_release);
          if (__builtin_expect(overflow_.pending() > 0, 0)) overflow_.erase(request, kAnyId);  // a stale twin
          return true;
        }
      }
      return insert_slow(request, id);
    }
  }

  bool find(uintptr_t request, uint64_t* id) noexcept { return lookup<false>(request, id); }

  // find() and erase() in one, for a caller that holds the live handle of a request it is about to
  // complete for certain (MPI_Wait, MPI_Waitall: taken before the call, put back with insert() where
  // the call left the request pending). MPI cannot hand a live handle to another start, so nothing else
  // writes its way meanwhile and the way is freed with a plain store, not erase()'s locked exchange.
  // (Open MPI gives one shared handle to sends that completed at once; their starts on other threads may
  // update its way at any time, and the table keeps one id per handle either way.)
  bool take(uintptr_t request, uint64_t* id) noexcept { return lookup<true>(request, id); }

  // Forgets a handle that maps to `id` (what find() gave before the request was completed or freed);
  // returns whether it was there. MPI can hand the handle out again, to a start on another thread, as
  // soon as the completing call has freed it, and that start then overwrites the id in place: the way
  // is taken (its key swapped for taken(request)) while the id is compared and the way freed, and a
  // start takes it the same way to change the id, so one of the two goes first and the start's entry
  // stays whatever the interleaving.
  bool erase(uintptr_t request, uint64_t id) noexcept {
    bool erased = one_caller_.load(std::memory_order_relaxed) ? erase_alone(bucket(request), request, id)
                                                              : erase_front(bucket(request), request, id);
    if (__builtin_expect(overflow_.pending() > 0, 0)) erased = overflow_.erase(request, id) || erased;
    return erased;
  }

  // False until the first insert: a process that never starts a recorded nonblocking call skips the
  // lookups of its Wait/Test calls.
  bool used() const noexcept { return used_.load(std::memory_order_relaxed); }

  // Whether one thread at a time starts and completes requests (MPI provided a thread level below
  // MPI_THREAD_MULTIPLE, so the application orders its MPI calls): the front's ways are then claimed and
  // freed with plain stores. Set once, before the first insert.
  void set_one_caller(bool one) noexcept { one_caller_.store(one, std::memory_order_relaxed); }

  // The handles held now (both levels); a scan, for tests and diagnostics, not for the call path.
  size_t size() const noexcept;

 private:
  struct alignas(64) Bucket {
    std::atomic<uintptr_t> keys[kWays] = {};  // 0: free
    std::atomic<uint64_t> ids[kWays] = {};
  };
  static constexpr uint64_t kAnyId = ~0ull;
  // What a way's key holds while a start or an erase changes it: never 0, never a handle (a handle is
  // a user-space pointer, whose top bit is clear).
  static constexpr uintptr_t taken(uintptr_t request) noexcept { return ~request; }
  static size_t home(uintptr_t k) noexcept {
    // Fibonacci hashing: request handles are heap addresses with equal low bits.
    return static_cast<size_t>((static_cast<uint64_t>(k) * 0x9e3779b97f4a7c15ull) >> 54) & (kBuckets - 1);
  }
  Bucket& bucket(uintptr_t k) noexcept { return front_[home(k)]; }
  // find(), and with kTake take(): the way that holds the handle, freed with a plain store for take().
  template <bool kTake>
  bool lookup(uintptr_t request, uint64_t* id) noexcept {
    Bucket& b = bucket(request);
    for (;;) {
#pragma GCC unroll 4
      for (size_t i = 0; i < kWays; ++i)
        if (b.keys[i].load(std::memory_order_acquire) == request) {
          *id = b.ids[i].load(std::memory_order_relaxed);
          if (kTake) b.keys[i].store(0, std::memory_order_release);
          return true;
        }
      // A way taken for a few instructions by a start or an erase of this handle: look again after it.
      if (__builtin_expect(!taken_in(b, request), 1)) break;
      std::this_thread::yield();
    }
    if (__builtin_expect(overflow_.pending() <= 0, 1)) return false;
    return kTake ? overflow_.take(request, id) : overflow_.find(request, id);
  }
  static bool taken_in(Bucket& b, uintptr_t request) noexcept {
    for (auto& k : b.keys)
      if (k.load(std::memory_order_relaxed) == taken(request)) return true;
    return false;
  }
  // erase() in the front: at most one way holds the handle.
  static bool erase_front(Bucket& b, uintptr_t request, uint64_t id) noexcept {
#pragma GCC unroll 4
    for (size_t i = 0; i < kWays; ++i) {
      for (uintptr_t k = b.keys[i].load(std::memory_order_relaxed);;) {
        if (k == taken(request)) {  // a start is changing the id
          std::this_thread::yield();
          k = b.keys[i].load(std::memory_order_relaxed);
          continue;
        }
        if (k != request) break;  // not this way
        if (b.keys[i].compare_exchange_weak(k, taken(request), std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
          const bool mine = b.ids[i].load(std::memory_order_relaxed) == id;
          b.keys[i].store(mine ? 0 : request, std::memory_order_release);
          return mine;
        }
      }
    }
    return false;
  }
  // erase_front() with one caller: nothing changes a way meanwhile.
  static bool erase_alone(Bucket& b, uintptr_t request, uint64_t id) noexcept {
#pragma GCC unroll 4
    for (size_t i = 0; i < kWays; ++i)
      if (b.keys[i].load(std::memory_order_relaxed) == request) {
        if (b.ids[i].load(std::memory_order_relaxed) != id) return false;
        b.keys[i].store(0, std::memory_order_release);
        return true;
      }
    return false;
  }
  __attribute__((noinline)) bool insert_slow(uintptr_t request, uint64_t id) noexcept;

  // The overflow: sharded open addressing with backward-shift deletion (no tombstones). A lookup takes
  // no lock (a per-shard sequence count tells it to retry when a writer changed the shard meanwhile);
  // changes take a per-shard spin lock. Reached only when a bucket of the front is full.
  class Overflow {
   public:
    bool insert(uintptr_t request, uint64_t id) noexcept;
    bool find(uintptr_t request, uint64_t* id) noexcept;
    bool erase(uintptr_t request, uint64_t id) noexcept;  // id kAnyId: whatever it maps to
    bool take(uintptr_t request, uint64_t* id) noexcept;  // find and erase under one lock
    int64_t pending() const noexcept { return pending_.load(std::memory_order_relaxed); }

   private:
    struct alignas(64) Shard {
      std::atomic<bool> lock{false};
      std::atomic<uint32_t> seq{0};  // odd while a writer changes the shard
      std::atomic<uintptr_t> keys[kShardSlots] = {};
      std::atomic<uint64_t> ids[kShardSlots] = {};
    };
    class Lock;
    bool erase_locked(Shard& s, uintptr_t request, uint64_t id, uint64_t* got) noexcept;
    Shard shards_[kShards];
    std::atomic<int64_t> pending_{0};
  };

  Bucket front_[kBuckets];
  alignas(64) std::atomic<bool> used_{false};
  std::atomic<bool> one_caller_{false};  // read beside used_: one line
  Overflow overflow_;

 public:
  // The overflow level's count, for tests that fill a bucket.
  int64_t overflow_pending() const noexcept { return overflow_.pending(); }
};

}  // namespace lockstep::trace
