// When the tracer derives timestamps from the TSC, and whether it anchors them per CPU (tsc_use.h).
#include <gtest/gtest.h>

#include "tsc_use.h"

using lockstep::trace::choose_tsc_use;
using lockstep::trace::TscUse;

TEST(TscUse, TheKernelsOwnTscClockIsSharedByEveryCpu) {
  EXPECT_EQ(choose_tsc_use(nullptr, true, "tsc", true), TscUse::kShared);
  EXPECT_EQ(choose_tsc_use(nullptr, true, "tsc", false), TscUse::kShared);  // no CPU needed
  EXPECT_EQ(choose_tsc_use("tsc", true, "tsc", true), TscUse::kShared);
}

TEST(TscUse, AHypervisorClockDerivedFromTheTscIsAnchoredPerCpu) {
  for (const char* cs : {"kvm-clock", "xen", "hyperv_clocksource_tsc_page"})
    EXPECT_EQ(choose_tsc_use(nullptr, true, cs, true), TscUse::kPerCpu) << cs;
}

TEST(TscUse, AHypervisorClockWithoutTheThreadsCpuKeepsTheClockCalls) {
  EXPECT_EQ(choose_tsc_use(nullptr, true, "kvm-clock", false), TscUse::kNone);
}

TEST(TscUse, NoInvariantTscNoOtherClocksourceOrMonotonicAskedMeanTheClock) {
  EXPECT_EQ(choose_tsc_use(nullptr, false, "tsc", true), TscUse::kNone);
  EXPECT_EQ(choose_tsc_use(nullptr, false, "kvm-clock", true), TscUse::kNone);
  for (const char* cs : {"hpet", "acpi_pm", "jiffies", "", "tsc-early", "kvm"})
    EXPECT_EQ(choose_tsc_use(nullptr, true, cs, true), TscUse::kNone) << cs;
  EXPECT_EQ(choose_tsc_use("monotonic", true, "tsc", true), TscUse::kNone);
  EXPECT_EQ(choose_tsc_use("monotonic", true, "kvm-clock", true), TscUse::kNone);
}
