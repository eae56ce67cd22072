// Control dependence over CFGs of functions parsed from code strings: agreement with Clang's
// ControlDependencyCalculator when no edge is left out, and the effect of leaving out the exit side of
// uniform error checks.
#include "lint/control_dependence.h"

#include <clang/Analysis/Analyses/Dominators.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "test_util.h"

namespace lockstep::lint {
namespace {

using namespace clang;
using testing::analyze;
using testing::block_calling;

std::set<unsigned> ids(const std::vector<const CFGBlock*>& blocks) {
  std::set<unsigned> out;
  for (const CFGBlock* b : blocks) out.insert(b->getBlockID());
  return out;
}

// Every block of every function: the branches it depends on, transitively, equal Clang's (the iterated
// post-dominance frontier).
void expect_same_as_clang(const std::string& code) {
  auto a = analyze(code, {}, /*mpi=*/false);
  ASSERT_FALSE(a.tu->infos.empty());
  for (auto& [decl, info] : a.tu->infos) {
    const CFG& cfg = *info.cfg;
    auto rpo = reverse_post_order(cfg);
    ControlDependence cd = compute_control_dependence(cfg, rpo, {});
    ControlDependencyCalculator clang_cd(info.cfg.get());
    for (const CFGBlock* b : rpo) {
      std::set<unsigned> theirs;
      for (const CFGBlock* x : clang_cd.getControlDependencies(const_cast<CFGBlock*>(b)))
        theirs.insert(x->getBlockID());
      EXPECT_EQ(ids(cd.controllers(b)), theirs) << decl->getNameAsString() << ": block B" << b->getBlockID();
    }
  }
}

TEST(ControlDependence, MatchesClangOnStructuredCode) {
  expect_same_as_clang(R"(
    void g(); void h(); int k(int);
    void branches(int c, int d) { if (c) g(); else if (d) h(); g(); }
    void loops(int n) { for (int i = 0; i < n; ++i) { if (k(i)) continue; g(); } while (k(n)) h(); }
    int early(int c) { if (c < 0) return 1; g(); do { h(); } while (k(c)); return 0; }
    void cases(int c) { switch (c) { case 0: g(); break; case 1: h(); [[fallthrough]]; default: g(); } }
    bool shortcut(int a, int b) { if (a && k(b)) g(); return a || b; }
  )");
}

TEST(ControlDependence, BranchAndJoin) {
  auto a = analyze("void g(); void h(); void f(int c) { if (c) g(); h(); }", {}, false);
  const FunctionInfo& fi = a.fn("f");
  auto rpo = reverse_post_order(*fi.cfg);
  ControlDependence cd = compute_control_dependence(*fi.cfg, rpo, {});
  const CFGBlock* then_block = block_calling(fi, "g");
  const CFGBlock* join_block = block_calling(fi, "h");
  ASSERT_EQ(cd.controllers(then_block).size(), 1u);
  EXPECT_TRUE(isa<IfStmt>(cd.controllers(then_block)[0]->getTerminatorStmt()));
  EXPECT_TRUE(cd.controllers(join_block).empty());
  // The sides of the `if` meet again at the block that calls h.
  EXPECT_EQ(cd.merge_point(cd.controllers(then_block)[0]), join_block);
}

TEST(ControlDependence, TransitiveThroughNestedBranchesNearestFirst) {
  auto a = analyze("void g(); void f(int a, int b) { if (a) { if (b) g(); } }", {}, false);
  const FunctionInfo& fi = a.fn("f");
  auto rpo = reverse_post_order(*fi.cfg);
  ControlDependence cd = compute_control_dependence(*fi.cfg, rpo, {});
  auto ctrl = cd.controllers(block_calling(fi, "g"));
  ASSERT_EQ(ctrl.size(), 2u);
  // Nearest first: the inner `if (b)`, then the outer `if (a)`.
  auto cond_name = [](const CFGBlock* b) {
    const auto* cond = cast<IfStmt>(b->getTerminatorStmt())->getCond()->IgnoreImpCasts();
    return cast<DeclRefExpr>(cond)->getDecl()->getNameAsString();
  };
  EXPECT_EQ(cond_name(ctrl[0]), "b");
  EXPECT_EQ(cond_name(ctrl[1]), "a");
}

TEST(ControlDependence, LoopBodyDependsOnLoopCondition) {
  auto a = analyze("void g(); void f(int n) { for (int i = 0; i < n; ++i) g(); }", {}, false);
  const FunctionInfo& fi = a.fn("f");
  auto rpo = reverse_post_order(*fi.cfg);
  ControlDependence cd = compute_control_dependence(*fi.cfg, rpo, {});
  auto ctrl = cd.controllers(block_calling(fi, "g"));
  ASSERT_EQ(ctrl.size(), 1u);
  EXPECT_TRUE(isa<ForStmt>(ctrl[0]->getTerminatorStmt()));
}

TEST(ControlDependence, UniformErrorExitIsLeftOut) {
  auto a = analyze(
      "int check(); void g(); void h(); int f(int n) { if (check() != 0) return 1; g(); while (n--) h(); "
      "return 0; }",
      {}, false);
  const FunctionInfo& fi = a.fn("f");
  const CFG& cfg = *fi.cfg;
  auto rpo = reverse_post_order(cfg);
  const CFGBlock* after = block_calling(fi, "g");

  // Without dropping, the code after the check depends on it.
  ControlDependence full = compute_control_dependence(cfg, rpo, {});
  EXPECT_EQ(full.controllers(after).size(), 1u);

  // A condition the same on every rank: its exit side is dropped and nothing after it is conditional.
  std::vector<char> uniform(cfg.getNumBlockIDs(), 0);
  auto dropped = exit_edges_to_drop(cfg, rpo, uniform);
  const CFGBlock* check = nullptr;
  for (const CFGBlock* b : rpo)
    if (b->getTerminatorStmt() && isa<IfStmt>(b->getTerminatorStmt())) check = b;
  ASSERT_TRUE(check);
  EXPECT_EQ(dropped[check->getBlockID() * 2], 1);      // the `return 1` side
  EXPECT_EQ(dropped[check->getBlockID() * 2 + 1], 0);  // the way on
  EXPECT_TRUE(compute_control_dependence(cfg, rpo, dropped).controllers(after).empty());

  // A condition that differs by rank keeps its exit edge.
  std::vector<char> varies(cfg.getNumBlockIDs(), 1);
  auto kept = exit_edges_to_drop(cfg, rpo, varies);
  EXPECT_EQ(std::count(kept.begin(), kept.end(), 1), 0);
}

// Blocks that never reach the exit post-dominate only themselves (no virtual exit edge is added).
TEST(ControlDependence, EndlessLoopHasNoPostDominator) {
  auto a = analyze("void g(); bool k(); void f() { if (k()) for (;;) g(); }", {}, false);
  const FunctionInfo& fi = a.fn("f");
  auto rpo = reverse_post_order(*fi.cfg);
  ControlDependence cd = compute_control_dependence(*fi.cfg, rpo, {});
  const CFGBlock* body = block_calling(fi, "g");
  EXPECT_EQ(cd.ipdom[body->getBlockID()], -1);
}

// A long else-if chain: each arm depends on its own test and, transitively, on the earlier ones.
TEST(ControlDependence, ElseIfChain) {
  std::string code = "void g(int); void f(int x) {\n";
  for (int i = 0; i < 200; ++i)
    code += std::string(i ? " else " : "  ") + "if (x == " + std::to_string(i) + ") g(" + std::to_string(i) +
            ");\n";
  code += "}\n";
  auto a = analyze(code, {}, false);
  const FunctionInfo& fi = a.fn("f");
  auto rpo = reverse_post_order(*fi.cfg);
  ControlDependence cd = compute_control_dependence(*fi.cfg, rpo, {});
  size_t arms = 0, longest = 0;
  for (const CFGBlock* b : rpo) {
    for (const CFGElement& el : *b)
      if (auto cs = el.getAs<CFGStmt>(); cs && isa<CallExpr>(cs->getStmt())) {
        ++arms;
        longest = std::max(longest, cd.controllers(b).size());
      }
  }
  EXPECT_EQ(arms, 200u);
  EXPECT_EQ(longest, 200u);
}

}  // namespace
}  // namespace lockstep::lint
