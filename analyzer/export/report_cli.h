// `lockstep report` and `lockstep export` share their loading with `check`; `check --format html` and
// `run --report` write the HTML report through here.
#pragma once

#include <string>

#include <optional>

#include "join/static_join.h"
#include "lockstep/report/html.h"

namespace lockstep::exporter {

struct HtmlJob {
  std::string dir;
  std::string output;  // "-" or empty: standard output
  int jobs = 0;
  bool no_symbolize = false;
  std::optional<join::LintRequest> lint;  // `--lint`: join lint's findings at the call sites
};

// Loads and checks `dir`, writes the HTML report; returns the check's exit code (0 clean, 1 findings).
// Bad input throws cli::BadInput.
int write_html_report(const HtmlJob& job);

// `--lint`: lint's reasons for `result`'s findings; what could not be joined is said on stderr.
report::StaticReasons lint_reasons(const check::Result& result, const join::LintRequest& request);

}  // namespace lockstep::exporter
