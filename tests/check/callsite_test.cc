// The same collective and arguments from another line (callsite_mismatch): a call made up from a
// retry or flush path against per-rank helpers and branches that each rank takes at a step of its own.
// And the frames above a call site that LOCKSTEP_TRACE_STACK records, as the post-mortem gives them.
#include <gtest/gtest.h>

#include <string>

#include "builder.h"
#include "lockstep/check/check.h"
#include "lockstep/report/report.h"

namespace lockstep::check::test {
namespace {

using V = std::vector<int32_t>;

Result run_opts(std::vector<RankBuilder>& b, const Options& o) {
  std::vector<Rank> rs;
  for (size_t i = 0; i < b.size(); ++i) rs.push_back(b[i].build(EndState::kExited));
  Job job = make_job(std::move(rs));
  return analyze(job, o);
}

// Every step: two allreduces of the same shape from lines 0x1100 and 0x1200. `odd` makes its step-3
// second call from 0x1300 instead (a retry path that makes up for a skipped call).
std::vector<RankBuilder> two_per_step(int n, int odd) {
  auto b = ranks(n);
  for (int s = 0; s < 6; ++s)
    for (int i = 0; i < n; ++i) {
      b[i].call(kWorld, allreduce(256, 0x1100));
      b[i].call(kWorld, allreduce(256, i == odd && s == 3 ? 0x1300 : 0x1200));
    }
  for (auto& x : b) x.finalize();
  return b;
}

TEST(Callsite, SameSignatureFromAnotherLineThanTheRanksOwnPatternIsReported) {
  auto b = two_per_step(4, 2);
  Result r = run_opts(b, {});
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kCallsiteMismatch);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.seq, 7);
  EXPECT_EQ(f.culprits, V{2});
  EXPECT_FALSE(r.in_lockstep());                                            // fails the gate by default
  EXPECT_NE(f.explanation.find("#5"), std::string::npos) << f.explanation;  // the same call one step earlier

  auto c = two_per_step(4, 2);
  Options allow;
  allow.allow_callsite_differences = true;
  Result a = run_opts(c, allow);
  EXPECT_TRUE(a.in_lockstep());
  ASSERT_FALSE(a.warnings.empty());
  EXPECT_NE(a.warnings.back().find("callsite_mismatch"), std::string::npos);
}

TEST(Callsite, RanksThatAlwaysUseTheirOwnHelperStayClean) {
  // Rank 0 reaches the collective through one helper (alternating two lines), the others through another.
  auto b = ranks(4);
  for (int s = 0; s < 12; ++s)
    for (int i = 0; i < 4; ++i)
      b[i].call(kWorld, allreduce(256, i == 0 ? (s % 2 ? 0x1101 : 0x1100) : 0x1500));
  for (auto& x : b) x.finalize();
  Result r = run_opts(b, {});
  EXPECT_TRUE(r.in_lockstep()) << dump(r);
}

TEST(Callsite, TwoRanksTheOneThatBreaksItsPatternIsNamed) {
  auto b = two_per_step(2, 1);
  Result r = run_opts(b, {});
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  EXPECT_EQ(r.findings.front().kind, Kind::kCallsiteMismatch);
  EXPECT_EQ(r.findings.front().culprits, V{1});
  auto c = two_per_step(2, 0);
  Result r0 = run_opts(c, {});
  ASSERT_EQ(r0.findings.size(), 1u) << dump(r0);
  EXPECT_EQ(r0.findings.front().culprits, V{0});
}

// Rounds of a bucketed exchange: a barrier and an alltoall from lines 0x3000/0x3100 each round, then
// an allreduce of the done flags (0x3200). Rank i sends its last bucket in round last[i], from the
// branch at 0x3300/0x3400: the same calls, other lines.
std::vector<RankBuilder> rounds(const std::vector<int>& last, int n_rounds) {
  const int n = int(last.size());
  auto b = ranks(n);
  Call barrier{.op = LST_OP_BARRIER, .count = 0, .redop = 0};
  Call alltoall{.op = LST_OP_ALLTOALL, .count = 16, .redop = 0};
  for (int round = 0; round < n_rounds; ++round)
    for (int i = 0; i < n; ++i) {
      const bool own = round == last[i];
      barrier.caller = own ? 0x3300 : 0x3000;
      alltoall.caller = own ? 0x3400 : 0x3100;
      b[i].call(kWorld, barrier);
      b[i].call(kWorld, alltoall);
      b[i].call(kWorld, allreduce(1, 0x3200));
    }
  for (auto& x : b) x.finalize();
  return b;
}

bool warned_other_step(const Result& r) {
  for (auto& w : r.warnings)
    if (w.find("too, at another position") != std::string::npos) return true;
  return false;
}

TEST(Callsite, ABranchEachRankTakesInARoundOfItsOwnIsNoFinding) {
  // Ranks 0 and 1 in adjacent rounds (as many differing positions as edits), ranks 0 and 3 far apart.
  auto b = rounds({2, 3, 5, 7}, 9);
  Result r = run(b);
  EXPECT_TRUE(r.in_lockstep()) << dump(r);
  EXPECT_TRUE(r.findings.empty()) << dump(r);
  EXPECT_TRUE(warned_other_step(r));
}

TEST(Callsite, TwoRanksTakingTheBranchInAdjacentRoundsIsNoFinding) {
  auto b = rounds({4, 3}, 6);
  Result r = run(b);
  EXPECT_TRUE(r.findings.empty()) << dump(r);
}

TEST(Callsite, ABranchOnlyOneRankTakesIsStillReported) {
  // Rank 2 takes the branch in round 3; the others never do (their last round is past the end).
  auto b = rounds({99, 99, 3, 99}, 6);
  Result r = run(b);
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  EXPECT_EQ(r.findings.front().kind, Kind::kCallsiteMismatch);
  EXPECT_EQ(r.findings.front().culprits, V{2});
  EXPECT_EQ(r.findings.front().seq, 9);
}

TEST(Callsite, ASkipMadeUpFromALineOfItsOwnRightAfterIsStillASkip) {
  // Each step: gradients (0x1100), then a metric (0x1200), the same shape. Rank 2 skips step 5's
  // gradients and makes them up at once from a line of its own (0x1300): two positions differ, as many
  // as the edits, but the make-up line is one nobody else uses.
  auto b = ranks(4);
  for (int s = 0; s < 6; ++s)
    for (int i = 0; i < 4; ++i) {
      if (!(i == 2 && s == 5)) b[i].call(kWorld, allreduce(256, 0x1100));
      b[i].call(kWorld, allreduce(256, 0x1200));
    }
  b[2].call(kWorld, allreduce(256, 0x1300));
  for (auto& x : b) x.finalize();
  Result r = run(b);
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.culprits, V{2});
  EXPECT_EQ(f.seq, 10);
  EXPECT_TRUE(f.silently_wrong);
}

// With LOCKSTEP_TRACE_STACK the post-mortem gives each blocked rank's frames above its call site, from
// the call's STACK records: found though another thread's record came in between, in order, with a
// frame list's frames after the record's own; a STACK record of another call is not taken.
TEST(PostMortem, BlockedRanksComeWithTheFramesAboveTheirCall) {
  auto b = ranks(2);
  for (auto& x : b) x.calls(kWorld, allreduce(), 3);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  b[0].call(kWorld, in);
  const uint64_t id0 = b[0].last_id();
  b[0].stack(id0 - 1, 0x9999, 0);          // an earlier call's
  b[0].marker(LST_MARK_ANNOTATION, 0, 0);  // another thread's record
  b[0].stack(id0, 0x3000, 0x3100, {0x3200, 0x3300});
  b[0].stack(id0, 0x3400, 0);  // a stack the writer split into records, as before 2.2
  b[1].call(kWorld, in);       // no stack recorded
  b[1].stack(b[1].last_id() + 70, 0x7777, 0);
  Result r = run(b, {EndState::kKilled, EndState::kKilled});
  ASSERT_TRUE(r.hung) << dump(r);
  ASSERT_EQ(r.states.size(), 2u);
  std::vector<uint64_t> got;
  for (const Site& s : r.states[0].in.callers) got.push_back(s.address);
  EXPECT_EQ(got, (std::vector<uint64_t>{0x3000, 0x3100, 0x3200, 0x3300, 0x3400}));
  EXPECT_TRUE(r.states[1].in.callers.empty());
  const std::string text = report::render(r, report::Format::kText, {});
  EXPECT_NE(text.find("blocked in MPI_Allreduce #3 on MPI_COMM_WORLD (app+0x1000 < app+0x3000 < app+0x3100 < "
                      "app+0x3200 < app+0x3300 < app+0x3400)"),
            std::string::npos)
      << text;
  const std::string json = report::render(r, report::Format::kJson, {});
  EXPECT_NE(json.find("\"callers\""), std::string::npos);
}

}  // namespace
}  // namespace lockstep::check::test
