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

// Why lint flags the call site of a finding (the static reason joined to the dynamic finding).
struct StaticReason {
  std::string rule;     // "conditional-collective"
  std::string message;  // lint's message
  std::string file;     // the collective's line as lint reports it
  int line = 0;
  struct Note {
    std::string file;
    int line = 0;
    std::string message;  // "the condition ...", "rank-local value from ..."
  };
  std::vector<Note> notes;  // the condition and the origin of the rank-local value
  std::string summary;      // one sentence: "the call runs only where `...` holds (line 140), ..."
};
// Static reasons by finding index (Result::findings).
using StaticReasons = std::map<size_t, StaticReason>;

struct HtmlOptions {
  // Lanes per rank while a communicator has at most this many ranks; beyond, one lane per group of
  // ranks whose calls are identical.
  size_t lanes_per_rank_up_to = 64;
  // Call times kept for the time axis, over all lanes (each lane is kept whole or not at all).
  size_t time_budget = 4'000'000;
  int source_context = 3;  // source lines shown either side of a call site
};

std::string html(const check::Job& job, const check::Result& result, Timeline& timeline, const Context& ctx,
                 const StaticReasons& reasons = {}, const HtmlOptions& options = {});

// A few lines of a source file around `line` (1-based), or empty when the file cannot be read.
std::vector<std::string> source_lines(const std::string& file, int line, int context, int* first);

}  // namespace lockstep::report
