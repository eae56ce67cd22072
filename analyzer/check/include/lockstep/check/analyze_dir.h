// The one way into the checker from trace files: load a job (one directory, several node-local ones,
// a glob, or the files themselves), key and name call sites with the symbolizer, analyze. Used by
// `check`, `diff`, and `run`'s live stall report and final check.
#pragma once

#include <string>
#include <vector>

#include "lockstep/check/check.h"
#include "lockstep/check/load.h"

namespace lockstep::check {

// The loader's options (LoadOptions: jobs, validate, materialize, this_host, skipped) as they are, and
// what analyze_dir() adds. With `symbolize`, call sites are keyed by file:line instead of site_keys.
struct DirOptions : LoadOptions {
  bool symbolize = true;                    // call sites as file:line (llvm-symbolizer); false: module+offset
  bool analyze = true;                      // false: load and symbolize only (Analysis::result stays empty)
  bool allow_callsite_differences = false;  // Options::allow_callsite_differences
};

struct Analysis {
  Job job;
  Result result;
  Symbolizer symbolize;  // names further call sites the same way (empty without symbolization)
};

// The loader's options analyze_dir() would use (call sites keyed through a symbolizer of their own with
// `symbolize`): for a process that only loads (`check --mpi`'s processes other than 0).
LoadOptions loader_options(const DirOptions& options);

// `inputs` together hold one job (load_paths). Throws LoadError for anything that is not one readable
// job; never for what the traces say.
Analysis analyze_dir(const std::vector<std::string>& inputs, const DirOptions& options = {});
inline Analysis analyze_dir(const std::string& dir, const DirOptions& options = {}) {
  return analyze_dir(std::vector<std::string>{dir}, options);
}

}  // namespace lockstep::check
