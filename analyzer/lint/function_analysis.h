// Per-function analysis of a translation unit: the uniformity fixpoint over each function's CFG, the
// summaries callers apply, iterated over the call graph, and the findings of each function.
#pragma once

#include <vector>

#include "lint/finding.h"
#include "lint/uniformity.h"

namespace lockstep::lint {

// Analyzes `functions` (definitions, in declaration order) and appends their findings to `out`.
void analyze_functions(TuContext& tu, const std::vector<const clang::FunctionDecl*>& functions,
                       std::vector<Finding>& out);

}  // namespace lockstep::lint
