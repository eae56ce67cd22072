// The lint analysis of one translation unit: collects the functions defined in user code (not system
// headers, not catalogued APIs, not annotated collectives) and hands them to the per-function analysis.
// The parts: taint.h (values), ast_queries (AST questions), control_dependence (which branches decide
// whether a block runs), uniformity (the evaluator), function_analysis (fixpoint and summaries),
// diagnostics (findings).
#include "lint/analysis.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>

#include "lint/ast_queries.h"
#include "lint/function_analysis.h"
#include "lint/uniformity.h"

namespace lockstep::lint {
namespace {

using namespace clang;

class FunctionCollector : public RecursiveASTVisitor<FunctionCollector> {
 public:
  FunctionCollector(SourceManager& sm, TuContext& tu) : sm_(sm), tu_(tu) {}
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
    if (has_collective_annotation(f))
      return true;  // a declared collective: its inside is not the user's concern
    // Catalogued APIs defined inline in a user header (the runtime's rt.h) are collectives or sources,
    // not code to analyze.
    std::string name = qualified_name(f);
    if (tu_.catalog.find_collective(name) || tu_.catalog.find_source(name)) return true;
    auto& info = tu_.infos[f];
    if (info.decl) return true;
    info.decl = f;
    functions.push_back(f);
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr* e) {
    if (const auto* f = dyn_cast<FunctionDecl>(e->getDecl())) add_called(f);
    return true;
  }
  bool VisitMemberExpr(MemberExpr* e) {
    if (const auto* f = dyn_cast<FunctionDecl>(e->getMemberDecl())) add_called(f);
    return true;
  }

  std::vector<const FunctionDecl*> functions;  // in declaration order

 private:
  void add_called(const FunctionDecl* f) {
    if (const FunctionDecl* def = f->getDefinition()) tu_.called.insert(def);
  }

  SourceManager& sm_;
  TuContext& tu_;
};

class LintConsumer : public ASTConsumer {
 public:
  LintConsumer(const Catalog& catalog, const AnalysisOptions& opts, std::vector<Finding>& out)
      : catalog_(catalog), opts_(opts), out_(out) {}
  void HandleTranslationUnit(ASTContext& ctx) override {
    if (ctx.getDiagnostics().hasErrorOccurred()) return;  // reported by the driver; exit code 2
    TuContext tu(ctx, catalog_, opts_);
    analyze_functions(tu, collect_functions(tu), out_);
  }

 private:
  const Catalog& catalog_;
  AnalysisOptions opts_;
  std::vector<Finding>& out_;
};

}  // namespace

std::vector<const FunctionDecl*> collect_functions(TuContext& tu) {
  FunctionCollector collector(tu.ast.getSourceManager(), tu);
  collector.TraverseDecl(tu.ast.getTranslationUnitDecl());
  return std::move(collector.functions);
}

std::unique_ptr<ASTConsumer> make_lint_consumer(const Catalog& catalog, const AnalysisOptions& opts,
                                                std::vector<Finding>& out) {
  return std::make_unique<LintConsumer>(catalog, opts, out);
}

}  // namespace lockstep::lint
