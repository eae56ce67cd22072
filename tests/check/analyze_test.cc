// Analysis on in-memory models: every finding kind, blame by majority, ties, skip and continue,
// MPI semantics (v-variants, derived types), hangs and the wait-for graph.
#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>

#include "builder.h"
#include "lockstep/check/check.h"
#include "lockstep/report/report.h"

namespace lockstep::check::test {
namespace {

using V = std::vector<int32_t>;

// The one finding that says what went wrong; a job that hung also ends with its `hang` finding, which
// is checked apart (hung()).
const Finding& only(const Result& r) {
  std::vector<const Finding*> v;
  for (auto& f : r.findings)
    if (f.kind != Kind::kHang) v.push_back(&f);
  EXPECT_EQ(v.size(), 1u);
  if (v.size() != 1)
    for (auto* f : v) ADD_FAILURE() << kind_name(f->kind) << " #" << f->seq << ": " << f->explanation;
  static const Finding none;
  if (v.empty()) return none;
  return *v.front();
}

// The job's `hang` finding, last; nullptr when the job did not hang.
const Finding* hung(const Result& r) {
  return !r.findings.empty() && r.findings.back().kind == Kind::kHang ? &r.findings.back() : nullptr;
}

TEST(Analyze, IdenticalRanksAreInLockstep) {
  auto b = ranks(4);
  for (auto& r : b)
    r.calls(kWorld, allreduce(), 50)
        .call(kWorld, Call{.op = LST_OP_BARRIER, .count = 0, .dtype = 0})
        .finalize();
  Result r = run(b);
  EXPECT_TRUE(r.in_lockstep());
  EXPECT_EQ(r.summary.collectives, 51u);
  EXPECT_EQ(r.summary.ranks, 4);
  EXPECT_FALSE(r.hung);
}

// The check.stream.* copies of these tests build their ranks through the streaming ingest: make sure
// they do, and that a streamed rank holds no per-call vectors until an analysis asks for them.
TEST(Analyze, RanksAreBuiltByTheIngestTheTestRunAsks) {
  const char* mode = std::getenv("LOCKSTEP_TEST_INGEST");
  const bool stream = mode && std::string(mode) == "stream";
  RankBuilder b(0, 1);
  b.calls(kWorld, allreduce(), 10).finalize();
  Rank r = b.build(EndState::kExited);
  ASSERT_EQ(r.seqs.size(), 1u);
  EXPECT_EQ(r.streamed, stream);
  EXPECT_EQ(r.seqs[0].size(), 10u);
  EXPECT_EQ(r.seqs[0].sig.size(), stream ? 0u : 10u);
  r.materialize();
  EXPECT_EQ(r.seqs[0].sig.size(), 10u);
  EXPECT_EQ(r.seqs[0].ref.size(), 10u);
}

TEST(Analyze, MissingCollectiveBlamesTheMinorityNotRankZero) {
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    b[i].calls(kWorld, allreduce(), 5);
    if (i != 0)
      b[i].call(kWorld, Call{.op = LST_OP_BARRIER, .count = 0, .dtype = 0, .state = LST_STATE_ENTERED});
    if (i == 0) b[i].finalize();
  }
  Result r = run(b, {EndState::kExited, EndState::kKilled, EndState::kKilled, EndState::kKilled});
  ASSERT_EQ(r.findings.size(), 2u);
  ASSERT_NE(hung(r), nullptr);
  EXPECT_EQ(hung(r)->culprits, V{0});
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.seq, 5);
  EXPECT_EQ(f.culprits, V{0});
  EXPECT_TRUE(r.hung);
  EXPECT_EQ(r.look_here, V{0});
}

TEST(Analyze, SkipAndContinueIsOneFindingWithMispairedNote) {
  // Each step: grad allreduce (site A) then metric allreduce (site B), equal sizes. Rank 2 skips
  // the grad allreduce of step 4 and makes it up with an extra call (site C) at the end.
  const int steps = 10;
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    for (int s = 0; s < steps; ++s) {
      if (!(i == 2 && s == 4)) b[i].call(kWorld, allreduce(256, 0xA00));
      b[i].call(kWorld, allreduce(256, 0xB00));
    }
    if (i == 2) b[i].call(kWorld, allreduce(256, 0xC00));
    b[i].finalize();
  }
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.seq, 8);
  EXPECT_EQ(f.culprits, V{2});
  EXPECT_EQ(f.mispaired, 2 * steps - 8);
  EXPECT_TRUE(f.silently_wrong);
  bool said = false;
  for (auto& n : f.notes) said |= n.find("silently wrong") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Analyze, SkipWithoutMakingUpLeavesOthersBlockedAndStillOneFinding) {
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    for (int s = 0; s < 6; ++s) {
      if (!(i == 1 && s == 2)) b[i].call(kWorld, allreduce(256, 0xA00));
      Call m = allreduce(256, 0xB00);
      if (i != 1 && s == 5) m.state = LST_STATE_ENTERED;  // the others wait for a partner that never comes
      b[i].call(kWorld, m);
    }
    if (i == 1) b[i].finalize();
  }
  Result r = run(b, {EndState::kKilled, EndState::kExited, EndState::kKilled, EndState::kKilled});
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.seq, 4);
  EXPECT_EQ(f.culprits, V{1});
  EXPECT_EQ(f.mispaired, 11 - 4);
  EXPECT_TRUE(r.hung);
}

struct MismatchCase {
  const char* name;
  Call odd;
  Kind kind;
  Severity severity;
  // Keeps ctest's discovered test names short (gtest would print the struct's bytes).
  friend void PrintTo(const MismatchCase& c, std::ostream* os) { *os << c.name; }
};

class Mismatch : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(Mismatch, OneRankDiffersAtOnePosition) {
  const MismatchCase& c = GetParam();
  Call normal = allreduce();
  if (c.odd.op == LST_OP_BCAST) normal = Call{.op = LST_OP_BCAST, .redop = 0, .root = 0};
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    b[i].calls(kWorld, normal, 3);
    b[i].call(kWorld, i == 3 ? c.odd : normal);
    b[i].calls(kWorld, normal, 3).finalize();
  }
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, c.kind) << kind_name(f.kind);
  EXPECT_EQ(f.severity, c.severity);
  EXPECT_EQ(f.seq, 3);
  EXPECT_EQ(f.culprits, V{3});
  EXPECT_EQ(f.detail.size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, Mismatch,
    ::testing::Values(MismatchCase{"op", Call{.op = LST_OP_REDUCE, .root = 0, .caller = 0x2000},
                                   Kind::kOpMismatch, Severity::kError},
                      MismatchCase{"count", allreduce(512), Kind::kCountMismatch, Severity::kError},
                      MismatchCase{"dtype_same_bytes", Call{.dtype = LST_DT_INT32}, Kind::kDtypeMismatch,
                                   Severity::kWarning},
                      MismatchCase{"dtype_other_bytes", Call{.dtype = LST_DT_FLOAT64, .dtype_size = 8},
                                   Kind::kDtypeMismatch, Severity::kError},
                      MismatchCase{"redop", Call{.redop = LST_RED_MAX}, Kind::kRedopMismatch,
                                   Severity::kError},
                      MismatchCase{"root", Call{.op = LST_OP_BCAST, .redop = 0, .root = 1},
                                   Kind::kRootMismatch, Severity::kError}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(Analyze, NameMismatchOnRuntimeRecords) {
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    b[i].call(kWorld, Call{.api = LST_API_RT, .name = "grad/a"});
    b[i].call(kWorld, Call{.api = LST_API_RT, .name = i == 1 ? "grad/c" : "grad/b"});
    b[i].finalize();
  }
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kNameMismatch);
  EXPECT_EQ(f.seq, 1);
  EXPECT_EQ(f.culprits, V{1});
  EXPECT_EQ(f.tensor, "grad/b");
}

const RankDetail* detail_of(const Finding& f, int32_t rank) {
  for (auto& d : f.detail)
    if (d.rank == rank) return &d;
  return nullptr;
}

TEST(Analyze, EachRankEntryCarriesItsLastAnnotation) {
  auto b = ranks(3);
  for (int i = 0; i < 3; ++i) {
    b[i].annotate("step 0").call(kWorld, Call{.api = LST_API_RT, .name = "grad/a"});
    // Rank 2 is one step behind in its own annotations: each rank's context is its own.
    b[i].annotate(i == 2 ? "step 0b" : "step 1");
    b[i].call(kWorld, Call{.api = LST_API_RT, .name = i == 1 ? "grad/c" : "grad/b"});
    b[i].annotate("step 2").finalize();
  }
  Result res = run(b);
  const Finding& f = only(res);
  ASSERT_EQ(f.kind, Kind::kNameMismatch);
  ASSERT_NE(detail_of(f, 0), nullptr);
  EXPECT_EQ(detail_of(f, 0)->context, "step 1");
  EXPECT_EQ(detail_of(f, 1)->context, "step 1");
  EXPECT_EQ(detail_of(f, 2)->context, "step 0b");
}

TEST(Analyze, AbsentRankContextIsItsLastAnnotationNotTheRuntimeAbortNote) {
  auto b = ranks(3);
  for (int i = 0; i < 3; ++i) {
    b[i].annotate("step 0").calls(kWorld, allreduce(), 2).annotate("step 1");
    if (i != 1) b[i].calls(kWorld, allreduce(), 2).finalize();
  }
  // What the runtime leaves in the trace of a rank its stall inspector stopped: the abort note and the
  // exit hook's end marker, no MPI_Finalize.
  b[1].annotate(LOCKSTEP_RT_ABORT_PREFIX "stalled for 8 s (LOCKSTEP_RT_STALL_ABORT)").process_end();
  Result res = run(b);
  const Finding& f = only(res);
  ASSERT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.culprits, V{1});
  const RankDetail* d = detail_of(f, 1);
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->present);
  EXPECT_EQ(d->context, "step 1");
  EXPECT_EQ(d->note, "it was stopped by the runtime: stalled for 8 s (LOCKSTEP_RT_STALL_ABORT)");
  EXPECT_NE(f.explanation.find("stopped by the runtime"), std::string::npos) << f.explanation;
}

TEST(Analyze, ExitWordingSaysOnlyWhatTheTraceShows) {
  // rank 1 leaves early; how it left varies.
  auto ending_of = [](auto&& finish) {
    auto b = ranks(3);
    for (int i = 0; i < 3; ++i) {
      b[i].calls(kWorld, allreduce(), 2);
      if (i != 1) b[i].calls(kWorld, allreduce(), 2).finalize();
    }
    finish(b[1]);
    Result r = run(b);
    const RankDetail* d = r.findings.empty() ? nullptr : detail_of(r.findings.front(), 1);
    return d ? d->note : std::string("(no finding)");
  };
  EXPECT_EQ(ending_of([](RankBuilder& r) { r.finalize().process_end(); }), "it exited after MPI_Finalize");
  EXPECT_EQ(ending_of([](RankBuilder& r) { r.finalize().process_end(0); }),
            "it exited normally (MPI_Finalize)");
  EXPECT_EQ(ending_of([](RankBuilder& r) { r.process_end(); }), "it exited without calling MPI_Finalize");
  EXPECT_EQ(ending_of([](RankBuilder& r) { r.finalize().process_end(3); }), "it exited with status 3");
}

TEST(Analyze, VVariantCountsMayDiffer) {
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i)
    b[i].call(kWorld,
              Call{.op = LST_OP_ALLGATHERV, .count = uint64_t(10 + i), .redop = 0, .flags = LST_F_VCOUNTS})
        .call(kWorld, Call{.op = LST_OP_GATHERV, .count = uint64_t(1 + i), .redop = 0, .root = 0})
        .finalize();
  EXPECT_TRUE(run(b).in_lockstep());
}

TEST(Analyze, DerivedTypesCompareBytesOnly) {
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    // Same bytes through different derived types: fine. Different bytes: a count mismatch.
    Call c{.op = LST_OP_BCAST,
           .count = i == 0 ? 2u : 1u,
           .dtype = LST_DT_DERIVED,
           .dtype_size = i == 0 ? 8u : 16u,
           .redop = 0,
           .root = 0,
           .flags = LST_F_DERIVED};
    b[i].call(kWorld, c);
    Call d = c;
    d.count = i == 2 ? 3 : 1;
    d.dtype_size = 16;
    b[i].call(kWorld, d).finalize();
  }
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kCountMismatch);
  EXPECT_EQ(f.seq, 1);
  EXPECT_EQ(f.culprits, V{2});
}

TEST(Analyze, TieBetweenTwoRanksBlamesNobodyAndShowsBoth) {
  auto b = ranks(2);
  b[0].call(kWorld, allreduce(100)).finalize();
  b[1].call(kWorld, allreduce(200)).finalize();
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kCountMismatch);
  EXPECT_TRUE(f.tie);
  EXPECT_TRUE(f.culprits.empty());
  EXPECT_EQ(f.ranks, (V{0, 1}));
  ASSERT_EQ(f.detail.size(), 2u);
  EXPECT_NE(f.detail[0].count, f.detail[1].count);
}

TEST(Analyze, SameCallFromAnotherLineIsNotAFinding) {
  // if (rank == 0) MPI_Bcast(...) else MPI_Bcast(...): two call sites, one collective.
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    Call c{.op = LST_OP_BCAST, .redop = 0, .root = 0, .caller = i == 0 ? 0x100u : 0x200u};
    b[i].calls(kWorld, c, 20).finalize();
  }
  EXPECT_TRUE(run(b).in_lockstep());
}

TEST(Analyze, MembershipMismatch) {
  const uint64_t sub = 0x2222;
  std::vector<RankBuilder> b;
  for (int i = 0; i < 4; ++i) {
    b.emplace_back(i, 4);
    b[i].comm(sub, i == 3 ? V{0, 1, 3} : V{0, 1, 2, 3}, "sub").finalize();
  }
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kMembershipMismatch);
  EXPECT_EQ(f.culprits, V{3});
  EXPECT_EQ(f.comm.name, "sub");
}

// An intercommunicator between ranks {0,1} and {2,3}: each side records its own group (MPI_Comm_group
// gives the local one), and its rooted calls differ by side by design: rank 0 broadcasts with MPI_ROOT,
// rank 1 passes MPI_PROC_NULL, the other side names rank 0 of the root's group.
TEST(Analyze, IntercommunicatorSidesAreNotAMismatch) {
  const uint64_t inter = 0x3333;
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    b[size_t(i)].comm(inter, i < 2 ? V{0, 1} : V{2, 3}, "inter");
    Call bc{.op = LST_OP_BCAST, .redop = 0, .root = i == 0 ? LST_ROOT : i == 1 ? LST_PROC_NULL : 0};
    b[size_t(i)].calls(inter, bc, 3).finalize();
  }
  Result r = run(b);
  EXPECT_TRUE(r.in_lockstep()) << dump(r);
  bool said = false;
  for (auto& w : r.warnings) said |= w.find("1 intercommunicator not compared: inter") != std::string::npos;
  EXPECT_TRUE(said);
}

// Two disjoint lists under one id are an intercommunicator's groups only for MPI: a runtime process set
// announced so is two sets given one id, a mismatch.
TEST(Analyze, DisjointMembersOfARuntimeProcessSetAreAMismatch) {
  const uint64_t set = 0x4444;
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i)
    b[size_t(i)]
        .comm(set, i < 2 ? V{0, 1} : V{2, 3}, "rt.process_set.4", LST_COMM_RT_PROCESS_SET, LST_API_RT)
        .finalize();
  Result r = run(b);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().kind, Kind::kMembershipMismatch) << dump(r);
}

TEST(Analyze, DeadlockCycleAcrossTwoCommunicators) {
  const uint64_t ca = 0xA, cb = 0xB;
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) b[i].comm(ca, V{0, 1}, "A").comm(cb, V{0, 1}, "B");
  Call blocked = allreduce();
  blocked.state = LST_STATE_ENTERED;
  b[0].call(ca, blocked);  // rank 0 uses A then B
  b[1].call(cb, blocked);  // rank 1 uses B then A
  b[2].finalize();
  b[3].finalize();
  Result r = run(b, {EndState::kKilled, EndState::kKilled, EndState::kExited, EndState::kExited});
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kDeadlockCycle);
  EXPECT_EQ(f.culprits, (V{0, 1}));
  EXPECT_EQ(f.seq, 0);
  EXPECT_EQ(f.comm.name, "A");
  EXPECT_EQ(f.edges.size(), 2u);
  EXPECT_TRUE(r.hung);
}

// Twelve ranks each receiving from the one before: the cycle's verdict names the receive without a
// position (a message has none, never "#-1" or "at creation"), and its explanation shows the first hops
// and the last with the rest counted, while every edge stays in the finding.
TEST(Analyze, AReceiveCycleThroughTheWholeJobReadsShortAndWithoutMinusOne) {
  constexpr int kRanks = 12;
  auto b = ranks(kRanks);
  for (int i = 0; i < kRanks; ++i) {
    b[size_t(i)].calls(kWorld, allreduce(), 3);
    b[size_t(i)].p2p(kWorld, LST_OP_RECV, (i + kRanks - 1) % kRanks, 0, LST_STATE_ENTERED);
  }
  Result r = run(b, std::vector<EndState>(kRanks, EndState::kKilled));
  const Finding* cyc = find(r, Kind::kDeadlockCycle);
  ASSERT_NE(cyc, nullptr) << dump(r);
  EXPECT_EQ(cyc->edges.size(), size_t(kRanks));
  EXPECT_NE(cyc->explanation.find("rank 0 waits in MPI_Recv on MPI_COMM_WORLD for rank 11; rank 11 waits"),
            std::string::npos)
      << cyc->explanation;
  EXPECT_NE(
      cyc->explanation.find("; ... 6 more ranks, each waiting for the next in the cycle; rank 2 waits in "
                            "MPI_Recv on MPI_COMM_WORLD for rank 1; rank 1 waits in MPI_Recv on "
                            "MPI_COMM_WORLD for rank 0: a wait-for cycle"),
      std::string::npos)
      << cyc->explanation;
  const std::string text = report::text(r, report::Context{"traces", "test"});
  EXPECT_EQ(text.find("#-1"), std::string::npos) << text;
  EXPECT_EQ(text.find("at creation"), std::string::npos) << text;
  EXPECT_NE(text.find("[error] deadlock_cycle: MPI_Recv on MPI_COMM_WORLD (size 12)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("wait for each other (MPI_Recv on MPI_COMM_WORLD)"), std::string::npos) << text;
}

TEST(Analyze, UnfinishedBlamesTheRankThatNeverWaited) {
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    b[i].call(kWorld, allreduce());
    Call nb = allreduce();
    nb.flags = LST_F_NONBLOCKING;
    nb.state = i == 0 || i == 2 ? LST_STATE_COMPLETED : LST_STATE_RETURNED;
    b[i].call(kWorld, nb);
    if (i == 1) b[i].wait_entered(b[i].last_id());
  }
  Result r = run(b, {EndState::kKilled, EndState::kKilled, EndState::kKilled, EndState::kKilled});
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kUnfinished);
  EXPECT_EQ(f.seq, 1);
  EXPECT_EQ(f.culprits, V{3});
  ASSERT_EQ(r.states.size(), 4u);
  EXPECT_TRUE(r.states[1].blocked);
  EXPECT_FALSE(r.states[3].blocked);
}

TEST(Analyze, CrashInsideACollectiveIsUnfinished) {
  auto b = ranks(4);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  for (int i = 0; i < 4; ++i) b[i].call(kWorld, allreduce()).call(kWorld, in);
  b[2].marker(LST_MARK_SIGNAL, LST_STATE_RETURNED, 11);
  Result r = run(b, {EndState::kKilled, EndState::kKilled, EndState::kCrashed, EndState::kKilled});
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kUnfinished);
  EXPECT_EQ(f.culprits, V{2});
}

TEST(Analyze, PeerMismatchBlamesTheReceiverThatNamedTheWrongPeer) {
  auto b = ranks(4);
  // rank 0 sends to 1; rank 1 waits for a message from 2, which sends nothing.
  b[0].call(kWorld, Call{.op = LST_OP_SEND, .redop = 0, .root = 1});
  b[1].call(kWorld, Call{.op = LST_OP_RECV, .redop = 0, .root = 2, .state = LST_STATE_ENTERED});
  b[2].finalize();
  b[3].finalize();
  Result r = run(b, {EndState::kExited, EndState::kKilled, EndState::kExited, EndState::kExited});
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kPeerMismatch);
  EXPECT_EQ(f.culprits, V{1});
}

// A trace cut by a full disk (its tracer dropped records) ends early: messages the other ranks made
// after it ended are left out of the pairing, as their collectives are, and counted in the warning.
TEST(Analyze, MessagesAfterACutTraceEndsAreNotPaired) {
  for (bool cut : {false, true}) {
    auto b = ranks(3);
    for (int i = 0; i < 3; ++i) b[i].calls(kWorld, allreduce(), 2);
    // After rank 0's trace ends: rank 2 waits for a message from rank 0, and rank 1 sends one to rank 2.
    b[1].p2p(kWorld, LST_OP_SEND, 2, 7);
    b[2].p2p(kWorld, LST_OP_RECV, 0, 7);
    std::vector<Rank> rs;
    for (auto& x : b) rs.push_back(x.build(EndState::kExited));
    rs[0].dropped = cut ? 5 : 0;
    Job job = make_job(std::move(rs));
    Result r = analyze(job);
    if (!cut) {  // the same traces uncut: rank 2 named the wrong peer
      const Finding& f = only(r);
      EXPECT_EQ(f.kind, Kind::kPeerMismatch);
      EXPECT_EQ(f.culprits, V{2});
      continue;
    }
    EXPECT_TRUE(r.findings.empty()) << r.findings.front().explanation;
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_NE(r.warnings[0].find("2 later call(s) of other ranks could not be checked"), std::string::npos)
        << r.warnings[0];
  }
}

TEST(Analyze, RankBehindInAHangIsNotMissing) {
  auto b = ranks(3);
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  b[0].calls(kWorld, allreduce(), 4).call(kWorld, in);
  b[1].calls(kWorld, allreduce(), 4).call(kWorld, in);
  b[2].calls(kWorld, allreduce(), 4);  // still computing when the job was stopped
  Result r = run(b, {EndState::kKilled, EndState::kKilled, EndState::kKilled});
  EXPECT_TRUE(r.findings.empty()) << r.findings.front().explanation;
  EXPECT_TRUE(r.hung);
  EXPECT_EQ(r.look_here, V{2});
  EXPECT_EQ(r.states[0].waits_for, V{2});
}

TEST(Analyze, ExtraCollectiveOnOneRank) {
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    b[i].calls(kWorld, allreduce(), 3);
    if (i == 1) b[i].call(kWorld, Call{.op = LST_OP_BARRIER, .count = 0, .dtype = 0, .caller = 0x3000});
    b[i].calls(kWorld, allreduce(), 3).finalize();
  }
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.seq, 3);
  EXPECT_EQ(f.culprits, V{1});
}

TEST(Analyze, ControlPlaneFindingsComeAfterDataFindings) {
  const uint64_t ctl = 0x3333;
  auto b = ranks(4);
  for (int i = 0; i < 4; ++i) {
    b[i].comm(ctl, V{0, 1, 2, 3}, "control");
    Call c = allreduce(i == 0 ? 2 : 1);
    c.flags = LST_F_CONTROL;
    b[i].call(ctl, c);
    b[i].call(kWorld, allreduce(i == 3 ? 9 : 8)).finalize();
  }
  Result r = run(b);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_FALSE(r.findings[0].control);
  EXPECT_EQ(r.findings[0].culprits, V{3});
  EXPECT_TRUE(r.findings[1].control);
  EXPECT_EQ(r.findings[1].culprits, V{0});
}

TEST(Analyze, RingModeComparesTheCommonWindowAndNumbersFromIt) {
  auto b = ranks(3);
  const uint32_t kept_from[3] = {10, 5, 0};
  for (int i = 0; i < 3; ++i) {
    b[i].lost(kWorld, kept_from[i]);
    for (uint32_t s = kept_from[i]; s < 30; ++s) b[i].call(kWorld, allreduce(i == 2 && s == 20 ? 512 : 256));
    b[i].finalize();
  }
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.kind, Kind::kCountMismatch);
  EXPECT_EQ(f.seq, 20);
  EXPECT_EQ(f.culprits, V{2});
  // The explanation names the position the seq field and the tracer name, not the window's own count.
  EXPECT_NE(f.explanation.find("#20 on"), std::string::npos) << f.explanation;
  EXPECT_EQ(f.explanation.find("#10 on"), std::string::npos) << f.explanation;
  // What the verdict did not cover is said: rank 0's ring kept MPI_COMM_WORLD's calls from #10 only.
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("the calls before #10 on MPI_COMM_WORLD were overwritten"), std::string::npos)
      << r.warnings[0];
}

TEST(Analyze, RingModeThatLostNothingWarnsOfNothing) {
  auto b = ranks(2);
  for (int i = 0; i < 2; ++i) {
    b[i].lost(kWorld, 0);
    b[i].calls(kWorld, allreduce(), 5).finalize();
  }
  Result r = run(b);
  EXPECT_TRUE(r.in_lockstep());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
}

// A runtime process set whose creation record a ring overwrote is named as one, not as MPI_COMM_NULL
// (the global process set's id is 0, as MPI_COMM_NULL's).
TEST(Analyze, RingModeNamesAProcessSetWhoseCreationWasOverwritten) {
  auto b = ranks(2);
  for (int i = 0; i < 2; ++i) {
    b[i].lost(0, 7);
    for (int s = 0; s < 4; ++s) {
      Call c = allreduce(i == 1 && s == 2 ? 512 : 256);
      c.api = LST_API_RT;
      c.name = "grad/" + std::to_string(s);
      b[i].call(0, c);
    }
    b[i].finalize();
  }
  Result r = run(b);
  const Finding& f = only(r);
  EXPECT_EQ(f.comm.name, "process set 0");
  EXPECT_EQ(f.seq, 9);
  EXPECT_NE(f.explanation.find("#9 on process set 0"), std::string::npos) << f.explanation;
}

TEST(Analyze, RingModeExplanationsOfASkippedCallUseTheTracersNumbers) {
  auto b = ranks(3);
  const uint32_t kept_from[3] = {40, 35, 30};
  for (int i = 0; i < 3; ++i) {
    b[i].lost(kWorld, kept_from[i]);
    for (uint32_t s = kept_from[i]; s < 60; ++s) {
      if (i == 1 && s == 50) continue;  // rank 1 skips one and goes on
      b[i].call(kWorld, allreduce(256 + s));
    }
    b[i].finalize();
  }
  Result r = run(b);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, Kind::kMissingCollective);
  EXPECT_EQ(f.seq, 50);
  EXPECT_EQ(f.culprits, V{1});
  EXPECT_NE(f.explanation.find("#50 on"), std::string::npos) << f.explanation;
  for (auto& n : f.notes) EXPECT_EQ(n.find("#10"), std::string::npos) << n;
}

TEST(Analyze, RingModeHangNamesTheTracersNumber) {
  auto b = ranks(2);
  for (int i = 0; i < 2; ++i) {
    b[i].lost(kWorld, 100);
    for (uint32_t s = 100; s < 110; ++s) b[i].call(kWorld, allreduce());
  }
  Call in = allreduce();
  in.state = LST_STATE_ENTERED;
  b[0].call(kWorld, in);
  b[1].finalize();
  Result r = run(b, {EndState::kKilled, EndState::kExited});
  ASSERT_FALSE(r.findings.empty());
  std::string all;
  for (auto& f : r.findings) all += f.explanation + "\n";
  EXPECT_NE(all.find("#110"), std::string::npos) << all;
  EXPECT_EQ(all.find("#10 "), std::string::npos) << all;
}

TEST(Analyze, MissingProcessIsReported) {
  std::vector<Rank> rs;
  for (int i = 0; i < 4; ++i)
    if (i != 2) {
      RankBuilder b(i, 4);
      b.call(kWorld, allreduce()).finalize();
      rs.push_back(b.build(EndState::kExited));
    }
  Job job = make_job(std::move(rs));
  Result r = analyze(job);
  EXPECT_EQ(r.missing_processes, V{2});
  EXPECT_FALSE(r.in_lockstep());
}

}  // namespace
}  // namespace lockstep::check::test
