// Processes that died while no collective differs (rank_died), and where another finding stands instead.
#include <gtest/gtest.h>

#include <string>

#include "builder.h"
#include "lockstep/check/check.h"
#include "lockstep/report/report.h"

namespace lockstep::check::test {
namespace {

using V = std::vector<int32_t>;

// How a rank's end is read from its trace: a signal that came while the tracer itself was running (no
// SIGNAL marker, the header says "signal") was sent from outside, a launcher's stop: after the process's
// own exit was recorded it is that exit, before it the rank was killed (never a death, a crash).
TEST(Death, ASignalWithoutItsMarkerAfterTheProcessEndIsTheExit) {
  Rank exiting;
  exiting.saw_process_end = true;
  exiting.header_end_state = LST_END_SIGNAL;
  classify_end(exiting, "");
  EXPECT_EQ(exiting.end, EndState::kExited);

  Rank stopped;
  stopped.header_end_state = LST_END_SIGNAL;
  classify_end(stopped, "");
  EXPECT_EQ(stopped.end, EndState::kKilled);

  // A crash whose marker holds no signal number, in words: no "signal 0".
  auto b = ranks(4);
  for (auto& r : b) r.marker(LST_MARK_MPI_INIT).calls(kWorld, allreduce(), 2);
  for (int i : {0, 1, 3}) b[size_t(i)].finalize();
  Result r = run(b, {EndState::kExited, EndState::kExited, EndState::kCrashed, EndState::kExited});
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  EXPECT_NE(r.findings.front().explanation.find("it crashed (of a signal its trace does not name)"),
            std::string::npos)
      << dump(r);
}

// A process that died while no collective differs: rank_died, never "in lockstep" (exit code 0).
TEST(Death, ACrashWithEveryCollectiveAgreeingIsRankDied) {
  auto b = ranks(4);
  for (auto& r : b) r.marker(LST_MARK_MPI_INIT).calls(kWorld, allreduce(), 3);
  for (int i : {0, 1, 3}) b[size_t(i)].finalize();
  b[2].marker(LST_MARK_SIGNAL, LST_STATE_RETURNED, 11);
  Result r = run(b, {EndState::kExited, EndState::kExited, EndState::kCrashed, EndState::kExited});
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kRankDied);
  EXPECT_FALSE(r.in_lockstep());
  EXPECT_EQ(f.culprits, V{2});
  EXPECT_EQ(f.ranks, V{2});
  EXPECT_EQ(f.seq, -1);
  EXPECT_EQ(f.comm.name, "MPI_COMM_WORLD");
  EXPECT_NE(f.explanation.find("it crashed (signal 11)"), std::string::npos) << dump(r);
  EXPECT_NE(f.explanation.find("after MPI_Allreduce #2 on MPI_COMM_WORLD"), std::string::npos) << dump(r);
  EXPECT_NE(report::text(r, {}).find("rank_died"), std::string::npos);
}

// Exiting without MPI_Finalize is an error in MPI, whatever the status the exit hook cannot see; a
// process that never initialized MPI (an NCCL job's rank) has no MPI_Finalize to call.
TEST(Death, AnMpiProcessLeavingWithoutFinalizeIsRankDiedAndANcclOneIsNot) {
  auto b = ranks(2);
  for (auto& r : b) r.marker(LST_MARK_MPI_INIT).process_end();
  Result r = run(b);
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  EXPECT_EQ(r.findings.front().kind, Kind::kRankDied);
  EXPECT_EQ(r.findings.front().ranks, (V{0, 1}));
  EXPECT_EQ(r.findings.front().culprits.size(), 1u);
  EXPECT_NE(r.findings.front().explanation.find("exited without calling MPI_Finalize"), std::string::npos);
  EXPECT_NE(r.findings.front().explanation.find("before any collective"), std::string::npos) << dump(r);

  auto c = ranks(2);
  for (auto& x : c) x.calls(kWorld, allreduce(), 2).process_end();
  Result rc = run(c);
  EXPECT_TRUE(rc.in_lockstep()) << dump(rc);
}

// Where another finding stands, it names the death that matters: no rank_died beside it. Nor after a
// clean finish, nor for a rank stopped from outside (the launcher tearing the job down).
TEST(Death, NoRankDiedBesideAnotherFindingOrWithoutADeath) {
  auto b = ranks(4);
  for (auto& r : b) r.marker(LST_MARK_MPI_INIT).calls(kWorld, allreduce(), 2);
  b[1].call(kWorld, allreduce(512));
  for (size_t i : {0u, 2u, 3u}) b[i].call(kWorld, allreduce());
  b[3].marker(LST_MARK_SIGNAL, LST_STATE_RETURNED, 11);
  Result r = run(b, {EndState::kExited, EndState::kExited, EndState::kExited, EndState::kCrashed});
  EXPECT_EQ(find(r, Kind::kRankDied), nullptr) << dump(r);
  EXPECT_NE(find(r, Kind::kCountMismatch), nullptr) << dump(r);

  auto c = ranks(2);
  for (auto& x : c) x.marker(LST_MARK_MPI_INIT).calls(kWorld, allreduce(), 2);
  c[0].finalize();
  c[1].marker(LST_MARK_SIGNAL, LST_STATE_RETURNED, 15);
  Result rc = run(c, {EndState::kExited, EndState::kKilled});
  EXPECT_TRUE(rc.in_lockstep()) << dump(rc);
}

}  // namespace
}  // namespace lockstep::check::test
