// Blame between two views of equal weight (two-rank jobs) by evidence rather than majority: the rank's
// own per-step pattern, the call one rank is blocked in, a runtime stall report, the first death.
#include <gtest/gtest.h>

#include <string>

#include "builder.h"
#include "lockstep/check/check.h"

namespace lockstep::check::test {
namespace {

using V = std::vector<int32_t>;

// Each step: allreduce at line A, bcast at line B. Rank 1 leaves out step 3's bcast and goes on.
TEST(TwoRanks, OwnPatternDecidesASkip) {
  auto b = ranks(2);
  Call bc{.op = LST_OP_BCAST, .redop = 0, .root = 0, .caller = 0x1200};
  for (int s = 0; s < 6; ++s)
    for (int i = 0; i < 2; ++i) {
      b[i].call(kWorld, allreduce(256, 0x1100));
      if (!(i == 1 && s == 3)) b[i].call(kWorld, bc);
    }
  for (auto& x : b) x.finalize();
  Result r = run(b);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kMissingCollective) << dump(r);
  EXPECT_FALSE(f.tie);
  EXPECT_EQ(f.culprits, V{1});
  EXPECT_EQ(f.seq, 7);
  bool said = false;
  for (auto& n : f.notes) said |= n.find("per-step pattern") != std::string::npos;
  EXPECT_TRUE(said) << dump(r);
}

TEST(TwoRanks, OwnPatternDecidesWhenTheLowerRankIsTheOneThatDeparts) {
  // The same bug on rank 0: numbering by the lowest rank must not make rank 1 the culprit.
  auto b = ranks(2);
  Call bc{.op = LST_OP_BCAST, .redop = 0, .root = 0, .caller = 0x1200};
  for (int s = 0; s < 6; ++s)
    for (int i = 0; i < 2; ++i) {
      b[i].call(kWorld, allreduce(256, 0x1100));
      if (!(i == 0 && s == 3)) b[i].call(kWorld, bc);
    }
  for (auto& x : b) x.finalize();
  Result r = run(b);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().culprits, V{0}) << dump(r);
}

TEST(TwoRanks, FirstDeathDecides) {
  auto b = ranks(2);
  b[0].calls(kWorld, allreduce(), 2).finalize();
  b[1].calls(kWorld, allreduce(), 1).marker(LST_MARK_SIGNAL, LST_STATE_RETURNED, 11);
  Result r = run(b, {EndState::kExited, EndState::kCrashed});
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_FALSE(f.tie) << dump(r);
  EXPECT_EQ(f.culprits, V{1});
  bool said = false;
  for (auto& n : f.notes) said |= n.find("died first") != std::string::npos;
  EXPECT_TRUE(said) << dump(r);
}

TEST(TwoRanks, RuntimeStallReportDecides) {
  auto b = ranks(2);
  Call a{.op = LST_OP_ALLREDUCE, .api = LST_API_RT, .name = "grad/w"};
  Call c{.op = LST_OP_ALLREDUCE, .api = LST_API_RT, .name = "grad/b"};
  b[0].call(kWorld, a)
      .call(kWorld, c)
      .annotate(LOCKSTEP_RT_ABORT_PREFIX
                "stalled for 8 s (LOCKSTEP_RT_STALL_ABORT): rt.allreduce 'grad/b' "
                "was never submitted by rank 1")
      .process_end();
  b[1].call(kWorld, a).annotate(LOCKSTEP_RT_ABORT_PREFIX "negotiation stopped by rank 0").process_end();
  Result r = run(b);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.culprits, V{1}) << dump(r);
  bool said = false;
  for (auto& n : f.notes) said |= n.find("stall report") != std::string::npos;
  EXPECT_TRUE(said) << dump(r);
}

TEST(TwoRanks, BlockedInACallTheOtherNeverReachesDecides) {
  auto b = ranks(2);
  Call extra{.op = LST_OP_BARRIER, .count = 0, .dtype = 0, .state = LST_STATE_ENTERED, .caller = 0x3000};
  b[0].calls(kWorld, allreduce(), 3).call(kWorld, extra);
  b[1].calls(kWorld, allreduce(), 3).finalize();
  Result r = run(b, {EndState::kKilled, EndState::kExited});
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.culprits, V{0}) << dump(r);
  bool said = false;
  for (auto& n : f.notes) said |= n.find("never reaches") != std::string::npos;
  EXPECT_TRUE(said) << dump(r);
}

// The blocked call has no pattern to continue or break (the communicator's first call): an extra call
// on the blocked rank and the other leaving early are as likely, so the blocked call decides nothing.
TEST(TwoRanks, ABlockedFirstCallAgainstAFinalizedRankIsATie) {
  auto b = ranks(2);
  Call barrier{.op = LST_OP_BARRIER, .count = 0, .dtype = 0, .state = LST_STATE_ENTERED, .caller = 0x3000};
  b[0].call(kWorld, barrier);
  b[1].finalize();
  Result r = run(b, {EndState::kKilled, EndState::kExited});
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_TRUE(f.tie) << dump(r);
  EXPECT_TRUE(f.culprits.empty()) << dump(r);
}

TEST(TwoRanks, NoEvidenceStaysATie) {
  auto b = ranks(2);
  b[0].call(kWorld, allreduce(100)).finalize();
  b[1].call(kWorld, allreduce(200)).finalize();
  Result r = run(b);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_TRUE(r.findings.front().tie);
  EXPECT_TRUE(r.findings.front().culprits.empty());
}

TEST(TwoRanks, TheRankThatExitedWhileTheOtherWaitsInItsUsualCallIsBlamed) {
  // Rank 1 skips one allreduce of six and exits; rank 0 waits in its sixth, which continues its
  // pattern: rank 1 stopped early (a skip), not rank 0 calling once too often.
  auto b = ranks(2);
  b[0].calls(kWorld, allreduce(), 5).call(kWorld, Call{.state = LST_STATE_ENTERED});
  b[1].calls(kWorld, allreduce(), 5).finalize();
  Result r = run(b, {EndState::kKilled, EndState::kExited});
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kMissingCollective) << dump(r);
  EXPECT_FALSE(f.tie);
  EXPECT_EQ(f.culprits, V{1}) << dump(r);
  bool said = false;
  for (auto& n : f.notes) said |= n.find("exited while the other waits for it") != std::string::npos;
  EXPECT_TRUE(said) << dump(r);
}

TEST(TwoRanks, ACrashWhileTheOtherWaitsIsTheFirstDeathNotTheBlockedCall) {
  auto b = ranks(2);
  b[0].calls(kWorld, allreduce(), 5).call(kWorld, Call{.state = LST_STATE_ENTERED, .caller = 0x3000});
  b[1].calls(kWorld, allreduce(), 5).marker(LST_MARK_SIGNAL, LST_STATE_RETURNED, 11);
  Result r = run(b, {EndState::kKilled, EndState::kCrashed});
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().culprits, V{1}) << dump(r);
  EXPECT_NE(dump(r).find("died first"), std::string::npos) << dump(r);
}

}  // namespace
}  // namespace lockstep::check::test
