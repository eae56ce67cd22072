// Chrome trace-event JSON of a job's collectives (what ui.perfetto.dev and chrome://tracing open):
// a process per rank, a thread per communicator, a slice per call, flows across ranks, findings as
// instant events. docs/report.md describes the layout.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <vector>

#include "lockstep/check/check.h"
#include "lockstep/report/timeline.h"

namespace lockstep::exporter {

struct ChromeOptions {
  bool flows = true;  // flow arrows joining each position of a communicator across its ranks
  // Only positions [from, to) of each communicator (and the findings there): a window of a large job.
  int64_t from = 0, to = INT64_MAX;
  // Threads the Perfetto export encodes ranks on (the file is written on one more).
  int threads = 1;
};

// The findings drawn on each rank: the culprits', else every rank the finding names.
std::map<int32_t, std::vector<const check::Finding*>> findings_by_rank(const check::Result& result);
// When a finding is drawn on `rank` (nanoseconds from the time origin): at the rank's call at the
// finding's position; a rank with no call there, when the others made it; else `rank_end`.
int64_t finding_time(const check::Finding& f, int32_t rank, int64_t rank_end);

// Streams the trace to `out`, one rank at a time. Returns the number of events written.
uint64_t write_chrome_trace(const check::Job& job, const check::Result& result, report::Timeline& timeline,
                            std::FILE* out, const ChromeOptions& options = {});

}  // namespace lockstep::exporter
