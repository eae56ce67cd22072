// The GPU completion hook's default: nothing is installed until the CUDA part of the tracer sets one.
#include "gpu_hooks.h"

#include <atomic>

namespace lockstep::trace {
namespace {
std::atomic<NcclCollectiveHook> g_after_nccl{nullptr};
std::atomic<NcclGroupEndHook> g_after_group_end{nullptr};
}  // namespace

void after_nccl_collective(uint64_t record_id, void* stream) noexcept {
  if (NcclCollectiveHook hook = g_after_nccl.load(std::memory_order_acquire)) hook(record_id, stream);
}

void set_after_nccl_collective_hook(NcclCollectiveHook hook) noexcept {
  g_after_nccl.store(hook, std::memory_order_release);
}

void after_nccl_group_end(uint64_t marker_id) noexcept {
  if (NcclGroupEndHook hook = g_after_group_end.load(std::memory_order_acquire)) hook(marker_id);
}

void set_after_nccl_group_end_hook(NcclGroupEndHook hook) noexcept {
  g_after_group_end.store(hook, std::memory_order_release);
}

}  // namespace lockstep::trace
