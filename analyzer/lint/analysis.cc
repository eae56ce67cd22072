// The lint analysis of one translation unit. Per function: the CFG and its post-dominator tree give the
// conditions every collective call is control-dependent on; a forward dataflow over the CFG tracks, for
// every variable and for what every buffer holds, whether it is uniform across ranks, rank-local (with
// the call or declaration it came from) or dependent on a parameter. Function summaries (result, output
// parameters, collectives performed and what controls them) carry this across calls.
#include "lint/analysis.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Analysis/CFG.h>
#include <clang/Basic/SourceManager.h>
#include <llvm/ADT/BitVector.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <string>

namespace lockstep::lint {
namespace {

using namespace clang;

constexpr unsigned kMaxParams = 32;
constexpr const char* kAnnotation = "lockstep::collective";

struct Origin {
  SourceLocation loc;
  std::string what;
  int cause = -1;  // the origin this one passes on (a call's result computed from an argument's origin)
};

// Whether a value is the same on every rank. `local`: it is not (origin says why); `params`/`param_mem`:
// it is unless the caller passes a rank-local value for these parameters (or for what they point to).
struct Taint {
  bool local = false;
  int origin = -1;
  uint32_t params = 0;
  uint32_t param_mem = 0;

  bool any() const { return local || params || param_mem; }
  bool same(const Taint& o) const { return local == o.local && params == o.params && param_mem == o.param_mem; }
  void join(const Taint& o) {
    if (o.origin >= 0 && (origin < 0 || (!local && o.local))) origin = o.origin;
    local |= o.local;
    params |= o.params;
    param_mem |= o.param_mem;
  }
  Taint symbolic_part() const {
    Taint t = *this;
    t.local = false;
    if (!t.any()) t.origin = -1;
    return t;
  }
};

Taint joined(Taint a, const Taint& b) {
  a.join(b);
  return a;
}

// Values of variables (`val`) and what variables that are pointers, arrays or containers hold (`mem`).
struct State {
  llvm::DenseMap<const ValueDecl*, Taint> val, mem;
  bool reached = false;

  bool join(const State& o) {
    bool changed = !reached && o.reached;
    reached |= o.reached;
    auto merge = [&](llvm::DenseMap<const ValueDecl*, Taint>& mine, const llvm::DenseMap<const ValueDecl*, Taint>& theirs) {
      for (const auto& [d, t] : theirs) {
        auto [it, inserted] = mine.try_emplace(d, t);
        if (inserted) {
          changed |= t.any();
          continue;
        }
        Taint before = it->second;
        it->second.join(t);
        changed |= !before.same(it->second);
      }
    };
    merge(val, o.val);
    merge(mem, o.mem);
    return changed;
  }
};

// A collective performed by a function, directly or inside a callee.
struct Event {
  std::string collective;
  SourceLocation loc;                  // the collective call itself (maybe in a callee)
  SourceLocation site;                 // the call in the function that holds the event
  const FunctionDecl* via = nullptr;   // the callee performing it, if not direct
  Taint control;                       // conditions inside callees controlling it (symbolic, substituted)
  SourceLocation control_loc;
  struct Arg {
    ArgRole role;
    Taint taint;
    SourceLocation loc;
  };
  std::vector<Arg> args;
};

struct Summary {
  Taint result;
  std::vector<Taint> out_val, out_mem;  // per parameter, at function exit
  std::vector<Event> events;

  bool same(const Summary& o) const {
    if (!result.same(o.result) || events.size() != o.events.size() || out_val.size() != o.out_val.size()) return false;
    for (size_t i = 0; i < out_val.size(); ++i)
      if (!out_val[i].same(o.out_val[i]) || !out_mem[i].same(o.out_mem[i])) return false;
    for (size_t i = 0; i < events.size(); ++i) {
      if (!events[i].control.same(o.events[i].control) || events[i].args.size() != o.events[i].args.size()) return false;
      for (size_t k = 0; k < events[i].args.size(); ++k)
        if (!events[i].args[k].taint.same(o.events[i].args[k].taint)) return false;
    }
    return true;
  }
};

struct FunctionInfo {
  const FunctionDecl* decl = nullptr;
  std::unique_ptr<CFG> cfg;
  std::vector<std::vector<const CFGBlock*>> cd;  // direct control dependences by block id
  std::vector<int> ipdom;                         // immediate post-dominator by block id (-1: none)
  Summary summary;
  bool has_summary = false;
  std::set<const FunctionDecl*> callees;  // user functions whose summaries this one used
  unsigned analyzed_at = 0;               // logical clock of the last analysis
  unsigned changed_at = 0;                // ... and of the last summary change
  std::vector<Finding> findings;          // from the last analysis
  llvm::DenseMap<const Stmt*, const Stmt*> parents;  // built on demand for messages
};

enum class CalleeKind { kUnknown, kCollective, kSource, kUser };

struct CalleeInfo {
  CalleeKind kind = CalleeKind::kUnknown;
  const Collective* collective = nullptr;
  const ValueSource* source = nullptr;
  std::string name;
};

std::string qualified_name(const NamedDecl* d) {
  std::vector<std::string> parts{d->getNameAsString()};
  for (const DeclContext* dc = d->getDeclContext(); dc; dc = dc->getParent()) {
    if (const auto* ns = dyn_cast<NamespaceDecl>(dc)) {
      if (ns->isInline() || ns->isAnonymousNamespace()) continue;
      parts.push_back(ns->getNameAsString());
    } else if (const auto* rd = dyn_cast<RecordDecl>(dc)) {
      if (rd->getIdentifier()) parts.push_back(rd->getNameAsString());
    }
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += "::";
    out += *it;
  }
  return out;
}

bool has_collective_annotation(const FunctionDecl* f) {
  for (const FunctionDecl* r : f->redecls())
    for (const auto* a : r->specific_attrs<AnnotateAttr>())
      if (a->getAnnotation() == kAnnotation) return true;
  return false;
}

// Per-TU memo for is_buffer_class (set by the analyzer of the TU on this thread).
thread_local llvm::DenseMap<const CXXRecordDecl*, bool>* t_buffer_classes = nullptr;

// A class whose objects hold elements: has data() or operator[].
bool is_buffer_class(QualType t) {
  const auto* rd = t.getNonReferenceType()->getAsCXXRecordDecl();
  if (!rd || !rd->hasDefinition()) return false;
  if (t_buffer_classes)
    if (auto it = t_buffer_classes->find(rd); it != t_buffer_classes->end()) return it->second;
  bool result = false;
  for (const auto* m : rd->methods()) {
    if (m->getOverloadedOperator() == OO_Subscript || (m->getIdentifier() && m->getName() == "data")) {
      result = true;
      break;
    }
  }
  if (t_buffer_classes) (*t_buffer_classes)[rd] = result;
  return result;
}

bool holds_memory(QualType t) {
  t = t.getNonReferenceType();
  return t->isPointerType() || t->isArrayType() || is_buffer_class(t);
}

bool is_method_named(const CXXMethodDecl* m, std::initializer_list<const char*> names) {
  if (!m || !m->getIdentifier()) return false;
  for (const char* n : names)
    if (m->getName() == n) return true;
  return false;
}

class TuAnalyzer {
 public:
  TuAnalyzer(ASTContext& ctx, const Catalog& catalog, std::vector<Finding>& out)
      : ctx_(ctx), sm_(ctx.getSourceManager()), catalog_(catalog), out_(out) {}

  void add_called(const FunctionDecl* f) {
    if (const FunctionDecl* def = f->getDefinition()) called_.insert(def);
  }
  void add_function(const FunctionDecl* f) {
    // Catalogued APIs defined inline in a user header (the runtime's rt.h) are collectives or sources,
    // not code to analyze.
    std::string name = qualified_name(f);
    if (catalog_.find_collective(name) || catalog_.find_source(name)) return;
    auto& info = infos_[f];
    if (info.decl) return;
    info.decl = f;
    order_.push_back(f);
  }

  void run() {
    for (const FunctionDecl* f : order_) {
      auto& info = infos_[f];
      CFG::BuildOptions opts;
      opts.AddInitializers = true;
      opts.AddCXXDefaultInitExprInCtors = true;
      info.cfg = CFG::buildCFG(f, f->getBody(), &ctx_, opts);
    }
    t_buffer_classes = &buffer_classes_;
    // Summaries to a fixpoint (recursion converges because taints only grow): a function is analyzed
    // again only when a callee's summary changed after its last analysis. Declaration order mostly
    // puts callees first, so most functions are analyzed once.
    unsigned clock = 0;
    for (int round = 0; round < 8; ++round) {
      bool any = false;
      for (const FunctionDecl* f : order_) {
        FunctionInfo& fi = infos_[f];
        bool stale = fi.analyzed_at == 0;
        for (const FunctionDecl* callee : fi.callees) stale |= infos_[callee].changed_at > fi.analyzed_at;
        if (!stale) continue;
        bool changed = analyze(fi);
        fi.analyzed_at = ++clock;
        if (changed) fi.changed_at = clock;
        any = true;
      }
      if (!any) break;
    }
    for (const FunctionDecl* f : order_)
      for (auto& finding : infos_[f].findings) out_.push_back(std::move(finding));
    t_buffer_classes = nullptr;
  }

 private:
  // ---- callee classification ----
  const CalleeInfo& callee_info(const FunctionDecl* f) {
    auto [it, inserted] = callees_.try_emplace(f);
    if (!inserted) return it->second;
    CalleeInfo& ci = it->second;
    ci.name = qualified_name(f);
    if ((ci.collective = catalog_.find_collective(ci.name))) {
      ci.kind = CalleeKind::kCollective;
    } else if (has_collective_annotation(f)) {
      ci.kind = CalleeKind::kCollective;
    } else if ((ci.source = catalog_.find_source(ci.name))) {
      ci.kind = CalleeKind::kSource;
    } else if (const FunctionDecl* def = f->getDefinition(); def && infos_.count(def)) {
      ci.kind = CalleeKind::kUser;
    }
    return ci;
  }

  int origin(SourceLocation loc, std::string what, int cause) {
    origins_.push_back({loc, std::move(what), cause});
    return static_cast<int>(origins_.size()) - 1;
  }
  // One origin per (location, text, cause): repeated fixpoint rounds must not grow the table.
  Taint local_at(SourceLocation loc, const std::string& what, int cause = -1) {
    auto key = std::make_tuple(loc.getRawEncoding(), what, cause);
    auto it = origin_index_.find(key);
    int idx = it != origin_index_.end() ? it->second : (origin_index_[key] = origin(loc, what, cause));
    Taint t;
    t.local = true;
    t.origin = idx;
    return t;
  }

  // ---- expression evaluation ----
  struct Ctx {
    FunctionInfo* fn = nullptr;
    State* state = nullptr;
    const CallExpr* current_call = nullptr;
  };

  Taint var_val(const ValueDecl* d, const State& s) {
    auto it = s.val.find(d);
    return it == s.val.end() ? Taint{} : it->second;
  }
  Taint var_mem(const ValueDecl* d, const State& s) {
    auto it = s.mem.find(d);
    if (it != s.mem.end()) return it->second;
    if (const auto* vd = dyn_cast<VarDecl>(d); vd && !holds_memory(vd->getType())) return var_val(d, s);
    return Taint{};
  }

  Taint eval(const Expr* e, Ctx& c) {
    if (!e) return {};
    e = e->IgnoreParens();
    const State& s = *c.state;
    if (const auto* ce = dyn_cast<CastExpr>(e)) return eval(ce->getSubExpr(), c);
    if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
      if (isa<VarDecl>(dre->getDecl())) return var_val(dre->getDecl(), s);
      return {};
    }
    if (const auto* me = dyn_cast<MemberExpr>(e)) {
      if (isa<VarDecl>(me->getMemberDecl())) return {};  // static data member
      if (me->isArrow()) return joined(eval(me->getBase(), c), eval_mem(me->getBase(), c));
      return eval(me->getBase(), c);
    }
    if (const auto* ase = dyn_cast<ArraySubscriptExpr>(e))
      return joined(eval_mem(ase->getBase(), c), eval(ase->getIdx(), c));
    if (const auto* uo = dyn_cast<UnaryOperator>(e)) {
      if (uo->getOpcode() == UO_Deref) return eval_mem(uo->getSubExpr(), c);
      if (uo->getOpcode() == UO_AddrOf) return {};
      return eval(uo->getSubExpr(), c);
    }
    if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
      if (bo->isAssignmentOp() || bo->getOpcode() == BO_Comma) {
        if (bo->isCompoundAssignmentOp()) return joined(eval(bo->getLHS(), c), eval(bo->getRHS(), c));
        return eval(bo->getRHS(), c);
      }
      return joined(eval(bo->getLHS(), c), eval(bo->getRHS(), c));
    }
    if (const auto* co = dyn_cast<AbstractConditionalOperator>(e))
      return joined(eval(co->getCond(), c), joined(eval(co->getTrueExpr(), c), eval(co->getFalseExpr(), c)));
    if (const auto* call = dyn_cast<CallExpr>(e)) return eval_call(call, c, /*apply=*/false);
    if (const auto* cons = dyn_cast<CXXConstructExpr>(e)) {
      Taint t;
      for (const Expr* a : cons->arguments()) t.join(eval(a, c));
      return t;
    }
    if (const auto* ile = dyn_cast<InitListExpr>(e)) {
      Taint t;
      for (const Expr* a : ile->inits()) t.join(eval(a, c));
      return t;
    }
    if (const auto* ewc = dyn_cast<ExprWithCleanups>(e)) return eval(ewc->getSubExpr(), c);
    if (const auto* mte = dyn_cast<MaterializeTemporaryExpr>(e)) return eval(mte->getSubExpr(), c);
    if (const auto* bte = dyn_cast<CXXBindTemporaryExpr>(e)) return eval(bte->getSubExpr(), c);
    if (const auto* dae = dyn_cast<CXXDefaultArgExpr>(e)) return eval(dae->getExpr(), c);
    if (const auto* die = dyn_cast<CXXDefaultInitExpr>(e)) return eval(die->getExpr(), c);
    return {};  // literals, sizeof, this, lambdas, new (an address)
  }

  // What the pointer, array or container `e` refers to holds.
  Taint eval_mem(const Expr* e, Ctx& c) {
    if (!e) return {};
    e = e->IgnoreParens();
    if (const auto* ce = dyn_cast<CastExpr>(e)) return eval_mem(ce->getSubExpr(), c);
    if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
      if (isa<VarDecl>(dre->getDecl())) return var_mem(dre->getDecl(), *c.state);
      return {};
    }
    if (const auto* uo = dyn_cast<UnaryOperator>(e)) {
      if (uo->getOpcode() == UO_AddrOf) return eval(uo->getSubExpr(), c);
      if (uo->getOpcode() == UO_Deref) return eval_mem(uo->getSubExpr(), c);
      return eval_mem(uo->getSubExpr(), c);
    }
    if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
      if (bo->getLHS()->getType()->isPointerType()) return eval_mem(bo->getLHS(), c);
      if (bo->getRHS()->getType()->isPointerType()) return eval_mem(bo->getRHS(), c);
      if (bo->isAssignmentOp() || bo->getOpcode() == BO_Comma) return eval_mem(bo->getRHS(), c);
      return {};
    }
    if (const auto* ase = dyn_cast<ArraySubscriptExpr>(e)) return eval_mem(ase->getBase(), c);
    if (const auto* me = dyn_cast<MemberExpr>(e)) {
      if (me->isArrow()) return eval_mem(me->getBase(), c);
      return joined(eval(me->getBase(), c), eval_mem(me->getBase(), c));
    }
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(e)) {
      const auto* m = mc->getMethodDecl();
      if (is_method_named(m, {"data", "begin", "end", "cbegin", "cend", "rbegin", "rend", "get", "c_str"}))
        return eval_mem(mc->getImplicitObjectArgument(), c);
    }
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(e)) {
      if (oc->getOperator() == OO_PlusPlus || oc->getOperator() == OO_MinusMinus ||
          oc->getOperator() == OO_Plus || oc->getOperator() == OO_Minus)
        return eval_mem(oc->getArg(0), c);
    }
    if (const auto* co = dyn_cast<AbstractConditionalOperator>(e))
      return joined(eval(co->getCond(), c), joined(eval_mem(co->getTrueExpr(), c), eval_mem(co->getFalseExpr(), c)));
    if (const auto* ewc = dyn_cast<ExprWithCleanups>(e)) return eval_mem(ewc->getSubExpr(), c);
    if (const auto* mte = dyn_cast<MaterializeTemporaryExpr>(e)) return eval_mem(mte->getSubExpr(), c);
    if (const auto* bte = dyn_cast<CXXBindTemporaryExpr>(e)) return eval_mem(bte->getSubExpr(), c);
    if (const auto* cons = dyn_cast<CXXConstructExpr>(e)) {
      if (cons->getNumArgs() == 1 && cons->getConstructor()->isCopyOrMoveConstructor()) return eval_mem(cons->getArg(0), c);
      return {};
    }
    if (const auto* call = dyn_cast<CallExpr>(e)) {
      // A pointer returned by a user function: assume it points at what its pointer arguments hold.
      Taint t;
      for (const Expr* a : call->arguments())
        if (a->getType()->isPointerType()) t.join(eval_mem(a, c));
      return t;
    }
    return eval(e, c);
  }

  // The storage a pointer/reference expression designates: (variable, true) for the variable's value,
  // (variable, false) for what it holds.
  std::pair<const ValueDecl*, bool> storage_of(const Expr* e, bool address) {
    if (!e) return {nullptr, false};
    e = e->IgnoreParenImpCasts();
    if (const auto* ce = dyn_cast<CastExpr>(e)) return storage_of(ce->getSubExpr(), address);
    if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
      const auto* vd = dyn_cast<VarDecl>(dre->getDecl());
      if (!vd) return {nullptr, false};
      if (!address) return {vd, true};
      if (holds_memory(vd->getType())) return {vd, false};
      return {vd, true};
    }
    if (const auto* uo = dyn_cast<UnaryOperator>(e)) {
      if (uo->getOpcode() == UO_AddrOf) return storage_of(uo->getSubExpr(), false);
      if (uo->getOpcode() == UO_Deref) return storage_of(uo->getSubExpr(), true);
      return {nullptr, false};
    }
    if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
      if (bo->getLHS()->getType()->isPointerType()) return storage_of(bo->getLHS(), address);
      if (bo->getRHS()->getType()->isPointerType()) return storage_of(bo->getRHS(), address);
      return {nullptr, false};
    }
    if (const auto* ase = dyn_cast<ArraySubscriptExpr>(e)) return memory_of(ase->getBase());
    if (const auto* me = dyn_cast<MemberExpr>(e)) {
      if (me->isArrow()) return memory_of(me->getBase());
      auto base = storage_of(me->getBase(), false);
      if (address && holds_memory(me->getType())) return {base.first, false};
      return base;
    }
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(e)) {
      if (is_method_named(mc->getMethodDecl(), {"data", "begin", "end", "front", "back", "at", "get"}))
        return memory_of(mc->getImplicitObjectArgument());
    }
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(e)) {
      if (oc->getOperator() == OO_Subscript || oc->getOperator() == OO_Star || oc->getOperator() == OO_Arrow)
        return memory_of(oc->getArg(0));
    }
    return {nullptr, false};
  }
  std::pair<const ValueDecl*, bool> memory_of(const Expr* e) {
    auto [d, is_val] = storage_of(e, true);
    if (!d) return {nullptr, false};
    if (is_val && !holds_memory(d->getType())) return {d, true};
    return {d, false};
  }

  // Writes made under a rank-local condition are rank-local (only some ranks made them), except what a
  // collective delivers.
  void write(std::pair<const ValueDecl*, bool> where, Taint t, bool strong, State& s, bool exact = false) {
    if (!where.first) return;
    if (!exact) t.join(ctx_taint_);
    auto& map = where.second ? s.val : s.mem;
    if (strong) map[where.first] = t;
    else map[where.first].join(t);
  }
  // Writes through a pointer or reference argument.
  void write_through(const Expr* arg, const Taint& t, bool strong, bool by_reference, State& s) {
    if (by_reference) {
      auto target = storage_of(arg, false);
      // Filling a container passed by reference changes what it holds, not its identity or shape.
      if (target.first && target.second && is_buffer_class(target.first->getType())) {
        write({target.first, false}, t, strong, s);
        return;
      }
      write(target, t, strong, s);
      if (target.first && target.second && holds_memory(target.first->getType())) write({target.first, false}, t, strong, s);
      return;
    }
    write(storage_of(arg, true), t, strong, s);
  }

  // ---- calls ----
  std::vector<const Expr*> call_args(const CallExpr* call, const FunctionDecl* callee) {
    std::vector<const Expr*> args(call->arg_begin(), call->arg_end());
    // A member operator called as a CXXOperatorCallExpr has the object as its first argument.
    if (isa<CXXOperatorCallExpr>(call) && isa<CXXMethodDecl>(callee) && !args.empty()) args.erase(args.begin());
    return args;
  }
  const Expr* object_of(const CallExpr* call, const FunctionDecl* callee) {
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call)) return mc->getImplicitObjectArgument();
    if (isa<CXXOperatorCallExpr>(call) && isa<CXXMethodDecl>(callee) && call->getNumArgs() > 0) return call->getArg(0);
    return nullptr;
  }

  // `call` (when given) is the call whose result this is: a result made rank-local by an argument gets
  // an origin at the call, chained to the test inside the callee and to where the argument came from.
  Taint substitute(const Taint& t, const std::vector<const Expr*>& args, Ctx& c, const CallExpr* call = nullptr) {
    Taint r;
    r.local = t.local;
    r.origin = t.local ? t.origin : -1;
    for (unsigned i = 0; i < args.size() && i < kMaxParams; ++i) {
      if (t.params & (1u << i)) r.join(eval(args[i], c));
      if (t.param_mem & (1u << i)) r.join(eval_mem(args[i], c));
    }
    if (!t.local && r.local) {
      int cause = r.origin;
      if (t.origin >= 0) {
        // A finiteness test inside the callee explains the result better than where the data came from.
        cause = local_at(origins_[t.origin].loc, origins_[t.origin].what, cause).origin;
      }
      const FunctionDecl* f = call ? call->getDirectCallee() : nullptr;
      if (f && f->getIdentifier())
        r.origin = local_at(call->getBeginLoc(), "'" + f->getNameAsString() + "' computes its result from rank-local data here", cause).origin;
      else
        r.origin = cause;
    }
    return r;
  }

  bool is_istream(const Expr* e) {
    if (!e) return false;
    const auto* rd = e->getType().getNonReferenceType()->getAsCXXRecordDecl();
    if (!rd) return false;
    std::function<bool(const CXXRecordDecl*)> walk = [&](const CXXRecordDecl* r) {
      if (r->getName() == "basic_istream" || r->getName() == "basic_ifstream") return true;
      if (!r->hasDefinition()) return false;
      for (const auto& b : r->bases())
        if (const auto* br = b.getType()->getAsCXXRecordDecl(); br && walk(br)) return true;
      return false;
    };
    return walk(rd);
  }

  // The result taint of a call; with `apply`, also its effects on the state and, when recording, the
  // collectives it performs.
  Taint eval_call(const CallExpr* call, Ctx& c, bool apply) {
    const FunctionDecl* callee = call->getDirectCallee();
    State& s = *c.state;
    if (!callee) {
      Taint t = eval(call->getCallee(), c);
      for (const Expr* a : call->arguments()) t.join(eval(a, c));
      return t;
    }
    const CalleeInfo& ci = callee_info(callee);
    std::vector<const Expr*> args = call_args(call, callee);
    const Expr* object = object_of(call, callee);
    SourceLocation loc = call->getBeginLoc();

    if (ci.kind == CalleeKind::kCollective) {
      if (apply) {
        const Collective* coll = ci.collective;
        for (size_t i = 0; coll && i < args.size() && i < coll->args.size(); ++i) {
          switch (coll->args[i]) {
            case ArgRole::kOutUniform:
            case ArgRole::kInOutUniform:
              write(storage_of(args[i], true), Taint{}, true, s, /*exact=*/true);
              break;
            case ArgRole::kOutLocal:
              write(storage_of(args[i], true),
                    local_at(loc, "'" + ci.name + "' delivers different data to each rank here"), true, s);
              break;
            default:
              break;
          }
        }
        if (recording_) {
          Event ev;
          ev.collective = coll ? coll->name : ci.name;
          ev.loc = ev.site = loc;
          for (size_t i = 0; coll && i < args.size() && i < coll->args.size(); ++i)
            if (role_must_agree(coll->args[i]))
              ev.args.push_back({coll->args[i], eval(args[i], c), args[i]->getBeginLoc()});
          block_events_->push_back(std::move(ev));
        }
      }
      return {};
    }

    if (ci.kind == CalleeKind::kSource) {
      const ValueSource* src = ci.source;
      Taint t;
      switch (src->kind) {
        case ValueSource::Kind::kUniform: t = Taint{}; break;
        case ValueSource::Kind::kRank: t = local_at(loc, "rank obtained from '" + ci.name + "' here"); break;
        case ValueSource::Kind::kLocal: t = local_at(loc, src->what); break;
        case ValueSource::Kind::kFiniteness: {
          Taint in;
          for (const Expr* a : args) in.join(eval(a, c));
          if (!in.any()) return {};
          // The test itself is the explanation users recognise (the TF 2.4 LossScaleOptimizer check).
          Taint named = local_at(loc, src->what);
          in.origin = named.origin;
          return in;
        }
      }
      if (src->out_arg < 0 && !src->all_out_args) return t;
      if (apply) {
        for (size_t i = 0; i < args.size(); ++i) {
          bool target = src->all_out_args ? true : static_cast<int>(i) == src->out_arg;
          if (!target) continue;
          QualType pt = i < callee->getNumParams() ? callee->getParamDecl(i)->getType() : args[i]->getType();
          if (src->all_out_args && !(pt->isPointerType() && !pt->getPointeeType().isConstQualified()) &&
              !(pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified()))
            continue;
          write_through(args[i], t, true, pt->isReferenceType(), s);
        }
      }
      // What a rank-local source returns (a byte count, a status) is rank-local as well.
      return src->out_arg < 0 || src->kind == ValueSource::Kind::kLocal ? t : Taint{};
    }

    // istream extraction (`in >> x`) and reads: file input.
    if (apply && object && is_istream(object)) {
      Taint t = local_at(loc, "file input read here");
      for (size_t i = 0; i < args.size(); ++i) {
        QualType pt = args[i]->getType();
        if (i < callee->getNumParams()) pt = callee->getParamDecl(i)->getType();
        if (pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified()) write_through(args[i], t, true, true, s);
        if (pt->isPointerType() && !pt->getPointeeType().isConstQualified()) write_through(args[i], t, true, false, s);
      }
    }
    if (apply && !object && callee->getOverloadedOperator() == OO_GreaterGreater && args.size() == 2 && is_istream(args[0]))
      write_through(args[1], local_at(loc, "file input read here"), true, true, s);

    if (ci.kind == CalleeKind::kUser) {
      FunctionInfo& fi = infos_[callee->getDefinition()];
      if (c.fn) c.fn->callees.insert(callee->getDefinition());
      if (!fi.has_summary) return {};
      const Summary& sum = fi.summary;
      std::vector<const Expr*> full = args;
      if (object && isa<CXXMethodDecl>(callee)) {
        // The summary's parameters do not include `this`; member state is treated as uniform.
      }
      if (apply) {
        // Effects on the caller's arguments, evaluated before any of them is written.
        std::vector<std::pair<size_t, std::pair<Taint, Taint>>> writes;
        for (size_t i = 0; i < full.size() && i < sum.out_val.size(); ++i)
          writes.push_back({i, {substitute(sum.out_val[i], full, c), substitute(sum.out_mem[i], full, c)}});
        for (auto& [i, w] : writes) {
          QualType pt = callee->getParamDecl(i)->getType();
          if (pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified()) {
            write(storage_of(full[i], false), w.first, true, s);
            auto st = storage_of(full[i], false);
            if (st.first && holds_memory(st.first->getType())) write({st.first, false}, w.second, true, s);
          } else if (pt->isPointerType() && !pt->getPointeeType().isConstQualified()) {
            write(storage_of(full[i], true), w.second, true, s);
          }
        }
        if (recording_) {
          for (const Event& inner : sum.events) {
            Event ev = inner;
            ev.site = loc;
            ev.via = callee;
            ev.control = substitute(inner.control, full, c);
            for (auto& a : ev.args) a.taint = substitute(a.taint, full, c);
            block_events_->push_back(std::move(ev));
          }
        }
      }
      return substitute(sum.result, full, c, call);
    }

    // Unknown function: the result depends on the arguments' values and on what raw pointers point to;
    // what it writes through non-const pointers and references takes in what it was given.
    Taint t;
    for (const Expr* a : args) {
      t.join(eval(a, c));
      if (a->getType()->isPointerType()) t.join(eval_mem(a, c));
    }
    const auto* method = dyn_cast<CXXMethodDecl>(callee);
    if (object) {
      Taint obj = eval(object, c);
      bool element = is_method_named(method, {"at", "front", "back", "value", "top"}) ||
                     callee->getOverloadedOperator() == OO_Subscript || callee->getOverloadedOperator() == OO_Star ||
                     callee->getOverloadedOperator() == OO_Arrow || callee->getOverloadedOperator() == OO_Call;
      if (element) obj.join(eval_mem(object, c));
      t.join(obj);
      if (apply && method && !method->isConst() && !element && !args.empty()) {
        Taint in;
        for (const Expr* a : args) in.join(eval(a, c));
        auto st = storage_of(object, false);
        write(st, in, false, s);
        if (st.first && holds_memory(st.first->getType())) write({st.first, false}, in, false, s);
      }
    }
    if (apply) {
      Taint in = t;
      for (size_t i = 0; i < args.size() && i < callee->getNumParams(); ++i) {
        QualType pt = callee->getParamDecl(i)->getType();
        if (pt->isPointerType() && !pt->getPointeeType().isConstQualified() && in.any())
          write_through(args[i], in, false, false, s);
        else if (pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified() && in.any())
          write_through(args[i], in, false, true, s);
      }
    }
    return t;
  }

  // ---- statements ----
  void transfer(const Stmt* st, Ctx& c) {
    State& s = *c.state;
    if (const auto* ds = dyn_cast<DeclStmt>(st)) {
      for (const Decl* d : ds->decls()) {
        const auto* vd = dyn_cast<VarDecl>(d);
        if (!vd) continue;
        const Expr* init = vd->getInit();
        QualType t = vd->getType();
        s.val[vd] = init ? eval(init, c) : Taint{};
        if (t->isReferenceType()) {
          if (init && holds_memory(t)) s.mem[vd] = eval_mem(init, c);
          continue;
        }
        if (t->isPointerType()) {
          const Expr* bare = init ? init->IgnoreParenCasts() : nullptr;
          if (bare && (isa<CXXNewExpr>(bare) || (isa<CallExpr>(bare) && is_allocation(cast<CallExpr>(bare)))))
            s.mem[vd] = fresh_buffer(vd);
          else
            s.mem[vd] = init ? eval_mem(init, c) : Taint{};
          continue;
        }
        if (t->isArrayType() || is_buffer_class(t)) {
          const Expr* bare = init ? init->IgnoreImplicit() : nullptr;
          if (bare && isa<InitListExpr>(bare)) {
            s.mem[vd] = eval(bare, c);
          } else if (const auto* cons = dyn_cast_or_null<CXXConstructExpr>(bare)) {
            if (cons->getNumArgs() == 1 && cons->getConstructor()->isCopyOrMoveConstructor())
              s.mem[vd] = eval_mem(cons->getArg(0), c);
            else
              s.mem[vd] = fresh_buffer(vd);  // vector(n), array: filled by this rank
          } else if (const auto* call = dyn_cast_or_null<CallExpr>(bare); call && !is_view_of_object(call)) {
            s.mem[vd] = fresh_buffer(vd);    // a container some function made: no collective produced it
          } else if (bare) {
            s.mem[vd] = eval_mem(bare, c);   // an iterator or view into another container
          } else if (t.isConstQualified() && vd->isStaticLocal()) {
            s.mem[vd] = Taint{};
          } else {
            s.mem[vd] = fresh_buffer(vd);
          }
        }
      }
      return;
    }
    if (const auto* bo = dyn_cast<BinaryOperator>(st)) {
      if (!bo->isAssignmentOp()) return;
      Taint t = bo->isCompoundAssignmentOp() ? joined(eval(bo->getLHS(), c), eval(bo->getRHS(), c)) : eval(bo->getRHS(), c);
      assign(bo->getLHS(), bo->getRHS(), t, c);
      return;
    }
    if (const auto* uo = dyn_cast<UnaryOperator>(st)) {
      if (!uo->isIncrementDecrementOp()) return;
      // x++ keeps x's uniformity, unless only some ranks get here.
      if (ctx_taint_.any()) write(storage_of(uo->getSubExpr(), false), Taint{}, false, s);
      return;
    }
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(st); oc && oc->isAssignmentOp() && !getUserCallee(oc)) {
      Taint t = eval(oc->getArg(1), c);
      assign(oc->getArg(0), oc->getArg(1), t, c);
      return;
    }
    if (const auto* call = dyn_cast<CallExpr>(st)) {
      eval_call(call, c, /*apply=*/true);
      return;
    }
    if (const auto* ret = dyn_cast<ReturnStmt>(st)) {
      if (recording_ && ret->getRetValue()) return_taint_.join(joined(eval(ret->getRetValue(), c), ctx_taint_));
      return;
    }
  }
  const FunctionDecl* getUserCallee(const CallExpr* call) {
    const FunctionDecl* f = call->getDirectCallee();
    if (!f) return nullptr;
    return callee_info(f).kind == CalleeKind::kUser ? f : nullptr;
  }

  void assign(const Expr* lhs, const Expr* rhs, const Taint& t, Ctx& c) {
    State& s = *c.state;
    const Expr* l = lhs->IgnoreParenImpCasts();
    if (const auto* dre = dyn_cast<DeclRefExpr>(l)) {
      if (const auto* vd = dyn_cast<VarDecl>(dre->getDecl())) {
        s.val[vd] = joined(t, ctx_taint_);
        if (holds_memory(vd->getType()) && !vd->getType()->isArrayType()) s.mem[vd] = joined(eval_mem(rhs, c), ctx_taint_);
      }
      return;
    }
    // Element or field writes: weak, the rest of the object keeps what it had; a rank-local index makes
    // the contents rank-local too.
    Taint idx;
    if (const auto* ase = dyn_cast<ArraySubscriptExpr>(l)) idx = eval(ase->getIdx(), c);
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(l); oc && oc->getOperator() == OO_Subscript && oc->getNumArgs() > 1)
      idx = eval(oc->getArg(1), c);
    write(storage_of(l, false), joined(t, idx), false, s);
  }

  // begin()/end()/data() and iterator arithmetic: the result refers into the object's elements.
  bool is_view_of_object(const CallExpr* call) {
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call))
      return is_method_named(mc->getMethodDecl(), {"data", "begin", "end", "cbegin", "cend", "rbegin", "rend"});
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(call))
      return oc->getOperator() == OO_Plus || oc->getOperator() == OO_Minus || oc->getOperator() == OO_PlusPlus;
    const FunctionDecl* f = call->getDirectCallee();
    return f && f->getIdentifier() && (f->getName() == "begin" || f->getName() == "end");
  }

  bool is_allocation(const CallExpr* call) {
    const FunctionDecl* f = call->getDirectCallee();
    if (!f || !f->getIdentifier()) return false;
    auto n = f->getName();
    return n == "malloc" || n == "calloc" || n == "realloc" || n == "aligned_alloc";
  }
  // What a buffer no collective produced holds is rank-local when it is data (numbers, bytes); a
  // container of handles, pointers or records is bookkeeping and is judged by what is stored in it.
  Taint fresh_buffer(const ValueDecl* vd) {
    if (!holds_data(vd->getType())) return Taint{};
    return local_at(vd->getLocation(), "'" + vd->getNameAsString() + "' holds rank-local data (no collective produced it)");
  }
  static bool holds_data(QualType t) {
    t = t.getNonReferenceType();
    QualType elem;
    if (const auto* at = t->getAsArrayTypeUnsafe()) elem = at->getElementType();
    else if (t->isPointerType()) elem = t->getPointeeType();
    else if (const auto* rd = t->getAsCXXRecordDecl(); rd && rd->hasDefinition()) {
      for (const auto* m : rd->methods()) {
        if (m->getOverloadedOperator() == OO_Subscript || (m->getIdentifier() && m->getName() == "data")) {
          elem = m->getReturnType().getNonReferenceType();
          if (elem->isPointerType()) elem = elem->getPointeeType();
          break;
        }
      }
    }
    if (elem.isNull()) return true;
    elem = elem.getCanonicalType();
    return elem->isArithmeticType() || elem->isVoidType() || elem->isEnumeralType() || elem->isDependentType();
  }

  // ---- per function ----
  State entry_state(const FunctionInfo& fi) {
    State s;
    s.reached = true;
    const FunctionDecl* f = fi.decl;
    bool is_main = f->isMain();
    for (unsigned i = 0; i < f->getNumParams(); ++i) {
      const ParmVarDecl* p = f->getParamDecl(i);
      if (is_main) {
        if (catalog_.argv_is_local()) {
          Taint t = local_at(p->getLocation(), "command-line argument '" + p->getNameAsString() + "' declared here");
          s.val[p] = t;
          s.mem[p] = t;
        }
        continue;
      }
      if (!called_.count(f) && holds_memory(p->getType())) {
        // Nothing in this translation unit calls it: what its buffers hold came from no collective we can see.
        s.mem[p] = fresh_buffer(p);
        continue;
      }
      if (i >= kMaxParams) continue;
      Taint v;
      v.params = 1u << i;
      s.val[p] = v;
      Taint m;
      m.param_mem = 1u << i;
      if (holds_memory(p->getType())) s.mem[p] = m;
    }
    return s;
  }

  bool analyze(FunctionInfo& fi) {
    const bool report = true;
    fi.findings.clear();
    current_ = &fi;
    if (!fi.cfg) return false;
    CFG& cfg = *fi.cfg;
    unsigned n = cfg.getNumBlockIDs();
    std::vector<State> in(n);
    in[cfg.getEntry().getBlockID()] = entry_state(fi);
    // Reverse post-order from the entry.
    std::vector<const CFGBlock*> rpo;
    {
      std::vector<char> seen(n, 0);
      std::vector<std::pair<const CFGBlock*, CFGBlock::const_succ_iterator>> stack;
      stack.push_back({&cfg.getEntry(), cfg.getEntry().succ_begin()});
      seen[cfg.getEntry().getBlockID()] = 1;
      while (!stack.empty()) {
        auto& [b, it] = stack.back();
        if (it == b->succ_end()) {
          rpo.push_back(b);
          stack.pop_back();
          continue;
        }
        const CFGBlock* next = it->getReachableBlock();
        ++it;
        if (next && !seen[next->getBlockID()]) {
          seen[next->getBlockID()] = 1;
          stack.push_back({next, next->succ_begin()});
        }
      }
      std::reverse(rpo.begin(), rpo.end());
    }
    recording_ = false;
    std::vector<Taint> cond(n);
    std::vector<std::vector<const CFGBlock*>> controllers(n);
    std::vector<char> dropped_now;
    auto refresh_controllers = [&] {
      std::vector<char> dropped = exit_edges_to_drop(fi, rpo, cond);
      if (!controllers.empty() && dropped == dropped_now && !dropped_now.empty()) return false;
      dropped_now = dropped;
      compute_control_dependence(fi, rpo, dropped);
      for (const CFGBlock* b : rpo) controllers[b->getBlockID()] = controllers_of(fi, b);
      return true;
    };
    refresh_controllers();
    std::vector<const Expr*> cond_expr(n, nullptr);
    auto context_of = [&](const CFGBlock* b) {
      Taint t;
      for (const CFGBlock* a : controllers[b->getBlockID()]) t.join(cond[a->getBlockID()]);
      return t;
    };
    auto eval_condition = [&](const CFGBlock* b, Ctx& c) {
      const Stmt* term = b->getTerminatorStmt();
      if (!term) return;
      Taint t;
      const Expr* ce = nullptr;
      if (isa<CXXTryStmt>(term)) {
        t = local_at(term->getBeginLoc(), "whether an exception was thrown differs across ranks");
      } else if ((ce = dyn_cast_or_null<Expr>(const_cast<CFGBlock*>(b)->getTerminatorCondition(/*StripParens=*/false)))) {
        t = eval(ce, c);
      } else if (const auto* ss = dyn_cast<SwitchStmt>(term)) {
        ce = ss->getCond();
        t = eval(ce, c);
      }
      cond_expr[b->getBlockID()] = ce;
      cond[b->getBlockID()].join(t);
    };
    for (int iter = 0; iter < 64; ++iter) {
      bool changed = false;
      for (const CFGBlock* b : rpo) {
        if (!in[b->getBlockID()].reached) continue;
        State s = in[b->getBlockID()];
        Ctx c{&fi, &s, nullptr};
        ctx_taint_ = context_of(b);
        for (const CFGElement& el : *b)
          if (auto cs = el.getAs<CFGStmt>()) transfer(cs->getStmt(), c);
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

    // Recording pass: collectives per block, condition taints, returns, state at exit.
    recording_ = true;
    return_taint_ = Taint{};
    std::vector<std::vector<Event>> events(n);
    for (const CFGBlock* b : rpo) {
      if (!in[b->getBlockID()].reached) continue;
      State s = in[b->getBlockID()];
      Ctx c{&fi, &s, nullptr};
      ctx_taint_ = context_of(b);
      block_events_ = &events[b->getBlockID()];
      for (const CFGElement& el : *b)
        if (auto cs = el.getAs<CFGStmt>()) transfer(cs->getStmt(), c);
    }
    block_events_ = nullptr;
    recording_ = false;
    ctx_taint_ = Taint{};

    Summary sum;
    sum.result = return_taint_;
    const FunctionDecl* f = fi.decl;
    State exit_state = in[cfg.getExit().getBlockID()];
    for (unsigned i = 0; i < f->getNumParams(); ++i) {
      const ParmVarDecl* p = f->getParamDecl(i);
      Taint v, m;
      if (exit_state.reached) {
        v = var_val(p, exit_state);
        m = var_mem(p, exit_state);
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
          if (t.local && (!local_ctrl || (is_loop(local_ctrl->getTerminatorStmt()) && !is_loop(a->getTerminatorStmt()))))
            local_ctrl = a;
          if ((t.params || t.param_mem) && !param_ctrl) param_ctrl = a;
        }
        if (param_ctrl) {
          Taint sym = cond[param_ctrl->getBlockID()].symbolic_part();
          if (!up.control.any()) up.control_loc = cond_loc(param_ctrl, cond_expr);
          up.control.join(sym);
        }
        for (auto& a : up.args) a.taint = a.taint.local ? Taint{} : a.taint.symbolic_part();
        up.site = ev.site;
        sum.events.push_back(up);

        if (!report) continue;
        unsigned site_key = ev.site.getRawEncoding();
        if (local_ctrl && !reported_sites.count(site_key)) {
          reported_sites.insert(site_key);
          report_conditional(fi, ev, local_ctrl, cond[local_ctrl->getBlockID()], cond_expr);
        } else if (ev.control.local && !reported_sites.count(site_key)) {
          reported_sites.insert(site_key);
          report_callee_condition(ev);
        }
        for (const auto& a : ev.args)
          if (a.taint.local) report_argument(ev, a);
      }
    }

    bool changed = !fi.has_summary || !fi.summary.same(sum);
    fi.summary = std::move(sum);
    fi.has_summary = true;
    return changed;
  }

  std::vector<const CFGBlock*> controllers_of(FunctionInfo& fi, const CFGBlock* b) {
    std::vector<const CFGBlock*> order;
    llvm::SmallPtrSet<const CFGBlock*, 16> seen;
    std::vector<const CFGBlock*> work{b};
    while (!work.empty()) {
      std::vector<const CFGBlock*> next;
      for (const CFGBlock* x : work)
        for (const CFGBlock* a : fi.cd[x->getBlockID()])
          if (seen.insert(a).second) {
            order.push_back(a);
            next.push_back(a);
          }
      work = std::move(next);
    }
    return order;
  }

  // A successor that only leads out of the function (return, throw, exit) through straight-line code.
  bool exit_bound(const CFG& cfg, const CFGBlock* s) {
    for (int steps = 0; s && steps < 16; ++steps) {
      if (s == &cfg.getExit()) return true;
      const CFGBlock* next = nullptr;
      int count = 0;
      for (const CFGBlock* x : s->succs())
        if (x) {
          next = x;
          ++count;
        }
      if (count != 1) return false;
      s = next;
    }
    return false;
  }

  // Edges (block id * 2 + successor index) left out of control dependence: the exit side of a uniform
  // two-way branch such as `if (!status.ok()) return fail(...)`. Every rank that reaches such a check
  // decides alike, and error paths would otherwise make everything after them look conditional on
  // whatever led to the check.
  std::vector<char> exit_edges_to_drop(FunctionInfo& fi, const std::vector<const CFGBlock*>& rpo,
                                       const std::vector<Taint>& cond) {
    std::vector<char> dropped(fi.cfg->getNumBlockIDs() * 2, 0);
    for (const CFGBlock* b : rpo) {
      if (b->succ_size() != 2 || cond[b->getBlockID()].any() || !b->getTerminatorStmt()) continue;
      const CFGBlock* s0 = b->succ_begin()->getReachableBlock();
      const CFGBlock* s1 = (b->succ_begin() + 1)->getReachableBlock();
      if (!s0 || !s1) continue;
      bool e0 = exit_bound(*fi.cfg, s0), e1 = exit_bound(*fi.cfg, s1);
      if (e0 != e1) dropped[b->getBlockID() * 2 + (e0 ? 0 : 1)] = 1;
    }
    return dropped;
  }

  // Post-dominators over the kept edges, then control dependence (Ferrante et al.): for an edge a -> s,
  // s and its post-dominators up to a's immediate post-dominator depend on a.
  void compute_control_dependence(FunctionInfo& fi, const std::vector<const CFGBlock*>& rpo,
                                  const std::vector<char>& dropped) {
    const CFG& cfg = *fi.cfg;
    unsigned n = cfg.getNumBlockIDs();
    unsigned exit_id = cfg.getExit().getBlockID();
    std::vector<std::vector<const CFGBlock*>> succs(n);
    for (const CFGBlock* b : rpo) {
      unsigned k = 0;
      for (auto it = b->succ_begin(); it != b->succ_end(); ++it, ++k) {
        const CFGBlock* s = it->getReachableBlock();
        if (s && !(k < 2 && dropped[b->getBlockID() * 2 + k])) succs[b->getBlockID()].push_back(s);
      }
    }
    // Blocks that reach the exit over kept edges; the others (endless loops) post-dominate only themselves.
    std::vector<std::vector<unsigned>> preds(n);
    for (const CFGBlock* b : rpo)
      for (const CFGBlock* s : succs[b->getBlockID()]) preds[s->getBlockID()].push_back(b->getBlockID());
    std::vector<char> reaches(n, 0);
    std::vector<unsigned> work{exit_id};
    reaches[exit_id] = 1;
    while (!work.empty()) {
      unsigned x = work.back();
      work.pop_back();
      for (unsigned p : preds[x])
        if (!reaches[p]) {
          reaches[p] = 1;
          work.push_back(p);
        }
    }
    std::vector<llvm::BitVector> pdom(n, llvm::BitVector(n, true));
    for (unsigned i = 0; i < n; ++i)
      if (!reaches[i] || i == exit_id) {
        pdom[i].reset();
        pdom[i].set(i);
      }
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = rpo.rbegin(); it != rpo.rend(); ++it) {
        unsigned b = (*it)->getBlockID();
        if (b == exit_id || !reaches[b]) continue;
        llvm::BitVector next(n, true);
        bool any = false;
        for (const CFGBlock* s : succs[b])
          if (reaches[s->getBlockID()]) {
            next &= pdom[s->getBlockID()];
            any = true;
          }
        if (!any) next.reset();
        next.set(b);
        if (next != pdom[b]) {
          pdom[b] = std::move(next);
          changed = true;
        }
      }
    }
    fi.ipdom.assign(n, -1);
    for (const CFGBlock* blk : rpo) {
      unsigned b = blk->getBlockID();
      unsigned size = pdom[b].count();
      for (int d = pdom[b].find_first(); d >= 0; d = pdom[b].find_next(d))
        if (static_cast<unsigned>(d) != b && pdom[d].count() == size - 1) {
          fi.ipdom[b] = d;
          break;
        }
    }
    fi.cd.assign(n, {});
    std::vector<const CFGBlock*> by_id(n, nullptr);
    for (const CFGBlock* b : rpo) by_id[b->getBlockID()] = b;
    for (const CFGBlock* a : rpo) {
      const auto& out = succs[a->getBlockID()];
      if (out.size() < 2) continue;
      int stop = fi.ipdom[a->getBlockID()];
      for (const CFGBlock* s : out) {
        int runner = static_cast<int>(s->getBlockID());
        for (int guard = 0; runner >= 0 && runner != stop && guard < static_cast<int>(n); ++guard) {
          auto& list = fi.cd[runner];
          if (std::find(list.begin(), list.end(), a) == list.end()) list.push_back(a);
          runner = fi.ipdom[runner];
        }
      }
    }
  }

  // Both (all) sides of the branch at `a` perform the same sequence of collectives before they meet again.
  bool balanced(FunctionInfo& fi, const CFGBlock* a, const std::vector<std::vector<Event>>& events) {
    const CFGBlock* merge = nullptr;
    if (int d = fi.ipdom[a->getBlockID()]; d >= 0)
      for (const CFGBlock* b : *fi.cfg)
        if (static_cast<int>(b->getBlockID()) == d) merge = b;
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
    bool result = ok && succs > 1 && seqs.size() == 1;
    return result;
  }

  SourceLocation cond_loc(const CFGBlock* a, const std::vector<const Expr*>& cond_expr) {
    if (const Expr* e = cond_expr[a->getBlockID()]) return e->getBeginLoc();
    if (const Stmt* t = a->getTerminatorStmt()) return t->getBeginLoc();
    return {};
  }

  // ---- findings ----
  SourcePoint point(SourceLocation loc) {
    SourcePoint p;
    if (loc.isInvalid()) return p;
    SourceLocation fl = sm_.getFileLoc(loc);
    PresumedLoc pl = sm_.getPresumedLoc(fl);
    if (pl.isInvalid()) return p;
    p.file = pl.getFilename();
    p.line = pl.getLine();
    p.column = pl.getColumn();
    return p;
  }

  bool suppressed(SourceLocation loc, const std::string& rule) {
    SourceLocation fl = sm_.getFileLoc(loc);
    FileID fid = sm_.getFileID(fl);
    bool invalid = false;
    llvm::StringRef buf = sm_.getBufferData(fid, &invalid);
    if (invalid) return false;
    unsigned line = sm_.getSpellingLineNumber(fl);
    std::string tag = "lockstep: ignore[" + rule + "]";
    for (unsigned l : {line, line - 1}) {
      if (l == 0) continue;
      SourceLocation start = sm_.translateLineCol(fid, l, 1);
      unsigned off = sm_.getFileOffset(start);
      size_t end = buf.find('\n', off);
      llvm::StringRef text = buf.substr(off, end == llvm::StringRef::npos ? llvm::StringRef::npos : end - off);
      if (text.contains(tag)) return true;
    }
    return false;
  }

  bool in_user_code(SourceLocation loc) {
    SourceLocation fl = sm_.getFileLoc(loc);
    return fl.isValid() && !sm_.isInSystemHeader(fl);
  }

  void emit(Finding f, SourceLocation loc) {
    if (!in_user_code(loc) || suppressed(loc, f.rule)) return;
    f.at = point(loc);
    current_->findings.push_back(std::move(f));
  }

  const Stmt* parent_of(FunctionInfo& fi, const Stmt* s) {
    if (fi.parents.empty() && fi.decl->getBody()) {
      std::vector<const Stmt*> work{fi.decl->getBody()};
      while (!work.empty()) {
        const Stmt* p = work.back();
        work.pop_back();
        for (const Stmt* child : p->children())
          if (child) {
            fi.parents[child] = p;
            work.push_back(child);
          }
      }
    }
    auto it = fi.parents.find(s);
    return it == fi.parents.end() ? nullptr : it->second;
  }

  void add_origin_note(Finding& f, int origin) {
    for (int depth = 0; origin >= 0 && depth < 4; ++depth, origin = origins_[origin].cause)
      f.notes.push_back({point(origins_[origin].loc), origins_[origin].what});
  }

  static bool is_loop(const Stmt* t) {
    return t && (isa<ForStmt>(t) || isa<WhileStmt>(t) || isa<DoStmt>(t) || isa<CXXForRangeStmt>(t));
  }

  std::string callee_name(const Event& ev) { return ev.via ? qualified_name(ev.via) : ev.collective; }

  void report_conditional(FunctionInfo& fi, const Event& ev, const CFGBlock* a, const Taint& t,
                          const std::vector<const Expr*>& cond_expr) {
    const Stmt* term = a->getTerminatorStmt();
    // Walk up from a short-circuit operand to the statement that owns the condition.
    const Stmt* owner = term;
    if (term && isa<BinaryOperator>(term)) {
      for (const Stmt* p = parent_of(fi, term); p; p = parent_of(fi, p)) {
        owner = p;
        if (!isa<Expr>(p)) break;
      }
    }
    bool loop = is_loop(owner);
    bool inside = owner && sm_.isPointWithin(sm_.getFileLoc(ev.site), sm_.getFileLoc(owner->getBeginLoc()),
                                             sm_.getFileLoc(owner->getEndLoc()));
    std::string what = ev.via ? "call to '" + callee_name(ev) + "' (performs collective '" + ev.collective + "')"
                              : "collective '" + ev.collective + "'";
    Finding f;
    f.rule = "conditional-collective";
    std::string cond_note;
    if (isa_and_nonnull<CXXTryStmt>(term)) {
      f.message = what + " runs only on ranks that caught an exception; agree on the failure across ranks "
                         "(e.g. allreduce an error flag) before calling it";
      cond_note = "exception handler entered here";
    } else if (loop) {
      f.message = what + " runs once per loop iteration, but the trip count depends on a rank-local value; "
                         "make the loop condition uniform (e.g. allreduce the stopping criterion first)";
      cond_note = "loop condition evaluated here";
    } else if (!inside) {
      f.message = what + " is skipped by ranks that leave early, and leaving depends on a rank-local value; "
                         "agree on the exit across ranks (e.g. allreduce the error flag) before leaving";
      cond_note = "early exit decided here";
    } else {
      f.message = what + " runs only on ranks where a rank-local condition holds; compute the condition from "
                         "values every rank agrees on (e.g. allreduce it first) or call the collective on every path";
      cond_note = "condition evaluated here";
    }
    f.notes.push_back({point(cond_loc(a, cond_expr)), cond_note});
    add_origin_note(f, t.origin);
    if (ev.via) f.notes.push_back({point(ev.loc), "collective '" + ev.collective + "' called here"});
    emit(std::move(f), ev.site);
  }

  void report_callee_condition(const Event& ev) {
    Finding f;
    f.rule = "conditional-collective";
    f.message = "call to '" + callee_name(ev) + "' performs collective '" + ev.collective +
                "' under a condition computed from a rank-local argument; pass a value every rank agrees on "
                "(e.g. allreduce it first)";
    f.notes.push_back({point(ev.control_loc), "condition evaluated here"});
    add_origin_note(f, ev.control.origin);
    f.notes.push_back({point(ev.loc), "collective '" + ev.collective + "' called here"});
    emit(std::move(f), ev.site);
  }

  void report_argument(const Event& ev, const Event::Arg& a) {
    Finding f;
    f.rule = "rank-dependent-argument";
    std::string role = role_name(a.role);
    if (role == "op") role = "reduction op";
    if (role == "comm") role = "communicator";
    if (ev.via) {
      f.message = "call to '" + callee_name(ev) + "' passes a rank-local value as the " + role + " of collective '" +
                  ev.collective + "'; every rank must pass the same " + role;
      add_origin_note(f, a.taint.origin);
      f.notes.push_back({point(ev.loc), "collective '" + ev.collective + "' called here"});
      emit(std::move(f), ev.site);
      return;
    }
    f.message = "the " + role + " of '" + ev.collective + "' is computed from a rank-local value; every rank must pass the same " + role;
    add_origin_note(f, a.taint.origin);
    emit(std::move(f), a.loc);
  }

  ASTContext& ctx_;
  SourceManager& sm_;
  const Catalog& catalog_;
  std::vector<Finding>& out_;
  std::vector<const FunctionDecl*> order_;
  std::set<const FunctionDecl*> called_;  // referenced from somewhere in the TU (called or address taken)
  std::map<const FunctionDecl*, FunctionInfo> infos_;
  std::map<const FunctionDecl*, CalleeInfo> callees_;  // stable references: eval_call holds one while recursing
  std::vector<Origin> origins_;
  std::map<std::tuple<unsigned, std::string, int>, int> origin_index_;
  bool recording_ = false;
  std::vector<Event>* block_events_ = nullptr;
  Taint return_taint_;
  Taint ctx_taint_;  // joined conditions controlling the block being transferred
  FunctionInfo* current_ = nullptr;
  llvm::DenseMap<const CXXRecordDecl*, bool> buffer_classes_;
};

class FunctionCollector : public RecursiveASTVisitor<FunctionCollector> {
 public:
  FunctionCollector(SourceManager& sm, TuAnalyzer& a) : sm_(sm), a_(a) {}
  // System headers hold no code to analyze; skipping them keeps the walk a small part of the parse.
  bool TraverseDecl(Decl* d) {
    if (d && !isa<TranslationUnitDecl>(d)) {
      SourceLocation loc = d->getLocation();
      if (loc.isValid() && sm_.isInSystemHeader(sm_.getFileLoc(loc))) return true;
    }
    return RecursiveASTVisitor<FunctionCollector>::TraverseDecl(d);
  }
  bool VisitFunctionDecl(FunctionDecl* f) {
    if (!f->doesThisDeclarationHaveABody() || f->isDependentContext() || f->isInvalidDecl()) return true;
    SourceLocation loc = sm_.getFileLoc(f->getLocation());
    if (loc.isInvalid() || sm_.isInSystemHeader(loc)) return true;
    if (has_collective_annotation(f)) return true;  // a declared collective: its inside is not the user's concern
    a_.add_function(f);
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr* e) {
    if (const auto* f = dyn_cast<FunctionDecl>(e->getDecl())) a_.add_called(f);
    return true;
  }
  bool VisitMemberExpr(MemberExpr* e) {
    if (const auto* f = dyn_cast<FunctionDecl>(e->getMemberDecl())) a_.add_called(f);
    return true;
  }

 private:
  SourceManager& sm_;
  TuAnalyzer& a_;
};

class LintConsumer : public ASTConsumer {
 public:
  LintConsumer(const Catalog& catalog, std::vector<Finding>& out) : catalog_(catalog), out_(out) {}
  void HandleTranslationUnit(ASTContext& ctx) override {
    if (ctx.getDiagnostics().hasErrorOccurred()) return;  // reported by the driver; exit code 2
    TuAnalyzer analyzer(ctx, catalog_, out_);
    FunctionCollector collector(ctx.getSourceManager(), analyzer);
    collector.TraverseDecl(ctx.getTranslationUnitDecl());
    analyzer.run();
  }

 private:
  const Catalog& catalog_;
  std::vector<Finding>& out_;
};

}  // namespace

std::unique_ptr<ASTConsumer> make_lint_consumer(const Catalog& catalog, std::vector<Finding>& out) {
  return std::make_unique<LintConsumer>(catalog, out);
}

}  // namespace lockstep::lint
