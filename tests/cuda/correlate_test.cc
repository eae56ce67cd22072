// Correlation of synthetic CUPTI kernel records with intercepted calls (tracer/cuda/correlate.h): both
// arrival orders, NCCL groups, the inferred fallback, bounds, and concurrent producers.
#include "correlate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/format/layout.h"

namespace {

using lockstep::trace::gpu::CorrelationSink;
using lockstep::trace::gpu::Correlator;
using lockstep::trace::gpu::KernelActivity;
using lockstep::trace::gpu::KernelInfo;

struct Recorder : CorrelationSink {
  struct Match {
    uint64_t record;
    uint32_t corr;
    uint64_t start, end;
  };
  struct Inferred {
    uint8_t op, redop, dtype;
    uint32_t seq;
    std::string base;
    uint64_t start, end;
  };
  std::mutex mu;
  std::vector<Match> matches;
  std::vector<Inferred> inferred;
  void kernel_of_record(uint64_t record, const KernelActivity& k) override {
    std::lock_guard<std::mutex> lock(mu);
    matches.push_back({record, k.correlation_id, k.start_ns, k.end_ns});
  }
  void inferred_kernel(const KernelInfo& info, uint32_t seq, const KernelActivity& k) override {
    std::lock_guard<std::mutex> lock(mu);
    inferred.push_back({info.op, info.redop, info.dtype, seq, info.base, k.start_ns, k.end_ns});
  }
};

KernelActivity kernel(uint32_t corr, const char* name, uint64_t start = 1000, uint64_t end = 2000) {
  KernelActivity k;
  k.correlation_id = corr;
  k.name = name;
  k.start_ns = start;
  k.end_ns = end;
  return k;
}

constexpr const char* kAllReduce =
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
constexpr const char* kBroadcast = "ncclDevKernel_Broadcast_RING_LL";

TEST(Correlate, BindingBeforeKernel) {
  Recorder r;
  Correlator c(&r);
  c.bind(7, 100);
  c.on_kernel(kernel(7, kAllReduce, 10, 20), false);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].record, 100u);
  EXPECT_EQ(r.matches[0].start, 10u);
  EXPECT_EQ(r.matches[0].end, 20u);
  EXPECT_EQ(c.matched(), 1u);
  // The binding is used up: a second kernel with the same id has no record any more.
  c.on_kernel(kernel(7, kAllReduce), false);
  EXPECT_EQ(r.matches.size(), 1u);
}

TEST(Correlate, KernelBeforeBindingIsHeldUntilTheBinding) {
  Recorder r;
  Correlator c(&r);
  c.on_kernel(kernel(9, kBroadcast, 30, 40), false);
  EXPECT_TRUE(r.matches.empty());
  EXPECT_TRUE(r.inferred.empty());
  c.bind(9, 200);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].record, 200u);
  EXPECT_EQ(r.matches[0].start, 30u);
  EXPECT_EQ(r.matches[0].end, 40u);
}

TEST(Correlate, GroupMembersShareTheGroupKernel) {
  Recorder r;
  Correlator c(&r);
  for (uint64_t rec : {300u, 301u, 302u}) c.bind(11, rec);
  c.on_kernel(kernel(11, kAllReduce), false);
  ASSERT_EQ(r.matches.size(), 3u);
  std::vector<uint64_t> got;
  for (auto& m : r.matches) got.push_back(m.record);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<uint64_t>{300, 301, 302}));
}

TEST(Correlate, GroupMembersBoundAfterAnEarlyKernelAllMatch) {
  Recorder r;
  Correlator c(&r);
  c.on_kernel(kernel(12, kAllReduce), false);
  c.bind(12, 400);
  c.bind(12, 401);
  ASSERT_EQ(r.matches.size(), 2u);
  EXPECT_EQ(r.matches[0].record, 400u);
  EXPECT_EQ(r.matches[1].record, 401u);
}

TEST(Correlate, KernelsLaunchedInsideACallBelongToItWhateverTheirName) {
  Recorder r;
  Correlator c(&r);
  c.bind(5, 500);
  c.on_kernel(kernel(5, "_Z6myCopyPfS_"), false);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].record, 500u);
}

TEST(Correlate, ForeignKernelsAreIgnored) {
  Recorder r;
  Correlator c(&r);
  c.on_kernel(kernel(1, "_Z6myCopyPfS_"), true);
  c.on_kernel(kernel(2, "ampere_sgemm_128x64_nn"), false);
  EXPECT_TRUE(r.matches.empty());
  EXPECT_TRUE(r.inferred.empty());
  EXPECT_EQ(c.ignored(), 2u);
}

TEST(Correlate, UnmatchedNcclKernelsBecomeInferredCollectivesInOrder) {
  Recorder r;
  Correlator c(&r);
  c.on_kernel(kernel(20, kAllReduce, 1, 2), true);
  c.on_kernel(kernel(21, "_Z6myCopyPfS_"), true);
  c.on_kernel(kernel(22, kBroadcast, 3, 4), true);
  ASSERT_EQ(r.inferred.size(), 2u);
  EXPECT_EQ(r.inferred[0].seq, 0u);
  EXPECT_EQ(r.inferred[0].op, LST_OP_ALLREDUCE);
  EXPECT_EQ(r.inferred[0].redop, LST_RED_SUM);
  EXPECT_EQ(r.inferred[0].dtype, LST_DT_FLOAT32);
  EXPECT_EQ(r.inferred[0].base, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(r.inferred[0].start, 1u);
  EXPECT_EQ(r.inferred[1].seq, 1u);
  EXPECT_EQ(r.inferred[1].op, LST_OP_BCAST);
  EXPECT_EQ(r.inferred[1].end, 4u);
  EXPECT_EQ(c.inferred(), 2u);
  EXPECT_TRUE(r.matches.empty());
}

TEST(Correlate, BoundedWhenKernelsNeverCome) {
  Recorder r;
  Correlator c(&r, 4);
  for (uint32_t i = 0; i < 10; ++i) c.bind(i, 1000 + i);
  EXPECT_EQ(c.dropped(), 6u);
  // The oldest bindings were dropped, the newest kept.
  c.on_kernel(kernel(0, kAllReduce), false);
  c.on_kernel(kernel(9, kAllReduce), false);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].record, 1009u);
}

TEST(Correlate, BoundedWhenBindingsNeverCome) {
  Recorder r;
  Correlator c(&r, 4);
  for (uint32_t i = 0; i < 10; ++i) c.on_kernel(kernel(i, kAllReduce), false);
  EXPECT_EQ(c.dropped(), 6u);
  c.bind(0, 1);
  c.bind(9, 2);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].record, 2u);
}

TEST(Correlate, ConcurrentBindersAndKernelThreadsMatchEveryCallOnce) {
  Recorder r;
  Correlator c(&r, 1u << 16);
  constexpr uint32_t kPerThread = 2000;
  constexpr uint32_t kThreads = 4;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < kPerThread; ++i) c.bind(t * kPerThread + i, 1'000'000 + t * kPerThread + i);
    });
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < kPerThread; ++i) c.on_kernel(kernel(t * kPerThread + i, kAllReduce), false);
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(r.matches.size(), size_t{kPerThread} * kThreads);
  std::map<uint64_t, uint32_t> by_record;
  for (auto& m : r.matches) {
    EXPECT_EQ(m.record, 1'000'000u + m.corr);
    ++by_record[m.record];
  }
  EXPECT_EQ(by_record.size(), size_t{kPerThread} * kThreads);
  EXPECT_TRUE(r.inferred.empty());
}

}  // namespace
