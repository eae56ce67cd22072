// The requests of pending nonblocking calls (MPI_I* collectives and point-to-point), each mapped to
// the id of the record it completes. Looked up by every Wait/Test call, so a lookup takes no lock (a
// per-shard sequence count tells it to retry when a writer changed the shard meanwhile), changes take a
// per-shard spin lock, and a Wait skips the table entirely while nothing is pending.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace lockstep::trace {

class RequestTable {
 public:
  static constexpr size_t kShards = 64;
  static constexpr size_t kShardSlots = 256;

  // Maps a request handle to a record id. A handle already present (its completion was not seen)
  // takes the newer id. Returns false when the handle's shard is full: that completion goes unrecorded.
  bool insert(uintptr_t request, uint64_t id) noexcept;
  bool find(uintptr_t request, uint64_t* id) noexcept;
  // Forgets a handle; returns whether it was there.
  bool erase(uintptr_t request) noexcept;
  // Requests held now; 0 lets a Wait skip the lookups.
  int64_t pending() const noexcept { return pending_.load(std::memory_order_relaxed); }

 private:
  // Open addressing with backward-shift deletion, so probe chains never need tombstones.
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

}  // namespace lockstep::trace
