// Helpers of the lint unit tests: an AST from a code string, its functions analyzed with the catalogs of
// rules/, and lookups of functions, blocks and statements by name or text.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/Analysis/CFG.h>
#include <clang/Frontend/ASTUnit.h>

#include <memory>
#include <string>
#include <vector>

#include "lint/catalog.h"
#include "lint/finding.h"
#include "lint/uniformity.h"

namespace lockstep::lint::testing {

// Minimal MPI declarations, so that test code strings need no headers.
extern const char* const kMpiPrelude;

struct Analyzed {
  std::unique_ptr<clang::ASTUnit> ast;
  std::unique_ptr<Catalog> catalog;
  std::unique_ptr<TuContext> tu;
  std::vector<Finding> findings;

  const FunctionInfo& fn(const std::string& name) const;
  // Findings of one rule, as "line:rule" strings, sorted.
  std::vector<std::string> lines(const std::string& rule = "") const;
};

// Parses `code` (C++17, with kMpiPrelude in front when `mpi`) and analyzes every function.
Analyzed analyze(const std::string& code, AnalysisOptions opts = {}, bool mpi = true);

// Lines of `code` (1-based, counting the prelude) holding `needle`.
unsigned line_of(const Analyzed& a, const std::string& needle);

// The CFG block of `fn` whose statements include a call to `callee`.
const clang::CFGBlock* block_calling(const FunctionInfo& fn, const std::string& callee);

}  // namespace lockstep::lint::testing
