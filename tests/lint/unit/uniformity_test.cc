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

// A function that reads one field of what a parameter points to depends on that field, not on the
// whole struct; reading more fields than a taint keeps apart depends on the whole parameter.
TEST(Uniformity, SummaryDependsOnTheFieldsRead) {
  auto a = analyze(R"(
    struct Config { int rank; int steps; int count; };
    int count_of(const Config* c) { return c->count; }
    int steps_of(const Config& c) { return c.steps; }
    int sum_of(const Config* c) { return c->rank + c->steps + c->count; }
    void set_rank(Config* c, int r) { c->rank = r; }
    void read_only(Config* c, int* out) { *out = c->steps; }
    void caller(Config* c, int* out) {
      *out = count_of(c) + steps_of(*c) + sum_of(c);
      set_rank(c, 1);
      read_only(c, out);
    }
  )");
  const Taint& count = a.fn("count_of").summary.result;
  ASSERT_EQ(count.nfields, 1u);
  EXPECT_EQ(count.fields[0].field->getName(), "count");
  EXPECT_TRUE(count.fields[0].mem);
  EXPECT_EQ(count.param_mem, 0u);
  const Taint& steps = a.fn("steps_of").summary.result;
  ASSERT_EQ(steps.nfields, 1u);
  EXPECT_FALSE(steps.fields[0].mem);  // a field of the parameter itself (a reference)
  const Taint& sum = a.fn("sum_of").summary.result;
  EXPECT_EQ(sum.param_mem, 1u);  // three fields: folded into the whole parameter
  EXPECT_EQ(sum.nfields, 0u);
  EXPECT_FALSE(a.fn("set_rank").summary.kept_mem[0]);
  EXPECT_TRUE(a.fn("read_only").summary.kept_mem[0]);
}

// A caller's struct whose rank field is rank-local and whose other fields are constants: only the
// call that reads the rank field is reported.
TEST(Uniformity, CallerFieldsAreToldApart) {
  auto a = analyze(R"(
    struct Config { int rank; int count; };
    void bcast_count(const Config* c, float* x) { MPI_Bcast(x, c->count, MPI_FLOAT, 0, MPI_COMM_WORLD); }
    void bcast_rank(const Config* c, float* x) { MPI_Bcast(x, c->rank, MPI_FLOAT, 0, MPI_COMM_WORLD); }
    void f(float* x) {
      Config c = {0, 4};
      MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
      bcast_count(&c, x);
      bcast_rank(&c, x);  // reported
    }
  )");
  unsigned line = line_of(a, "// reported");
  EXPECT_EQ(a.lines(), std::vector<std::string>{std::to_string(line) + ":rank-dependent-argument"});
}

// written_under survives only while every rank-local part of a value comes from the same branch.
TEST(Uniformity, WrittenUnderNamesOneBranch) {
  int x = 0, y = 0;
  Taint on_x;
  on_x.local = true;
  on_x.written_under = &x;
  Taint on_y = on_x;
  on_y.written_under = &y;
  Taint uniform;
  EXPECT_EQ(joined(uniform, on_x).written_under, &x);
  EXPECT_EQ(joined(on_x, on_x).written_under, &x);
  EXPECT_EQ(joined(on_x, on_y).written_under, nullptr);
  Taint data;
  data.local = true;
  EXPECT_EQ(joined(on_x, data).written_under, nullptr);
  // A communicator made everywhere joined with one made on a branch has that branch's members.
  Taint everywhere, on_branch;
  everywhere.member_comm = on_branch.member_comm = true;
  on_branch.members_under = &x;
  EXPECT_EQ(joined(everywhere, on_branch).members_under, &x);
  Taint other = on_branch;
  other.members_under = &y;
  EXPECT_EQ(joined(on_branch, other).members_under, kSeveralBranches);
}

}  // namespace
}  // namespace lockstep::lint
