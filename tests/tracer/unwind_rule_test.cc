// The unwind rules LOCKSTEP_TRACE_STACK steps with through code without frame pointers
// (tracer/src/unwind_rule.h): read from hand-made call frame information, and from this process's own,
// checked against the DWARF unwinder frame by frame.
#include "unwind_rule.h"

#include <gtest/gtest.h>
#include <unwind.h>

#include <cstdint>
#include <vector>

namespace lockstep::trace {
namespace {

// .eh_frame bytes: one CIE as GCC writes it on x86-64 ("zR", code alignment 1, data alignment -8,
// return address in register 16, FDE pointers pc-relative sdata4; CFA = rsp + 8, return address at
// CFA - 8), then one FDE with the given instructions.
struct EhFrame {
  std::vector<uint8_t> bytes;
  size_t fde = 0;

  static void u32(std::vector<uint8_t>& v, uint32_t x) {
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
  }
  explicit EhFrame(const std::vector<uint8_t>& insns, const char* aug = "zR",
                   const std::vector<uint8_t>& cie_insns = {0x0c, 7, 8, 0x90, 1}) {
    std::vector<uint8_t> cie;
    u32(cie, 0);  // CIE id
    cie.push_back(1);
    for (const char* a = aug; *a; ++a) cie.push_back(static_cast<uint8_t>(*a));
    cie.push_back(0);
    cie.push_back(1);     // code alignment
    cie.push_back(0x78);  // data alignment -8 (sleb128)
    cie.push_back(16);    // return address register
    cie.push_back(1);     // augmentation data: the 'R' byte
    cie.push_back(0x1b);
    cie.insert(cie.end(), cie_insns.begin(), cie_insns.end());
    while ((cie.size() + 4) % 8) cie.push_back(0);  // DW_CFA_nop
    u32(bytes, static_cast<uint32_t>(cie.size()));
    bytes.insert(bytes.end(), cie.begin(), cie.end());
    fde = bytes.size();
    std::vector<uint8_t> f;
    u32(f, static_cast<uint32_t>(fde + 4));  // back to the CIE from this field
    u32(f, 0);                               // pc_begin (the tests pass func themselves)
    u32(f, 0x100);                           // pc_range
    f.push_back(0);                          // augmentation data length
    f.insert(f.end(), insns.begin(), insns.end());
    u32(bytes, static_cast<uint32_t>(f.size()));
    bytes.insert(bytes.end(), f.begin(), f.end());
  }
  UnwindRule at(uint64_t offset) const {
    constexpr uint64_t kFunc = 0x400000;
    return rule_from_fde(bytes.data() + fde, bytes.data(), bytes.data() + bytes.size(), kFunc,
                         kFunc + offset);
  }
};

// A function with a frame pointer: push rbp (1 byte), mov rsp,rbp (3), body; an epilogue inside
// remember/restore_state at 0x20, and the body again from 0x21.
const std::vector<uint8_t> kFramePointerFunction = {
    0x41,         // advance 1
    0x0e, 16,     // def_cfa_offset 16
    0x86, 2,      // rbp at CFA - 16
    0x43,         // advance 3
    0x0d, 6,      // def_cfa_register rbp
    0x5c,         // advance 0x1c: at 0x20
    0x0a,         // remember_state
    0x0c, 7,  8,  // def_cfa rsp + 8 (after leave)
    0x41,         // advance 1: at 0x21
    0x0b,         // restore_state
};

TEST(UnwindRule, FollowsAFunctionWithAFramePointerThroughItsPrologueAndEpilogue) {
  EhFrame eh(kFramePointerFunction);
  UnwindRule r = eh.at(0);  // before the push
  ASSERT_EQ(r.kind, UnwindRule::kFrame);
  EXPECT_FALSE(r.cfa_from_bp);
  EXPECT_EQ(r.cfa_offset, 8);
  EXPECT_FALSE(r.bp_saved);
  r = eh.at(1);  // after it
  EXPECT_FALSE(r.cfa_from_bp);
  EXPECT_EQ(r.cfa_offset, 16);
  EXPECT_TRUE(r.bp_saved);
  EXPECT_EQ(r.bp_offset, -16);
  for (uint64_t pc : {4u, 0x10u, 0x1fu, 0x21u, 0x80u}) {  // the body, before and after the epilogue
    r = eh.at(pc);
    EXPECT_TRUE(r.cfa_from_bp) << pc;
    EXPECT_EQ(r.cfa_offset, 16) << pc;
    EXPECT_TRUE(r.bp_saved) << pc;
    EXPECT_EQ(r.bp_offset, -16) << pc;
  }
  r = eh.at(0x20);  // in the epilogue
  EXPECT_FALSE(r.cfa_from_bp);
  EXPECT_EQ(r.cfa_offset, 8);
  EXPECT_TRUE(r.bp_saved);  // remembered with the state, as the DWARF unwinder does
}

TEST(UnwindRule, AFunctionWithoutAFramePointerMovesItsCfaWithTheStack) {
  // sub $0x28,%rsp (4 bytes); a push of rbx in the middle (advance_loc1 and advance_loc2 forms).
  EhFrame eh({0x44, 0x0e, 0x30, 0x02, 0x10, 0x0e, 0x38, 0x83, 3, 0x03, 0x00, 0x01, 0x0e, 0x30});
  EXPECT_EQ(eh.at(3).cfa_offset, 8);
  EXPECT_EQ(eh.at(4).cfa_offset, 0x30);
  EXPECT_EQ(eh.at(0x13).cfa_offset, 0x30);
  EXPECT_EQ(eh.at(0x14).cfa_offset, 0x38);
  EXPECT_EQ(eh.at(0x113).cfa_offset, 0x38);
  EXPECT_EQ(eh.at(0x114).cfa_offset, 0x30);
  EXPECT_FALSE(eh.at(0x14).bp_saved);  // rbx's rule is not a step's business
}

TEST(UnwindRule, WhatAStepCannotFollowIsLeftToTheDwarfUnwinder) {
  // The CFA as an expression (a realigned stack: DW_OP_breg6 -8; DW_OP_deref).
  EXPECT_EQ(EhFrame({0x0f, 3, 0x76, 0x78, 0x06}).at(0).kind, UnwindRule::kNone);
  // The CFA in another register (r10).
  EXPECT_EQ(EhFrame({0x0c, 10, 0}).at(0).kind, UnwindRule::kNone);
  // rbp kept in another register (rbx).
  EXPECT_EQ(EhFrame({0x09, 6, 3}).at(0).kind, UnwindRule::kNone);
  // The return address somewhere else than CFA - 8.
  EXPECT_EQ(EhFrame({0x90, 2}).at(0).kind, UnwindRule::kNone);
  // A signal frame ('S').
  EXPECT_EQ(EhFrame({}, "zRS").at(0).kind, UnwindRule::kNone);
  // An instruction of another architecture (DW_CFA_GNU_window_save).
  EXPECT_EQ(EhFrame({0x2d}).at(0).kind, UnwindRule::kNone);
  // A rule past an instruction this reader does not know still applies before it.
  EXPECT_EQ(EhFrame({0x41, 0x2d}).at(0).kind, UnwindRule::kFrame);
}

TEST(UnwindRule, AnUndefinedReturnAddressIsTheOutermostFrame) {
  EXPECT_EQ(EhFrame({0x07, 16}).at(0).kind, UnwindRule::kOutermost);  // as _start's FDE says
  EXPECT_EQ(EhFrame({0x44, 0x07, 16}).at(3).kind, UnwindRule::kFrame);
  EXPECT_EQ(EhFrame({0x44, 0x07, 16}).at(4).kind, UnwindRule::kOutermost);
}

TEST(UnwindRule, TruncatedBytesGiveNoRule) {
  EhFrame eh(kFramePointerFunction);
  for (size_t cut = 1; cut < eh.bytes.size(); ++cut) {
    const std::vector<uint8_t> part(eh.bytes.begin(), eh.bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    const uint8_t* fde = eh.fde <= cut ? part.data() + eh.fde : part.data() + cut;
    const UnwindRule r = rule_from_fde(fde, part.data(), part.data() + part.size(), 0x400000, 0x400004);
    EXPECT_EQ(r.kind, UnwindRule::kNone) << cut;
  }
}

TEST(UnwindRule, PacksIntoOneWordAndBack) {
  UnwindRule r;
  r.kind = UnwindRule::kFrame;
  r.cfa_from_bp = true;
  r.cfa_offset = 16;
  r.bp_saved = true;
  r.bp_offset = -16;
  for (int32_t cfa : {8, 16, 4096, (1 << 29) - 1, -8})
    for (int32_t bp : {-16, -8, -4096, -(1 << 29) + 1, 24}) {
      r.cfa_offset = cfa;
      r.bp_offset = bp;
      const UnwindRule back = unpack_rule(pack_rule(r));
      EXPECT_EQ(back.kind, UnwindRule::kFrame);
      EXPECT_TRUE(back.cfa_from_bp);
      EXPECT_TRUE(back.bp_saved);
      EXPECT_EQ(back.cfa_offset, cfa);
      EXPECT_EQ(back.bp_offset, bp);
    }
  r.cfa_offset = 1 << 29;
  EXPECT_EQ(unpack_rule(pack_rule(r)).kind, UnwindRule::kNone);
  UnwindRule outer;
  outer.kind = UnwindRule::kOutermost;
  EXPECT_EQ(unpack_rule(pack_rule(outer)).kind, UnwindRule::kOutermost);
}

#if defined(__x86_64__)
// This process's own stack, from the DWARF unwinder: each frame's return address, its stack pointer
// (the CFA of the frame it called, which is what the context holds while the callback runs) and its
// frame pointer.
struct Frame {
  uint64_t ip, sp, bp;
};
_Unwind_Reason_Code collect(struct _Unwind_Context* ctx, void* arg) {
  auto* frames = static_cast<std::vector<Frame>*>(arg);
  frames->push_back({static_cast<uint64_t>(_Unwind_GetIP(ctx)), static_cast<uint64_t>(_Unwind_GetCFA(ctx)),
                     static_cast<uint64_t>(_Unwind_GetGR(ctx, 6))});
  return _URC_NO_REASON;
}

__attribute__((noinline)) std::vector<Frame> own_stack() {
  std::vector<Frame> frames;
  _Unwind_Backtrace(collect, &frames);
  return frames;
}

// Every rule found for the frames above this test (gtest, libc: code built without frame pointers)
// steps to the stack pointer, return address and frame pointer the DWARF unwinder finds.
TEST(UnwindRule, StepsThisProcessStackAsTheDwarfUnwinderDoes) {
  const std::vector<Frame> frames = own_stack();
  ASSERT_GE(frames.size(), 4u);
  int framed = 0;
  // frames[i] returns into frames[i + 1]. frames[0] (own_stack) is left out: the DWARF unwinder's first
  // context is its own frame's, with its own registers rather than own_stack's.
  for (size_t i = 1; i + 1 < frames.size(); ++i) {
    const UnwindRule r = rule_at(frames[i].ip);
    if (r.kind != UnwindRule::kFrame) continue;
    ++framed;
    const uint64_t base = r.cfa_from_bp ? frames[i].bp : frames[i].sp;
    const uint64_t cfa = base + static_cast<uint64_t>(int64_t(r.cfa_offset));
    EXPECT_EQ(cfa, frames[i + 1].sp) << "frame " << i;
    EXPECT_EQ(*reinterpret_cast<const uint64_t*>(cfa - 8), frames[i + 1].ip) << "frame " << i;
    const uint64_t bp =
        r.bp_saved ? *reinterpret_cast<const uint64_t*>(cfa + static_cast<uint64_t>(int64_t(r.bp_offset)))
                   : frames[i].bp;
    EXPECT_EQ(bp, frames[i + 1].bp) << "frame " << i;
  }
  EXPECT_GE(framed, 3);
  // The outermost frame the DWARF unwinder reports (_start) ends the stack.
  EXPECT_NE(rule_at(frames.back().ip).kind, UnwindRule::kFrame);
}
#endif

}  // namespace
}  // namespace lockstep::trace
