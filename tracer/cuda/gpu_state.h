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
// Binds the correlation ids this thread's intercepted calls produced since the last bind to every one
// of `records` (one call, or the members of a group at its end).
void cupti_bind_thread(const uint64_t* records, size_t n) noexcept;
void cupti_flush(bool final) noexcept;  // from the GPU thread only

}  // namespace lockstep::trace::gpu
