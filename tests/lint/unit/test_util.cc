// Helpers of the lint unit tests (see test_util.h).
#include "test_util.h"

#include <clang/AST/Expr.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Tooling/Tooling.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "lint/analysis.h"
#include "lint/function_analysis.h"

namespace lockstep::lint::testing {

using namespace clang;

const char* const kMpiPrelude =
    "typedef struct ompi_communicator_t* MPI_Comm; typedef int MPI_Datatype; typedef int MPI_Op;\n"
    "extern MPI_Comm MPI_COMM_WORLD; extern void* MPI_IN_PLACE;\n"
    "enum { MPI_INT = 1, MPI_FLOAT = 2, MPI_SUM = 3, MPI_MAX = 4, MPI_SUCCESS = 0 };\n"
    "extern \"C\" int MPI_Comm_rank(MPI_Comm, int*); extern \"C\" int MPI_Comm_size(MPI_Comm, int*);\n"
    "extern \"C\" int MPI_Barrier(MPI_Comm);\n"
    "extern \"C\" int MPI_Bcast(void*, int, MPI_Datatype, int, MPI_Comm);\n"
    "extern \"C\" int MPI_Allreduce(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);\n"
    "extern \"C\" int printf(const char*, ...); extern \"C\" char* getenv(const char*);\n"
    "extern \"C\" int atoi(const char*);\n";

Analyzed analyze(const std::string& code, AnalysisOptions opts, bool mpi) {
  Analyzed a;
  a.catalog = std::make_unique<Catalog>();
  a.catalog->load_dir(LOCKSTEP_RULES_DIR);
  a.ast = tooling::buildASTFromCodeWithArgs((mpi ? std::string(kMpiPrelude) : "") + code,
                                            {"-std=c++17", "-resource-dir=" LOCKSTEP_CLANG_RESOURCE_DIR},
                                            "input.cc");
  if (!a.ast) ADD_FAILURE() << "the code does not parse";
  a.tu = std::make_unique<TuContext>(a.ast->getASTContext(), *a.catalog, opts);
  analyze_functions(*a.tu, collect_functions(*a.tu), a.findings);
  return a;
}

const FunctionInfo& Analyzed::fn(const std::string& name) const {
  for (const auto& [decl, info] : tu->infos)
    if (decl->getNameAsString() == name) return info;
  ADD_FAILURE() << "no analyzed function " << name;
  static FunctionInfo none;
  return none;
}

std::vector<std::string> Analyzed::lines(const std::string& rule) const {
  std::vector<std::string> out;
  for (const auto& f : findings)
    if (rule.empty() || f.rule == rule) out.push_back(std::to_string(f.at.line) + ":" + f.rule);
  std::sort(out.begin(), out.end());
  return out;
}

unsigned line_of(const Analyzed& a, const std::string& needle) {
  const SourceManager& sm = a.ast->getSourceManager();
  llvm::StringRef text = sm.getBufferData(sm.getMainFileID());
  size_t pos = text.find(needle);
  if (pos == llvm::StringRef::npos) {
    ADD_FAILURE() << "no '" << needle << "' in the code";
    return 0;
  }
  return 1 + static_cast<unsigned>(text.substr(0, pos).count('\n'));
}

const CFGBlock* block_calling(const FunctionInfo& fn, const std::string& callee) {
  for (const CFGBlock* b : *fn.cfg)
    for (const CFGElement& el : *b)
      if (auto cs = el.getAs<CFGStmt>())
        if (const auto* call = dyn_cast<CallExpr>(cs->getStmt()))
          if (const FunctionDecl* f = call->getDirectCallee(); f && f->getNameAsString() == callee) return b;
  ADD_FAILURE() << "no block calls " << callee;
  return nullptr;
}

}  // namespace lockstep::lint::testing
