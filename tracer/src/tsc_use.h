// Whether the record path may derive its timestamps from the TSC, and how (session.cc, "the record
// path's clock"; docs/tracer.md). Apart from the session so that the choice is tested on its own.
#pragma once

#include <string_view>

namespace lockstep::trace {

enum class TscUse {
  kNone,    // every timestamp is a clock_gettime(CLOCK_MONOTONIC) call
  kShared,  // the kernel keeps time with the TSC: one TSC for every CPU, a thread's anchor holds on each
  kPerCpu,  // a hypervisor clock derived from the TSC: a thread anchors again whenever its CPU changes
};

// Clocksources a hypervisor derives from the TSC (its rate is the TSC's, but the guest is not told that
// every CPU's TSC agrees: Firecracker and other KVM guests boot with tsc=unstable, so the kernel never
// offers "tsc" there, and a clock_gettime call through kvm-clock costs twice a TSC read).
inline bool hypervisor_tsc_clock(std::string_view clocksource) {
  return clocksource == "kvm-clock" || clocksource == "xen" || clocksource == "hyperv_clocksource_tsc_page";
}

// mode: LOCKSTEP_TRACE_CLOCK (null when unset); invariant_tsc: the CPU's TSC runs at one rate in every
// power state (CPUID 0x80000007 EDX bit 8); clocksource: the kernel's current one, as
// /sys/devices/system/clocksource/clocksource0/current_clocksource gives it without the newline;
// cpu_known: each thread can read the CPU it runs on with a load (glibc registered restartable
// sequences, whose area the kernel keeps current).
inline TscUse choose_tsc_use(const char* mode, bool invariant_tsc, std::string_view clocksource,
                             bool cpu_known) {
  if (mode && std::string_view(mode) == "monotonic") return TscUse::kNone;
  if (!invariant_tsc) return TscUse::kNone;
  if (clocksource == "tsc") return TscUse::kShared;
  if (hypervisor_tsc_clock(clocksource) && cpu_known) return TscUse::kPerCpu;
  return TscUse::kNone;
}

}  // namespace lockstep::trace
