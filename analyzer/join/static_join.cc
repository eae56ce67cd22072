// Joins lint's static findings to check's dynamic ones. lint runs as a child process of this same
// executable so that the checker needs neither Clang nor its headers, and works (saying so) in a
// build without lint.
#include "static_join.h"

#include "cli/command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace lockstep::join {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::string canonical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  return ec ? fs::path(path).lexically_normal().string() : p.string();
}

// Runs argv, returns its standard output; `rc` gets the exit status (-1 when it could not run).
std::string capture(const std::vector<std::string>& argv, int* rc) {
  int out[2];
  *rc = -1;
  if (pipe(out) != 0) return "";
  pid_t pid = fork();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    return "";
  }
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    close(out[0]);
    close(out[1]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buf, size_t(n));
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return text;
}

std::string line_text(const std::string& file, int line) {
  std::ifstream in(file);
  std::string text;
  for (int n = 1; n <= line && std::getline(in, text); ++n) {
  }
  size_t a = text.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  text = text.substr(a);
  if (size_t c = text.find("//"); c != std::string::npos) text = text.substr(0, c);
  while (!text.empty() && (text.back() == ' ' || text.back() == '{')) text.pop_back();
  return text.size() > 70 ? text.substr(0, 67) + "..." : text;
}

report::StaticReason reason_of(const Json& f) {
  report::StaticReason r;
  r.rule = f.value("rule", "");
  r.message = f.value("message", "");
  r.file = f["location"].value("file", "");
  r.line = f["location"].value("line", 0);
  const report::StaticReason::Note* cond = nullptr;
  for (auto& n : f["notes"]) {
    r.notes.push_back(
        {n["location"].value("file", ""), n["location"].value("line", 0), n.value("message", "")});
  }
  for (auto& n : r.notes)
    if (!cond && n.message.find("condition") != std::string::npos) cond = &n;
  std::string origin;
  for (auto& n : r.notes) {
    if (&n == cond) continue;
    std::string m = n.message;
    if (m.size() > 5 && m.compare(m.size() - 5, 5, " here") == 0) m.resize(m.size() - 5);
    origin = fmt::format("{} (line {})", m, n.line);
    break;
  }
  if (r.rule == "conditional-collective" && cond) {
    std::string text = line_text(cond->file, cond->line);
    r.summary = fmt::format("the call runs only where {} holds (line {})",
                            text.empty() ? "a condition" : "`" + text + "`", cond->line);
    if (!origin.empty()) r.summary += ", a rank-local value: " + origin;
  } else {
    r.summary = r.message.substr(0, r.message.find(';'));
    if (!origin.empty()) r.summary += ": " + origin;
  }
  return r;
}

}  // namespace

std::vector<std::string> flags_after_separator(const std::string& subcommand) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string a; std::getline(in, a, '\0');) argv.push_back(a);
  auto sub = std::find(argv.begin(), argv.end(), subcommand);
  if (sub == argv.end()) return {};
  auto sep = std::find(sub, argv.end(), "--");
  if (sep == argv.end()) return {};
  return std::vector<std::string>(sep + 1, argv.end());
}

CLI::Option* add_lint_options(CLI::App* sub, LintRequest& req) {
  CLI::Option* o = sub->add_option("--lint", req.files,
                                   "lint the findings' call sites (or FILE...) and join why they diverge; "
                                   "needs -p BUILD_DIR or `-- FLAGS`")
                       ->expected(0, -1);
  sub->add_option("-p,--build-dir", req.build_dir,
                  "with --lint: the directory holding compile_commands.json");
  sub->allow_extras(true);
  return o;
}

bool lint_requested(CLI::App* sub, CLI::Option* lint, LintRequest& req, const std::string& subcommand) {
  // CLI11 hands back what follows `--` as extras; anything else left over is a stray word.
  std::vector<std::string> flags = flags_after_separator(subcommand);
  std::vector<std::string> extra = sub->remaining();
  for (const auto& e : extra)
    if (e != "--" && std::find(flags.begin(), flags.end(), e) == flags.end())
      throw cli::BadInput(fmt::format("{}: unexpected argument '{}'", subcommand, e));
  if (lint->count() == 0) {
    if (!flags.empty())
      throw cli::BadInput(fmt::format("{}: compiler flags after `--` go with --lint", subcommand));
    return false;
  }
  // `--lint` alone leaves one empty value behind.
  req.files.erase(std::remove(req.files.begin(), req.files.end(), std::string()), req.files.end());
  req.flags = flags;
  return true;
}

Joined lint_findings(const check::Result& result, const LintRequest& req, const std::string& self) {
  Joined out;
  if (result.findings.empty()) return out;
  // The call sites that matter: every rank's, at every finding.
  std::set<std::string> site_files;
  for (auto& f : result.findings)
    for (auto& d : f.detail)
      if (d.present && !d.site.file.empty()) site_files.insert(d.site.file);
  std::vector<std::string> files = req.files;
  if (files.empty()) {
    for (auto& f : site_files) {
      std::error_code ec;
      if (fs::is_regular_file(f, ec))
        files.push_back(f);
      else
        out.notes.push_back(
            fmt::format("lint: no source for {} (findings there are reported without a static reason)", f));
    }
  }
  if (site_files.empty()) {
    out.notes.push_back(
        "lint: the findings have no call sites with file and line (symbolize the traces' binaries "
        "with debug info); reported without a static reason");
    return out;
  }
  if (files.empty()) return out;
  if (req.build_dir.empty() && req.flags.empty()) {
    out.notes.push_back(
        "lint: no compile flags (give -p BUILD_DIR or `-- FLAGS`); reported without a static reason");
    return out;
  }
  std::vector<std::string> argv = {self, "lint", "--format", "json"};
  if (!req.build_dir.empty()) argv.insert(argv.end(), {"-p", req.build_dir});
  argv.insert(argv.end(), files.begin(), files.end());
  if (!req.flags.empty()) {
    argv.push_back("--");
    argv.insert(argv.end(), req.flags.begin(), req.flags.end());
  }
  int rc = 0;
  std::string text = capture(argv, &rc);
  Json lint;
  try {
    if (rc != 0 && rc != 1)
      throw std::runtime_error(
          fmt::format("exit {}: run `lockstep lint` with the same files and flags to see why", rc));
    lint = Json::parse(text);
  } catch (const std::exception& e) {
    out.notes.push_back(
        fmt::format("lint: could not run on {} file(s) ({}); reported without a static reason", files.size(),
                    rc == 127 || rc == -1 ? "lint is not built in" : e.what()));
    return out;
  }
  // By path and line; by file name and line as well, for sources that moved since the build (the
  // debug info names the build's paths).
  std::map<std::pair<std::string, int>, const Json*> at, by_name;
  for (auto& f : lint["findings"]) {
    std::string file = f["location"].value("file", "");
    int line = f["location"].value("line", 0);
    at[{canonical(file), line}] = &f;
    by_name[{fs::path(file).filename().string(), line}] = &f;
  }
  for (size_t i = 0; i < result.findings.size(); ++i) {
    const check::Finding& f = result.findings[i];
    // The culprits' call sites first: they are where the ranks diverged.
    std::vector<const check::RankDetail*> order;
    for (auto& d : f.detail)
      if (std::find(f.culprits.begin(), f.culprits.end(), d.rank) != f.culprits.end()) order.push_back(&d);
    for (auto& d : f.detail) order.push_back(&d);
    for (const check::RankDetail* d : order) {
      if (!d->present || d->site.file.empty()) continue;
      const Json* hit = nullptr;
      if (auto it = at.find({canonical(d->site.file), d->site.line}); it != at.end())
        hit = it->second;
      else if (auto nt = by_name.find({fs::path(d->site.file).filename().string(), d->site.line});
               nt != by_name.end())
        hit = nt->second;
      if (!hit) continue;
      out.reasons[i] = reason_of(*hit);
      break;
    }
  }
  out.notes.push_back(fmt::format("lint: {} of {} finding(s) joined to a lint finding at their call site",
                                  out.reasons.size(), result.findings.size()));
  return out;
}

}  // namespace lockstep::join
