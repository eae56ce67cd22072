// Caller frames for LOCKSTEP_TRACE_STACK (stack.h). The DWARF unwinder (_Unwind_Backtrace) costs
// microseconds per call; following saved frame pointers costs a few nanoseconds per frame but is only
// right through functions that keep the chain. So each link of the chain is trusted per return
// address: the first time a return address is met, the call is unwound with DWARF as well and every
// link that agrees is marked good; a return address whose function breaks the chain is marked, and
// stacks through it are unwound with DWARF from then on. The walk never leaves the current thread's
// stack: every frame pointer must lie inside it, 8-byte aligned, above the previous one.
#include "stack.h"
#include "unwind_rule.h"

#include <pthread.h>
#include <unwind.h>

#include <atomic>
#include <cstddef>

namespace lockstep::trace {
namespace {

constexpr int kMaxFrames = 64;     // LOCKSTEP_TRACE_STACK's ceiling (session.cc)
constexpr int kTracerFrames = 16;  // the tracer's own frames between the walk and the interposer
constexpr int kMaxTail = 8;        // outermost frames (thread start) remembered per thread

std::atomic<Unwind> g_mode{Unwind::kAuto};
bool g_count = false;
std::atomic<uint64_t> g_fp_stacks{0}, g_rule_stacks{0}, g_dwarf_stacks{0};
inline int counted(std::atomic<uint64_t>& c, int n) noexcept {
  if (__builtin_expect(g_count, 0)) c.fetch_add(1, std::memory_order_relaxed);
  return n;
}

// ---- what is known about each return address ----------------------------------------------------

// The function a return address points into either keeps the frame-pointer chain there (kLinked), or
// does not (kBroken), or is one of the thread's outermost frames (kBottom: what lies beyond it is
// the same for as long as the thread runs, and is remembered per thread).
enum : uint64_t { kUnknown = 0, kLinked = 1, kBroken = 2, kBottom = 3 };
constexpr size_t kSites = 8192;  // power of two
constexpr int kProbes = 16;
// Return address << 2 | verdict; user-space addresses leave the two top bits free. A full table only
// means more DWARF unwinds.
std::atomic<uint64_t> g_sites[kSites];
// Bumped whenever a return address's verdict is replaced by another: the per-thread memo of linked
// return addresses below is then forgotten.
std::atomic<uint32_t> g_verdict_gen{0};

inline size_t site_hash(uint64_t ret) noexcept {
  return static_cast<size_t>((ret * 0x9e3779b97f4a7c15ull) >> 51) & (kSites - 1);
}

inline uint64_t verdict(uint64_t ret) noexcept {
  size_t i = site_hash(ret);
  for (int p = 0; p < kProbes; ++p, i = (i + 1) & (kSites - 1)) {
    const uint64_t e = g_sites[i].load(std::memory_order_relaxed);
    if (e == 0) return kUnknown;
    if (e >> 2 == ret) return e & 3;
  }
  return kUnknown;
}

void set_verdict(uint64_t ret, uint64_t v) noexcept {
  if (ret == 0 || ret >> 62) return;
  size_t i = site_hash(ret);
  for (int p = 0; p < kProbes; ++p, i = (i + 1) & (kSites - 1)) {
    uint64_t e = g_sites[i].load(std::memory_order_relaxed);
    if (e == 0 && g_sites[i].compare_exchange_strong(e, ret << 2 | v, std::memory_order_relaxed)) return;
    if (e >> 2 == ret) {  // the verdict of a function never changes; last writer wins
      if ((e & 3) != v) {
        g_sites[i].store(ret << 2 | v, std::memory_order_relaxed);
        g_verdict_gen.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    }
  }
}

// The frames beyond a kBottom return address, for the one stack slot it was found in on this thread,
// with the slot each of them was found in: they are used again only while every one is still there.
struct Tail {
  uintptr_t slot = 0;
  uint64_t ret = 0;
  int n = 0;
  uint64_t frames[kMaxTail];
  uintptr_t slots[kMaxTail];
};
__attribute__((tls_model("initial-exec"))) thread_local Tail t_tail;

// This thread's outer frames beyond the kBottom return address `ret`, found in stack slot `slot`: the
// `n` frames after it and the slots each was found in.
void remember_tail(uintptr_t slot, uint64_t ret, const uint64_t* frames, const uintptr_t* slots,
                   int n) noexcept {
  Tail& t = t_tail;
  t.slot = slot;
  t.ret = ret;
  t.n = n;
  for (int k = 0; k < n; ++k) {
    t.frames[k] = frames[k];
    t.slots[k] = slots[k];
  }
}

// The return addresses this thread last found kLinked, by their link's position in the stack: a call
// from the same place as the previous one (the common case) checks each link with one comparison
// instead of a probe of the shared table. Only kLinked is remembered; a verdict replaced in the table
// bumps g_verdict_gen and the memo starts over.
constexpr int kMemo = 16;
struct LinkedMemo {
  uint32_t gen;
  uint64_t ret[kMemo];
};
__attribute__((tls_model("initial-exec"))) thread_local LinkedMemo t_linked;

// ---- the current thread's stack --------------------------------------------------------------------

struct Bounds {
  uintptr_t lo = 0, hi = 0;
  bool tried = false;
};
__attribute__((tls_model("initial-exec"))) thread_local Bounds t_bounds;

// [sp, top of the thread's stack): every byte of it is mapped. False when `sp` is not on the thread's
// own stack (a signal handler on sigaltstack, a coroutine): then there is no walk.
bool stack_top(uintptr_t sp, uintptr_t* hi) noexcept {
  Bounds& b = t_bounds;
  if (__builtin_expect(!b.tried, 0)) {
    b.tried = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        b.lo = reinterpret_cast<uintptr_t>(addr);
        b.hi = b.lo + size;
      }
      pthread_attr_destroy(&attr);
    }
  }
  if (sp < b.lo || sp >= b.hi) return false;
  *hi = b.hi;
  return true;
}

// ---- the frame-pointer chain -----------------------------------------------------------------------

struct Chain {
  int n = 0;            // frames in out[]
  bool found = false;   // the frame that returns to `caller` was reached
  bool broken = false;  // a frame pointer failed the checks before `max` frames or the chain's end
  uintptr_t hi = 0;     // the top of the thread's stack, once the walk found it
  // slot[i]: the stack address that held link i's return address (slot[0] holds `caller`, slot[i]
  // holds out[i - 1]); it names the activation for the per-thread tail.
  uintptr_t slot[kMaxFrames + 1];
};

// x86-64 and AArch64 frames alike: [fp] is the caller's frame pointer, [fp + 8] the return address.
__attribute__((noinline, no_sanitize_address)) void walk_frames(uint64_t caller, uint64_t* out, int max,
                                                                Chain& c) noexcept {
#if defined(__x86_64__) || defined(__aarch64__)
  auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uintptr_t hi = 0;
  if (!stack_top(fp, &hi)) {
    c.broken = true;
    return;
  }
  c.hi = hi;
  uintptr_t prev = fp - 1;
  auto valid = [&](uintptr_t f) { return f > prev && (f & 7) == 0 && f <= hi - 16; };
  for (int i = 0; i < kTracerFrames && !c.found; ++i) {
    if (!valid(fp)) {
      c.broken = true;
      return;
    }
    const auto* frame = reinterpret_cast<const uintptr_t*>(fp);
    c.found = frame[1] == caller;
    c.slot[0] = fp + 8;
    prev = fp;
    fp = frame[0];
  }
  if (!c.found) return;
  // fp is now the saved frame pointer of the function that made the call, if it keeps one.
  while (c.n < max) {
    if (fp == 0) return;  // the outermost frame (_start and thread starts clear the frame pointer)
    if (!valid(fp)) {
      c.broken = true;
      return;
    }
    const auto* frame = reinterpret_cast<const uintptr_t*>(fp);
    if (frame[1] == 0) return;
    c.slot[c.n + 1] = fp + 8;
    out[c.n++] = frame[1];
    prev = fp;
    fp = frame[0];
  }
#else
  (void)caller, (void)out, (void)max;
  c.broken = true;
#endif
}

// The remembered outer frames still hold the same return addresses in the same stack slots: the same
// activations. The slots lie above the current frame on this thread's stack (mapped); `hi` is its top,
// as the walk that reached t.slot found it.
__attribute__((no_sanitize_address)) bool tail_in_place(const Tail& t, uintptr_t hi) noexcept {
  if (t.slot >= hi) return false;
  for (int k = 0; k < t.n; ++k) {
    if (t.slots[k] <= t.slot || t.slots[k] > hi - sizeof(uintptr_t) || (t.slots[k] & 7)) return false;
    if (*reinterpret_cast<const uint64_t*>(t.slots[k]) != t.frames[k]) return false;
  }
  return true;
}

// ---- the DWARF unwinder --------------------------------------------------------------------------

struct DwarfWalk {
  uint64_t caller;
  uint64_t* out;
  int max;
  int n;
  bool found;
  bool full;         // stopped at max, not at the end of the stack
  uintptr_t* slots;  // optional: where each return address in out[] is stored
};

_Unwind_Reason_Code dwarf_step(struct _Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<DwarfWalk*>(arg);
  const auto ip = static_cast<uint64_t>(_Unwind_GetIP(ctx));
  if (!w->found) {
    // Frames up to and including the application's caller are the tracer's and the caller itself.
    if (ip == w->caller) w->found = true;
    return _URC_NO_REASON;
  }
  if (ip == 0) return _URC_END_OF_STACK;
  if (w->n >= w->max) {
    w->full = true;
    return _URC_END_OF_STACK;
  }
  // The return address `ip` is stored just below the canonical frame address of the frame it returns
  // from, which is what the context holds while the callback runs (it is updated after it).
  if (w->slots) w->slots[w->n] = static_cast<uintptr_t>(_Unwind_GetCFA(ctx)) - sizeof(uintptr_t);
  w->out[w->n++] = ip;
  return _URC_NO_REASON;
}

int dwarf_stack(uint64_t caller, uint64_t* out, int max, bool* ended, uintptr_t* slots = nullptr) noexcept {
  DwarfWalk w{caller, out, max, 0, false, false, slots};
  _Unwind_Backtrace(dwarf_step, &w);
  if (ended) *ended = w.found && !w.full;
  return w.found ? w.n : 0;
}

// Unwinds with DWARF and compares link by link with the frame-pointer chain in out[0, c.n): what
// agrees is marked kLinked, the first disagreement kBroken, or kBottom when DWARF ends within
// kMaxTail frames after it (the thread's start: remembered for this thread). Leaves DWARF's frames in
// out[].
__attribute__((noinline)) int learn(uint64_t caller, uint64_t* out, int max, const Chain& c) noexcept {
  uint64_t dw[kMaxFrames + kMaxTail];
  uintptr_t slots[kMaxFrames + kMaxTail];
  bool ended = false;
  const int m = dwarf_stack(caller, dw, max + kMaxTail, &ended, slots);
  if (m == 0 && !ended) return 0;  // DWARF did not find the caller either
  for (int i = 0; i < max; ++i) {
    const uint64_t r = i ? out[i - 1] : caller;
    if (i < c.n && i < m && out[i] == dw[i]) {
      set_verdict(r, kLinked);
      continue;
    }
    if (i == c.n && i == m && !c.broken && ended) {  // both chains end here
      set_verdict(r, kLinked);
      break;
    }
    if (ended && m - i <= kMaxTail) {
      set_verdict(r, kBottom);
      remember_tail(c.slot[i], r, dw + i, slots + i, m - i);
    } else {
      set_verdict(r, kBroken);
    }
    break;
  }
  const int n = m < max ? m : max;
  for (int k = 0; k < n; ++k) out[k] = dw[k];
  return n;
}

// ---- unwind rules per return address (code without frame pointers) --------------------------------

// Each return address's rule (unwind_rule.h), read from the call frame information once and trusted once
// a stack through it came out as the DWARF unwinder's. Key: return address << 2 | status; the rule is
// written before its key says kUnchecked or later, and a key being written reads as no rule yet.
enum : uint64_t { kWriting = 0, kUnchecked = 1, kGood = 2, kBad = 3 };
constexpr size_t kRules = 8192;  // power of two
struct RuleSlot {
  std::atomic<uint64_t> key;
  std::atomic<uint64_t> rule;
};
RuleSlot g_rules[kRules];

// The rule read from the call frame information into a slot just taken for `ret` (out of the walk's line).
__attribute__((noinline)) uint64_t fill_rule(RuleSlot& slot, uint64_t ret) noexcept {
  const uint64_t w = pack_rule(rule_at(ret));
  slot.rule.store(w, std::memory_order_relaxed);
  const uint64_t key = ret << 2 | ((w & 3) == UnwindRule::kNone ? kBad : kUnchecked);
  slot.key.store(key, std::memory_order_release);
  return key;
}

// The slot holding `ret`'s rule, with its key in `*key`; learnt from the call frame information when it
// is not there yet. Null when the table has no room near it.
inline RuleSlot* rule_slot(uint64_t ret, uint64_t* key) noexcept {
  if (ret == 0 || ret >> 62) return nullptr;
  size_t i = site_hash(ret);
  for (int p = 0; p < kProbes; ++p, i = (i + 1) & (kRules - 1)) {
    uint64_t k = g_rules[i].key.load(std::memory_order_acquire);
    if (k == 0 && g_rules[i].key.compare_exchange_strong(k, ret << 2 | kWriting, std::memory_order_acq_rel)) {
      *key = fill_rule(g_rules[i], ret);
      return &g_rules[i];
    }
    if (k >> 2 == ret) {  // another thread's, still being written or not
      *key = k;
      return &g_rules[i];
    }
  }
  return nullptr;
}

// A rule's verdict from a comparison with the DWARF unwinder; kBad stays.
void judge_rule(uint64_t ret, uint64_t status) noexcept {
  size_t i = site_hash(ret);
  for (int p = 0; p < kProbes; ++p, i = (i + 1) & (kRules - 1)) {
    uint64_t k = g_rules[i].key.load(std::memory_order_acquire);
    if (k == 0) return;
    if (k >> 2 == ret) {
      if ((k & 3) == kUnchecked)
        g_rules[i].key.compare_exchange_strong(k, ret << 2 | status, std::memory_order_acq_rel);
      return;
    }
  }
}

struct RuleWalk {
  int n = 0;               // frames in out[]
  bool ended = false;      // at the outermost frame, before `max`
  bool stopped = false;    // a step no rule could make (or a rule led off the stack)
  bool unchecked = false;  // a rule not yet compared with the DWARF unwinder was used
};

// From the application's function that made the call (return address `caller`, stack pointer `sp` after
// that call returns, frame pointer `bp`) outward, one rule per frame; every read is a slot of the
// thread's stack between `sp` and `hi`. No per-thread memo of rules, as the frame-pointer walk has: the
// library's thread-local block must stay small enough to fit the static TLS left when it is loaded with
// dlopen (as NCCL loads a profiler plugin; cuda.plugin.* fail otherwise).
// slots[i]: where out[i] was found.
__attribute__((no_sanitize_address)) RuleWalk rule_walk(uint64_t caller, uintptr_t sp, uintptr_t bp,
                                                        uintptr_t hi, uint64_t* out, uintptr_t* slots,
                                                        int max) noexcept {
  RuleWalk w;
  for (uint64_t pc = caller; w.n < max;) {
    uint64_t k = kBad;
    const RuleSlot* slot = rule_slot(pc, &k);
    if (!slot || (k & 3) == kBad || (k & 3) == kWriting) {
      w.stopped = true;
      return w;
    }
    w.unchecked |= (k & 3) == kUnchecked;
    const uint64_t word = slot->rule.load(std::memory_order_relaxed);
    const UnwindRule r = unpack_rule(word);
    if (r.kind == UnwindRule::kOutermost) {
      w.ended = true;
      return w;
    }
    const uintptr_t cfa =
        (r.cfa_from_bp ? bp : sp) + static_cast<uintptr_t>(static_cast<intptr_t>(r.cfa_offset));
    if (cfa < sp + 8 || cfa > hi || (cfa & 7)) {
      w.stopped = true;
      return w;
    }
    if (r.bp_saved) {
      const uintptr_t at = cfa + static_cast<uintptr_t>(static_cast<intptr_t>(r.bp_offset));
      if (at < sp || at > cfa - 16 || (at & 7)) {  // below the return address's slot
        w.stopped = true;
        return w;
      }
      bp = *reinterpret_cast<const uintptr_t*>(at);
    }
    pc = *reinterpret_cast<const uint64_t*>(cfa - 8);
    sp = cfa;
    if (pc == 0) {  // where the DWARF unwinder ends too
      w.ended = true;
      return w;
    }
    slots[w.n] = cfa - 8;
    out[w.n++] = pc;
  }
  return w;
}

// A walk with unchecked rules, compared frame by frame with the DWARF unwinder's: each rule that gave
// DWARF's frame is good, the first that did not is bad. Leaves DWARF's frames in out[].
__attribute__((noinline)) int judge_walk(uint64_t caller, uint64_t* out, int max,
                                         const RuleWalk& w) noexcept {
  uint64_t dw[kMaxFrames];
  bool ended = false;
  const int m = dwarf_stack(caller, dw, max, &ended);
  for (int i = 0; i <= w.n; ++i) {
    const uint64_t pc = i ? out[i - 1] : caller;  // the frame whose rule gave out[i]
    if (i < w.n && i < m && out[i] == dw[i]) {
      judge_rule(pc, kGood);
      continue;
    }
    if (i == w.n && i == m && w.ended == ended && !w.stopped) {
      if (w.ended) judge_rule(pc, kGood);  // both end after this frame
    } else if (i < w.n || w.ended) {
      judge_rule(pc, kBad);
    }
    break;
  }
  for (int k = 0; k < m; ++k) out[k] = dw[k];
  return m;
}

// The stack by unwind rules, from the frame that the chain found returns to `caller`; the DWARF unwinder
// where a rule is missing, bad or not yet checked. `bottom`: the link whose return address is kBottom,
// whose remembered outer frames did not match this stack: they are replaced by this stack's.
__attribute__((noinline)) int rule_stack(uint64_t caller, uint64_t* out, int max, const Chain& c,
                                         int bottom = -1) noexcept {
#if defined(__x86_64__)
  // The interposer's frame: its return address at slot[0], the caller's frame pointer below it.
  const uintptr_t sp = c.slot[0] + 8;
  const uintptr_t bp = *reinterpret_cast<const uintptr_t*>(c.slot[0] - 8);
  uintptr_t slots[kMaxFrames];
  const RuleWalk w = rule_walk(caller, sp, bp, c.hi, out, slots, max);
  if (!w.unchecked && !w.stopped) {
    if (bottom >= 0 && w.ended && w.n - bottom <= kMaxTail)
      remember_tail(c.slot[bottom], bottom ? out[bottom - 1] : caller, out + bottom, slots + bottom,
                    w.n - bottom);
    return counted(g_rule_stacks, w.n);
  }
  if (w.unchecked) return counted(g_dwarf_stacks, judge_walk(caller, out, max, w));
#endif
  return counted(g_dwarf_stacks, dwarf_stack(caller, out, max, nullptr));
}

}  // namespace

void set_unwind_mode(Unwind mode) noexcept { g_mode.store(mode, std::memory_order_relaxed); }
void count_stacks(bool on) noexcept { g_count = on; }
void stack_counts(uint64_t* frame_pointers, uint64_t* rules, uint64_t* dwarf) noexcept {
  *frame_pointers = g_fp_stacks.load(std::memory_order_relaxed);
  *rules = g_rule_stacks.load(std::memory_order_relaxed);
  *dwarf = g_dwarf_stacks.load(std::memory_order_relaxed);
}

int capture_stack(uint64_t caller, uint64_t* out, int max) noexcept {
  if (max <= 0) return 0;
  if (max > kMaxFrames) max = kMaxFrames;
  const Unwind mode = g_mode.load(std::memory_order_relaxed);
  if (mode == Unwind::kDwarf) return counted(g_dwarf_stacks, dwarf_stack(caller, out, max, nullptr));
  Chain c;
  walk_frames(caller, out, max, c);
  if (mode == Unwind::kFramePointers) return counted(g_fp_stacks, c.found ? c.n : 0);
  if (!c.found) return counted(g_dwarf_stacks, dwarf_stack(caller, out, max, nullptr));
  // Every link that produced a frame, and the one where the chain ended, must be known good.
  const int links = c.n < max ? c.n + 1 : c.n;
  LinkedMemo& memo = t_linked;
  const uint32_t gen = g_verdict_gen.load(std::memory_order_relaxed);
  if (__builtin_expect(memo.gen != gen, 0)) {
    for (uint64_t& x : memo.ret) x = 0;
    memo.gen = gen;
  }
  for (int i = 0; i < links; ++i) {
    const uint64_t r = i ? out[i - 1] : caller;
    if (i < kMemo && memo.ret[i] == r) continue;
    const uint64_t v = verdict(r);
    if (v == kLinked) {
      if (i < kMemo) memo.ret[i] = r;
      continue;
    }
    if (v == kBroken) return rule_stack(caller, out, max, c);
    if (v == kBottom) {
      const Tail& t = t_tail;
      if (t.ret == r && t.slot == c.slot[i] && tail_in_place(t, c.hi)) {
        int n = i;
        for (int k = 0; k < t.n && n < max; ++k) out[n++] = t.frames[k];
        return counted(g_fp_stacks, n);
      }
      return rule_stack(caller, out, max, c, i);  // the outer part of another stack
    }
    return counted(g_dwarf_stacks, learn(caller, out, max, c));
  }
  return counted(g_fp_stacks, c.n);
}

}  // namespace lockstep::trace
