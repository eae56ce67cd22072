// Processes that died while no collective differs (rank_died), and where another finding stands instead.
#include <gtest/gtest.h>

#include <algorithm>
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

// Three ranks after two allreduces: ranks 0 and 2 inside the third, which rank 1 never entered; rank 1
// ends as `one`, the others as `others`, having recorded `signal` (0: none).
std::vector<Rank> waiting_for_rank_1(EndState one, EndState others, int32_t signal = 0) {
  auto b = ranks(3);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  b[0].calls(kWorld, allreduce(), 2).call(kWorld, in);
  b[1].calls(kWorld, allreduce(), 2);
  b[2].calls(kWorld, allreduce(), 2).call(kWorld, in);
  std::vector<Rank> rs;
  for (int i = 0; i < 3; ++i) rs.push_back(b[size_t(i)].build(i == 1 ? one : others));
  for (int i : {0, 2}) {
    rs[size_t(i)].saw_signal = signal != 0;
    rs[size_t(i)].signal = signal;
  }
  return rs;
}

// A rank killed from outside in no call (SIGKILL, the out-of-memory killer: no end in its trace) while
// the others wait for it in the next collective, with no stop of `lockstep run`: the job did not finish,
// so it is never in lockstep. On another host its process cannot be looked up (its end is unknown): it
// counts once every rank waiting for it has ended, and not while they may still run.
TEST(Death, ARankKilledWhileTheOthersWaitForItDiedEvenWithoutAStop) {
  // The waiting ranks ended by a stop signal they recorded (mpirun's teardown), or still running.
  auto job = [](EndState killed, EndState waiters) {
    return analyze(make_job(waiting_for_rank_1(killed, waiters, waiters == EndState::kKilled ? 15 : 0)));
  };
  for (EndState waiters : {EndState::kKilled, EndState::kRunning}) {
    Result r = job(EndState::kKilled, waiters);
    ASSERT_EQ(r.findings.size(), 1u) << dump(r);
    const Finding& f = r.findings.front();
    EXPECT_EQ(f.kind, Kind::kRankDied);
    EXPECT_EQ(f.culprits, V{1});
    EXPECT_NE(f.explanation.find("rank 1 ended before the job finished (it was killed, leaving no end in its "
                                 "trace as SIGKILL does), after MPI_Allreduce #1"),
              std::string::npos)
        << dump(r);
    EXPECT_TRUE(std::any_of(f.notes.begin(), f.notes.end(), [](const std::string& n) {
      return n.find("ranks 0,2 were left blocked waiting for rank 1") != std::string::npos;
    })) << dump(r);
    EXPECT_FALSE(r.in_lockstep());
  }
  Result elsewhere = job(EndState::kUnknown, EndState::kKilled);
  ASSERT_EQ(elsewhere.findings.size(), 1u) << dump(elsewhere);
  EXPECT_EQ(elsewhere.findings.front().kind, Kind::kRankDied);
  EXPECT_TRUE(std::any_of(
      elsewhere.findings.front().notes.begin(), elsewhere.findings.front().notes.end(),
      [](const std::string& n) { return n.find("cannot look for its process") != std::string::npos; }))
      << dump(elsewhere);
  // Nothing says the job ended: the ranks may all still run (a check while it runs), as before.
  EXPECT_TRUE(job(EndState::kUnknown, EndState::kUnknown).findings.empty());
  EXPECT_TRUE(job(EndState::kRunning, EndState::kRunning).findings.empty());
  // Every rank killed at once with no end recorded (Analyze.RankBehindInAHangIsNotMissing): rank 1 may
  // have been computing; as before, the hang post-mortem alone.
  Result all = analyze(make_job(waiting_for_rank_1(EndState::kKilled, EndState::kKilled)));
  EXPECT_TRUE(all.findings.empty()) << dump(all);
  EXPECT_TRUE(all.hung);
}

// Killed inside a call (LAMMPS' ranks, one killed inside an MPI_Send): every rank is in a call, which
// read as a hang of all of them; the others recorded the teardown's SIGTERM, so the one that recorded
// nothing died first. A teardown can also end a rank with SIGKILL: of two ranks with no end, the one in
// no call that the others wait for is the one killed first.
TEST(Death, ARankKilledInsideACallIsNoHangOfEveryRank) {
  // The teardown's SIGTERM `signal_ns` after the records (stamped from 1001 ns on).
  auto job = [](bool rank0_signal, uint64_t signal_ns = 1'000'000'000) {
    auto b = ranks(3);
    Call in = allreduce();
    in.state = LST_STATE_ENTERED;
    for (auto& x : b) x.calls(kWorld, allreduce(), 2).call(kWorld, in);
    std::vector<Rank> rs;
    for (auto& x : b) rs.push_back(x.build(EndState::kKilled));
    for (int i : {0, 2}) {
      rs[size_t(i)].saw_signal = i != 0 || rank0_signal;
      rs[size_t(i)].signal = rs[size_t(i)].saw_signal ? 15 : 0;
      rs[size_t(i)].signal_t_ns = signal_ns;
    }
    return analyze(make_job(std::move(rs)));
  };
  Result r = job(true);
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kRankDied) << dump(r);
  EXPECT_EQ(f.culprits, V{1});
  ASSERT_EQ(f.detail.size(), 1u);
  EXPECT_EQ(f.detail.front().note, "killed inside it");
  EXPECT_EQ(f.detail.front().seq, 2);
  EXPECT_EQ(r.look_here, V{1});  // the post-mortem points where the finding does
  EXPECT_NE(report::text(r, {}).find("look at rank 1: it ended before the job finished"), std::string::npos)
      << report::text(r, {});
  // The same, the teardown a minute after the ranks entered the call: the job was stuck there before
  // the kill (a rank killed to end a hang), so it stays a hang and unfinished.
  Result stuck = job(true, 60'000'000'000);
  EXPECT_EQ(find(stuck, Kind::kRankDied), nullptr) << dump(stuck);
  EXPECT_NE(find(stuck, Kind::kUnfinished), nullptr) << dump(stuck);
  // Two ranks inside the call with no end recorded: nothing tells which went first; as before, a hang.
  Result two = job(false);
  ASSERT_FALSE(two.findings.empty());
  EXPECT_EQ(two.findings.back().kind, Kind::kHang) << dump(two);
  EXPECT_EQ(find(two, Kind::kRankDied), nullptr) << dump(two);

  // Rank 0 inside the next call with no end (ended by the teardown's SIGKILL), rank 1 in no call and
  // waited for: rank 1.
  std::vector<Rank> rs = waiting_for_rank_1(EndState::kKilled, EndState::kKilled);
  rs[2].saw_signal = true;
  rs[2].signal = 15;
  Result outside = analyze(make_job(std::move(rs)));
  ASSERT_EQ(outside.findings.size(), 1u) << dump(outside);
  EXPECT_EQ(outside.findings.front().kind, Kind::kRankDied);
  EXPECT_EQ(outside.findings.front().ranks, V{1}) << dump(outside);
}

// check.scenario.rank_killed_inside as a loaded machine ran it: rank 2 killed with SIGKILL inside its
// receive from rank 3 (which sleeps in no call), then mpirun's teardown, whose SIGTERM ranks 1 and 3
// recorded but rank 0, inside the next allreduce, did not (its SIGKILL came first). Two ranks killed
// inside calls with no end: the one the others wait for (rank 2) died first; rank 0 was only waiting.
TEST(Death, OfTwoRanksKilledInsideCallsTheOneWaitedForDiedFirst) {
  auto b = ranks(4);
  for (auto& x : b) x.calls(kWorld, allreduce(), 3);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  b[0].call(kWorld, in);
  b[1].call(kWorld, in);
  b[2].p2p(kWorld, LST_OP_RECV, 3, 99, LST_STATE_ENTERED);
  std::vector<Rank> rs;
  for (auto& x : b) rs.push_back(x.build(EndState::kKilled));
  for (int i : {1, 3}) {
    rs[size_t(i)].saw_signal = true;
    rs[size_t(i)].signal = 15;
    rs[size_t(i)].signal_t_ns = 1'500'000'000;
  }
  Result r = analyze(make_job(std::move(rs)));
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  EXPECT_EQ(r.findings.front().kind, Kind::kRankDied) << dump(r);
  EXPECT_EQ(r.findings.front().culprits, V{2}) << dump(r);
  ASSERT_EQ(r.findings.front().detail.size(), 1u);
  EXPECT_EQ(r.findings.front().detail.front().note, "killed inside it");
}

// A watchdog that aborts a rank stuck in a collective (PyTorch's NCCL one): ranks 0 and 2 crash with
// SIGABRT inside the allreduce rank 1 never entered, rank 1 having been killed with SIGKILL before. The
// rank killed is the first death, not the rank that crashed first; without the kill the crashes stand
// as before.
TEST(Death, ARankKilledBeforeTheWatchdogAbortedTheOthersIsTheFirstDeath) {
  auto job = [](EndState rank1) {
    return analyze(make_job(waiting_for_rank_1(rank1, EndState::kCrashed, 6)));
  };
  Result r = job(EndState::kKilled);
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kRankDied);
  EXPECT_EQ(f.culprits, V{1}) << dump(r);
  EXPECT_EQ(f.ranks, (V{0, 1, 2}));
  EXPECT_TRUE(std::any_of(f.notes.begin(), f.notes.end(), [](const std::string& n) {
    return n.find("ranks 0,2 ended inside MPI_Allreduce #2 on MPI_COMM_WORLD, waiting for rank 1") !=
           std::string::npos;
  })) << dump(r);
  // The same through a message: rank 0 crashed inside a receive from any rank, rank 1 was killed.
  auto m = ranks(2);
  m[0].calls(kWorld, allreduce(), 2).p2p(kWorld, LST_OP_RECV, LST_ANY_SOURCE, 5, LST_STATE_ENTERED);
  m[1].calls(kWorld, allreduce(), 2);
  std::vector<Rank> ms;
  ms.push_back(m[0].build(EndState::kCrashed));
  ms.push_back(m[1].build(EndState::kKilled));
  ms[0].saw_signal = true;
  ms[0].signal = 6;
  Result msg = analyze(make_job(std::move(ms)));
  ASSERT_EQ(msg.findings.size(), 1u) << dump(msg);
  EXPECT_EQ(msg.findings.front().culprits, V{1}) << dump(msg);
  EXPECT_TRUE(std::any_of(
      msg.findings.front().notes.begin(), msg.findings.front().notes.end(),
      [](const std::string& n) { return n.find("rank 0 ended inside MPI_Recv from any rank") == 0; }))
      << dump(msg);
  // Rank 1 still running instead (a slow step): not killed, the crashes are the deaths.
  Result running = job(EndState::kRunning);
  ASSERT_EQ(running.findings.size(), 1u) << dump(running);
  EXPECT_EQ(running.findings.front().kind, Kind::kRankDied);
  EXPECT_EQ(running.findings.front().ranks, (V{0, 2})) << dump(running);
}

// The same kill in a job that `lockstep run --timeout` stopped later (a launcher that does not end the
// job when a rank dies): a hang, and the rank run no longer found at the stop, with no end recorded, is
// said to have been gone before it. A rank run found is not, nor one that recorded its stop signal.
TEST(Death, ARankGoneBeforeTheStopIsSaidToHaveBeenKilledInTheHang) {
  auto job = [](const std::string& rank1_at_stop, bool rank1_signal) {
    std::vector<Rank> rs = waiting_for_rank_1(EndState::kKilled, EndState::kKilled);
    for (auto& r : rs) {
      r.at_stop = "running";
      r.at_stop_cpu = 1.0;
    }
    rs[1].at_stop = rank1_at_stop;
    rs[1].saw_signal = rank1_signal;
    rs[1].signal = rank1_signal ? 15 : 0;
    Job j = make_job(std::move(rs));
    j.stopped_by_run = "lockstep run stopped the job at --timeout";
    j.stopped_at_ns = 60'000'000'000;
    j.stopped_on_host = j.ranks.front().host;
    return analyze(j);
  };
  const std::string gone =
      "rank 1 was gone before the stop, after MPI_Allreduce #1 on MPI_COMM_WORLD: it was killed";
  Result r = job("", false);
  ASSERT_NE(find(r, Kind::kHang), nullptr) << dump(r);
  EXPECT_EQ(find(r, Kind::kHang)->culprits, V{1}) << dump(r);
  EXPECT_TRUE(hang_says(r, gone)) << dump(r);
  EXPECT_FALSE(hang_says(job("sleeping", false), "gone before the stop"));
  EXPECT_FALSE(hang_says(job("", true), "gone before the stop"));
}

}  // namespace
}  // namespace lockstep::check::test
