// `check --lint`: runs lint on the source files at the findings' call sites and joins its findings to
// the dynamic ones by file and line, so a finding can say why its call site diverges.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "lockstep/check/check.h"
#include "lockstep/report/report.h"

namespace lockstep::join {

struct LintRequest {
  std::string build_dir;           // -p: where compile_commands.json is
  std::vector<std::string> files;  // sources to lint; empty: the findings' call-site files
  std::vector<std::string> flags;  // compiler flags after `--` (instead of compile_commands.json)
};

struct Joined {
  report::StaticReasons reasons;   // by finding index
  std::vector<std::string> notes;  // what could not be done, for people ("no source for ...")
};

// Runs `lockstep lint --format json` (this executable, `self`) and matches its findings to the call
// sites of `result`'s findings. Never throws for a lint that fails: that becomes a note.
Joined lint_findings(const check::Result& result, const LintRequest& request, const std::string& self);

// The compiler flags after a bare `--` on this process's command line, after `subcommand`.
std::vector<std::string> flags_after_separator(const std::string& subcommand);

// `--lint [FILE...]`, `-p DIR` and `-- FLAGS` on a subcommand (check, report); lint_requested() says,
// after parsing, whether --lint was given and fills in the flags. Throws cli::BadInput for stray words.
CLI::Option* add_lint_options(CLI::App* sub, LintRequest& request);
bool lint_requested(CLI::App* sub, CLI::Option* lint, LintRequest& request, const std::string& subcommand);

}  // namespace lockstep::join
