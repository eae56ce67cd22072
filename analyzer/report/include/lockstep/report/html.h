// The self-contained HTML report of a job (docs/report.md): swimlanes per rank and communicator, the
// hang view, the findings with source lines. Compact data embedded once, drawn by inline JavaScript,
// so that a 1,024-rank job stays a few megabytes and opens offline.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lockstep/check/check.h"
#include "lockstep/report/report.h"
#include "lockstep/report/timeline.h"

namespace lockstep::report {

struct HtmlOptions {
  // Lanes per rank while a communicator has at most this many ranks; beyond, one lane per group of
  // ranks whose calls are identical.
  size_t lanes_per_rank_up_to = 64;
  // Call times kept for the time axis, over all lanes (each lane is kept whole or not at all).
  size_t time_budget = 4'000'000;
  int source_context = 3;  // source lines shown either side of a call site
  int threads = 1;         // threads reading the ranks' calls again for the lanes
};

std::string html(const check::Job& job, const check::Result& result, Timeline& timeline, const Context& ctx,
                 const StaticReasons& reasons = {}, const HtmlOptions& options = {});

// A few lines of a source file around `line` (1-based), or empty when the file cannot be read.
std::vector<std::string> source_lines(const std::string& file, int line, int context, int* first);

}  // namespace lockstep::report
