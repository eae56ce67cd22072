// The uniformity evaluator and the per-function analysis on code strings: what is uniform, what is
// rank-local, what depends on a parameter, and the findings that follow.
#include "lint/uniformity.h"

#include <clang/AST/Expr.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace lockstep::lint {
namespace {

using namespace clang;
using testing::analyze;
using testing::line_of;

TEST(Uniformity, SummaryResultTracksParametersAndRank) {
  auto a = analyze(R"(
    int plus_one(int a, int b) { return a + 1; }
    int my_rank() { int r = 0; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }
    int world() { int n = 0; MPI_Comm_size(MPI_COMM_WORLD, &n); return n * 2; }
    int constant() { int v[3] = {1, 2, 3}; return v[1]; }
  )");
  const Summary& p = a.fn("plus_one").summary;
  EXPECT_FALSE(p.result.local);
  EXPECT_EQ(p.result.params, 1u);  // the first parameter only
  EXPECT_TRUE(a.fn("my_rank").summary.result.local);
  EXPECT_FALSE(a.fn("world").summary.result.any());
  EXPECT_FALSE(a.fn("constant").summary.result.any());
}

TEST(Uniformity, CollectiveResultIsUniform) {
  auto a = analyze(R"(
    int agreed() {
      int r = 0, v = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &r);
      MPI_Allreduce(&r, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      return v;
    }
  )");
  EXPECT_FALSE(a.fn("agreed").summary.result.any());
}

// The evaluator takes the block's controlling condition explicitly: the same assignment is rank-local
// under a rank-local control and uniform otherwise.
TEST(Uniformity, WritesUnderRankLocalControlAreRankLocal) {
  auto a = analyze("void f() { int y = 0; y = 1; }");
  const FunctionInfo& fi = a.fn("f");
  const BinaryOperator* assign = nullptr;
  const VarDecl* y = nullptr;
  for (const CFGBlock* b : *fi.cfg)
    for (const CFGElement& el : *b)
      if (auto cs = el.getAs<CFGStmt>()) {
        if (const auto* bo = dyn_cast<BinaryOperator>(cs->getStmt()); bo && bo->isAssignmentOp()) {
          assign = bo;
          y = cast<VarDecl>(cast<DeclRefExpr>(bo->getLHS())->getDecl());
        }
      }
  ASSERT_TRUE(assign && y);
  Evaluator eval(*a.tu);
  FunctionInfo& mut = const_cast<FunctionInfo&>(fi);

  State uniform_state;
  BlockContext uniform{&mut, &uniform_state, Taint{}};
  eval.transfer(assign, uniform);
  EXPECT_FALSE(eval.var_val(y, uniform_state).any());

  State local_state;
  BlockContext local{&mut, &local_state, a.tu->local_at(assign->getBeginLoc(), "test condition")};
  eval.transfer(assign, local);
  EXPECT_TRUE(eval.var_val(y, local_state).local);
  EXPECT_EQ(a.tu->origins[eval.var_val(y, local_state).origin].what, "test condition");
}

TEST(Uniformity, RecordsCollectivesOnlyWhenAsked) {
  auto a = analyze("void f() { MPI_Barrier(MPI_COMM_WORLD); }");
  const FunctionInfo& fi = a.fn("f");
  const Stmt* call = nullptr;
  for (const CFGBlock* b : *fi.cfg)
    for (const CFGElement& el : *b)
      if (auto cs = el.getAs<CFGStmt>(); cs && isa<CallExpr>(cs->getStmt())) call = cs->getStmt();
  ASSERT_TRUE(call);
  Evaluator eval(*a.tu);
  State s;
  std::vector<Event> events;
  BlockContext quiet{const_cast<FunctionInfo*>(&fi), &s, Taint{}};
  eval.transfer(call, quiet);
  BlockContext recording{const_cast<FunctionInfo*>(&fi), &s, Taint{}, &events};
  eval.transfer(call, recording);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].collective, "MPI_Barrier");
}

TEST(Uniformity, RankGuardedCollectiveIsReported) {
  auto a = analyze(R"(
    void f() {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) MPI_Barrier(MPI_COMM_WORLD);
    }
  )");
  unsigned line = line_of(a, "MPI_Barrier(MPI_COMM_WORLD);");
  EXPECT_EQ(a.lines(), std::vector<std::string>{std::to_string(line) + ":conditional-collective"});
}

TEST(Uniformity, CalleeSummaryCarriesTheCollective) {
  auto a = analyze(R"(
    void save() { MPI_Barrier(MPI_COMM_WORLD); }
    void f() {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) save();
      save();
    }
  )");
  ASSERT_EQ(a.fn("save").summary.events.size(), 1u);
  unsigned line = line_of(a, "if (rank == 0) save();");
  EXPECT_EQ(a.lines(), std::vector<std::string>{std::to_string(line) + ":conditional-collective"});
}

TEST(Uniformity, RankDependentRoot) {
  auto a = analyze(R"(
    void f(float* buf) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Bcast(buf, 4, MPI_FLOAT, rank % 2, MPI_COMM_WORLD);
      MPI_Bcast(buf, 4, MPI_FLOAT, 0, MPI_COMM_WORLD);
    }
  )");
  unsigned line = line_of(a, "rank % 2");
  EXPECT_EQ(a.lines(), std::vector<std::string>{std::to_string(line) + ":rank-dependent-argument"});
}

}  // namespace
}  // namespace lockstep::lint
