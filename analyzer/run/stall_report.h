// The seam between `lockstep run` and the checker: what run prints when the job stops progressing, and
// what it does once the job has ended. run ships a basic report; the checker installs its diagnosis
// by calling the setters from a static initializer in its own file.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace lockstep::run {

// Called once per stall with the job's trace files (find_traces order) and how long no rank has
// progressed. Must not throw for a trace that is still being written or is damaged.
using StallReporter = void (*)(const std::vector<std::string>& files, double stalled_s, std::FILE* out);
// Called once after the job ended (exit, signal or --timeout) with the trace directory. Its output
// goes to `out`; the exit code of `lockstep run` stays the job's.
using FinishHook = void (*)(const std::string& dir, std::FILE* out);

void set_stall_reporter(StallReporter reporter);  // nullptr restores the basic report
StallReporter stall_reporter();
void set_finish_hook(FinishHook hook);  // nullptr: nothing runs after the job
FinishHook finish_hook();
// `run --report`: writes the HTML report into the trace directory after the finish hook.
void set_report_hook(FinishHook hook);
FinishHook report_hook();

// The basic report: per rank, the collective it is blocked in (op, communicator, sequence number,
// call site as module+offset), or that it is in no collective, or that it ended.
void basic_stall_report(const std::vector<std::string>& files, double stalled_s, std::FILE* out);

}  // namespace lockstep::run
