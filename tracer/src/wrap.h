// The shape every interposed entry point shares (mpi.cc, nccl.cc): the real function found at run time
// and cached per call site, the pass-through for nested or untraced calls, and the export attribute.
//
// An interposer defines, before its first wrapper:
//   REAL_TYPE(fn)  the real function's pointer type      REAL_NAME(fn)  the symbol looked up ("PMPI_Send")
//   struct WrapApi { static uint64_t caller(uint64_t ret, void* cfa) noexcept;  // the call site to record
//                    static void* lookup(const char*) noexcept;   // nullptr: nothing to forward to
//                    static void missing(const char*) noexcept;   // told when lookup found nothing
//                    static int unavailable() noexcept;           // what a call returns then
//                    static bool tracing() noexcept; };           // record this call at all?
#pragma once

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "session.h"

namespace lockstep::trace {

// One real entry point: state 0 (not looked up) -> 1 (one thread is looking it up) -> 2 (done; `fn`
// may be null when the library is absent). Lookups can take locks (dlopen), so exactly one runs.
struct RealSlot {
  std::atomic<void*> fn{nullptr};
  std::atomic<int> state{0};
};

// Whether `p` lies in this library: a lookup that finds one of our own wrappers has found no real
// library behind them.
inline bool in_this_library(const void* p) noexcept {
  Dl_info mine{}, theirs{};
  static const int anchor = 0;
  return dladdr(&anchor, &mine) && dladdr(p, &theirs) && mine.dli_fbase == theirs.dli_fbase;
}

// Says `text` once per flag, on stderr and in the trace; never stops the application.
inline void warn_once(std::atomic<bool>& said, const char* text) noexcept {
  if (said.exchange(true)) return;
  ssize_t n = ::write(2, text, std::strlen(text));
  if (n >= 0) n = ::write(2, "\n", 1);
  (void)n;
  marker(LST_MARK_TRACER_WARNING, 0, text, 0);
}

template <typename Api>
__attribute__((noinline)) void* resolve_real_slow(RealSlot& s, const char* name) noexcept {
  int expected = 0;
  if (s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    void* fn = Api::lookup(name);
    s.fn.store(fn, std::memory_order_relaxed);
    s.state.store(2, std::memory_order_release);
    if (!fn) Api::missing(name);
    return fn;
  }
  while (s.state.load(std::memory_order_acquire) != 2) sched_yield();
  return s.fn.load(std::memory_order_relaxed);
}

template <typename Api>
inline void* resolve_real(RealSlot& s, const char* name) noexcept {
  if (__builtin_expect(s.state.load(std::memory_order_acquire) == 2, 1))
    return s.fn.load(std::memory_order_relaxed);
  return resolve_real_slow<Api>(s, name);
}

}  // namespace lockstep::trace

// The real function behind `fn` (PMPI_Allreduce for MPI_Allreduce, ncclAllReduce in libnccl), or
// nullptr when no library defines it.
#define REAL(fn)                                                                                           \
  ([]() noexcept {                                                                                         \
    static ::lockstep::trace::RealSlot slot;                                                               \
    return reinterpret_cast<REAL_TYPE(fn)>(::lockstep::trace::resolve_real<WrapApi>(slot, REAL_NAME(fn))); \
  }())

// Opens every wrapper: `real` and `caller` are in scope after it. A call made from inside another
// intercepted call, or with tracing off, goes straight through unrecorded; with nothing to forward to,
// it returns WrapApi::unavailable() (said once, at the lookup).
#define PASSTHROUGH(fn, ...)                                                                          \
  [[maybe_unused]] const uint64_t caller = WrapApi::caller(LOCKSTEP_CALLER(), __builtin_dwarf_cfa()); \
  const auto real = REAL(fn);                                                                         \
  ::lockstep::trace::CallGuard guard;                                                                 \
  if (!guard.outermost() || !WrapApi::tracing()) return FORWARD(__VA_ARGS__)

// The real call, or WrapApi::unavailable() without one.
#define FORWARD(...) (__builtin_expect(real != nullptr, 1) ? real(__VA_ARGS__) : WrapApi::unavailable())
// The same as a callable, for the record helpers that run it between entry and return.
#define CALL_REAL(...) [&]() noexcept { return FORWARD(__VA_ARGS__); }

#define WRAP_EXPORT extern "C" __attribute__((visibility("default")))
