// Caller frames for LOCKSTEP_TRACE_STACK: a frame-pointer walk, checked at every step, that trusts a
// link only once the DWARF unwinder has confirmed it for that return address; the DWARF unwinder
// itself wherever the chain is not confirmed (code built without frame pointers).
#pragma once

#include <cstdint>

namespace lockstep::trace {

// LOCKSTEP_TRACE_STACK_UNWIND: auto (default), fp (frame pointers only: never the DWARF unwinder,
// a stack ends where the chain does), dwarf (always the DWARF unwinder).
enum class Unwind : uint8_t { kAuto, kFramePointers, kDwarf };
void set_unwind_mode(Unwind mode) noexcept;

// Up to `max` return addresses above the application's function that made the intercepted call (the
// frame whose return address is `caller`), innermost first. Call it from the tracer's own frames,
// below the interposed entry point.
int capture_stack(uint64_t caller, uint64_t* out, int max) noexcept;

// LOCKSTEP_TRACE_STACK_STATS=1: count the stacks each unwinder produced, so a user can see whether the
// job's code keeps frame pointers (printed at exit by session.cc).
void count_stacks(bool on) noexcept;
void stack_counts(uint64_t* frame_pointers, uint64_t* rules, uint64_t* dwarf) noexcept;

}  // namespace lockstep::trace
