// Builds lint findings from what the analysis established: the message by the shape of the controlling
// branch (condition, loop, early exit, exception handler), notes at the condition, at the origins of the
// rank-local value and at a callee's collective; suppression comments and system headers are honoured.
#pragma once

#include <clang/Basic/SourceLocation.h>
#include <llvm/ADT/DenseMap.h>

#include <map>

#include "lint/finding.h"
#include "lint/uniformity.h"

namespace clang {
class CFGBlock;
class Expr;
class SourceManager;
class Stmt;
}  // namespace clang

namespace lockstep::lint {

// Where a branch's condition is (its expression, else its terminator statement).
clang::SourceLocation cond_loc(const clang::CFGBlock* a, const clang::Expr* cond_expr);

class Diagnostics {
 public:
  explicit Diagnostics(TuContext& tu);

  // `evs` (in source order, at least one) run only where the branch at `a` (condition `cond_expr`,
  // taint `t`) goes one way: one finding, at the first, with the others as notes.
  void conditional(FunctionInfo& fi, const std::vector<Event>& evs, const clang::CFGBlock* a, const Taint& t,
                   const clang::Expr* cond_expr);
  // Ranks where a local API call failed leave at `a` before `ev` (collective-after-error-exit).
  void error_exit(FunctionInfo& fi, const Event& ev, const clang::CFGBlock* a, const Taint& t,
                  const clang::Expr* cond_expr);
  // `ev` is performed by a callee under a condition the caller's rank-local argument decides.
  void callee_condition(FunctionInfo& fi, const Event& ev);
  // An argument that must agree across ranks is rank-local.
  void argument(FunctionInfo& fi, const Event& ev, const Event::Arg& a);

  SourcePoint point(clang::SourceLocation loc) const;

 private:
  bool suppressed(clang::SourceLocation loc, const std::string& rule) const;
  bool in_user_code(clang::SourceLocation loc) const;
  void emit(FunctionInfo& fi, Finding f, clang::SourceLocation loc);
  const clang::Stmt* parent_of(const FunctionInfo& fi, const clang::Stmt* s);
  void add_origin_note(Finding& f, int origin) const;

  TuContext& tu_;
  clang::SourceManager& sm_;
  // Parent maps, built on demand for the functions that get a finding.
  std::map<const clang::FunctionDecl*, llvm::DenseMap<const clang::Stmt*, const clang::Stmt*>> parents_;
};

}  // namespace lockstep::lint
