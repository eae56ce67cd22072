// RequestTable (request_table.h): the front's slow insert, and the sharded overflow table behind it.
#include "request_table.h"

namespace lockstep::trace {
namespace {

size_t mix(uintptr_t k) noexcept {
  uint64_t x = k;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 32;
  return static_cast<size_t>(x);
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

// Held by the shard's writers; it also makes the shard's sequence count odd for as long as it is held,
// so a lookup that overlapped a change sees the count move and looks again.
class RequestTable::Overflow::Lock {
 public:
  explicit Lock(Shard& s) noexcept : s_(s) {
    while (s_.lock.exchange(true, std::memory_order_acquire))
      while (s_.lock.load(std::memory_order_relaxed)) cpu_relax();
    seq_ = s_.seq.load(std::memory_order_relaxed);
    s_.seq.store(seq_ + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  ~Lock() {
    s_.seq.store(seq_ + 2, std::memory_order_release);
    s_.lock.store(false, std::memory_order_release);
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  Shard& s_;
  uint32_t seq_;
};

bool RequestTable::Overflow::insert(uintptr_t k, uint64_t id) noexcept {
  const size_t h = mix(k);
  Shard& s = shards_[h % kShards];
  Lock lock(s);
  size_t i = (h / kShards) % kShardSlots;
  for (size_t n = 0; n < kShardSlots; ++n, i = (i + 1) % kShardSlots) {
    const uintptr_t key = s.keys[i].load(std::memory_order_relaxed);
    if (key == k) {
      s.ids[i].store(id, std::memory_order_relaxed);
      return true;
    }
    if (key == 0) {
      s.keys[i].store(k, std::memory_order_relaxed);
      s.ids[i].store(id, std::memory_order_relaxed);
      pending_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

bool RequestTable::Overflow::find(uintptr_t k, uint64_t* id) noexcept {
  const size_t h = mix(k);
  Shard& s = shards_[h % kShards];
  for (;;) {
    const uint32_t seq = s.seq.load(std::memory_order_acquire);
    if (seq & 1) {
      cpu_relax();
      continue;
    }
    bool found = false;
    uint64_t got = 0;
    size_t i = (h / kShards) % kShardSlots;
    for (size_t n = 0; n < kShardSlots; ++n, i = (i + 1) % kShardSlots) {
      const uintptr_t key = s.keys[i].load(std::memory_order_relaxed);
      if (key == 0) break;
      if (key == k) {
        got = s.ids[i].load(std::memory_order_relaxed);
        found = true;
        break;
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) == seq) {
      if (found) *id = got;
      return found;
    }
  }
}

bool RequestTable::Overflow::take(uintptr_t k, uint64_t* id) noexcept {
  Shard& s = shards_[mix(k) % kShards];
  Lock lock(s);
  return erase_locked(s, k, kAnyId, id);
}

bool RequestTable::Overflow::erase(uintptr_t k, uint64_t id) noexcept {
  Shard& s = shards_[mix(k) % kShards];
  Lock lock(s);
  return erase_locked(s, k, id, nullptr);
}

// erase() with the shard's lock held; `got` (unless null) receives the id the handle mapped to.
bool RequestTable::Overflow::erase_locked(Shard& s, uintptr_t k, uint64_t id, uint64_t* got) noexcept {
  const size_t h = mix(k);
  auto key = [&](size_t j) { return s.keys[j].load(std::memory_order_relaxed); };
  size_t i = (h / kShards) % kShardSlots;
  size_t n = 0;
  for (; n < kShardSlots; ++n, i = (i + 1) % kShardSlots) {
    if (key(i) == 0) return false;
    if (key(i) == k) break;
  }
  if (n == kShardSlots) return false;
  if (id != kAnyId && s.ids[i].load(std::memory_order_relaxed) != id) return false;  // started again
  if (got) *got = s.ids[i].load(std::memory_order_relaxed);
  pending_.fetch_sub(1, std::memory_order_relaxed);
  // Backward shift: move every later entry of the chain whose home is at or before the hole.
  size_t hole = i;
  for (size_t j = (hole + 1) % kShardSlots;; j = (j + 1) % kShardSlots) {
    if (key(j) == 0) break;
    const size_t home = (mix(key(j)) / kShards) % kShardSlots;
    const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      s.keys[hole].store(key(j), std::memory_order_relaxed);
      s.ids[hole].store(s.ids[j].load(std::memory_order_relaxed), std::memory_order_relaxed);
      hole = j;
    }
  }
  s.keys[hole].store(0, std::memory_order_relaxed);
  s.ids[hole].store(0, std::memory_order_relaxed);
  return true;
}

// A bucket found full, or its free way taken by another thread's insert meanwhile: look again once
// (a way may have been freed), then keep the handle in the overflow.
bool RequestTable::insert_slow(uintptr_t k, uint64_t id) noexcept {
  Bucket& b = bucket(k);
  for (size_t i = 0; i < kWays; ++i) {
    uintptr_t expected = 0;
    if (b.keys[i].load(std::memory_order_relaxed) == 0 &&
        b.keys[i].compare_exchange_strong(expected, k, std::memory_order_relaxed)) {
      b.ids[i].store(id, std::memory_order_release);
      if (overflow_.pending() > 0) overflow_.erase(k, kAnyId);
      return true;
    }
  }
  return overflow_.insert(k, id);
}

size_t RequestTable::size() const noexcept {
  size_t n = 0;
  for (const Bucket& b : front_)
    for (const auto& k : b.keys) n += k.load(std::memory_order_relaxed) != 0;
  return n + static_cast<size_t>(overflow_.pending());
}

}  // namespace lockstep::trace
