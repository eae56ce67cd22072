// Where the interposers hand GPU work to the CUDA side of the tracer (tracer/cuda): after an NCCL
// collective has been enqueued, the CUDA part can watch its stream and mark the record COMPLETED.
// Without the CUDA part the hook does nothing.
#pragma once

#include <cstdint>

namespace lockstep::trace {

// Called by the NCCL interposer after each recorded collective returns; `stream` is the caller's
// cudaStream_t. Cheap when no hook is installed (one atomic load).
void after_nccl_collective(uint64_t record_id, void* stream) noexcept;

// Installed once by the CUDA part when it starts; nullptr removes it. Must not throw or block.
using NcclCollectiveHook = void (*)(uint64_t record_id, void* stream) noexcept;
void set_after_nccl_collective_hook(NcclCollectiveHook hook) noexcept;

// Called by the NCCL interposer after ncclGroupEnd returns: the group's members, handed over while the
// group was open, run in the kernel launched there, so their completion can only be watched now.
// `marker_id` is the GROUP_END marker's record (UINT64_MAX when it was not recorded): the launches made
// inside that call are the group's.
void after_nccl_group_end(uint64_t marker_id) noexcept;
using NcclGroupEndHook = void (*)(uint64_t marker_id) noexcept;
void set_after_nccl_group_end_hook(NcclGroupEndHook hook) noexcept;

}  // namespace lockstep::trace
