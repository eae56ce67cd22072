// The uniformity evaluator of the lint analysis: whether an expression's value (or what a pointer,
// array or container holds) is the same on every rank, and the effect of a statement on the dataflow
// state. It is given the block it works in explicitly (BlockContext); the translation unit's shared
// tables (catalog lookups, function summaries, origins) live in TuContext.
#pragma once

#include <clang/Analysis/CFG.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lint/analysis.h"
#include "lint/ast_queries.h"
#include "lint/catalog.h"
#include "lint/control_dependence.h"
#include "lint/finding.h"
#include "lint/taint.h"

namespace clang {
class ASTContext;
class BinaryOperator;
class FieldDecl;
class RecordDecl;
class VarDecl;
class CallExpr;
class Expr;
class Stmt;
}  // namespace clang

namespace lockstep::lint {

// The struct whose fields lint tells apart in values of type `t` (a struct, or a pointer, reference or
// array of them), or null. Unions (fields overlap), classes with bases (fields of a base are reached
// through casts the evaluator does not follow) and structs with many fields keep one taint per object.
const clang::RecordDecl* field_record(clang::QualType t);
// `f` is a field of such a struct.
bool field_tracked(const clang::FieldDecl* f);

struct FunctionInfo {
  const clang::FunctionDecl* decl = nullptr;
  std::unique_ptr<clang::CFG> cfg;
  ControlDependence cd;
  Summary summary;
  bool has_summary = false;
  std::set<const clang::FunctionDecl*> callees;  // user functions whose summaries this one used
  unsigned analyzed_at = 0;                      // logical clock of the last analysis
  unsigned changed_at = 0;                       // ... and of the last summary change
  std::vector<Finding> findings;                 // from the last analysis
  // Local variables that hold exactly the rank (or the size) of a communicator, and which one: written
  // only by MPI_Comm_rank/ncclCommUserRank (MPI_Comm_size/ncclCommCount) and constant initializers.
  struct RankFact {
    bool is_rank = false;
    const clang::Expr* comm = nullptr;
  };
  std::map<const clang::VarDecl*, RankFact> rank_facts;
  bool rank_facts_ready = false;
};

enum class CalleeKind { kUnknown, kCollective, kSource, kUser };

struct CalleeInfo {
  CalleeKind kind = CalleeKind::kUnknown;
  const Collective* collective = nullptr;
  const ValueSource* source = nullptr;
  std::string name;
};

// What every function of one translation unit shares.
class TuContext {
 public:
  TuContext(clang::ASTContext& context, const Catalog& apis, AnalysisOptions options = {})
      : ast(context), catalog(apis), opts(options) {}

  // How a call to `f` is treated: a catalogued collective or value source, a function of this TU, or unknown.
  const CalleeInfo& callee_info(const clang::FunctionDecl* f);
  // A rank-local taint whose origin is `what` at `loc`; one origin per (location, text, cause), so that
  // repeated fixpoint rounds do not grow the table.
  Taint local_at(clang::SourceLocation loc, const std::string& what, int cause = -1);

  clang::ASTContext& ast;
  const Catalog& catalog;
  AnalysisOptions opts;
  TypeQueries types;
  std::map<const clang::FunctionDecl*, FunctionInfo> infos;  // the functions analyzed, by definition
  std::set<const clang::FunctionDecl*>
      called;  // referenced from somewhere in the TU (called or address taken)
  std::vector<Origin> origins;

 private:
  std::map<const clang::FunctionDecl*, CalleeInfo>
      callees_;  // stable references: callers hold one while recursing
  std::map<std::tuple<unsigned, std::string, int>, int> origin_index_;
};

// The block being evaluated: its state, the joined conditions that control it, and (when recording)
// where the collectives it performs and the values it returns go.
struct BlockContext {
  FunctionInfo* fn = nullptr;
  State* state = nullptr;
  Taint control;                         // writes here are rank-local when this is
  std::vector<Event>* events = nullptr;  // non-null: record the collectives performed
  Taint* returns = nullptr;              // non-null: join returned values here
  // The one rank-local branch `control` comes from (its terminator), kSeveralBranches for more than one.
  const void* control_branch = nullptr;
};

// Where a write goes: a variable's value (`is_val`) or what it holds, and, when known, the one field of
// that object (of the variable itself, or of the structs it points to or holds).
struct Place {
  const clang::ValueDecl* decl = nullptr;
  bool is_val = false;
  const clang::FieldDecl* field = nullptr;
};

class Evaluator {
 public:
  explicit Evaluator(TuContext& tu) : tu_(tu) {}

  // The taint of `e`'s value; with `field`, of that field of the struct `e` designates.
  Taint eval(const clang::Expr* e, BlockContext& c, const clang::FieldDecl* field = nullptr);
  // The taint of what the pointer, array or container `e` refers to holds (of that field of it).
  Taint eval_mem(const clang::Expr* e, BlockContext& c, const clang::FieldDecl* field = nullptr);
  // The result taint of a call; with `apply`, also its effects on the state and the collectives it performs.
  Taint eval_call(const clang::CallExpr* call, BlockContext& c, bool apply);
  // The effect of one CFG statement on `c.state`.
  void transfer(const clang::Stmt* st, BlockContext& c);

  Taint var_val(const clang::ValueDecl* d, const State& s, const clang::FieldDecl* field = nullptr);
  Taint var_mem(const clang::ValueDecl* d, const State& s, const clang::FieldDecl* field = nullptr);
  // What a buffer no collective produced holds: rank-local when it is data (numbers, bytes); a container
  // of handles, pointers or records is bookkeeping and is judged by what is stored in it.
  Taint fresh_buffer(const clang::ValueDecl* vd);

 private:
  Place storage_of(const clang::Expr* e, bool address);
  Place memory_of(const clang::Expr* e);
  void write(Place where, Taint t, bool strong, BlockContext& c, bool exact = false);
  // `t` as written under the block's control: rank-local when the control is, and then uniform among
  // the ranks taking the branch when `t` was uniform (or already so).
  Taint under_control(Taint t, const BlockContext& c);
  // A struct variable initialized or assigned (`controlled`: under the block's control) from the struct
  // `src`: each field gets the source field's taint, so that a copy keeps them apart.
  bool copy_fields(const clang::VarDecl* vd, const clang::Expr* src, BlockContext& c, bool controlled);
  void write_through(const clang::Expr* arg, const Taint& t, bool strong, bool by_reference, BlockContext& c);
  std::vector<const clang::Expr*> call_args(const clang::CallExpr* call, const clang::FunctionDecl* callee);
  const clang::Expr* object_of(const clang::CallExpr* call, const clang::FunctionDecl* callee);
  Taint substitute(const Taint& t, const std::vector<const clang::Expr*>& args, BlockContext& c,
                   const clang::CallExpr* call = nullptr);
  const clang::FunctionDecl* getUserCallee(const clang::CallExpr* call);
  void assign(const clang::Expr* lhs, const clang::Expr* rhs, const Taint& t, BlockContext& c);

  // A comparison of a communicator's rank with its size or with 0 that every rank decides alike
  // (rank < size, rank >= 0: always true; rank < 0, rank >= size: always false).
  bool decided_by_range(const clang::BinaryOperator* bo, FunctionInfo* fn);

  TuContext& tu_;
};

}  // namespace lockstep::lint
