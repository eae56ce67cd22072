// Hangs with point-to-point messages (format 1.1 records) and the `hang` finding (blame between two views
// of equal weight: blame_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "builder.h"
#include "lockstep/check/check.h"
#include "lockstep/report/report.h"

namespace lockstep::check::test {
namespace {

using V = std::vector<int32_t>;

constexpr int32_t kTag = 7;
const std::vector<EndState> kAllKilled(4, EndState::kKilled);

// One step of a halo-exchange loop: rank 0 sends to rank 1 (line 0x2000/0x2100), then every rank
// reduces (line 0x1000).
void step(std::vector<RankBuilder>& b, bool allreduce_too = true) {
  b[0].p2p(kWorld, LST_OP_SEND, 1, kTag, LST_STATE_RETURNED, 0x2000);
  b[1].p2p(kWorld, LST_OP_RECV, 0, kTag, LST_STATE_RETURNED, 0x2100);
  if (allreduce_too)
    for (auto& r : b) r.call(kWorld, allreduce());
}

TEST(P2P, MessagesAreNotPartOfTheCollectiveSequence) {
  auto b = ranks(4);
  for (int s = 0; s < 5; ++s) step(b);
  b[2].p2p(kWorld, LST_OP_SEND, 3, 1).p2p(kWorld, LST_OP_PROBE, 3, 1);  // more messages on some ranks only
  b[3].p2p(kWorld, LST_OP_RECV, 2, 1).p2p(kWorld, LST_OP_SEND, LST_PROC_NULL, 1);
  for (auto& r : b) r.call(kWorld, allreduce()).finalize();
  Result r = run(b);
  EXPECT_TRUE(r.in_lockstep()) << dump(r);
  EXPECT_EQ(r.summary.collectives, 6u);
  EXPECT_FALSE(r.hung);
}

// Rank 1 skips the allreduce of step 3 and goes on to step 4's receive from rank 0; rank 0 (and 2, 3)
// wait in that allreduce. Without messages in the picture rank 1 is merely "behind".
TEST(P2P, SkippedCollectiveThenBlockedReceiveIsACycleThatBlamesTheRankThatSkipped) {
  auto b = ranks(4);
  for (int s = 0; s < 3; ++s) step(b);
  b[0].p2p(kWorld, LST_OP_SEND, 1, kTag, LST_STATE_RETURNED, 0x2000);
  b[1].p2p(kWorld, LST_OP_RECV, 0, kTag, LST_STATE_RETURNED, 0x2100);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  for (int i : {0, 2, 3}) b[i].call(kWorld, in);
  b[1].p2p(kWorld, LST_OP_RECV, 0, kTag, LST_STATE_ENTERED, 0x2100);  // step 4's receive: never sent
  Result r = run(b, kAllKilled);
  const Finding* cyc = find(r, Kind::kDeadlockCycle);
  ASSERT_NE(cyc, nullptr) << dump(r);
  EXPECT_EQ(cyc->ranks, (V{0, 1}));
  EXPECT_EQ(cyc->culprits, V{1}) << dump(r);
  bool mixed = false;
  for (auto& e : cyc->edges) mixed |= e.message && e.from == 1 && e.to == 0 && e.operation == "MPI_Recv";
  EXPECT_TRUE(mixed);
  EXPECT_NE(std::find(r.look_here.begin(), r.look_here.end(), 1), r.look_here.end());
  EXPECT_EQ(std::find(r.look_here.begin(), r.look_here.end(), 0), r.look_here.end());
  ASSERT_EQ(r.findings.back().kind, Kind::kHang);
  EXPECT_EQ(r.findings.back().culprits, V{1});
  EXPECT_FALSE(r.in_lockstep());
}

TEST(P2P, AnySourceWaitsForEveryOtherMember) {
  auto b = ranks(4);
  for (int s = 0; s < 3; ++s) step(b);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  for (int i : {0, 2, 3}) b[i].call(kWorld, in);
  b[1].p2p(kWorld, LST_OP_RECV, LST_ANY_SOURCE, LST_ANY_TAG, LST_STATE_ENTERED, 0x2100);
  Result r = run(b, kAllKilled);
  ASSERT_EQ(r.states.size(), 4u);
  EXPECT_EQ(r.states[1].waits_for, (V{0, 2, 3}));
  const Finding* cyc = find(r, Kind::kDeadlockCycle);
  ASSERT_NE(cyc, nullptr) << dump(r);
  EXPECT_EQ(cyc->ranks, (V{0, 1, 2, 3}));
  EXPECT_EQ(cyc->culprits, V{1}) << dump(r);
}

TEST(P2P, NonblockingReceiveWaitedForIsBlocked) {
  auto b = ranks(2);
  b[0].call(kWorld, allreduce())
      .p2p(kWorld, LST_OP_RECV, 1, 0, LST_STATE_RETURNED, 0x2000, LST_F_NONBLOCKING);
  uint64_t irecv0 = b[0].last_id();
  b[0].wait_entered(irecv0);
  b[1].call(kWorld, allreduce())
      .p2p(kWorld, LST_OP_RECV, 0, 0, LST_STATE_RETURNED, 0x2000, LST_F_NONBLOCKING);
  b[1].wait_entered(b[1].last_id());
  Result r = run(b, {EndState::kKilled, EndState::kKilled});
  EXPECT_EQ(r.states[0].waits_for, V{1});
  EXPECT_EQ(r.states[1].waits_for, V{0});
  const Finding* cyc = find(r, Kind::kDeadlockCycle);
  ASSERT_NE(cyc, nullptr) << dump(r);
  EXPECT_TRUE(cyc->culprits == (V{0, 1}));  // symmetric: no evidence either way
  ASSERT_NE(find(r, Kind::kHang), nullptr);
}

// Both ranks wait in a receive from the other: no collective differs, and the job still must not pass.
TEST(Hang, MessageDeadlockWithEqualCollectivesIsNeverInLockstep) {
  auto b = ranks(2);
  for (auto& x : b) x.calls(kWorld, allreduce(), 3);
  b[0].p2p(kWorld, LST_OP_RECV, 1, 0, LST_STATE_ENTERED);
  b[1].p2p(kWorld, LST_OP_RECV, 0, 0, LST_STATE_ENTERED);
  Result r = run(b, {EndState::kKilled, EndState::kKilled});
  EXPECT_FALSE(r.in_lockstep());
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.back().kind, Kind::kHang);
  EXPECT_NE(find(r, Kind::kDeadlockCycle), nullptr);
}

// The job of `b` (every rank killed) as `lockstep run --timeout` leaves it: its SIGTERM `after_ns` past
// the builder's records (stamped from 1001 ns on), sent on `host`.
Result stopped_at(std::vector<RankBuilder>& b, uint64_t after_ns, const std::string& host = "test-host") {
  std::vector<Rank> rs;
  for (auto& x : b) rs.push_back(x.build(EndState::kKilled));
  Job job = make_job(std::move(rs));
  job.stopped_by_run = "lockstep run stopped the job at --timeout";
  job.stopped_at_ns = 2000 + after_ns;
  job.stopped_on_host = host;
  return analyze(job);
}

// The same two receives, in a job `lockstep run --timeout` stopped: a cycle that stood for seconds before
// run's SIGTERM is a deadlock; one whose last rank began waiting an instant before is a snapshot of an
// exchange under way (LAMMPS' balance example, whose ranks' earlier MPI_ANY_SOURCE receives leave the
// message counts undecided), said in the hang finding instead. On another host the clocks do not compare:
// the cycle stands.
TEST(Hang, AMessageCycleFormedAnInstantBeforeTheStopIsNoDeadlock) {
  auto at_stop = [](uint64_t after_ns, const std::string& host) {
    auto b = ranks(2);
    for (auto& x : b) x.calls(kWorld, allreduce(), 3);
    b[0].p2p(kWorld, LST_OP_RECV, 1, 0, LST_STATE_ENTERED);
    b[1].p2p(kWorld, LST_OP_RECV, 0, 0, LST_STATE_ENTERED);
    return stopped_at(b, after_ns, host);
  };
  Result stood = at_stop(3'000'000'000, "test-host");
  EXPECT_NE(find(stood, Kind::kDeadlockCycle), nullptr) << dump(stood);
  Result instant = at_stop(5'000'000, "test-host");
  EXPECT_EQ(find(instant, Kind::kDeadlockCycle), nullptr) << dump(instant);
  EXPECT_TRUE(hang_says(instant, "exchange under way")) << dump(instant);
  // Both ranks began waiting an instant before the stop.
  EXPECT_TRUE(hang_says(instant, "the job was still running")) << dump(instant);
  Result elsewhere = at_stop(5'000'000, "another-host");
  EXPECT_NE(find(elsewhere, Kind::kDeadlockCycle), nullptr) << dump(elsewhere);
}

// Every rank inside an allreduce for seconds when `lockstep run` stopped the job (CP2K with one rank frozen
// inside it): the stop's SIGTERM ended ranks 0 and 2 there, which is the hang's doing, not its cause, so
// neither is blamed. A rank that died there before the stop still is.
TEST(Hang, RanksTheStopEndedInsideACallAreNotItsCause) {
  auto stopped_with_signals_at = [](uint64_t signal_ns) {
    auto b = ranks(3);
    for (auto& x : b) x.calls(kWorld, allreduce(), 3).call(kWorld, Call{.state = LST_STATE_ENTERED});
    for (size_t i : {0u, 2u}) b[i].clock_at(signal_ns).marker_ref(LST_MARK_SIGNAL, b[i].last_id(), 15);
    std::vector<Rank> rs;
    for (auto& x : b) rs.push_back(x.build(EndState::kKilled));
    Job job = make_job(std::move(rs));
    job.stopped_by_run = "lockstep run stopped the job at --timeout";
    job.stopped_at_ns = 4'000'000'000;
    job.stopped_on_host = job.ranks.front().host;
    return analyze(job);
  };
  Result after = stopped_with_signals_at(4'000'000'100);
  const Finding* u = find(after, Kind::kUnfinished);
  ASSERT_NE(u, nullptr) << dump(after);
  EXPECT_TRUE(u->culprits.empty()) << dump(after);
  for (const auto& n : u->notes) EXPECT_EQ(n.find("died inside it"), std::string::npos) << n;
  Result before = stopped_with_signals_at(2'000'000'000);
  u = find(before, Kind::kUnfinished);
  ASSERT_NE(u, nullptr) << dump(before);
  EXPECT_EQ(u->culprits, V{0}) << dump(before);
  EXPECT_TRUE(std::any_of(u->notes.begin(), u->notes.end(), [](const std::string& n) {
    return n.find("rank 0 died inside it") != std::string::npos;
  })) << dump(before);
}

// Quantum ESPRESSO with one rank frozen by SIGSTOP inside an allreduce: the ranks whose part of the
// algorithm needs it wait inside the same call, so the records show ranks that all entered it and wait
// for nobody. What lockstep run read in /proc at the stop names the rank held there; the others are
// not blamed. Without that reading nothing is blamed (the communication library is suspected).
TEST(Hang, ARankTheKernelHeldAtTheStopIsWhereTheOthersWait) {
  auto stopped_with = [](const std::string& held, const std::string& wchan) {
    auto b = ranks(3);
    for (auto& x : b) x.calls(kWorld, allreduce(), 3);
    for (int i = 0; i < 3; ++i)
      b[size_t(i)].call(kWorld, Call{.state = uint8_t(i == 2 ? LST_STATE_RETURNED : LST_STATE_ENTERED)});
    b[2].call(kWorld, Call{.state = LST_STATE_ENTERED});
    std::vector<Rank> rs;
    for (auto& x : b) rs.push_back(x.build(EndState::kKilled));
    for (auto& r : rs) {
      r.at_stop = "running";
      r.at_stop_cpu = 1.0;
    }
    if (!held.empty()) {
      rs[1].at_stop = held;
      rs[1].at_stop_cpu = 0;
      rs[1].at_stop_wchan = wchan;
    }
    Job job = make_job(std::move(rs));
    job.stopped_by_run = "lockstep run stopped the job at --timeout";
    job.stopped_at_ns = 60'000'000'000;  // long after every call: no call under way
    job.stopped_on_host = job.ranks.front().host;
    return analyze(job);
  };
  auto noted = [](const Finding* f, const std::string& text) {
    return f && std::any_of(f->notes.begin(), f->notes.end(),
                            [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  Result stopped = stopped_with("stopped", "");
  const Finding* u = find(stopped, Kind::kUnfinished);
  ASSERT_NE(u, nullptr) << dump(stopped);
  EXPECT_EQ(u->seq, 3);
  EXPECT_EQ(u->culprits, V{1}) << dump(stopped);
  EXPECT_TRUE(noted(u, "rank 1 was stopped (SIGSTOP, or job control) when lockstep run stopped the job"))
      << dump(stopped);
  EXPECT_EQ(stopped.look_here, V{1}) << dump(stopped);
  const Finding* h = find(stopped, Kind::kHang);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->culprits, V{1}) << dump(stopped);

  Result disk = stopped_with("uninterruptible", "nfs_wait_bit_killable");
  u = find(disk, Kind::kUnfinished);
  ASSERT_NE(u, nullptr) << dump(disk);
  EXPECT_EQ(u->culprits, V{1}) << dump(disk);
  EXPECT_TRUE(noted(u, "in an uninterruptible sleep in the kernel (at nfs_wait_bit_killable)")) << dump(disk);

  // A rank merely running (spinning in the library) is no more to blame than the others.
  Result none = stopped_with("", "");
  u = find(none, Kind::kUnfinished);
  ASSERT_NE(u, nullptr) << dump(none);
  EXPECT_TRUE(u->culprits.empty()) << dump(none);
  EXPECT_TRUE(noted(u, "suspect the communication library")) << dump(none);
  EXPECT_EQ(none.look_here, (V{0, 1})) << dump(none);
}

// Stopped while ranks 0 and 2 were still inside an allreduce that ranks 1 and 3 had left (LAMMPS' flow
// example at --timeout): a call under way when it entered an instant before run's SIGTERM, unfinished
// when it had been in it for seconds.
TEST(Hang, ACollectiveEnteredAnInstantBeforeTheStopIsNotUnfinished) {
  auto at_stop = [](uint64_t after_ns) {
    auto b = ranks(4);
    for (auto& x : b) x.calls(kWorld, allreduce(), 3);
    for (int i = 0; i < 4; ++i)
      b[size_t(i)].call(kWorld, Call{.state = uint8_t(i % 2 ? LST_STATE_RETURNED : LST_STATE_ENTERED)});
    return stopped_at(b, after_ns);
  };
  Result stood = at_stop(3'000'000'000);
  const Finding* u = find(stood, Kind::kUnfinished);
  ASSERT_NE(u, nullptr) << dump(stood);
  EXPECT_EQ(u->seq, 3);
  Result instant = at_stop(5'000'000);
  EXPECT_EQ(find(instant, Kind::kUnfinished), nullptr) << dump(instant);
  EXPECT_TRUE(hang_says(instant, "ranks 0,2 were inside MPI_Allreduce #3")) << dump(instant);
  // Ranks 1 and 3 are in no traced call: whether they ran on is not known, so nothing is said of the job.
  EXPECT_FALSE(hang_says(instant, "the job was still running")) << dump(instant);
}

// A halo exchange stopped mid-transfer (LAMMPS at --timeout): each rank posted MPI_Irecv from the other,
// then sits in MPI_Send to it. Each send's receive is posted: no rank waits for the other, so no cycle.
TEST(Hang, SendsWhoseReceivesArePostedAreNoDeadlock) {
  const std::string stopped = "lockstep run stopped the job at --timeout after 8.0 s";
  auto b = ranks(2);
  for (int i = 0; i < 2; ++i) {
    b[i].calls(kWorld, allreduce(), 3);
    for (int step = 0; step < 3; ++step)  // earlier exchanges, completed
      b[i].p2p(kWorld, LST_OP_RECV, 1 - i, 5, LST_STATE_COMPLETED, 0x2100, LST_F_NONBLOCKING)
          .p2p(kWorld, LST_OP_SEND, 1 - i, 5);
    b[i].p2p(kWorld, LST_OP_RECV, 1 - i, 5, LST_STATE_RETURNED, 0x2100, LST_F_NONBLOCKING)
        .p2p(kWorld, LST_OP_SEND, 1 - i, 5, LST_STATE_ENTERED);
  }
  Result r = run(b, {EndState::kKilled, EndState::kKilled}, stopped);
  EXPECT_EQ(find(r, Kind::kDeadlockCycle), nullptr) << dump(r);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.back().kind, Kind::kHang);  // stopped at its --timeout: a hang, but no cycle
  // The same with the tags of the posted receives wrong: nothing will take the sends, a cycle.
  auto c = ranks(2);
  for (int i = 0; i < 2; ++i)
    c[i].calls(kWorld, allreduce(), 3)
        .p2p(kWorld, LST_OP_RECV, 1 - i, 6, LST_STATE_RETURNED, 0x2100, LST_F_NONBLOCKING)
        .p2p(kWorld, LST_OP_SEND, 1 - i, 5, LST_STATE_ENTERED);
  EXPECT_NE(find(run(c, {EndState::kKilled, EndState::kKilled}, stopped), Kind::kDeadlockCycle), nullptr);
  // And with each receive already taken by an earlier send: the blocked sends' are not posted, a cycle.
  auto d = ranks(2);
  for (int i = 0; i < 2; ++i)
    d[i].calls(kWorld, allreduce(), 3)
        .p2p(kWorld, LST_OP_RECV, 1 - i, 5, LST_STATE_COMPLETED, 0x2100, LST_F_NONBLOCKING)
        .p2p(kWorld, LST_OP_SEND, 1 - i, 5)
        .p2p(kWorld, LST_OP_SEND, 1 - i, 5, LST_STATE_ENTERED);
  EXPECT_NE(find(run(d, {EndState::kKilled, EndState::kKilled}, stopped), Kind::kDeadlockCycle), nullptr);
}

// A ring stopped at --timeout while a message was on its way: rank 0 sent to rank 1 and waits for
// rank 2, rank 2 waits for rank 1, and rank 1 waits in the receive rank 0's send pairs with. Rank 1 is
// where the others' waits end, and the text says what it waits in — the message under way — instead of
// "waits for nothing", which read as blame; a rank in no traced call still reads as such.
TEST(Hang, TheRankTheOthersWaitForSaysItsMessageWasUnderWay) {
  const std::string stopped = "lockstep run stopped the job at --timeout after 3.0 s";
  auto b = ranks(3);
  for (auto& x : b) x.calls(kWorld, allreduce(), 1);
  b[0].p2p(kWorld, LST_OP_SEND, 1, 0).p2p(kWorld, LST_OP_RECV, 2, 0, LST_STATE_ENTERED);
  b[1].p2p(kWorld, LST_OP_RECV, 0, 0, LST_STATE_ENTERED);
  b[2].p2p(kWorld, LST_OP_RECV, 1, 0, LST_STATE_ENTERED);
  Result r = run(b, {EndState::kKilled, EndState::kKilled, EndState::kKilled}, stopped);
  EXPECT_EQ(r.look_here, V{1}) << dump(r);
  ASSERT_EQ(r.states.size(), 3u);
  EXPECT_EQ(r.states[1].under_way_with, 0);
  EXPECT_TRUE(r.states[1].waits_for.empty());
  EXPECT_EQ(r.states[0].under_way_with, LST_NONE);
  EXPECT_EQ(r.states[0].waits_for, V{2});
  const std::string text = report::text(r, report::Context{"traces", "test"});
  EXPECT_NE(text.find("look at rank 1: others wait for it; it is in MPI_Recv from rank 0, who made the "
                      "matching call: the message was under way"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("waits for nothing"), std::string::npos) << text;
  const std::string json = report::json(r, report::Context{"traces", "test"});
  EXPECT_NE(json.find("\"under_way_with\": 0"), std::string::npos) << json;

  // Rank 1 computing instead (its last call returned): in no traced call.
  auto c = ranks(3);
  for (auto& x : c) x.calls(kWorld, allreduce(), 1);
  c[0].p2p(kWorld, LST_OP_RECV, 1, 0, LST_STATE_ENTERED);
  c[2].p2p(kWorld, LST_OP_RECV, 1, 0, LST_STATE_ENTERED);
  Result q = run(c, {EndState::kKilled, EndState::kKilled, EndState::kKilled}, stopped);
  EXPECT_EQ(q.look_here, V{1}) << dump(q);
  const std::string qtext = report::text(q, report::Context{"traces", "test"});
  EXPECT_NE(qtext.find("look at rank 1: others wait for it, and it is in no traced call (killed"),
            std::string::npos)
      << qtext;
}

TEST(Hang, StoppedAtTimeoutIsAHangEvenWithNothingPending) {
  auto b = ranks(2);
  for (auto& x : b) x.calls(kWorld, allreduce(), 3);  // both computing (or in an untraced call) when stopped
  Result r =
      run(b, {EndState::kKilled, EndState::kKilled}, "lockstep run stopped the job at --timeout after 5.0 s");
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kHang);
  EXPECT_NE(f.explanation.find("--timeout"), std::string::npos);
  EXPECT_FALSE(r.in_lockstep());
  // Without the note the same traces are a job that was merely stopped early.
  auto c = ranks(2);
  for (auto& x : c) x.calls(kWorld, allreduce(), 3);
  EXPECT_TRUE(run(c, {EndState::kKilled, EndState::kKilled}).in_lockstep());
}

TEST(Hang, EveryLiveRankBlockedIsAHang) {
  auto b = ranks(3);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  b[0].calls(kWorld, allreduce(), 2).call(kWorld, in);
  b[1].calls(kWorld, allreduce(), 2).call(kWorld, in);
  b[2].calls(kWorld, allreduce(), 2)
      .p2p(kWorld, LST_OP_SEND, 0, 3, LST_STATE_ENTERED);  // an Ssend nobody receives
  Result r = run(b, {EndState::kKilled, EndState::kKilled, EndState::kKilled});
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.back().kind, Kind::kHang) << dump(r);
  const Finding* cyc = find(r, Kind::kDeadlockCycle);
  ASSERT_NE(cyc, nullptr) << dump(r);
  EXPECT_EQ(cyc->culprits, V{2});  // ranks 0 and 1 wait in the allreduce rank 2 never entered
}

// A message has no position on its communicator: the hang finding says where it stands among the
// rank's collectives instead of printing position -1.
TEST(Hang, ARankBlockedInAMessageSaysWhereItStandsNotMinusOne) {
  auto b = ranks(3);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  b[0].calls(kWorld, allreduce(), 2).call(kWorld, in);
  b[1].calls(kWorld, allreduce(), 2).call(kWorld, in);
  b[2].calls(kWorld, allreduce(), 2).p2p(kWorld, LST_OP_SEND, 0, 3, LST_STATE_ENTERED);
  Result r = run(b, {EndState::kKilled, EndState::kKilled, EndState::kKilled});
  ASSERT_FALSE(r.findings.empty());
  const Finding& hang = r.findings.back();
  ASSERT_EQ(hang.kind, Kind::kHang) << dump(r);
  ASSERT_EQ(hang.detail.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(hang.detail[i].seq, 2);  // blocked in the allreduce #2
    EXPECT_TRUE(hang.detail[i].position.empty());
  }
  EXPECT_EQ(hang.detail[2].seq, -1);  // JSON keeps seq -1 for a message
  EXPECT_EQ(hang.detail[2].position, "in MPI_Send to rank 0, after #1 on MPI_COMM_WORLD");
  const std::string text = report::text(r, report::Context{"traces", "test"});
  EXPECT_EQ(text.find("#-1"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 2    in MPI_Send to rank 0, after #1 on MPI_COMM_WORLD"), std::string::npos)
      << text;
  const std::string json = report::json(r, report::Context{"traces", "test"});
  EXPECT_NE(json.find("\"position\": \"in MPI_Send to rank 0, after #1 on MPI_COMM_WORLD\""),
            std::string::npos);

  // Blocked before any collective on the communicator.
  auto c = ranks(2);
  c[0].p2p(kWorld, LST_OP_RECV, 1, 0, LST_STATE_ENTERED);
  c[1].p2p(kWorld, LST_OP_RECV, LST_ANY_SOURCE, 0, LST_STATE_ENTERED);
  Result q = run(c, {EndState::kKilled, EndState::kKilled});
  ASSERT_FALSE(q.findings.empty());
  const Finding& h = q.findings.back();
  ASSERT_EQ(h.kind, Kind::kHang) << dump(q);
  ASSERT_EQ(h.detail.size(), 2u);
  EXPECT_EQ(h.detail[0].position, "in MPI_Recv from rank 1, before any collective on MPI_COMM_WORLD");
  EXPECT_EQ(h.detail[1].position, "in MPI_Recv from any rank, before any collective on MPI_COMM_WORLD");
}

// ----- two ranks: evidence instead of a majority -----

// ----- name-matched runtime calls: a skipped run of tensors -----

TEST(NamedRun, SkippedTensorsAreOneMissingCollectiveWithTheNameMismatchAsItsConsequence) {
  auto b = ranks(4);
  auto rt = [](const char* name, uint8_t state = LST_STATE_RETURNED, uint64_t site = 0x4600) {
    return Call{.op = LST_OP_ALLREDUCE, .state = state, .caller = site, .api = LST_API_RT, .name = name};
  };
  for (int s = 0; s < 3; ++s)
    for (auto& x : b) {
      x.annotate("step " + std::to_string(s));
      x.call(kWorld, rt("bn/moments", LST_STATE_RETURNED, 0x4100));
      for (const char* g : {"grad/dense0/kernel", "grad/dense1/kernel", "grad/dense2/kernel"})
        x.call(kWorld, rt(g));
    }
  for (int i = 0; i < 4; ++i) {
    b[i].annotate("step 3").call(kWorld, rt("bn/moments", LST_STATE_RETURNED, 0x4100));
    if (i == 1) {  // overflowed: skips the gradient allreduces and goes on to step 4
      b[i].annotate("step 4").call(kWorld, rt("bn/moments", LST_STATE_ENTERED, 0x4100));
    } else {
      b[i].call(kWorld, rt("grad/dense0/kernel", LST_STATE_ENTERED));
    }
  }
  Result r = run(b, kAllKilled);
  std::vector<const Finding*> v;
  for (auto& f : r.findings)
    if (f.kind != Kind::kHang) v.push_back(&f);
  ASSERT_EQ(v.size(), 1u) << dump(r);
  const Finding& f = *v.front();
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.seq, 13);
  EXPECT_EQ(f.culprits, V{1});
  EXPECT_EQ(f.skipped_tensors, (std::vector<std::string>{"grad/dense0/kernel"}));
  EXPECT_NE(f.explanation.find("of step 3"), std::string::npos) << f.explanation;
  EXPECT_NE(f.explanation.find("went on to 'bn/moments'"), std::string::npos) << f.explanation;
  EXPECT_NE(f.explanation.find("in step 4"), std::string::npos) << f.explanation;
  bool consequence = false;
  for (auto& n : f.notes)
    consequence |= n.find("consequence") != std::string::npos && n.find("name mismatch") != std::string::npos;
  EXPECT_TRUE(consequence) << dump(r);
}

// ----- MPI's own errors -----

TEST(InvalidArgument, RootOutsideTheCommunicatorOnEveryRankAndTheRankThatDiedInIt) {
  auto b = ranks(4);
  Call bad{.op = LST_OP_BCAST, .redop = 0, .root = 7, .state = LST_STATE_ENTERED};
  for (auto& x : b) x.call(kWorld, allreduce()).call(kWorld, bad);
  b[0].marker(LST_MARK_MPI_ABORT);  // its error handler aborted
  Result r = run(b, {EndState::kAborted, EndState::kKilled, EndState::kKilled, EndState::kKilled});
  const Finding* f = find(r, Kind::kInvalidArgument);
  ASSERT_NE(f, nullptr) << dump(r);
  EXPECT_EQ(f->seq, 1);
  EXPECT_EQ(f->culprits, (V{0, 1, 2, 3}));
  EXPECT_NE(f->explanation.find("rank 0 died inside MPI_Bcast"), std::string::npos) << f->explanation;
  EXPECT_NE(f->explanation.find("root 7 is not a rank of MPI_COMM_WORLD"), std::string::npos)
      << f->explanation;
  EXPECT_EQ(find(r, Kind::kUnfinished), nullptr) << dump(r);
  // A valid root is no finding.
  auto c = ranks(2);
  for (auto& x : c) x.call(kWorld, Call{.op = LST_OP_BCAST, .redop = 0, .root = 1}).finalize();
  EXPECT_TRUE(run(c).in_lockstep());
}

TEST(InvalidArgument, RootMinusOneIsARootAndTheEndMarkerNamesTheRankThatDiedInIt) {
  // Format 2.0: root -1 of a rooted call is the root given; rank 2's process ended inside the call
  // (its error handler exited with the error code), the others were stopped by the launcher.
  auto b = ranks(4);
  Call bad{.op = LST_OP_BCAST, .redop = 0, .root = -1, .state = LST_STATE_ENTERED};
  for (auto& x : b) x.call(kWorld, allreduce()).call(kWorld, bad);
  std::vector<EndState> ends(4, EndState::kKilled);
  for (int i = 0; i < 4; ++i) {
    uint64_t in = b[i].last_id();
    if (i == 2) {
      b[i].marker_ref(LST_MARK_PROCESS_END, in, 8);
      ends[i] = EndState::kExited;
    } else {
      b[i].marker_ref(LST_MARK_SIGNAL, in, 15);
    }
  }
  Result r = run(b, ends);
  const Finding* f = find(r, Kind::kInvalidArgument);
  ASSERT_NE(f, nullptr) << dump(r);
  EXPECT_EQ(f->seq, 1);
  EXPECT_EQ(f->culprits, (V{0, 1, 2, 3}));
  EXPECT_EQ(f->explanation.find("rank 2 died inside MPI_Bcast (root -1 is not a rank of MPI_COMM_WORLD"), 0u)
      << dump(r);
  EXPECT_EQ(find(r, Kind::kUnfinished), nullptr) << dump(r);
  EXPECT_EQ(find(r, Kind::kHang), nullptr) << dump(r);  // torn down by MPI, not hung
}

// The same job under load: rank 3 was still on its way out of the allreduce that the others had
// returned from when the launcher stopped it (its SIGNAL marker names that call). Rank 1's error
// handler noted the code it ended the process on. The job was torn down by MPI: rank 3's open call is
// no unfinished of its own, and the error is said as the handler's, not as a code returned.
TEST(InvalidArgument, ARankStoppedOnItsWayOutOfTheCallBeforeIsNoFindingOfItsOwn) {
  auto b = ranks(4);
  Call bad{.op = LST_OP_BCAST, .redop = 0, .root = -1, .state = LST_STATE_ENTERED};
  Call leaving = allreduce();
  leaving.state = LST_STATE_ENTERED;
  std::vector<EndState> ends(4, EndState::kKilled);
  for (int i = 0; i < 4; ++i) {
    b[i].call(kWorld, allreduce());
    if (i == 3) {
      b[i].call(kWorld, leaving).marker_ref(LST_MARK_SIGNAL, b[i].last_id(), 15);
      continue;
    }
    b[i].call(kWorld, allreduce()).call(kWorld, bad);
    const uint64_t in = b[i].last_id();
    if (i == 1) {
      b[i].marker_ref(LST_MARK_MPI_ERROR, in, 8, "MPI_ERR_ROOT: invalid root");
      b[i].marker_ref(LST_MARK_PROCESS_END, in, 8);
      ends[i] = EndState::kExited;
    } else {
      b[i].marker_ref(LST_MARK_SIGNAL, in, 15);
    }
  }
  Result r = run(b, ends);
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kInvalidArgument);
  EXPECT_EQ(f.seq, 2);
  EXPECT_EQ(f.culprits, (V{0, 1, 2}));
  EXPECT_EQ(f.explanation.find("rank 1 died inside MPI_Bcast (root -1 is not a rank of MPI_COMM_WORLD"), 0u)
      << dump(r);
  EXPECT_EQ(f.notes,
            (std::vector<std::string>{"MPI's error handler ended the process on MPI_ERR_ROOT: invalid root"}))
      << dump(r);
}

// Point-to-point with a peer that is no rank of the communicator: an argument MPI rejects, not a
// wrong peer; the calls MPI failed pair with nothing.
TEST(InvalidArgument, APeerOutsideTheCommunicatorIsAnInvalidArgument) {
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    b[i].call(kWorld, allreduce());
    b[i].p2p(kWorld, LST_OP_SEND, 7, 5, LST_STATE_FAILED);
    b[i].marker_ref(LST_MARK_MPI_ERROR, b[i].last_id(), 6, "MPI_ERR_RANK: invalid rank");
    b[i].p2p(kWorld, LST_OP_RECV, (i + 3) % 4, 5, LST_STATE_FAILED);
    b[i].marker_ref(LST_MARK_MPI_ERROR, b[i].last_id(), 6, "MPI_ERR_RANK: invalid rank");
    b[i].call(kWorld, allreduce()).finalize();
  }
  Result r = run(b);
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kInvalidArgument);
  EXPECT_EQ(f.seq, 5);
  EXPECT_EQ(f.culprits, (V{0, 1, 2, 3}));
  EXPECT_EQ(
      f.explanation,
      "every rank called MPI_Send on MPI_COMM_WORLD with an argument MPI rejects: destination 7 is not a "
      "rank of MPI_COMM_WORLD (size 4)");
  EXPECT_EQ(f.notes, (std::vector<std::string>{"MPI returned MPI_ERR_RANK: invalid rank"}));
}

TEST(InvalidArgument, ReturnedErrorIsANoteAndNullHandlesAreInvalid) {
  auto b = ranks(3);
  Call null_type{.op = LST_OP_ALLREDUCE, .dtype = LST_DT_NONE, .dtype_size = 0, .state = LST_STATE_FAILED};
  for (auto& x : b) {
    x.call(kWorld, allreduce()).call(kWorld, null_type);
    x.marker_ref(LST_MARK_MPI_ERROR, x.last_id(), 3, "MPI_ERR_TYPE: invalid datatype");
    x.call(kWorld, allreduce()).finalize();
  }
  Result r = run(b);
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kInvalidArgument);
  EXPECT_EQ(f.seq, 1);
  EXPECT_NE(f.explanation.find("MPI_DATATYPE_NULL is no datatype"), std::string::npos) << f.explanation;
  ASSERT_FALSE(f.notes.empty());
  EXPECT_EQ(f.notes.front(), "MPI returned MPI_ERR_TYPE: invalid datatype");
  // A collective on MPI_COMM_NULL (comm 0) on every rank.
  auto c = ranks(2);
  for (auto& x : c) x.call(kWorld, allreduce()).call(0, Call{.state = LST_STATE_FAILED}).finalize();
  Result rc = run(c);
  const Finding* g = find(rc, Kind::kInvalidArgument);
  ASSERT_NE(g, nullptr) << dump(rc);
  EXPECT_EQ(g->comm.name, "MPI_COMM_NULL");
  EXPECT_EQ(g->culprits, (V{0, 1}));
  // Barrier has no datatype: no finding.
  auto d = ranks(2);
  for (auto& x : d) x.call(kWorld, Call{.op = LST_OP_BARRIER, .count = 0, .dtype = LST_DT_NONE}).finalize();
  EXPECT_TRUE(run(d).in_lockstep()) << dump(run(d));
}

TEST(InvalidArgument, SplitColourAndFailedCreation) {
  // Rank 1 passes colour -5: MPI's handler ends it inside MPI_Comm_split; the others were stopped there.
  auto b = ranks(4);
  std::vector<EndState> ends(4, EndState::kKilled);
  for (int i = 0; i < 4; ++i) {
    b[i].call(kWorld, allreduce()).creation(kWorld, LST_COMM_SPLIT, i == 1 ? -5 : i % 2, LST_STATE_ENTERED);
    b[i].marker_ref(i == 1 ? LST_MARK_PROCESS_END : LST_MARK_SIGNAL, b[i].last_id(), i == 1 ? 13 : 15);
  }
  ends[1] = EndState::kExited;
  Result r = run(b, ends);
  const Finding* f = find(r, Kind::kInvalidArgument);
  ASSERT_NE(f, nullptr) << dump(r);
  EXPECT_EQ(f->seq, -1);
  EXPECT_EQ(f->culprits, V{1});
  EXPECT_NE(f->explanation.find("rank 1 passed a colour MPI rejects to MPI_Comm_split on MPI_COMM_WORLD"),
            std::string::npos)
      << f->explanation;
  EXPECT_NE(dump(r).find("rank 1 died inside it"), std::string::npos) << dump(r);
  // MPI_UNDEFINED is a colour; a creation that failed on every rank (returned error) is a finding.
  auto c = ranks(2);
  for (auto& x : c) {
    x.call(kWorld, allreduce()).creation(kWorld, LST_COMM_SPLIT, LST_UNDEFINED, LST_STATE_RETURNED);
    x.creation(kWorld, LST_COMM_DUP, 0, LST_STATE_FAILED);
    x.marker_ref(LST_MARK_MPI_ERROR, x.last_id(), 16, "MPI_ERR_INTERN: internal error").finalize();
  }
  Result rc = run(c);
  ASSERT_EQ(rc.findings.size(), 1u) << dump(rc);
  EXPECT_EQ(rc.findings.front().culprits, (V{0, 1}));
  EXPECT_NE(rc.findings.front().explanation.find("MPI_Comm_dup on MPI_COMM_WORLD"), std::string::npos)
      << dump(rc);
  EXPECT_NE(dump(rc).find("with MPI_ERR_INTERN"), std::string::npos) << dump(rc);
}

// ----- blame when a rank stopped early while others wait for it -----

// mpi4py's pickled allreduce on three ranks, rank 1 skipping one step: each step the root (rank 0)
// receives from rank 1 then rank 2, then two broadcasts. Rank 1 ends after 5 steps (in MPI_Finalize),
// rank 0 waits in its 6th receive from rank 1, rank 2 (eager sends done) waits in the 6th broadcast.
TEST(StoppedEarly, RankThatFinalizedWhileOthersWaitIsBlamedNotTheReceiverNorTheRankAhead) {
  auto b = ranks(3);
  Call size{.op = LST_OP_BCAST,
            .count = 1,
            .dtype = LST_DT_INT32,
            .dtype_size = 4,
            .redop = 0,
            .root = 0,
            .caller = 0x1100};
  Call data = size;
  data.count = 21;
  data.dtype = LST_DT_BYTE;
  data.dtype_size = 1;
  for (int s = 0; s < 5; ++s) {
    b[0].p2p(kWorld, LST_OP_RECV, 1, s).p2p(kWorld, LST_OP_RECV, 2, s);
    for (int i = 1; i < 3; ++i) b[i].p2p(kWorld, LST_OP_SEND, 0, s);
    for (auto& x : b) x.call(kWorld, size).call(kWorld, data);
  }
  b[0].p2p(kWorld, LST_OP_RECV, 1, 5, LST_STATE_ENTERED);
  b[2].p2p(kWorld, LST_OP_SEND, 0, 5);
  Call stuck = size;
  stuck.state = LST_STATE_ENTERED;
  b[2].call(kWorld, stuck);
  b[1].marker(LST_MARK_MPI_FINALIZE, LST_STATE_ENTERED);
  Result r = run(b, {EndState::kKilled, EndState::kFinalizing, EndState::kKilled});
  EXPECT_EQ(find(r, Kind::kPeerMismatch), nullptr) << dump(r);  // rank 1 did send to rank 0 before
  const Finding* f = find(r, Kind::kMissingCollective);
  ASSERT_NE(f, nullptr) << dump(r);
  EXPECT_EQ(f->culprits, V{1}) << dump(r);
  EXPECT_EQ(f->seq, 10);
  bool said = false;
  for (auto& n : f->notes)
    said |= n.find("went on to MPI_Finalize while the other waits for it") != std::string::npos;
  EXPECT_TRUE(said) << dump(r);
  for (auto& g : r.findings) EXPECT_EQ(g.culprits, V{1}) << kind_name(g.kind) << "\n" << dump(r);
}

}  // namespace
}  // namespace lockstep::check::test
