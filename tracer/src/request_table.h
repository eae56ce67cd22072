// The requests of pending nonblocking calls (MPI_I* collectives and point-to-point), each mapped to
// the id of the record it completes. Every start inserts, every Wait/Test looks up and erases, so the
// common case is one cache line and one atomic instruction per request: a lock-free direct-mapped front
// of 4-way buckets, with a sharded, locked table behind it for the handles whose bucket is full.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

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
    unsigned same = 0, free = 0;  // bit i: way i holds this handle / nothing
#pragma GCC unroll 4
    for (unsigned i = 0; i < kWays; ++i) {
      const uintptr_t k = b.keys[i].load(std::memory_order_relaxed);
      same |= unsigned(k == request) << i;
      free |= unsigned(k == 0) << i;
    }
    if (__builtin_expect(same != 0, 0)) {
      b.ids[__builtin_ctz(same)].store(id, std::memory_order_relaxed);
      return true;
    }
    if (__builtin_expect(!used_.load(std::memory_order_relaxed), 0))
      used_.store(true, std::memory_order_relaxed);
    if (__builtin_expect(free != 0, 1)) {
      const unsigned way = static_cast<unsigned>(__builtin_ctz(free));
      uintptr_t expected = 0;
      // Two starts on other threads may claim the same free way: the compare-and-swap picks one.
      if (b.keys[way].compare_exchange_strong(expected, request, std::memory_order_relaxed)) {
        b.ids[way].store(id, std::memory_order_release);
        if (__builtin_expect(overflow_.pending() > 0, 0)) overflow_.erase(request, kAnyId);  // a stale twin
        return true;
      }
    }
    return insert_slow(request, id);
  }

  bool find(uintptr_t request, uint64_t* id) noexcept {
    Bucket& b = bucket(request);
#pragma GCC unroll 4
    for (size_t i = 0; i < kWays; ++i)
      if (b.keys[i].load(std::memory_order_acquire) == request) {
        *id = b.ids[i].load(std::memory_order_relaxed);
        return true;
      }
    return __builtin_expect(overflow_.pending() > 0, 0) && overflow_.find(request, id);
  }

  // Forgets a handle that maps to `id` (what find() gave before the request was completed or freed);
  // returns whether it was there. Only the thread that completes or frees a request erases it, and MPI
  // lets no two threads complete one request, so the front's erase is a plain store: a way holding
  // this handle changes under no one else (an insert only claims a way holding 0). The one exception
  // is a handle that MPI hands out again, to a start on another thread, as soon as the completing call
  // has freed it: that start overwrites the id, and the id compared here leaves its entry in place
  // (a start that lands between the comparison and the store, a few instructions, is lost).
  bool erase(uintptr_t request, uint64_t id) noexcept {
    Bucket& b = bucket(request);
    bool erased = false;
#pragma GCC unroll 4
    for (size_t i = 0; i < kWays; ++i)
      if (b.keys[i].load(std::memory_order_relaxed) == request) {
        if (b.ids[i].load(std::memory_order_relaxed) == id) {
          b.keys[i].store(0, std::memory_order_release);
          erased = true;
        }
        break;
      }
    if (__builtin_expect(overflow_.pending() > 0, 0)) erased = overflow_.erase(request, id) || erased;
    return erased;
  }

  // False until the first insert: a process that never starts a recorded nonblocking call skips the
  // lookups of its Wait/Test calls.
  bool used() const noexcept { return used_.load(std::memory_order_relaxed); }

  // The handles held now (both levels); a scan, for tests and diagnostics, not for the call path.
  size_t size() const noexcept;

 private:
  struct alignas(64) Bucket {
    std::atomic<uintptr_t> keys[kWays] = {};  // 0: free
    std::atomic<uint64_t> ids[kWays] = {};
  };
  static constexpr uint64_t kAnyId = ~0ull;
  static size_t home(uintptr_t k) noexcept {
    // Fibonacci hashing: request handles are heap addresses with equal low bits.
    return static_cast<size_t>((static_cast<uint64_t>(k) * 0x9e3779b97f4a7c15ull) >> 54) & (kBuckets - 1);
  }
  Bucket& bucket(uintptr_t k) noexcept { return front_[home(k)]; }
  __attribute__((noinline)) bool insert_slow(uintptr_t request, uint64_t id) noexcept;

  // The overflow: sharded open addressing with backward-shift deletion (no tombstones). A lookup takes
  // no lock (a per-shard sequence count tells it to retry when a writer changed the shard meanwhile);
  // changes take a per-shard spin lock. Reached only when a bucket of the front is full.
  class Overflow {
   public:
    bool insert(uintptr_t request, uint64_t id) noexcept;
    bool find(uintptr_t request, uint64_t* id) noexcept;
    bool erase(uintptr_t request, uint64_t id) noexcept;  // id kAnyId: whatever it maps to
    int64_t pending() const noexcept { return pending_.load(std::memory_order_relaxed); }

   private:
    struct alignas(64) Shard {
      std::atomic<bool> lock{false};
      std::atomic<uint32_t> seq{0};  // odd while a writer changes the shard
      std::atomic<uintptr_t> keys[kShardSlots] = {};
      std::atomic<uint64_t> ids[kShardSlots] = {};
    };
    class Lock;
    Shard shards_[kShards];
    std::atomic<int64_t> pending_{0};
  };

  Bucket front_[kBuckets];
  alignas(64) std::atomic<bool> used_{false};
  Overflow overflow_;

 public:
  // The overflow level's count, for tests that fill a bucket.
  int64_t overflow_pending() const noexcept { return overflow_.pending(); }
};

}  // namespace lockstep::trace
