// What the GPU parts of the tracer (device events, CUPTI, the profiler plugin) share: which sources of
// NCCL records are active in this process, and the tracer thread that polls events and flushes CUPTI.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep::trace::gpu {

// True once an NCCL call was interposed in this process: kernels then belong to intercepted records
// and are never turned into inferred collectives.
bool nccl_interposed() noexcept;
// The profiler plugin writes this process's NCCL records itself (statically linked NCCL).
void note_plugin_active() noexcept;
bool plugin_active() noexcept;

// The tracer's GPU thread: polls the CUDA events of tracked collectives and flushes CUPTI buffers.
// Started on first use; at exit it makes a last pass, bounded in time, so a hung GPU cannot hang exit.
void start_gpu_thread() noexcept;
void wake_gpu_thread() noexcept;

// CUPTI (cupti.cc; no-ops in builds without the CUDA toolkit, see cupti_none.cc).
void cupti_start() noexcept;  // LOCKSTEP_TRACE_CUPTI=1, at load
bool cupti_active() noexcept;
// A launch is noted with the record whose real call made it (ThreadState::inside); launches made outside
// a recorded call (a communicator's creation, say) belong to no record. cupti_bind binds the launches
// made inside the record `made_in` (a call's own, or a GROUP_END marker's; UINT64_MAX: none) to every
// one of `records` (that call, or the group's members) and forgets every other launch noted on this
// thread.
void cupti_bind(uint64_t made_in, const uint64_t* records, size_t n) noexcept;
void cupti_flush(bool final) noexcept;  // from the GPU thread only

}  // namespace lockstep::trace::gpu
