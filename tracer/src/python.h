// Python call sites: when an intercepted call comes from Python code (mpi4py), the innermost Python
// frames of the calling thread become its call site, as synthetic addresses the trace's module table
// names (format 1.2, LST_MOD_PYTHON in layout.h). CPython is found at run time; the Python headers, where
// the build had them, only make the reading faster (python_frame.h).
#pragma once

#include <atomic>
#include <cstdint>

#include "lockstep/format/writer.h"

namespace lockstep::trace {

// 0: not looked for yet, 1: CPython is in the process, 2: it is not (the only cost is this load).
extern std::atomic<int> g_python_state;

// Up to `max` Python frames of the calling thread, innermost first, as call-site addresses; 0 when the
// thread runs no Python code, is one Python never saw, or Python is finalizing (the native caller
// stands then).
int python_frames_slow(format::Writer* w, uint64_t* out, int max) noexcept;
inline int python_frames(format::Writer* w, uint64_t* out, int max) noexcept {
  if (__builtin_expect(g_python_state.load(std::memory_order_relaxed) == 2, 1)) return 0;
  return python_frames_slow(w, out, max);
}

// LOCKSTEP_TRACE_PYTHON_STATS: count the reads from here on. The counts: calls whose frames were read
// from the frame stack, calls read through the C API, and the fast path's state ("on", "on trial",
// "off"; "on, thread state read in place" where the thread state is read from its key's slot in place,
// python_frame.h).
void python_stats(bool on) noexcept;
void python_counts(uint64_t* direct, uint64_t* api, const char** fast) noexcept;

}  // namespace lockstep::trace
