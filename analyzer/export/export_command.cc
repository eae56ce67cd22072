// `lockstep report DIR -o report.html` and `lockstep export DIR --format perfetto|chrome -o FILE`: the
// check's findings and the job's collectives, drawn (HTML) or handed to a trace viewer (Perfetto's
// protobuf trace, or Chrome trace-event JSON).
#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "chrome_trace.h"
#include "cli/command.h"
#include "cli/output.h"
#include "lockstep/check/analyze_dir.h"
#include "lockstep/report/html.h"
#include "lockstep/version.h"
#include "perfetto_trace.h"
#include "report_cli.h"
#include "run/stall_report.h"

namespace lockstep::exporter {

namespace {

struct Checked {
  check::Job job;
  check::Result result;
  check::Symbolizer symbolize;
};

Checked load_and_check(const std::string& dir, int jobs, bool no_symbolize, const char* cmd) {
  check::DirOptions d;
  d.jobs = jobs;
  d.symbolize = !no_symbolize;
  d.keep_mapped = true;  // every rank is read again, for its lanes
  check::Analysis a;
  try {
    a = check::analyze_dir(dir, d);
  } catch (const check::LoadError& e) {
    throw cli::BadInput(fmt::format("{}: {}", cmd, e.what()));
  }
  return Checked{std::move(a.job), std::move(a.result), std::move(a.symbolize)};
}

int exit_code(const check::Result& r) { return r.in_lockstep() ? cli::kClean : cli::kFindings; }

// The threads -j asks for, as the loader reads it (0: one per core).
int threads_for(int jobs) { return jobs > 0 ? jobs : int(std::max(1u, std::thread::hardware_concurrency())); }

struct ExportOptions {
  std::string dir, format = "perfetto", output;
  int jobs = 0;
  bool no_symbolize = false, no_flows = false;
  std::string seq;  // "FROM:TO"
};

// "FROM:TO", "FROM:" or ":TO": positions on each communicator, TO excluded.
void parse_window(const std::string& text, ChromeOptions& co) {
  size_t colon = text.find(':');
  auto number = [&](const std::string& part, int64_t fallback) -> int64_t {
    if (part.empty()) return fallback;
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;  // not a number: the error below
    }
    if (used != part.size() || v < 0)
      throw cli::BadInput(fmt::format("export: --seq '{}': want FROM:TO, two positions (0 or more)", text));
    return v;
  };
  if (colon == std::string::npos)
    throw cli::BadInput(fmt::format("export: --seq '{}': want FROM:TO, two positions (0 or more)", text));
  co.from = number(text.substr(0, colon), 0);
  co.to = number(text.substr(colon + 1), INT64_MAX);
  if (co.to <= co.from) throw cli::BadInput(fmt::format("export: --seq '{}': TO must be above FROM", text));
}

int run_export(const ExportOptions& o) {
  if (o.format != "perfetto" && o.format != "chrome")
    throw cli::BadInput(fmt::format("export: unknown --format '{}' (perfetto or chrome)", o.format));
  ChromeOptions co;
  co.flows = !o.no_flows;
  co.threads = threads_for(o.jobs);
  if (!o.seq.empty()) parse_window(o.seq, co);
  Checked c = load_and_check(o.dir, o.jobs, o.no_symbolize, "export");
  report::TimelineOptions to;
  to.symbolize = c.symbolize;
  to.names = &c.result.comms;
  report::Timeline tl(c.job, to);
  const bool to_stdout = o.output.empty() || o.output == "-";
  const bool binary = o.format == "perfetto";
  if (binary && to_stdout && isatty(STDOUT_FILENO))
    throw cli::BadInput(
        "export: --format perfetto writes a binary trace: give -o FILE or redirect the output");
  std::FILE* f = to_stdout ? stdout : std::fopen(o.output.c_str(), "w");
  if (!f) throw cli::BadInput(fmt::format("{}: cannot write: {}", o.output, std::strerror(errno)));
  try {
    if (binary)
      write_perfetto_trace(c.job, c.result, tl, f, co);
    else
      write_chrome_trace(c.job, c.result, tl, f, co);
  } catch (const std::exception& e) {
    if (!to_stdout) std::fclose(f);
    throw cli::BadInput(fmt::format("{}: {}", to_stdout ? "standard output" : o.output, e.what()));
  }
  // What stdio still held goes out now: a full disk shows here for a small trace.
  errno = 0;
  const bool written = to_stdout ? std::fflush(f) == 0 && !std::ferror(f) : std::fclose(f) == 0;
  if (!written)
    throw cli::BadInput(fmt::format("{}: write failed{}{}", to_stdout ? "standard output" : o.output,
                                    errno ? ": " : "", errno ? std::strerror(errno) : ""));
  return exit_code(c.result);
}

// `lockstep run --report`: the report next to the traces, after the job.
void report_after_run(const std::string& dir, std::FILE* out) {
  HtmlJob j;
  j.dir = dir;
  j.output = dir + "/report.html";
  try {
    write_html_report(j);
    std::fprintf(out, "lockstep run: report written to %s\n", j.output.c_str());
  } catch (const std::exception& e) {
    std::fprintf(out, "lockstep run: no report: %s\n", e.what());
  }
  std::fflush(out);
}

const bool kHook = [] {
  run::set_report_hook(&report_after_run);
  return true;
}();

}  // namespace

report::StaticReasons lint_reasons(const check::Result& result, const join::LintRequest& request) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  self[n] = 0;
  join::Joined j = join::lint_findings(result, request, self);
  for (auto& note : j.notes) std::fprintf(stderr, "lockstep: %s\n", note.c_str());
  return j.reasons;
}

int write_html_report(const HtmlJob& j) {
  Checked c = load_and_check(j.dir, j.jobs, j.no_symbolize, "report");
  report::StaticReasons reasons;
  if (j.lint) reasons = lint_reasons(c.result, *j.lint);
  report::TimelineOptions to;
  to.symbolize = c.symbolize;
  to.names = &c.result.comms;
  to.device = false;  // the page draws host times only
  report::Timeline tl(c.job, to);
  report::Context ctx{j.dir, LOCKSTEP_VERSION};
  report::HtmlOptions ho;
  ho.threads = threads_for(j.jobs);
  cli::write_output(report::html(c.job, c.result, tl, ctx, reasons, ho), j.output);
  return exit_code(c.result);
}

}  // namespace lockstep::exporter

LOCKSTEP_COMMAND(export, [](CLI::App& app) {
  auto o = std::make_shared<lockstep::exporter::ExportOptions>();
  CLI::App* sub = app.add_subcommand(
      "export",
      "Write a job's collectives as a trace for ui.perfetto.dev (Perfetto's protobuf format) or "
      "chrome://tracing (trace-event JSON)");
  sub->add_option("DIR", o->dir, "trace directory (every *.lstrace file in it, one job)")->required();
  sub->add_option("--format", o->format,
                  "perfetto (default): Perfetto's protobuf trace; chrome: trace-event JSON");
  sub->add_option("-o,--output", o->output, "write to FILE instead of standard output");
  lockstep::cli::add_load_options(sub, o->jobs, o->no_symbolize);
  sub->add_flag("--no-flows", o->no_flows, "leave out the flow arrows joining a collective across ranks");
  sub->add_option("--seq", o->seq,
                  "only positions FROM:TO (TO excluded) of each communicator: a window of a large job");
  sub->callback([o] { lockstep::cli::set_exit_code(lockstep::exporter::run_export(*o)); });
});

LOCKSTEP_COMMAND(report, [](CLI::App& app) {
  auto o = std::make_shared<lockstep::exporter::HtmlJob>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write one self-contained HTML page: swimlanes, hang view, findings with source lines");
  sub->add_option("DIR", o->dir, "trace directory (every *.lstrace file in it, one job)")->required();
  sub->add_option("-o,--output", o->output, "write the page to FILE (default: standard output)");
  lockstep::cli::add_load_options(sub, o->jobs, o->no_symbolize);
  auto lint = std::make_shared<lockstep::join::LintRequest>();
  CLI::Option* lint_opt = lockstep::join::add_lint_options(sub, *lint);
  sub->callback([o, lint, lint_opt, sub] {
    if (lockstep::join::lint_requested(sub, lint_opt, *lint, "report")) o->lint = *lint;
    lockstep::cli::set_exit_code(lockstep::exporter::write_html_report(*o));
  });
});
