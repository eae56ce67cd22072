// `lockstep check DIR...`: analyze one job's traces and render; exit 0 in lockstep, 1 findings,
// 2 bad input. Also installs the checker's diagnosis into `lockstep run` (its stall and finish hooks).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/output.h"
#include "export/report_cli.h"
#include "lockstep/check/analyze_dir.h"
#include "lockstep/check/distributed.h"
#include "lockstep/report/report.h"
#include "lockstep/version.h"
#include "run/stall_report.h"

namespace lockstep::check {
namespace {

struct CheckOptions {
  std::vector<std::string> inputs;
  std::string format;
  std::string output;
  int jobs = 0;
  bool no_symbolize = false;
  bool validate = false;
  bool skip_bad = false;
  bool allow_callsite = false;
  bool materialize = false;
  bool mpi = false;
  std::optional<join::LintRequest> lint;
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

DirOptions dir_options(const CheckOptions& o) {
  DirOptions d;
  d.jobs = o.jobs;
  d.validate = o.validate;
  d.symbolize = !o.no_symbolize;
  d.allow_callsite_differences = o.allow_callsite;
  d.materialize = o.materialize;
  return d;
}

int run_check(const CheckOptions& o) {
  // --mpi: every process but 0 loads its share and serves it; process 0 checks, as below. The session
  // and the coordinator outlive whatever process 0 throws, so that the others are told to stop.
  std::optional<mpi::Session> session;
  std::optional<mpi::Coordinator> coordinator;
  if (o.mpi) {
    session.emplace();
    if (session->rank() != 0) {
      mpi::serve(o.inputs, loader_options(dir_options(o)));
      return cli::kClean;
    }
    coordinator.emplace(*session);
    if (o.format == "html") throw cli::BadInput("check: --format html does not go with --mpi");
  }
  if (o.format == "html") {
    if (o.inputs.size() != 1) throw cli::BadInput("check: --format html takes one trace directory");
    return exporter::write_html_report({o.inputs.front(), o.output, o.jobs, o.no_symbolize, o.lint});
  }
  std::optional<report::Format> fmt = report::parse_format(o.format);
  if (!fmt) throw cli::BadInput("check: unknown --format " + o.format);
  DirOptions d = dir_options(o);
  if (coordinator) d.load_elsewhere = coordinator->loader();
  std::vector<std::string> skipped;
  if (o.skip_bad) d.skipped = &skipped;
  Analysis a;
  try {
    a = analyze_dir(o.inputs, d);
  } catch (const LoadError& e) {
    throw cli::BadInput(std::string("check: ") + e.what());
  }
  report::Context ctx{joined(o.inputs), LOCKSTEP_VERSION};
  report::StaticReasons reasons;
  if (o.lint) ctx.reasons = &(reasons = exporter::lint_reasons(a.result, *o.lint));
  cli::write_output(report::render(a.result, *fmt, ctx), o.output);
  for (const auto& e : skipped) std::fprintf(stderr, "lockstep: check: skipped %s\n", e.c_str());
  if (!a.result.in_lockstep()) return cli::kFindings;
  // The files left out might have shown a finding: "in lockstep" is not the verdict on the whole job.
  return skipped.empty() ? cli::kClean : cli::kBadInput;
}

// `lockstep run --stall`: the checker's hang diagnosis on the files as they are now.
void stall_diagnosis(const std::vector<std::string>& files, double stalled_s, std::FILE* out) {
  try {
    DirOptions d;
    d.validate = false;    // still being written; the reader's per-record checks still apply
    d.materialize = true;  // read once: a second walk could see calls published since the first
    Analysis a = analyze_dir(files, d);
    const Result& res = a.result;
    std::fprintf(out, "lockstep: no rank has progressed for %.0f s\n%s", stalled_s,
                 report::hang_text(res).c_str());
    for (auto& f : res.findings)
      std::fprintf(out, "  %s: %s\n", kind_name(f.kind), report::headline(f).c_str());
    std::fflush(out);
  } catch (const std::exception& e) {
    // Files still being written can be unreadable for a moment; the basic report needs less of them.
    std::fprintf(out, "lockstep: the checker could not read the traces yet (%s): basic report\n", e.what());
    run::basic_stall_report(files, stalled_s, out);
  }
}

// After the job: the check verdict and its findings, as `lockstep check DIR` would print them.
void finish_check(const std::string& dir, std::FILE* out) {
  try {
    Analysis a = analyze_dir(dir);
    std::fputs(report::text(a.result, report::Context{dir, LOCKSTEP_VERSION}).c_str(), out);
  } catch (const std::exception& e) {
    std::fprintf(out, "lockstep check: %s\n", e.what());
  }
  std::fflush(out);
}

const bool kHooks = [] {
  run::set_stall_reporter(&stall_diagnosis);
  run::set_finish_hook(&finish_check);
  return true;
}();

}  // namespace
}  // namespace lockstep::check

LOCKSTEP_COMMAND(check, [](CLI::App& app) {
  auto o = std::make_shared<lockstep::check::CheckOptions>();
  CLI::App* sub = app.add_subcommand(
      "check", "Check one job's traces: are all ranks in lockstep? Exit 0 yes, 1 findings, 2 bad input");
  sub->add_option(
         "DIR", o->inputs,
         "trace directory (every *.lstrace file in it); several directories, globs or trace files that "
         "together hold one job (node-local directories of a multi-node run)")
      ->required();
  lockstep::cli::add_output_options(sub, o->format, o->output, {"text", "json", "sarif", "junit", "html"});
  lockstep::cli::add_load_options(sub, o->jobs, o->no_symbolize);
  sub->add_flag(
      "--allow-callsite-differences", o->allow_callsite,
      "a rank making a collective from another line than its own pattern is a warning, not a finding");
  sub->add_flag("--validate", o->validate, "also validate every field of every record first (a second pass)");
  sub->add_flag(
      "--skip-bad", o->skip_bad,
      "analyze the readable files, naming each skipped one (exit 2 if any was skipped and no finding)");
  // Internal: the path that keeps every call in memory from the start (tests compare its findings with
  // the streaming path's); hidden from --help.
  sub->add_flag("--materialize", o->materialize, "keep every call in memory from the start")->group("");
  sub->add_flag(
      "--mpi", o->mpi,
      "check with every process of an MPI job: mpirun -np P lockstep check --mpi DIR... Each process "
      "lists DIR on its own node and loads a share of the files; process 0 prints the result");
  auto lint = std::make_shared<lockstep::join::LintRequest>();
  CLI::Option* lint_opt = lockstep::join::add_lint_options(sub, *lint);
  sub->callback([o, lint, lint_opt, sub] {
    if (lockstep::join::lint_requested(sub, lint_opt, *lint, "check")) o->lint = *lint;
    lockstep::cli::set_exit_code(lockstep::check::run_check(*o));
  });
});
