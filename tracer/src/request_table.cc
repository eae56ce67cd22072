// RequestTable: sharded open addressing keyed by request handle (request_table.h).
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

class RequestTable::Lock {
 public:
  explicit Lock(Shard& s) noexcept : s_(s) {
    while (s_.lock.exchange(true, std::memory_order_acquire))
      while (s_.lock.load(std::memory_order_relaxed)) cpu_relax();
  }
  ~Lock() { s_.lock.store(false, std::memory_order_release); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  Shard& s_;
};

bool RequestTable::insert(uintptr_t k, uint64_t id) noexcept {
  const size_t h = mix(k);
  Shard& s = shards_[h % kShards];
  Lock lock(s);
  size_t i = (h / kShards) % kShardSlots;
  for (size_t n = 0; n < kShardSlots; ++n, i = (i + 1) % kShardSlots) {
    if (s.keys[i] == k) {
      s.ids[i] = id;
      return true;
    }
    if (s.keys[i] == 0) {
      s.keys[i] = k;
      s.ids[i] = id;
      pending_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

bool RequestTable::find(uintptr_t k, uint64_t* id) noexcept {
  const size_t h = mix(k);
  Shard& s = shards_[h % kShards];
  Lock lock(s);
  size_t i = (h / kShards) % kShardSlots;
  for (size_t n = 0; n < kShardSlots; ++n, i = (i + 1) % kShardSlots) {
    if (s.keys[i] == 0) return false;
    if (s.keys[i] == k) {
      *id = s.ids[i];
      return true;
    }
  }
  return false;
}

bool RequestTable::erase(uintptr_t k) noexcept {
  const size_t h = mix(k);
  Shard& s = shards_[h % kShards];
  Lock lock(s);
  size_t i = (h / kShards) % kShardSlots;
  size_t n = 0;
  for (; n < kShardSlots; ++n, i = (i + 1) % kShardSlots) {
    if (s.keys[i] == 0) return false;
    if (s.keys[i] == k) break;
  }
  if (n == kShardSlots) return false;
  pending_.fetch_sub(1, std::memory_order_relaxed);
  // Backward shift: move every later entry of the chain whose home is at or before the hole.
  size_t hole = i;
  for (size_t j = (hole + 1) % kShardSlots;; j = (j + 1) % kShardSlots) {
    if (s.keys[j] == 0) break;
    const size_t home = (mix(s.keys[j]) / kShards) % kShardSlots;
    const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      s.keys[hole] = s.keys[j];
      s.ids[hole] = s.ids[j];
      hole = j;
    }
  }
  s.keys[hole] = 0;
  s.ids[hole] = 0;
  return true;
}

}  // namespace lockstep::trace
