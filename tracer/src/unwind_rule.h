// How to step from a frame to its caller's at one return address, read from the call frame information
// (.eh_frame) that the DWARF unwinder reads too: for LOCKSTEP_TRACE_STACK through code built without frame
// pointers (stack.cc keeps one rule per return address, so each later step is a few loads). Only the
// rules a step needs on x86-64 are kept: where the canonical frame address (CFA) is, where the return
// address and the caller's frame pointer were saved. Anything else (an expression, a signal frame, a
// register kept in another register) is kNone, and the DWARF unwinder does that step.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep::trace {

struct UnwindRule {
  enum Kind : uint8_t {
    kNone,       // not one of the rules below: the DWARF unwinder must step
    kFrame,      // CFA = (bp or sp) + cfa_offset; return address at CFA - 8; caller's bp as below
    kOutermost,  // the return address is undefined, or no FDE covers it: the DWARF unwinder ends here too
  };
  Kind kind = kNone;
  bool cfa_from_bp = false;  // the CFA is the frame pointer's value plus cfa_offset, else the stack pointer's
  bool bp_saved = false;  // the caller's frame pointer is at CFA + bp_offset, else the same as this frame's
  int32_t cfa_offset = 0;
  int32_t bp_offset = 0;
};

// The rule in effect at `pc` (the byte before a return address: the call instruction) in the function
// whose FDE is at `fde` (with its CIE, as in .eh_frame) and whose code starts at `func`. [begin, end),
// when not null, bounds the bytes that may be read (tests); the FDE the unwinder finds is trusted.
UnwindRule rule_from_fde(const uint8_t* fde, const uint8_t* begin, const uint8_t* end, uint64_t func,
                         uint64_t pc) noexcept;

// The rule for the frame a return address `ret` lies in, from the FDE the DWARF unwinder would use.
UnwindRule rule_at(uint64_t ret) noexcept;

// Packed into one word for stack.cc's table, and back; kNone when the offsets do not fit.
uint64_t pack_rule(const UnwindRule& r) noexcept;
UnwindRule unpack_rule(uint64_t w) noexcept;

}  // namespace lockstep::trace
