// The records the GPU parts add to the trace: device-side times of a collective (DEVICE), collectives
// reconstructed from kernel names or profiler-plugin events (COLLECTIVE + LST_F_INFERRED), the
// communicators the plugin reports (COMM + LST_F_INFERRED), and the one-time warnings. Written through
// the session's writer; every function is a no-op when tracing is off.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep::trace::gpu {

// Device-side times of collective `ref` (CLOCK_MONOTONIC ns; start 0 when not known).
void write_device(uint64_t ref, uint64_t start_ns, uint64_t end_ns) noexcept;
// Collectives `refs[0..n)` seen complete on the device by one poll at `end_ns`: a DEVICE record each,
// then each record COMPLETED. The application's threads add to the record cursor on every call, so
// the records are reserved in blocks, one atomic add each, and the cursor is not read again for every
// record: the GPU thread takes the cursor's cache line from them once per block, not twice per record.
void complete_on_device(const uint64_t* refs, size_t n, uint64_t end_ns) noexcept;

struct InferredCollective {
  uint64_t comm = 0;
  uint32_t seq = 0;
  uint8_t op = 0, dtype = 0, redop = 0, state = 0;
  uint32_t dtype_size = 0;
  uint64_t count = 0;
  int32_t root_or_peer = -1;
  uint64_t t_ns = 0;
  const char* name = nullptr;  // interned into aux (kernel name, plugin algorithm)
};
// Returns the record id, UINT64_MAX when nothing was written.
uint64_t write_inferred_collective(const InferredCollective& c) noexcept;
// Moves an inferred record forward (RETURNED, COMPLETED); never backwards.
void advance_record(uint64_t id, uint8_t state) noexcept;

void write_inferred_comm(uint64_t comm, int32_t size, int32_t rank, const char* name) noexcept;

// Prints "lockstep: <text>" once per `flag` and records it as a TRACER_WARNING marker.
void warn_once(int flag, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));
// The same without the marker: for warnings at load time, which must not create a trace file in every
// process the environment reaches (shells, launchers).
void warn_once_stderr(int flag, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));
enum WarnFlag {
  kWarnCudaNoDevice,
  kWarnCudaEvent,
  kWarnEventQueueFull,
  kWarnCupti,
  kWarnCuptiBuffer,
  kWarnPlugin,
  kWarnPluginSeq,
  kWarn__count
};

}  // namespace lockstep::trace::gpu
