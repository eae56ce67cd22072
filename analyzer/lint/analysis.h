// The per-translation-unit analysis behind `lockstep lint`: control dependences of every collective and a
// uniformity dataflow over each function, with summaries carried across calls.
#pragma once

#include <memory>
#include <vector>

#include "lint/catalog.h"
#include "lint/finding.h"

namespace clang {
class ASTConsumer;
class FunctionDecl;
}  // namespace clang

namespace lockstep::lint {

// Which inputs of the program are assumed to differ between ranks (`--assume-local`).
struct Assumptions {
  bool argv_local = false;
  bool env_local = false;
};

struct AnalysisOptions {
  Assumptions assume;
  bool error_exit_rule = false;  // report collective-after-error-exit (off by default)
};

// An AST consumer that analyzes one translation unit and appends its findings to `out`.
std::unique_ptr<clang::ASTConsumer> make_lint_consumer(const Catalog& catalog, const AnalysisOptions& opts,
                                                       std::vector<Finding>& out);

class TuContext;
// The functions of `tu`'s AST that are analyzed, in declaration order (registered in `tu.infos`), and
// which of them are referenced (`tu.called`).
std::vector<const clang::FunctionDecl*> collect_functions(TuContext& tu);

}  // namespace lockstep::lint
