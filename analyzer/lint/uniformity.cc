// The uniformity evaluator of the lint analysis (see uniformity.h).
// long file: one transfer function over Clang's expression and statement kinds; its cases share the
// block context and the value rules, and splitting it by kind would scatter those.
#include "lint/uniformity.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtCXX.h>

#include <set>

namespace lockstep::lint {

using namespace clang;

const CalleeInfo& TuContext::callee_info(const FunctionDecl* f) {
  auto [it, inserted] = callees_.try_emplace(f);
  if (!inserted) return it->second;
  CalleeInfo& ci = it->second;
  ci.name = qualified_name(f);
  if ((ci.collective = catalog.find_collective(ci.name))) {
    ci.kind = CalleeKind::kCollective;
  } else if (has_collective_annotation(f)) {
    ci.kind = CalleeKind::kCollective;
  } else if ((ci.source = catalog.find_source(ci.name))) {
    ci.kind = CalleeKind::kSource;
  } else if (const FunctionDecl* def = f->getDefinition(); def && infos.count(def)) {
    ci.kind = CalleeKind::kUser;
  }
  return ci;
}

Taint TuContext::local_at(SourceLocation loc, const std::string& what, int cause) {
  auto key = std::make_tuple(loc.getRawEncoding(), what, cause);
  auto it = origin_index_.find(key);
  int idx;
  if (it != origin_index_.end()) {
    idx = it->second;
  } else {
    origins.push_back({loc, what, cause});
    idx = origin_index_[key] = static_cast<int>(origins.size()) - 1;
  }
  Taint t;
  t.local = true;
  t.origin = idx;
  return t;
}

namespace {
bool is_environment_read(const std::string& name) {
  return name == "getenv" || name == "std::getenv" || name == "secure_getenv";
}
}  // namespace

Taint Evaluator::fresh_buffer(const ValueDecl* vd) {
  if (!holds_data(vd->getType())) return Taint{};
  return tu_.local_at(vd->getLocation(),
                      "'" + vd->getNameAsString() + "' holds rank-local data (no collective produced it)");
}

const RecordDecl* field_record(QualType t) {
  t = t.getNonReferenceType();
  while (true) {
    if (t->isPointerType())
      t = t->getPointeeType();
    else if (const auto* at = t->getAsArrayTypeUnsafe())
      t = at->getElementType();
    else
      break;
  }
  const RecordDecl* rd = t->getAsRecordDecl();
  if (!rd || !(rd = rd->getDefinition()) || rd->isUnion()) return nullptr;
  if (const auto* cxx = dyn_cast<CXXRecordDecl>(rd); cxx && cxx->getNumBases() > 0) return nullptr;
  // Past this many fields a struct is an object with state (LULESH's Domain), read through methods.
  constexpr unsigned kMaxTrackedFields = 32;
  unsigned n = 0;
  for (const FieldDecl* f : rd->fields()) {
    (void)f;
    if (++n > kMaxTrackedFields) return nullptr;
  }
  return rd;
}
bool field_tracked(const FieldDecl* f) {
  return f && f->getParent() && field_record(f->getParent()->getASTContext().getRecordType(f->getParent()));
}

namespace {
// The taint of one field of an object: what the whole object holds and the field's own entry. A field
// of another struct than the one the entries are of (a cast) reads as the whole object.
Taint field_of(const Taint* whole, const FieldMap& fields, const ValueDecl* d, const FieldDecl* f) {
  Taint t = whole ? *whole : Taint{};
  auto it = fields.find(d);
  if (it == fields.end()) return t;
  bool mine = false;
  for (const auto& [g, ft] : it->second) {
    if (g == f) {
      t.join(ft);
      return t;
    }
    mine |= f && g->getParent() == f->getParent();
  }
  if (mine) return t;
  for (const auto& entry : it->second) t.join(entry.second);
  return t;
}
}  // namespace

Taint Evaluator::var_val(const ValueDecl* d, const State& s, const FieldDecl* field) {
  auto it = s.val.find(d);
  return field_of(it == s.val.end() ? nullptr : &it->second, s.fval, d, field);
}
Taint Evaluator::var_mem(const ValueDecl* d, const State& s, const FieldDecl* field) {
  auto it = s.mem.find(d);
  if (it != s.mem.end() || s.fmem.count(d))
    return field_of(it == s.mem.end() ? nullptr : &it->second, s.fmem, d, field);
  if (const auto* vd = dyn_cast<VarDecl>(d); vd && !tu_.types.holds_memory(vd->getType()))
    return var_val(d, s, field);
  return Taint{};
}

namespace {

// The same expression, structurally (`MPI_COMM_WORLD` twice, `comm` twice).
bool same_expr(const Expr* a, const Expr* b, const ASTContext& ctx) {
  llvm::FoldingSetNodeID ia, ib;
  a->IgnoreParenImpCasts()->Profile(ia, ctx, /*Canonical=*/true);
  b->IgnoreParenImpCasts()->Profile(ib, ctx, /*Canonical=*/true);
  return ia == ib;
}

const VarDecl* local_var(const Expr* e) {
  const auto* dre = e ? dyn_cast<DeclRefExpr>(e->IgnoreParenImpCasts()) : nullptr;
  const auto* vd = dre ? dyn_cast<VarDecl>(dre->getDecl()) : nullptr;
  return vd && vd->hasLocalStorage() && !isa<ParmVarDecl>(vd) ? vd : nullptr;
}

// Which variables of a function hold exactly a communicator's rank or size (see FunctionInfo::RankFact).
void collect_rank_facts(const FunctionDecl* f, std::map<const VarDecl*, FunctionInfo::RankFact>& facts) {
  std::set<const VarDecl*> spoiled;
  std::set<const Expr*> fact_writes;  // the `&v` arguments that establish a fact
  std::vector<const Stmt*> work{f->getBody()};
  std::vector<const Stmt*> all;
  while (!work.empty()) {
    const Stmt* s = work.back();
    work.pop_back();
    if (!s) continue;
    all.push_back(s);
    for (const Stmt* child : s->children()) work.push_back(child);
  }
  for (const Stmt* s : all) {
    const auto* call = dyn_cast<CallExpr>(s);
    const FunctionDecl* callee = call ? call->getDirectCallee() : nullptr;
    if (!callee || !callee->getIdentifier() || call->getNumArgs() != 2) continue;
    llvm::StringRef name = callee->getName();
    bool rank = name == "MPI_Comm_rank" || name == "ncclCommUserRank";
    bool size = name == "MPI_Comm_size" || name == "ncclCommCount";
    if (!rank && !size) continue;
    const auto* addr = dyn_cast<UnaryOperator>(call->getArg(1)->IgnoreParenImpCasts());
    const VarDecl* v = addr && addr->getOpcode() == UO_AddrOf ? local_var(addr->getSubExpr()) : nullptr;
    if (!v) continue;
    auto [it, inserted] = facts.try_emplace(v, FunctionInfo::RankFact{rank, call->getArg(0)});
    if (!inserted &&
        (it->second.is_rank != rank || !same_expr(it->second.comm, call->getArg(0), f->getASTContext())))
      spoiled.insert(v);
    fact_writes.insert(addr);
  }
  for (const Stmt* s : all) {
    if (const auto* bo = dyn_cast<BinaryOperator>(s); bo && bo->isAssignmentOp()) {
      if (const VarDecl* v = local_var(bo->getLHS())) spoiled.insert(v);
    } else if (const auto* uo = dyn_cast<UnaryOperator>(s)) {
      if (uo->isIncrementDecrementOp() || (uo->getOpcode() == UO_AddrOf && !fact_writes.count(uo)))
        if (const VarDecl* v = local_var(uo->getSubExpr())) spoiled.insert(v);
    } else if (const auto* ds = dyn_cast<DeclStmt>(s)) {
      for (const Decl* d : ds->decls())
        if (const auto* vd = dyn_cast<VarDecl>(d);
            vd && vd->getInit() &&
            !vd->getInit()->IgnoreParenImpCasts()->isIntegerConstantExpr(vd->getASTContext()))
          spoiled.insert(vd);
    }
  }
  for (const VarDecl* v : spoiled) facts.erase(v);
}

}  // namespace

bool Evaluator::decided_by_range(const BinaryOperator* bo, FunctionInfo* fn) {
  if (!fn || !bo->isComparisonOp() || !fn->decl->getBody()) return false;
  if (!fn->rank_facts_ready) {
    collect_rank_facts(fn->decl, fn->rank_facts);
    fn->rank_facts_ready = true;
  }
  auto fact = [&](const Expr* e) -> const FunctionInfo::RankFact* {
    const VarDecl* v = local_var(e);
    auto it = v ? fn->rank_facts.find(v) : fn->rank_facts.end();
    return it == fn->rank_facts.end() ? nullptr : &it->second;
  };
  auto zero = [&](const Expr* e) {
    Expr::EvalResult r;
    return e->EvaluateAsInt(r, tu_.ast) && r.Val.getInt() == 0;
  };
  BinaryOperatorKind op = bo->getOpcode();
  const Expr* l = bo->getLHS();
  const Expr* r = bo->getRHS();
  // Put the rank on the left.
  const FunctionInfo::RankFact* fl = fact(l);
  if (!fl || !fl->is_rank) {
    std::swap(l, r);
    fl = fact(l);
    switch (op) {
      case BO_LT:
        op = BO_GT;
        break;
      case BO_GT:
        op = BO_LT;
        break;
      case BO_LE:
        op = BO_GE;
        break;
      case BO_GE:
        op = BO_LE;
        break;
      default:
        break;
    }
  }
  if (!fl || !fl->is_rank) return false;
  if (const FunctionInfo::RankFact* fr = fact(r); fr && !fr->is_rank) {
    // rank < size, rank >= size (same communicator).
    return same_expr(fl->comm, fr->comm, tu_.ast) && (op == BO_LT || op == BO_GE);
  }
  // rank >= 0, rank < 0.
  return zero(r) && (op == BO_GE || op == BO_LT);
}

// `field` narrows a read of a struct to one of its fields: it passes down to where the struct is stored
// (a variable, what a pointer points to, an array's elements) and is dropped anywhere else (a call's
// result, an arithmetic value), which reads the whole object and is never less than the field.
Taint Evaluator::eval(const Expr* e, BlockContext& c, const FieldDecl* field) {
  if (!e) return {};
  e = e->IgnoreParens();
  const State& s = *c.state;
  if (const auto* ce = dyn_cast<CastExpr>(e)) return eval(ce->getSubExpr(), c, field);
  if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
    if (isa<VarDecl>(dre->getDecl())) return var_val(dre->getDecl(), s, field);
    return {};
  }
  if (const auto* me = dyn_cast<MemberExpr>(e)) {
    if (isa<VarDecl>(me->getMemberDecl())) return {};  // static data member
    // The field nearest the variable is the one told apart (`a.b.c` reads `b` of `a`).
    const auto* fd = dyn_cast<FieldDecl>(me->getMemberDecl());
    if (me->isArrow()) return joined(eval(me->getBase(), c), eval_mem(me->getBase(), c, fd));
    return eval(me->getBase(), c, fd);
  }
  if (const auto* ase = dyn_cast<ArraySubscriptExpr>(e))
    return joined(eval_mem(ase->getBase(), c, field), eval(ase->getIdx(), c));
  if (const auto* uo = dyn_cast<UnaryOperator>(e)) {
    if (uo->getOpcode() == UO_Deref) return eval_mem(uo->getSubExpr(), c, field);
    if (uo->getOpcode() == UO_AddrOf) return {};
    return eval(uo->getSubExpr(), c);
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
    if (decided_by_range(bo, c.fn)) return {};
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
Taint Evaluator::eval_mem(const Expr* e, BlockContext& c, const FieldDecl* field) {
  if (!e) return {};
  e = e->IgnoreParens();
  if (const auto* ce = dyn_cast<CastExpr>(e)) return eval_mem(ce->getSubExpr(), c, field);
  if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
    if (isa<VarDecl>(dre->getDecl())) return var_mem(dre->getDecl(), *c.state, field);
    return {};
  }
  if (const auto* uo = dyn_cast<UnaryOperator>(e)) {
    if (uo->getOpcode() == UO_AddrOf) return eval(uo->getSubExpr(), c, field);
    if (uo->getOpcode() == UO_Deref) return eval_mem(uo->getSubExpr(), c, field);
    return eval_mem(uo->getSubExpr(), c, field);
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
    if (bo->getLHS()->getType()->isPointerType()) return eval_mem(bo->getLHS(), c, field);
    if (bo->getRHS()->getType()->isPointerType()) return eval_mem(bo->getRHS(), c, field);
    if (bo->isAssignmentOp() || bo->getOpcode() == BO_Comma) return eval_mem(bo->getRHS(), c, field);
    return {};
  }
  if (const auto* ase = dyn_cast<ArraySubscriptExpr>(e)) return eval_mem(ase->getBase(), c, field);
  if (const auto* me = dyn_cast<MemberExpr>(e)) {
    // What a field that is a pointer or array holds is shared by the object's memory, not told apart.
    if (me->isArrow()) return eval_mem(me->getBase(), c);
    return joined(eval(me->getBase(), c, dyn_cast<FieldDecl>(me->getMemberDecl())),
                  eval_mem(me->getBase(), c));
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
    return joined(eval(co->getCond(), c),
                  joined(eval_mem(co->getTrueExpr(), c), eval_mem(co->getFalseExpr(), c)));
  if (const auto* ewc = dyn_cast<ExprWithCleanups>(e)) return eval_mem(ewc->getSubExpr(), c);
  if (const auto* mte = dyn_cast<MaterializeTemporaryExpr>(e)) return eval_mem(mte->getSubExpr(), c);
  if (const auto* bte = dyn_cast<CXXBindTemporaryExpr>(e)) return eval_mem(bte->getSubExpr(), c);
  if (const auto* cons = dyn_cast<CXXConstructExpr>(e)) {
    if (cons->getNumArgs() == 1 && cons->getConstructor()->isCopyOrMoveConstructor())
      return eval_mem(cons->getArg(0), c);
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
Place Evaluator::storage_of(const Expr* e, bool address) {
  if (!e) return {nullptr, false};
  e = e->IgnoreParenImpCasts();
  if (const auto* ce = dyn_cast<CastExpr>(e)) return storage_of(ce->getSubExpr(), address);
  if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
    const auto* vd = dyn_cast<VarDecl>(dre->getDecl());
    if (!vd) return {nullptr, false};
    if (!address) return {vd, true};
    if (tu_.types.holds_memory(vd->getType())) return {vd, false};
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
    const auto* fd = dyn_cast<FieldDecl>(me->getMemberDecl());
    if (!field_tracked(fd)) fd = nullptr;
    // What a pointer or array field points to belongs to the object's memory as a whole.
    bool pointee = address && tu_.types.holds_memory(me->getType());
    Place base = me->isArrow() ? memory_of(me->getBase()) : storage_of(me->getBase(), false);
    if (pointee) return {base.decl, false, nullptr};
    if (!base.field) base.field = fd;
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
Place Evaluator::memory_of(const Expr* e) {
  Place p = storage_of(e, true);
  if (!p.decl) return {};
  if (p.is_val && tu_.types.holds_memory(p.decl->getType())) return {p.decl, false, nullptr};
  return p;
}

// Writes made under a rank-local condition are rank-local (only some ranks made them), except what a
// collective delivers.
Taint Evaluator::under_control(Taint t, const BlockContext& c) {
  Taint before = t;
  t.join(c.control);
  if (c.control.local && c.control_branch != kSeveralBranches &&
      (!before.local || before.written_under == c.control_branch))
    t.written_under = c.control_branch;
  return t;
}

void Evaluator::write(Place where, Taint t, bool strong, BlockContext& c, bool exact) {
  if (!where.decl) return;
  if (!exact) t = under_control(t, c);
  State& s = *c.state;
  if (where.field) {
    State::put_field(where.is_val ? s.fval : s.fmem, where.decl, where.field, t, strong);
    return;
  }
  auto& map = where.is_val ? s.val : s.mem;
  if (strong) {
    State::put(map, where.decl, t);
    (where.is_val ? s.fval : s.fmem).erase(where.decl);
  } else if (!State::uniform(t)) {
    map[where.decl].join(t);
  }
}
// Writes through a pointer or reference argument.
void Evaluator::write_through(const Expr* arg, const Taint& t, bool strong, bool by_reference,
                              BlockContext& c) {
  if (by_reference) {
    auto target = storage_of(arg, false);
    // Filling a container passed by reference changes what it holds, not its identity or shape.
    if (target.decl && target.is_val && tu_.types.is_buffer_class(target.decl->getType())) {
      write({target.decl, false}, t, strong, c);
      return;
    }
    write(target, t, strong, c);
    if (target.decl && target.is_val && tu_.types.holds_memory(target.decl->getType()))
      write({target.decl, false}, t, strong, c);
    return;
  }
  write(storage_of(arg, true), t, strong, c);
}

// ---- calls ----
std::vector<const Expr*> Evaluator::call_args(const CallExpr* call, const FunctionDecl* callee) {
  std::vector<const Expr*> args(call->arg_begin(), call->arg_end());
  // A member operator called as a CXXOperatorCallExpr has the object as its first argument.
  if (isa<CXXOperatorCallExpr>(call) && isa<CXXMethodDecl>(callee) && !args.empty()) args.erase(args.begin());
  return args;
}
const Expr* Evaluator::object_of(const CallExpr* call, const FunctionDecl* callee) {
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call)) return mc->getImplicitObjectArgument();
  if (isa<CXXOperatorCallExpr>(call) && isa<CXXMethodDecl>(callee) && call->getNumArgs() > 0)
    return call->getArg(0);
  return nullptr;
}

// `call` (when given) is the call whose result this is: a result made rank-local by an argument gets
// an origin at the call, chained to the test inside the callee and to where the argument came from.
Taint Evaluator::substitute(const Taint& t, const std::vector<const Expr*>& args, BlockContext& c,
                            const CallExpr* call) {
  Taint r;
  r.local = t.local;
  r.member_comm = t.member_comm;
  r.origin = t.local ? t.origin : -1;
  for (unsigned i = 0; i < args.size() && i < kMaxParams; ++i) {
    if (t.params & (1u << i)) r.join(eval(args[i], c));
    if (t.param_mem & (1u << i)) r.join(eval_mem(args[i], c));
  }
  for (unsigned k = 0; k < t.nfields; ++k) {
    const ParamField& pf = t.fields[k];
    if (pf.param >= args.size()) continue;
    r.join(pf.mem ? eval_mem(args[pf.param], c, pf.field) : eval(args[pf.param], c, pf.field));
  }
  if (!t.local && r.local) {
    int cause = r.origin;
    if (t.origin >= 0) {
      // A finiteness test inside the callee explains the result better than where the data came from.
      cause = tu_.local_at(tu_.origins[t.origin].loc, tu_.origins[t.origin].what, cause).origin;
    }
    const FunctionDecl* f = call ? call->getDirectCallee() : nullptr;
    if (f && f->getIdentifier())
      r.origin =
          tu_.local_at(call->getBeginLoc(),
                       "'" + f->getNameAsString() + "' computes its result from rank-local data here", cause)
              .origin;
    else
      r.origin = cause;
  }
  return r;
}

// The result taint of a call; with `apply`, also its effects on the state and, when recording, the
// collectives it performs.
Taint Evaluator::eval_call(const CallExpr* call, BlockContext& c, bool apply) {
  const FunctionDecl* callee = call->getDirectCallee();
  if (!callee) {
    Taint t = eval(call->getCallee(), c);
    for (const Expr* a : call->arguments()) t.join(eval(a, c));
    return t;
  }
  const CalleeInfo& ci = tu_.callee_info(callee);
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
            write(storage_of(args[i], true), Taint{}, true, c, /*exact=*/true);
            break;
          case ArgRole::kNewComm:
            if (coll->members_from_arguments) {
              Taint member;
              member.member_comm = true;
              if (c.control.local)
                member.members_under = c.control_branch ? c.control_branch : kSeveralBranches;
              // Strong only for a variable of its own: an element or field shares its object's taint.
              auto where = storage_of(args[i], true);
              write(where, member, where.is_val, c, /*exact=*/true);
            }
            break;
          case ArgRole::kOutLocal:
            write(storage_of(args[i], true),
                  tu_.local_at(loc, "'" + ci.name + "' delivers different data to each rank here"), true, c);
            break;
          default:
            break;
        }
      }
      if (c.events) {
        Event ev;
        ev.collective = coll ? coll->name : ci.name;
        ev.members_from_arguments = coll && coll->members_from_arguments;
        ev.loc = ev.site = loc;
        for (size_t i = 0; coll && i < args.size() && i < coll->args.size(); ++i)
          if (role_must_agree(coll->args[i]))
            ev.args.push_back({coll->args[i], eval(args[i], c), args[i]->getBeginLoc()});
        c.events->push_back(std::move(ev));
      }
    }
    return {};
  }

  if (ci.kind == CalleeKind::kSource) {
    const ValueSource* src = ci.source;
    if (is_environment_read(ci.name)) {
      // The same environment on every rank (an SPMD launch), except the variables launchers set per rank.
      std::string var;
      if (!args.empty())
        if (const auto* lit = dyn_cast<StringLiteral>(args[0]->IgnoreParenImpCasts()))
          var = lit->getString().str();
      if (!var.empty() && tu_.catalog.is_rank_environment(var))
        return tu_.local_at(loc, "rank-dependent environment variable '" + var + "' read here");
      if (!tu_.opts.assume.env_local) return {};
    }
    Taint t;
    switch (src->kind) {
      case ValueSource::Kind::kUniform:
        t = Taint{};
        break;
      case ValueSource::Kind::kRank:
        t = tu_.local_at(loc, "rank obtained from '" + ci.name + "' here");
        break;
      case ValueSource::Kind::kLocal:
        t = tu_.local_at(loc, src->what);
        break;
      case ValueSource::Kind::kFiniteness: {
        Taint in;
        for (const Expr* a : args) in.join(eval(a, c));
        if (!in.any()) return {};
        // The test itself is the explanation users recognise (the TF 2.4 LossScaleOptimizer check).
        Taint named = tu_.local_at(loc, src->what);
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
        write_through(args[i], t, true, pt->isReferenceType(), c);
      }
    }
    // What a rank-local source returns (a byte count, a status) is rank-local as well.
    return src->out_arg < 0 || src->kind == ValueSource::Kind::kLocal ? t : Taint{};
  }

  // istream extraction (`in >> x`) and reads: file input.
  if (apply && object && is_istream(object)) {
    Taint t = tu_.local_at(loc, "file input read here");
    for (size_t i = 0; i < args.size(); ++i) {
      QualType pt = args[i]->getType();
      if (i < callee->getNumParams()) pt = callee->getParamDecl(i)->getType();
      if (pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified())
        write_through(args[i], t, true, true, c);
      if (pt->isPointerType() && !pt->getPointeeType().isConstQualified())
        write_through(args[i], t, true, false, c);
    }
  }
  if (apply && !object && callee->getOverloadedOperator() == OO_GreaterGreater && args.size() == 2 &&
      is_istream(args[0]))
    write_through(args[1], tu_.local_at(loc, "file input read here"), true, true, c);

  if (ci.kind == CalleeKind::kUser) {
    // The definition's parameters, not the called declaration's: in C, `int f();` declares no
    // parameters and may be called with any, and the summary is indexed by the definition's.
    const FunctionDecl* def = callee->getDefinition();
    FunctionInfo& fi = tu_.infos[def];
    if (c.fn) c.fn->callees.insert(def);
    if (!fi.has_summary) return {};
    const Summary& sum = fi.summary;
    const std::vector<const Expr*>& full = args;
    if (object && isa<CXXMethodDecl>(callee)) {
      // The summary's parameters do not include `this`; member state is treated as uniform.
    }
    if (apply) {
      // Effects on the caller's arguments, evaluated before any of them is written.
      std::vector<std::pair<size_t, std::pair<Taint, Taint>>> writes;
      for (size_t i = 0; i < full.size() && i < sum.out_val.size(); ++i)
        writes.push_back({i, {substitute(sum.out_val[i], full, c), substitute(sum.out_mem[i], full, c)}});
      // A parameter the callee leaves as it found it (see Summary::kept_val) is not written: passing a
      // vector by reference to a function called under a rank-local condition does not make its size
      // rank-local.
      for (auto& [i, w] : writes) {
        if (i >= def->getNumParams()) break;
        QualType pt = def->getParamDecl(i)->getType();
        bool same_val = sum.kept_val[i], same_mem = sum.kept_mem[i];
        if (pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified()) {
          if (!same_val) write(storage_of(full[i], false), w.first, true, c);
          auto st = storage_of(full[i], false);
          if (!same_mem && st.decl && tu_.types.holds_memory(st.decl->getType()))
            write({st.decl, false}, w.second, true, c);
        } else if (pt->isPointerType() && !pt->getPointeeType().isConstQualified() && !same_mem) {
          write(storage_of(full[i], true), w.second, true, c);
        }
      }
      if (c.events) {
        for (const Event& inner : sum.events) {
          Event ev = inner;
          ev.site = loc;
          ev.via = callee;
          ev.control = substitute(inner.control, full, c);
          for (auto& a : ev.args) a.taint = substitute(a.taint, full, c);
          c.events->push_back(std::move(ev));
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
                   callee->getOverloadedOperator() == OO_Subscript ||
                   callee->getOverloadedOperator() == OO_Star ||
                   callee->getOverloadedOperator() == OO_Arrow || callee->getOverloadedOperator() == OO_Call;
    if (element) obj.join(eval_mem(object, c));
    t.join(obj);
    if (apply && method && !method->isConst() && !element && !args.empty()) {
      Taint in;
      for (const Expr* a : args) in.join(eval(a, c));
      auto st = storage_of(object, false);
      write(st, in, false, c);
      if (st.decl && tu_.types.holds_memory(st.decl->getType())) write({st.decl, false}, in, false, c);
    }
  }
  if (apply) {
    Taint in = t;
    // The note names the call: without its body, whatever it was given may be what it stores (LULESH
    // passes the rank to its option parser, which only prints with it; lint cannot tell).
    if (in.local && callee->getIdentifier())
      in.origin = tu_.local_at(loc,
                               "'" + callee->getNameAsString() +
                                   "' is given rank-local data here and may store it through its "
                                   "arguments (its body is not in this file)",
                               in.origin)
                      .origin;
    for (size_t i = 0; i < args.size() && i < callee->getNumParams(); ++i) {
      QualType pt = callee->getParamDecl(i)->getType();
      if (pt->isPointerType() && !pt->getPointeeType().isConstQualified() && in.any())
        write_through(args[i], in, false, false, c);
      else if (pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified() && in.any())
        write_through(args[i], in, false, true, c);
    }
  }
  return t;
}

// ---- statements ----
void Evaluator::transfer(const Stmt* st, BlockContext& c) {
  State& s = *c.state;
  if (const auto* ds = dyn_cast<DeclStmt>(st)) {
    for (const Decl* d : ds->decls()) {
      const auto* vd = dyn_cast<VarDecl>(d);
      if (!vd) continue;
      const Expr* init = vd->getInit();
      QualType t = vd->getType();
      s.set_val(vd, init ? eval(init, c) : Taint{});
      if (init) copy_fields(vd, init, c, /*controlled=*/false);
      if (t->isReferenceType()) {
        if (init && tu_.types.holds_memory(t)) s.set_mem(vd, eval_mem(init, c));
        continue;
      }
      if (t->isPointerType()) {
        const Expr* bare = init ? init->IgnoreParenCasts() : nullptr;
        if (bare && (isa<CXXNewExpr>(bare) || (isa<CallExpr>(bare) && is_allocation(cast<CallExpr>(bare)))))
          s.set_mem(vd, fresh_buffer(vd));
        else
          s.set_mem(vd, init ? eval_mem(init, c) : Taint{});
        continue;
      }
      if (t->isArrayType() || tu_.types.is_buffer_class(t)) {
        const Expr* bare = init ? init->IgnoreImplicit() : nullptr;
        if (bare && isa<InitListExpr>(bare)) {
          s.set_mem(vd, eval(bare, c));
        } else if (const auto* cons = dyn_cast_or_null<CXXConstructExpr>(bare)) {
          if (cons->getNumArgs() == 1 && cons->getConstructor()->isCopyOrMoveConstructor())
            s.set_mem(vd, eval_mem(cons->getArg(0), c));
          else if (cons->getNumArgs() >= 2 && cons->getArg(1)->getType()->isArithmeticType() &&
                   cons->getArg(1)->IgnoreImplicit()->isEvaluatable(tu_.ast) &&
                   (cons->getNumArgs() == 2 || isa<CXXDefaultArgExpr>(cons->getArg(2))))
            s.set_mem(vd, eval(cons->getArg(0), c));  // vector(n, 0.0f): filled with a constant, like {0}
          else
            s.set_mem(vd, fresh_buffer(vd));  // vector(n), array: filled by this rank
        } else if (const auto* call = dyn_cast_or_null<CallExpr>(bare); call && !is_view_of_object(call)) {
          s.set_mem(vd, fresh_buffer(vd));  // a container some function made: no collective produced it
        } else if (bare) {
          s.set_mem(vd, eval_mem(bare, c));  // an iterator or view into another container
        } else if (t.isConstQualified() && vd->isStaticLocal()) {
          s.set_mem(vd, Taint{});
        } else {
          s.set_mem(vd, fresh_buffer(vd));
        }
      }
    }
    return;
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(st)) {
    if (!bo->isAssignmentOp()) return;
    Taint t = bo->isCompoundAssignmentOp() ? joined(eval(bo->getLHS(), c), eval(bo->getRHS(), c))
                                           : eval(bo->getRHS(), c);
    assign(bo->getLHS(), bo->getRHS(), t, c);
    return;
  }
  if (const auto* uo = dyn_cast<UnaryOperator>(st)) {
    if (!uo->isIncrementDecrementOp()) return;
    // x++ keeps x's uniformity, unless only some ranks get here.
    if (c.control.any()) write(storage_of(uo->getSubExpr(), false), Taint{}, false, c);
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
    if (c.returns && ret->getRetValue()) c.returns->join(joined(eval(ret->getRetValue(), c), c.control));
    return;
  }
}
const FunctionDecl* Evaluator::getUserCallee(const CallExpr* call) {
  const FunctionDecl* f = call->getDirectCallee();
  if (!f) return nullptr;
  return tu_.callee_info(f).kind == CalleeKind::kUser ? f : nullptr;
}

bool Evaluator::copy_fields(const VarDecl* vd, const Expr* src, BlockContext& c, bool controlled) {
  QualType t = vd->getType().getNonReferenceType();
  const RecordDecl* rd = t->isRecordType() ? field_record(t) : nullptr;
  if (!rd || !src) return false;
  const Expr* e = src->IgnoreImplicit();
  if (const auto* cons = dyn_cast<CXXConstructExpr>(e)) {
    // A copy made by a constructor of the user's could put anything anywhere.
    if (cons->getNumArgs() != 1 || !cons->getConstructor()->isCopyOrMoveConstructor() ||
        !cons->getConstructor()->isTrivial())
      return false;
    e = cons->getArg(0)->IgnoreImplicit();
  }
  if (!e->isGLValue() || !tu_.ast.hasSameUnqualifiedType(e->getType(), t)) return false;
  State& s = *c.state;
  if (State::uniform(var_val(vd, s))) return true;  // nothing to tell apart
  FieldTaints fields;
  for (const FieldDecl* f : rd->fields()) {
    Taint ft = eval(e, c, f);
    if (controlled) ft = under_control(ft, c);
    if (!State::uniform(ft)) fields.push_back({f, ft});
  }
  s.val.erase(vd);
  s.fval.erase(vd);
  if (!fields.empty()) s.fval[vd] = std::move(fields);
  return true;
}

void Evaluator::assign(const Expr* lhs, const Expr* rhs, const Taint& t, BlockContext& c) {
  State& s = *c.state;
  const Expr* l = lhs->IgnoreParenImpCasts();
  if (const auto* dre = dyn_cast<DeclRefExpr>(l)) {
    if (const auto* vd = dyn_cast<VarDecl>(dre->getDecl())) {
      s.set_val(vd, under_control(t, c));
      copy_fields(vd, rhs, c, /*controlled=*/true);
      if (tu_.types.holds_memory(vd->getType()) && !vd->getType()->isArrayType())
        s.set_mem(vd, joined(eval_mem(rhs, c), c.control));
    }
    return;
  }
  // Element or field writes: weak, the rest of the object keeps what it had; a rank-local index makes
  // the contents rank-local too.
  // A field of a struct variable of its own is one place and is overwritten; a field of array elements
  // or of what a pointer points to is not (another element, another object).
  Taint idx;
  const Expr* elem = l;
  while (const auto* me = dyn_cast<MemberExpr>(elem)) {
    if (me->isArrow()) break;
    elem = me->getBase()->IgnoreParenImpCasts();
  }
  if (const auto* ase = dyn_cast<ArraySubscriptExpr>(elem)) idx = eval(ase->getIdx(), c);
  if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(elem);
      oc && oc->getOperator() == OO_Subscript && oc->getNumArgs() > 1)
    idx = eval(oc->getArg(1), c);
  Place where = storage_of(l, false);
  write(where, joined(t, idx), where.field && where.is_val, c);
}

}  // namespace lockstep::lint
