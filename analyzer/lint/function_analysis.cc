// Per-function fixpoint and summaries of the lint analysis (see function_analysis.h).
#include "lint/function_analysis.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Analysis/CFG.h>
#include <clang/Basic/SourceManager.h>
#include <llvm/ADT/SmallPtrSet.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "lint/control_dependence.h"
#include "lint/diagnostics.h"

namespace lockstep::lint {
namespace {

using namespace clang;

// A local variable every write of which stores the result of `is_status_call` (a status variable).
bool is_status_var(const VarDecl* v, const FunctionDecl* f, TuContext& tu);

// A call to an API outside this translation unit that returns a status (an integer or an enum): the
// result of cudaSetDevice, ncclCommInitRank, MPI_File_open. Functions defined here and catalogued rank
// or data sources are not status calls.
bool is_status_call(const Expr* e, TuContext& tu) {
  const auto* call = dyn_cast<CallExpr>(e->IgnoreParenImpCasts());
  const FunctionDecl* callee = call ? call->getDirectCallee() : nullptr;
  if (!callee) return false;
  // A status type: an enum (cudaError_t, ncclResult_t, CUresult) or MPI's int error codes; atoi's int is
  // data.
  QualType rt = callee->getReturnType().getCanonicalType();
  bool mpi = callee->getIdentifier() && callee->getName().starts_with("MPI_");
  if (!rt->isEnumeralType() && !(mpi && rt->isIntegerType())) return false;
  const CalleeInfo& ci = tu.callee_info(callee);
  if (ci.kind == CalleeKind::kUser) return false;
  if (ci.kind == CalleeKind::kSource && ci.source->kind != ValueSource::Kind::kUniform &&
      ci.source->out_arg < 0)
    return false;
  return true;
}

// `if (err != MPI_SUCCESS)`, `if (cudaSetDevice(d))`, `if (r != ncclSuccess)`: a test of an API's status.
bool is_error_check(const Expr* cond, const FunctionDecl* f, TuContext& tu) {
  if (!cond) return false;
  const Expr* e = cond->IgnoreParenImpCasts();
  while (const auto* uo = dyn_cast<UnaryOperator>(e)) {
    if (uo->getOpcode() != UO_LNot) break;
    e = uo->getSubExpr()->IgnoreParenImpCasts();
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(e); bo && bo->isComparisonOp()) {
    auto constant = [&](const Expr* x) {
      x = x->IgnoreParenImpCasts();
      if (const auto* dre = dyn_cast<DeclRefExpr>(x); dre && isa<EnumConstantDecl>(dre->getDecl()))
        return true;
      return x->isIntegerConstantExpr(tu.ast);
    };
    if (constant(bo->getRHS()))
      e = bo->getLHS()->IgnoreParenImpCasts();
    else if (constant(bo->getLHS()))
      e = bo->getRHS()->IgnoreParenImpCasts();
    else
      return false;
  }
  if (is_status_call(e, tu)) return true;
  const auto* dre = dyn_cast<DeclRefExpr>(e);
  const auto* v = dre ? dyn_cast<VarDecl>(dre->getDecl()) : nullptr;
  return v && v->hasLocalStorage() && is_status_var(v, f, tu);
}

bool is_status_var(const VarDecl* v, const FunctionDecl* f, TuContext& tu) {
  bool any = false, all = true;
  if (const Expr* init = v->getInit()) {
    any = true;
    all = is_status_call(init, tu);
  }
  std::vector<const Stmt*> work{f->getBody()};
  while (all && !work.empty()) {
    const Stmt* s = work.back();
    work.pop_back();
    if (!s) continue;
    if (const auto* bo = dyn_cast<BinaryOperator>(s); bo && bo->isAssignmentOp()) {
      const auto* lhs = dyn_cast<DeclRefExpr>(bo->getLHS()->IgnoreParenImpCasts());
      if (lhs && lhs->getDecl() == v) {
        any = true;
        all &= !bo->isCompoundAssignmentOp() && is_status_call(bo->getRHS(), tu);
      }
    } else if (const auto* uo = dyn_cast<UnaryOperator>(s);
               uo && (uo->getOpcode() == UO_AddrOf || uo->isIncrementDecrementOp())) {
      if (const auto* x = dyn_cast<DeclRefExpr>(uo->getSubExpr()->IgnoreParenImpCasts());
          x && x->getDecl() == v)
        all = false;
    }
    for (const Stmt* child : s->children()) work.push_back(child);
  }
  return any && all;
}

// A call after which this process never continues and the job ends: MPI_Abort, abort, exit and their
// kin, or a `noreturn` function that does not throw (a thrown exception may be caught and the rank go
// on). A rank that takes such a path leaves no peer waiting forever: the launcher ends every rank.
bool ends_job(const CallExpr* call) {
  const FunctionDecl* f = call->getDirectCallee();
  if (!f) return false;
  std::string name = f->getIdentifier() ? f->getName().str() : std::string();
  static const std::set<std::string> kEnd = {"MPI_Abort", "PMPI_Abort", "abort",      "exit",
                                             "_exit",     "_Exit",      "quick_exit", "terminate"};
  // Not the process: longjmp goes on elsewhere, pthread_exit ends one thread.
  static const std::set<std::string> kNot = {"longjmp",           "siglongjmp",   "_longjmp",
                                             "__builtin_longjmp", "pthread_exit", "thrd_exit"};
  if (kEnd.count(name)) return true;
  if (kNot.count(name) || !f->isNoReturn()) return false;
  // `[[noreturn]] void throw_error(...)`, libstdc++'s __throw_*: leaves by an exception.
  if (llvm::StringRef(name).lower().find("throw") != std::string::npos) return false;
  if (const FunctionDecl* def = f->getDefinition(); def && def->getBody()) {
    std::vector<const Stmt*> work{def->getBody()};
    while (!work.empty()) {
      const Stmt* st = work.back();
      work.pop_back();
      if (!st) continue;
      if (isa<CXXThrowExpr>(st)) return false;
      for (const Stmt* child : st->children()) work.push_back(child);
    }
  }
  return true;
}

// `d` holds (`mem`: what it points to holds) the same in `a` and `b`, field by field.
bool same_entries(const State& a, const State& b, const ValueDecl* d, bool mem) {
  const VarMap& va = mem ? a.mem : a.val;
  const VarMap& vb = mem ? b.mem : b.val;
  auto ia = va.find(d), ib = vb.find(d);
  if ((ia == va.end()) != (ib == vb.end())) return false;
  if (ia != va.end() && !ia->second.same(ib->second)) return false;
  const FieldMap& fa = mem ? a.fmem : a.fval;
  const FieldMap& fb = mem ? b.fmem : b.fval;
  auto ja = fa.find(d), jb = fb.find(d);
  size_t na = ja == fa.end() ? 0 : ja->second.size(), nb = jb == fb.end() ? 0 : jb->second.size();
  if (na != nb) return false;
  for (size_t k = 0; k < na; ++k) {
    auto hit = std::find_if(jb->second.begin(), jb->second.end(),
                            [&](const auto& e) { return e.first == ja->second[k].first; });
    if (hit == jb->second.end() || !hit->second.same(ja->second[k].second)) return false;
  }
  return true;
}

class FunctionAnalysis {
 public:
  FunctionAnalysis(TuContext& tu, Diagnostics& diag) : tu_(tu), eval_(tu), diag_(diag) {}

  // Analyzes `fi` with the callees' current summaries; true when its own summary changed.
  bool analyze(FunctionInfo& fi);

 private:
  State entry_state(const FunctionInfo& fi);
  bool balanced(const FunctionInfo& fi, const CFGBlock* a, const std::vector<std::vector<Event>>& events);
  void report_error_exits(FunctionInfo& fi, const std::vector<const CFGBlock*>& rpo,
                          const std::vector<std::vector<Event>>& events, const std::vector<Taint>& cond,
                          const std::vector<const Expr*>& cond_expr, const std::vector<char>& error_check);

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
        s.set_val(p, t);
        s.set_mem(p, t);
      }
      continue;
    }
    if (!tu_.called.count(f) && tu_.types.holds_memory(p->getType())) {
      // Nothing in this translation unit calls it: what its buffers hold came from no collective we can see.
      s.set_mem(p, eval_.fresh_buffer(p));
      continue;
    }
    if (i >= kMaxParams) continue;
    bool memory = tu_.types.holds_memory(p->getType());
    // A struct (by value or reference) or structs behind a pointer: each field is its own unknown, so
    // that a caller whose fields differ in uniformity is judged by the fields the function reads.
    if (const RecordDecl* rd = field_record(p->getType());
        rd && (memory || p->getType().getNonReferenceType()->isRecordType())) {
      FieldTaints fields;
      for (const FieldDecl* fd : rd->fields()) {
        Taint t;
        t.add_field({fd, static_cast<uint8_t>(i), memory});
        fields.push_back({fd, t});
      }
      if (memory) {
        Taint v;
        v.params = 1u << i;
        s.set_val(p, v);
        s.fmem[p] = std::move(fields);
      } else {
        s.fval[p] = std::move(fields);
      }
      continue;
    }
    Taint v;
    v.params = 1u << i;
    s.set_val(p, v);
    Taint m;
    m.param_mem = 1u << i;
    if (memory) s.set_mem(p, m);
  }
  return s;
}

bool FunctionAnalysis::analyze(FunctionInfo& fi) {
  fi.findings.clear();
  if (!fi.cfg) return false;
  const CFG& cfg = *fi.cfg;
  unsigned n = cfg.getNumBlockIDs();
  std::vector<State> in(n);
  const State entry = entry_state(fi);
  in[cfg.getEntry().getBlockID()] = entry;
  std::vector<const CFGBlock*> rpo = reverse_post_order(cfg);

  std::vector<Taint> cond(n);
  // Branches on an API's status: leaving on a local API failure is collective-after-error-exit (off by
  // default), not conditional-collective, and does not make the rest of the function conditional.
  std::vector<char> error_check(n, 0);
  for (const CFGBlock* b : rpo) {
    const Stmt* term = b->getTerminatorStmt();
    if (!term || is_loop(term) || b->succ_size() != 2) continue;
    const auto* ce = dyn_cast_or_null<Expr>(const_cast<CFGBlock*>(b)->getTerminatorCondition(false));
    error_check[b->getBlockID()] = static_cast<char>(is_error_check(ce, fi.decl, tu_));
  }
  // Blocks from which every path ends the job before any collective (see ends_job): the side of a branch
  // that leads there is not a way to skip a collective, whatever the condition.
  std::vector<char> ending;
  {
    std::vector<char> ends(n, 0), blocked(n, 0);
    for (const CFGBlock* b : rpo) {
      unsigned id = b->getBlockID();
      for (const CFGElement& el : *b) {
        auto cs = el.getAs<CFGStmt>();
        const auto* call = cs ? dyn_cast<CallExpr>(cs->getStmt()) : nullptr;
        const FunctionDecl* callee = call ? call->getDirectCallee() : nullptr;
        if (!callee) continue;
        const CalleeInfo& ci = tu_.callee_info(callee);
        bool collective = ci.kind == CalleeKind::kCollective;
        if (ci.kind == CalleeKind::kUser) {
          const FunctionInfo& ui = tu_.infos[callee->getDefinition()];
          collective = !ui.has_summary || !ui.summary.events.empty();
        }
        if (collective && !ends_job(call)) {
          blocked[id] = 1;
          break;
        }
        if (ends_job(call)) {
          ends[id] = 1;
          break;
        }
      }
    }
    ending = job_ending_blocks(cfg, rpo, ends, blocked);
  }
  std::vector<std::vector<const CFGBlock*>> controllers(n);
  std::vector<char> dropped_now;
  bool have_controllers = false;
  auto refresh_controllers = [&] {
    std::vector<char> varies(n, 0);
    for (unsigned i = 0; i < n; ++i) varies[i] = static_cast<char>(cond[i].any() && !error_check[i]);
    std::vector<char> dropped = exit_edges_to_drop(cfg, rpo, varies, ending);
    if (have_controllers && dropped == dropped_now) return false;
    have_controllers = true;
    dropped_now = std::move(dropped);
    fi.cd = compute_control_dependence(cfg, rpo, dropped_now);
    for (const CFGBlock* b : rpo) controllers[b->getBlockID()] = fi.cd.controllers(b);
    return true;
  };
  refresh_controllers();
  std::vector<const Expr*> cond_expr(n, nullptr);
  // The block's context: the joined conditions that control it, and which rank-local branch they are.
  auto context_of = [&](const CFGBlock* b, State* s, std::vector<Event>* evs = nullptr,
                        Taint* returns = nullptr) {
    BlockContext c{&fi, s, Taint{}, evs, returns};
    for (const CFGBlock* a : controllers[b->getBlockID()]) {
      const Taint& t = cond[a->getBlockID()];
      c.control.join(t);
      if (t.local) c.control_branch = c.control_branch ? kSeveralBranches : a->getTerminatorStmt();
    }
    return c;
  };
  // Runs the block's statements on `c.state`; variables whose lifetime ends are forgotten.
  auto run_block = [&](const CFGBlock* b, BlockContext& c) {
    for (const CFGElement& el : *b) {
      if (auto cs = el.getAs<CFGStmt>())
        eval_.transfer(cs->getStmt(), c);
      else if (auto le = el.getAs<CFGLifetimeEnds>())
        c.state->forget(le->getVarDecl());
    }
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
      BlockContext c = context_of(b, &s);
      run_block(b, c);
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
    BlockContext c = context_of(b, &s, &events[b->getBlockID()], &returns);
    run_block(b, c);
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
    bool tracked = i < kMaxParams;
    sum.kept_val.push_back(
        static_cast<char>(tracked && (!exit_state.reached || same_entries(entry, exit_state, p, false))));
    sum.kept_mem.push_back(
        static_cast<char>(tracked && (!exit_state.reached || same_entries(entry, exit_state, p, true))));
  }

  // One finding per controlling branch (the root cause), at its first collective; the others are notes.
  std::map<const CFGBlock*, std::vector<Event>> grouped;
  std::vector<signed char> balanced_memo(n, -1);
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
        if (!t.any() || error_check[a->getBlockID()]) continue;
        // Whether a branch is balanced depends only on the branch: decide it once per analysis, not
        // once per collective it controls (a long else-if chain would make that cubic).
        signed char& memo = balanced_memo[a->getBlockID()];
        if (memo < 0) memo = balanced(fi, a, events) ? 1 : 0;
        if (memo) continue;
        // A rank-local branch (an early exit inside a loop) explains more than the loop header whose
        // condition it made rank-local.
        if (t.local &&
            (!local_ctrl || (is_loop(local_ctrl->getTerminatorStmt()) && !is_loop(a->getTerminatorStmt()))))
          local_ctrl = a;
        if ((t.params || t.param_mem) &&
            (!param_ctrl || (is_loop(param_ctrl->getTerminatorStmt()) && !is_loop(a->getTerminatorStmt()))))
          param_ctrl = a;
      }
      // A condition that is rank-local here is reported here: callers are not told about it again.
      if (param_ctrl && !cond[param_ctrl->getBlockID()].local) {
        Taint sym = cond[param_ctrl->getBlockID()].symbolic_part();
        if (!up.control.any()) up.control_loc = cond_loc(param_ctrl, cond_expr[param_ctrl->getBlockID()]);
        up.control.join(sym);
      }
      for (auto& a : up.args) a.taint = a.taint.local ? Taint{} : a.taint.symbolic_part();
      up.site = ev.site;
      sum.events.push_back(up);

      unsigned site_key = ev.site.getRawEncoding();
      bool on_member_comm = false;
      for (const auto& arg : ev.args)
        on_member_comm |= arg.role == ArgRole::kCommunicator && arg.taint.member_comm;
      if (ev.members_from_arguments || on_member_comm) {
        // Sub-communicator creation: the condition chooses the members, which is its purpose.
      } else if (local_ctrl && !reported_sites.count(site_key)) {
        reported_sites.insert(site_key);
        grouped[local_ctrl].push_back(ev);
      } else if (ev.control.local && !reported_sites.count(site_key)) {
        reported_sites.insert(site_key);
        diag_.callee_condition(fi, ev);
      }
      // An argument written alike on a rank-local branch is uniform among the ranks that took it; when
      // those are exactly the members of the communicator the collective runs on, every caller agrees.
      const void* members_under = nullptr;
      for (const auto& arg : ev.args)
        if (arg.role == ArgRole::kCommunicator && arg.taint.member_comm)
          members_under = arg.taint.members_under;
      for (const auto& a : ev.args) {
        bool among_members = members_under && members_under != kSeveralBranches &&
                             a.taint.written_under == members_under && a.role != ArgRole::kCommunicator;
        if (a.taint.local && !among_members) diag_.argument(fi, ev, a);
      }
    }
  }

  for (auto& [a, evs] : grouped) {
    std::stable_sort(evs.begin(), evs.end(), [&](const Event& x, const Event& y) {
      return tu_.ast.getSourceManager().isBeforeInTranslationUnit(x.site, y.site);
    });
    diag_.conditional(fi, evs, a, cond[a->getBlockID()], cond_expr[a->getBlockID()]);
  }

  if (tu_.opts.error_exit_rule) report_error_exits(fi, rpo, events, cond, cond_expr, error_check);

  bool changed = !fi.has_summary || !fi.summary.same(sum);
  fi.summary = std::move(sum);
  fi.has_summary = true;
  return changed;
}

// Rank-local status checks that leave the function before collectives: one finding per check, at the
// first collective the leaving ranks skip.
void FunctionAnalysis::report_error_exits(FunctionInfo& fi, const std::vector<const CFGBlock*>& rpo,
                                          const std::vector<std::vector<Event>>& events,
                                          const std::vector<Taint>& cond,
                                          const std::vector<const Expr*>& cond_expr,
                                          const std::vector<char>& error_check) {
  const CFG& cfg = *fi.cfg;
  std::vector<int> position(cfg.getNumBlockIDs(), -1);
  for (size_t i = 0; i < rpo.size(); ++i) position[rpo[i]->getBlockID()] = static_cast<int>(i);
  for (const CFGBlock* a : rpo) {
    unsigned id = a->getBlockID();
    if (!error_check[id] || !cond[id].local) continue;
    const CFGBlock* s0 = a->succ_begin()->getReachableBlock();
    const CFGBlock* s1 = (a->succ_begin() + 1)->getReachableBlock();
    if (!s0 || !s1) continue;
    // The first collective (in block order) reachable from `from`.
    auto first_after = [&](const CFGBlock* from) -> const Event* {
      std::vector<char> seen(cfg.getNumBlockIDs(), 0);
      std::vector<const CFGBlock*> work{from};
      seen[from->getBlockID()] = 1;
      const Event* first = nullptr;
      int first_pos = 0;
      while (!work.empty()) {
        const CFGBlock* x = work.back();
        work.pop_back();
        if (!events[x->getBlockID()].empty() && (!first || position[x->getBlockID()] < first_pos)) {
          first = &events[x->getBlockID()].front();
          first_pos = position[x->getBlockID()];
        }
        for (const CFGBlock* y : x->succs())
          if (y && !seen[y->getBlockID()]) {
            seen[y->getBlockID()] = 1;
            work.push_back(y);
          }
      }
      return first;
    };
    // The error side leads out without a collective; the way on has one.
    const Event* e0 = first_after(s0);
    const Event* e1 = first_after(s1);
    const Event* skipped = nullptr;
    if (e0 && !e1 && exit_bound(cfg, s1)) skipped = e0;
    if (e1 && !e0 && exit_bound(cfg, s0)) skipped = e1;
    if (skipped) diag_.error_exit(fi, *skipped, a, cond[id], cond_expr[id]);
  }
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
    // Where automatic variables die: the dataflow state forgets them there, so it holds the variables
    // in scope rather than every variable of a long function (copying and joining it per block).
    opts.AddLifetime = true;
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
