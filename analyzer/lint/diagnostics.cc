// Report builders of the lint analysis (see diagnostics.h).
#include "lint/diagnostics.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Analysis/CFG.h>
#include <clang/Basic/SourceManager.h>

namespace lockstep::lint {

using namespace clang;

namespace {
std::string callee_name(const Event& ev) { return ev.via ? qualified_name(ev.via) : ev.collective; }
}  // namespace

SourceLocation cond_loc(const CFGBlock* a, const Expr* cond_expr) {
  if (cond_expr) return cond_expr->getBeginLoc();
  if (const Stmt* t = a->getTerminatorStmt()) return t->getBeginLoc();
  return {};
}

Diagnostics::Diagnostics(TuContext& tu) : tu_(tu), sm_(tu.ast.getSourceManager()) {}

SourcePoint Diagnostics::point(SourceLocation loc) const {
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

bool Diagnostics::suppressed(SourceLocation loc, const std::string& rule) const {
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

bool Diagnostics::in_user_code(SourceLocation loc) const {
  SourceLocation fl = sm_.getFileLoc(loc);
  return fl.isValid() && !sm_.isInSystemHeader(fl);
}

void Diagnostics::emit(FunctionInfo& fi, Finding f, SourceLocation loc) {
  if (!in_user_code(loc) || suppressed(loc, f.rule)) return;
  f.at = point(loc);
  fi.findings.push_back(std::move(f));
}

const Stmt* Diagnostics::parent_of(const FunctionInfo& fi, const Stmt* s) {
  auto& parents = parents_[fi.decl];
  if (parents.empty() && fi.decl->getBody()) {
    std::vector<const Stmt*> work{fi.decl->getBody()};
    while (!work.empty()) {
      const Stmt* p = work.back();
      work.pop_back();
      for (const Stmt* child : p->children())
        if (child) {
          parents[child] = p;
          work.push_back(child);
        }
    }
  }
  auto it = parents.find(s);
  return it == parents.end() ? nullptr : it->second;
}

void Diagnostics::add_origin_note(Finding& f, int origin) const {
  for (int depth = 0; origin >= 0 && depth < 4; ++depth, origin = tu_.origins[origin].cause)
    f.notes.push_back({point(tu_.origins[origin].loc), tu_.origins[origin].what});
}

void Diagnostics::error_exit(FunctionInfo& fi, const Event& ev, const CFGBlock* a, const Taint& t,
                             const Expr* cond_expr) {
  Finding f;
  f.rule = "collective-after-error-exit";
  std::string what = ev.via
                         ? "call to '" + callee_name(ev) + "' (performs collective '" + ev.collective + "')"
                         : "collective '" + ev.collective + "'";
  f.message = what +
              " is skipped by ranks where a local API call failed and the error path left early; "
              "agree on the failure across ranks (e.g. allreduce the status) or abort the whole job";
  f.notes.push_back({point(cond_loc(a, cond_expr)), "error status tested here"});
  add_origin_note(f, t.origin);
  emit(fi, std::move(f), ev.site);
}

void Diagnostics::conditional(FunctionInfo& fi, const std::vector<Event>& evs, const CFGBlock* a,
                              const Taint& t, const Expr* cond_expr) {
  const Event& ev = evs.front();
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
  std::string what = ev.via
                         ? "call to '" + callee_name(ev) + "' (performs collective '" + ev.collective + "')"
                         : "collective '" + ev.collective + "'";
  Finding f;
  f.rule = "conditional-collective";
  std::string cond_note;
  if (isa_and_nonnull<CXXTryStmt>(term)) {
    f.message = what +
                " runs only on ranks that caught an exception; agree on the failure across ranks "
                "(e.g. allreduce an error flag) before calling it";
    cond_note = "exception handler entered here";
  } else if (loop) {
    f.message = what +
                " runs once per loop iteration, but the trip count depends on a rank-local value; "
                "make the loop condition uniform (e.g. allreduce the stopping criterion first)";
    cond_note = "loop condition evaluated here";
  } else if (!inside) {
    f.message = what +
                " is skipped by ranks that leave early, and leaving depends on a rank-local value; "
                "agree on the exit across ranks (e.g. allreduce the error flag) before leaving";
    cond_note = "early exit decided here";
  } else {
    f.message = what +
                " runs only on ranks where a rank-local condition holds; compute the condition from "
                "values every rank agrees on (e.g. allreduce it first) or call the collective on every path";
    cond_note = "condition evaluated here";
  }
  f.notes.push_back({point(cond_loc(a, cond_expr)), cond_note});
  add_origin_note(f, t.origin);
  if (ev.via) f.notes.push_back({point(ev.loc), "collective '" + ev.collective + "' called here"});
  if (evs.size() > 1) {
    f.message += " (" + std::to_string(evs.size() - 1) + " more under the same condition)";
    for (size_t i = 1; i < evs.size(); ++i)
      f.notes.push_back({point(evs[i].site), (evs[i].via ? "call to '" + callee_name(evs[i]) + "'"
                                                         : "collective '" + evs[i].collective + "'") +
                                                 " under the same condition here"});
  }
  emit(fi, std::move(f), ev.site);
}

void Diagnostics::callee_condition(FunctionInfo& fi, const Event& ev) {
  Finding f;
  f.rule = "conditional-collective";
  f.message = "call to '" + callee_name(ev) + "' performs collective '" + ev.collective +
              "' under a condition computed from a rank-local argument; pass a value every rank agrees on "
              "(e.g. allreduce it first)";
  f.notes.push_back({point(ev.control_loc), "condition evaluated here"});
  add_origin_note(f, ev.control.origin);
  f.notes.push_back({point(ev.loc), "collective '" + ev.collective + "' called here"});
  emit(fi, std::move(f), ev.site);
}

void Diagnostics::argument(FunctionInfo& fi, const Event& ev, const Event::Arg& a) {
  Finding f;
  f.rule = "rank-dependent-argument";
  std::string role = role_name(a.role);
  if (role == "op") role = "reduction op";
  if (role == "comm") role = "communicator";
  if (ev.via) {
    f.message = "call to '" + callee_name(ev) + "' passes a rank-local value as the " + role +
                " of collective '" + ev.collective + "'; every rank must pass the same " + role;
    add_origin_note(f, a.taint.origin);
    f.notes.push_back({point(ev.loc), "collective '" + ev.collective + "' called here"});
    emit(fi, std::move(f), ev.site);
    return;
  }
  f.message = "the " + role + " of '" + ev.collective +
              "' is computed from a rank-local value; every rank must pass the same " + role;
  add_origin_note(f, a.taint.origin);
  emit(fi, std::move(f), a.loc);
}

}  // namespace lockstep::lint
