// Per-function fixpoint and summaries of the lint analysis (see function_analysis.h).
#include "lint/function_analysis.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Analysis/CFG.h>
#include <llvm/ADT/SmallPtrSet.h>

#include <functional>
#include <set>

#include "lint/control_dependence.h"
#include "lint/diagnostics.h"

namespace lockstep::lint {
namespace {

using namespace clang;

class FunctionAnalysis {
 public:
  FunctionAnalysis(TuContext& tu, Diagnostics& diag) : tu_(tu), eval_(tu), diag_(diag) {}

  // Analyzes `fi` with the callees' current summaries; true when its own summary changed.
  bool analyze(FunctionInfo& fi);

 private:
  State entry_state(const FunctionInfo& fi);
  bool balanced(const FunctionInfo& fi, const CFGBlock* a, const std::vector<std::vector<Event>>& events);

  TuContext& tu_;
  Evaluator eval_;
  Diagnostics& diag_;
};

State FunctionAnalysis::entry_state(const FunctionInfo& fi) {
  State s;
  s.reached = true;
  const FunctionDecl* f = fi.decl;
  bool is_main = f->isMain();
  for (unsigned i = 0; i < f->getNumParams(); ++i) {
    const ParmVarDecl* p = f->getParamDecl(i);
    if (is_main) {
      if (tu_.opts.assume.argv_local) {
        Taint t = tu_.local_at(p->getLocation(),
                               "command-line argument '" + p->getNameAsString() + "' declared here");
        s.val[p] = t;
        s.mem[p] = t;
      }
      continue;
    }
    if (!tu_.called.count(f) && tu_.types.holds_memory(p->getType())) {
      // Nothing in this translation unit calls it: what its buffers hold came from no collective we can see.
      s.mem[p] = eval_.fresh_buffer(p);
      continue;
    }
    if (i >= kMaxParams) continue;
    Taint v;
    v.params = 1u << i;
    s.val[p] = v;
    Taint m;
    m.param_mem = 1u << i;
    if (tu_.types.holds_memory(p->getType())) s.mem[p] = m;
  }
  return s;
}

bool FunctionAnalysis::analyze(FunctionInfo& fi) {
  fi.findings.clear();
  if (!fi.cfg) return false;
  const CFG& cfg = *fi.cfg;
  unsigned n = cfg.getNumBlockIDs();
  std::vector<State> in(n);
  in[cfg.getEntry().getBlockID()] = entry_state(fi);
  std::vector<const CFGBlock*> rpo = reverse_post_order(cfg);

  std::vector<Taint> cond(n);
  std::vector<std::vector<const CFGBlock*>> controllers(n);
  std::vector<char> dropped_now;
  bool have_controllers = false;
  auto refresh_controllers = [&] {
    std::vector<char> varies(n, 0);
    for (unsigned i = 0; i < n; ++i) varies[i] = cond[i].any();
    std::vector<char> dropped = exit_edges_to_drop(cfg, rpo, varies);
    if (have_controllers && dropped == dropped_now) return false;
    have_controllers = true;
    dropped_now = std::move(dropped);
    fi.cd = compute_control_dependence(cfg, rpo, dropped_now);
    for (const CFGBlock* b : rpo) controllers[b->getBlockID()] = fi.cd.controllers(b);
    return true;
  };
  refresh_controllers();
  std::vector<const Expr*> cond_expr(n, nullptr);
  auto context_of = [&](const CFGBlock* b) {
    Taint t;
    for (const CFGBlock* a : controllers[b->getBlockID()]) t.join(cond[a->getBlockID()]);
    return t;
  };
  auto eval_condition = [&](const CFGBlock* b, BlockContext& c) {
    const Stmt* term = b->getTerminatorStmt();
    if (!term) return;
    Taint t;
    const Expr* ce = nullptr;
    if (isa<CXXTryStmt>(term)) {
      t = tu_.local_at(term->getBeginLoc(), "whether an exception was thrown differs across ranks");
    } else if ((ce = dyn_cast_or_null<Expr>(
                    const_cast<CFGBlock*>(b)->getTerminatorCondition(/*StripParens=*/false)))) {
      t = eval_.eval(ce, c);
    } else if (const auto* ss = dyn_cast<SwitchStmt>(term)) {
      ce = ss->getCond();
      t = eval_.eval(ce, c);
    }
    cond_expr[b->getBlockID()] = ce;
    cond[b->getBlockID()].join(t);
  };
  for (int iter = 0; iter < 64; ++iter) {
    bool changed = false;
    for (const CFGBlock* b : rpo) {
      if (!in[b->getBlockID()].reached) continue;
      State s = in[b->getBlockID()];
      BlockContext c{&fi, &s, context_of(b)};
      for (const CFGElement& el : *b)
        if (auto cs = el.getAs<CFGStmt>()) eval_.transfer(cs->getStmt(), c);
      Taint before = cond[b->getBlockID()];
      eval_condition(b, c);
      changed |= !before.same(cond[b->getBlockID()]);
      for (const CFGBlock* succ : b->succs())
        if (succ) changed |= in[succ->getBlockID()].join(s);
    }
    // Conditions that became rank-local may turn dropped error exits into real ones.
    if (refresh_controllers()) changed = true;
    if (!changed) break;
  }

  // Recording pass: collectives per block, returns, state at exit.
  Taint returns;
  std::vector<std::vector<Event>> events(n);
  for (const CFGBlock* b : rpo) {
    if (!in[b->getBlockID()].reached) continue;
    State s = in[b->getBlockID()];
    BlockContext c{&fi, &s, context_of(b), &events[b->getBlockID()], &returns};
    for (const CFGElement& el : *b)
      if (auto cs = el.getAs<CFGStmt>()) eval_.transfer(cs->getStmt(), c);
  }

  Summary sum;
  sum.result = returns;
  const FunctionDecl* f = fi.decl;
  const State& exit_state = in[cfg.getExit().getBlockID()];
  for (unsigned i = 0; i < f->getNumParams(); ++i) {
    const ParmVarDecl* p = f->getParamDecl(i);
    Taint v, m;
    if (exit_state.reached) {
      v = eval_.var_val(p, exit_state);
      m = eval_.var_mem(p, exit_state);
    } else {
      v.params = i < kMaxParams ? 1u << i : 0;
      m.param_mem = v.params;
    }
    // A caught exception or a rank-local write escapes through the parameter; keep both parts.
    sum.out_val.push_back(v);
    sum.out_mem.push_back(m);
  }

  for (const CFGBlock* b : rpo) {
    auto& evs = events[b->getBlockID()];
    if (evs.empty()) continue;
    const std::vector<const CFGBlock*>& ctrl = controllers[b->getBlockID()];
    std::set<unsigned> reported_sites;
    for (Event& ev : evs) {
      Event up = ev;
      up.control = ev.control.local ? Taint{} : ev.control.symbolic_part();
      const CFGBlock* local_ctrl = nullptr;
      const CFGBlock* param_ctrl = nullptr;
      for (const CFGBlock* a : ctrl) {
        const Taint& t = cond[a->getBlockID()];
        if (!t.any() || balanced(fi, a, events)) continue;
        // A rank-local branch (an early exit inside a loop) explains more than the loop header whose
        // condition it made rank-local.
        if (t.local &&
            (!local_ctrl || (is_loop(local_ctrl->getTerminatorStmt()) && !is_loop(a->getTerminatorStmt()))))
          local_ctrl = a;
        if ((t.params || t.param_mem) && !param_ctrl) param_ctrl = a;
      }
      if (param_ctrl) {
        Taint sym = cond[param_ctrl->getBlockID()].symbolic_part();
        if (!up.control.any()) up.control_loc = cond_loc(param_ctrl, cond_expr[param_ctrl->getBlockID()]);
        up.control.join(sym);
      }
      for (auto& a : up.args) a.taint = a.taint.local ? Taint{} : a.taint.symbolic_part();
      up.site = ev.site;
      sum.events.push_back(up);

      unsigned site_key = ev.site.getRawEncoding();
      if (local_ctrl && !reported_sites.count(site_key)) {
        reported_sites.insert(site_key);
        diag_.conditional(fi, ev, local_ctrl, cond[local_ctrl->getBlockID()],
                          cond_expr[local_ctrl->getBlockID()]);
      } else if (ev.control.local && !reported_sites.count(site_key)) {
        reported_sites.insert(site_key);
        diag_.callee_condition(fi, ev);
      }
      for (const auto& a : ev.args)
        if (a.taint.local) diag_.argument(fi, ev, a);
    }
  }

  bool changed = !fi.has_summary || !fi.summary.same(sum);
  fi.summary = std::move(sum);
  fi.has_summary = true;
  return changed;
}

// Both (all) sides of the branch at `a` perform the same sequence of collectives before they meet again.
bool FunctionAnalysis::balanced(const FunctionInfo& fi, const CFGBlock* a,
                                const std::vector<std::vector<Event>>& events) {
  const CFGBlock* merge = fi.cd.merge_point(a);
  std::set<std::vector<std::string>> seqs;
  bool ok = true;
  int paths = 0;
  std::vector<std::string> seq;
  llvm::SmallPtrSet<const CFGBlock*, 32> on_path;
  on_path.insert(a);
  std::function<void(const CFGBlock*)> walk = [&](const CFGBlock* x) {
    if (!ok) return;
    if (!x || x == merge || x == &fi.cfg->getExit()) {
      seqs.insert(seq);
      if (++paths > 64 || seqs.size() > 1) ok = false;
      return;
    }
    if (!on_path.insert(x).second) {
      ok = false;  // a loop between the branch and the merge point
      return;
    }
    size_t mark = seq.size();
    for (const Event& e : events[x->getBlockID()]) seq.push_back(e.collective);
    bool any = false;
    for (const CFGBlock* s : x->succs())
      if (s) {
        any = true;
        walk(s);
      }
    if (!any) {
      seqs.insert(seq);
      if (seqs.size() > 1) ok = false;
    }
    seq.resize(mark);
    on_path.erase(x);
  };
  int succs = 0;
  for (const CFGBlock* s : a->succs())
    if (s) {
      ++succs;
      walk(s);
    }
  return ok && succs > 1 && seqs.size() == 1;
}

}  // namespace

void analyze_functions(TuContext& tu, const std::vector<const FunctionDecl*>& functions,
                       std::vector<Finding>& out) {
  for (const FunctionDecl* f : functions) {
    auto& info = tu.infos[f];
    CFG::BuildOptions opts;
    opts.AddInitializers = true;
    opts.AddCXXDefaultInitExprInCtors = true;
    info.cfg = CFG::buildCFG(f, f->getBody(), &tu.ast, opts);
  }
  Diagnostics diag(tu);
  FunctionAnalysis analysis(tu, diag);
  // Summaries to a fixpoint (recursion converges because taints only grow): a function is analyzed
  // again only when a callee's summary changed after its last analysis. Declaration order mostly
  // puts callees first, so most functions are analyzed once.
  unsigned clock = 0;
  for (int round = 0; round < 8; ++round) {
    bool any = false;
    for (const FunctionDecl* f : functions) {
      FunctionInfo& fi = tu.infos[f];
      bool stale = fi.analyzed_at == 0;
      for (const FunctionDecl* callee : fi.callees) stale |= tu.infos[callee].changed_at > fi.analyzed_at;
      if (!stale) continue;
      bool changed = analysis.analyze(fi);
      fi.analyzed_at = ++clock;
      if (changed) fi.changed_at = clock;
      any = true;
    }
    if (!any) break;
  }
  for (const FunctionDecl* f : functions)
    for (auto& finding : tu.infos[f].findings) out.push_back(std::move(finding));
}

}  // namespace lockstep::lint
