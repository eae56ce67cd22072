// `lockstep check DIR`: load the job's traces, analyze, render; exit 0 in lockstep, 1 findings,
// 2 bad input. Also installs the checker's diagnosis into `lockstep run` (its stall and finish hooks).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "check_cli.h"
#include "cli/command.h"
#include "lockstep/check/load.h"
#include "lockstep/report/report.h"
#include "lockstep/version.h"
#include "run/stall_report.h"
#include "symbolize/symbolize.h"

namespace lockstep::check {

Symbolizer make_symbolizer(std::shared_ptr<symbolize::Symbolizer> sym) {
  return [sym](const Rank& rank, Site& site) {
    std::vector<format::Module> mods;
    for (auto& m : rank.modules) mods.push_back({m.path, m.build_id, m.base, m.lo, m.hi});
    symbolize::Location loc = sym->call_site(mods, site.address);
    if (!loc.function.empty()) site.function = loc.function;
    if (loc.has_line()) {
      site.file = loc.file;
      site.line = int(loc.line);
    }
  };
}

SiteKeys make_site_keys(const std::shared_ptr<symbolize::Symbolizer>& sym) {
  return [sym](const Rank& rank, const std::vector<uint64_t>& addrs) {
    std::vector<format::Module> mods;
    for (auto& m : rank.modules) mods.push_back({m.path, m.build_id, m.base, m.lo, m.hi});
    std::vector<symbolize::Location> locs = sym->call_sites(mods, addrs);
    std::vector<uint64_t> keys = module_site_keys(rank, addrs);
    for (size_t i = 0; i < addrs.size() && i < locs.size(); ++i)
      if (locs[i].has_line()) keys[i] = std::hash<std::string>()(locs[i].file + ":" + std::to_string(locs[i].line));
    return keys;
  };
}

void write_output(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw cli::BadInput(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) throw cli::BadInput(fmt::format("{}: write failed", path));
}

report::Format format_option(const std::string& name, const char* cmd) {
  auto f = report::parse_format(name);
  if (!f) throw cli::BadInput(fmt::format("{}: unknown --format '{}' (text, json, sarif or junit)", cmd, name));
  return *f;
}

namespace {

struct CheckOptions {
  std::string dir;
  std::string format = "text";
  std::string output;
  int jobs = 0;
  bool no_symbolize = false;
  bool validate = false;
  bool skip_bad = false;
};

int run_check(const CheckOptions& o) {
  report::Format fmt = format_option(o.format, "check");
  LoadOptions lo;
  lo.jobs = o.jobs;
  lo.validate = o.validate;
  std::vector<std::string> skipped;
  if (o.skip_bad) lo.skipped = &skipped;
  auto sym = std::make_shared<symbolize::Symbolizer>();
  if (!o.no_symbolize) lo.site_keys = make_site_keys(sym);
  Job job;
  try {
    job = load_dir(o.dir, lo);
  } catch (const LoadError& e) {
    throw cli::BadInput(std::string("check: ") + e.what());
  }
  Options ao;
  if (!o.no_symbolize) ao.symbolize = make_symbolizer(sym);
  Result res = analyze(job, ao);
  report::Context ctx{o.dir, LOCKSTEP_VERSION};
  write_output(report::render(res, fmt, ctx), o.output);
  for (const auto& e : skipped) std::fprintf(stderr, "lockstep: check: skipped %s\n", e.c_str());
  if (!res.in_lockstep()) return cli::kFindings;
  // The files left out might have shown a finding: "in lockstep" is not the verdict on the whole job.
  return skipped.empty() ? cli::kClean : cli::kBadInput;
}

// `lockstep run --stall`: the checker's hang diagnosis on the files as they are now.
void stall_diagnosis(const std::vector<std::string>& files, double stalled_s, std::FILE* out) {
  try {
    Job job;
    LoadOptions lo;
    lo.validate = false;  // still being written; the reader's per-record checks still apply
    auto sym = std::make_shared<symbolize::Symbolizer>();
    lo.site_keys = make_site_keys(sym);
    for (auto& f : files) {
      Rank r = load_file(f, lo);
      if (r.world_rank >= 0) job.ranks.push_back(std::move(r));
    }
    if (job.ranks.empty()) return run::basic_stall_report(files, stalled_s, out);
    finish_job(job);
    Options ao;
    ao.symbolize = make_symbolizer(sym);
    Result res = analyze(job, ao);
    std::fprintf(out, "lockstep: no rank has progressed for %.0f s\n%s", stalled_s, report::hang_text(res).c_str());
    for (auto& f : res.findings) std::fprintf(out, "  %s: %s\n", kind_name(f.kind), report::headline(f).c_str());
    std::fflush(out);
  } catch (const std::exception&) {
    run::basic_stall_report(files, stalled_s, out);
  }
}

// After the job: the check verdict and its findings, as `lockstep check DIR` would print them.
void finish_check(const std::string& dir, std::FILE* out) {
  try {
    auto sym = std::make_shared<symbolize::Symbolizer>();
    LoadOptions lo;
    lo.site_keys = make_site_keys(sym);
    Job job = load_dir(dir, lo);
    Options ao;
    ao.symbolize = make_symbolizer(sym);
    Result res = analyze(job, ao);
    std::string t = report::text(res, report::Context{dir, LOCKSTEP_VERSION});
    std::fputs(t.c_str(), out);
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
  sub->add_option("DIR", o->dir, "trace directory (every *.lstrace file in it, one job)")->required();
  sub->add_option("--format", o->format, "text (default), json, sarif or junit");
  sub->add_option("-o,--output", o->output, "write the report to FILE instead of standard output");
  sub->add_option("-j,--jobs", o->jobs, "threads loading trace files (default: one per core)")->check(CLI::NonNegativeNumber);
  sub->add_flag("--no-symbolize", o->no_symbolize, "report call sites as module+offset (no llvm-symbolizer run)");
  sub->add_flag("--validate", o->validate, "also validate every field of every record first (a second pass)");
  sub->add_flag(
      "--skip-bad", o->skip_bad,
      "analyze the readable files, naming each skipped one (exit 2 if any was skipped and no finding)");
  sub->callback([o] { lockstep::cli::set_exit_code(lockstep::check::run_check(*o)); });
});
