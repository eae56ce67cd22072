// JUnit XML: one test case per communicator (failed when it has findings), plus one for the job's
// processes (missing trace files), so a CI test tab shows which communicator went out of lockstep.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "lockstep/format/escape.h"
#include "lockstep/report/report.h"

namespace lockstep::report {
namespace {

// Markup escaped, and bytes XML 1.0 cannot carry (control characters, invalid UTF-8) as \xNN text.
std::string xml(const std::string& s) { return format::xml_text(s); }

}  // namespace

std::string junit(const check::Result& r, const Context& ctx) {
  std::map<uint64_t, std::vector<const check::Finding*>> by_comm;
  const check::Finding* hang = nullptr;  // about the whole job: its own test case
  const check::Finding* died = nullptr;  // about the job's processes: with the missing ones
  for (auto& f : r.findings) {
    if (f.kind == check::Kind::kHang)
      hang = &f;
    else if (f.kind == check::Kind::kRankDied)
      died = &f;
    else
      by_comm[f.comm.id].push_back(&f);
  }
  size_t tests = r.comms.size() + 2, failures = 0;
  std::string cases;
  for (auto& c : r.comms) {
    auto it = by_comm.find(c.id);
    cases += fmt::format(
        "    <testcase classname=\"lockstep.check.communicators\" name=\"{} ({:#x}, size {})\" time=\"0\">\n",
        xml(c.name), c.id, c.size);
    if (it != by_comm.end()) {
      ++failures;
      const check::Finding& first = *it->second.front();
      std::string body;
      for (auto* f : it->second) {
        body +=
            fmt::format("[{}] {} #{}: {}\n", check::kind_name(f->kind), f->comm.name, f->seq, f->explanation);
        for (auto& n : f->notes) body += "  note: " + n + "\n";
        for (auto& d : f->detail)
          body += fmt::format("  rank {}: {} {}{}\n", d.rank, d.present ? d.operation : "no call",
                              d.site.text(), d.context.empty() ? "" : " (in " + d.context + ")");
      }
      cases += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                           check::kind_name(first.kind), xml(headline(first)), xml(body));
    }
    cases += "    </testcase>\n";
  }
  // Findings about a communicator no rank holds (MPI_COMM_NULL, the parent of a creation that failed).
  for (auto& [id, list] : by_comm) {
    if (std::any_of(r.comms.begin(), r.comms.end(), [&](const check::CommRef& c) { return c.id == id; }))
      continue;
    ++tests;
    ++failures;
    const check::Finding& first = *list.front();
    std::string body;
    for (auto* f : list) {
      body +=
          fmt::format("[{}] {} #{}: {}\n", check::kind_name(f->kind), f->comm.name, f->seq, f->explanation);
      for (auto& n : f->notes) body += "  note: " + n + "\n";
    }
    cases += fmt::format(
        "    <testcase classname=\"lockstep.check.communicators\" name=\"{} ({:#x})\" time=\"0\">\n",
        xml(first.comm.name), id);
    cases += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                         check::kind_name(first.kind), xml(headline(first)), xml(body));
    cases += "    </testcase>\n";
  }
  cases += "    <testcase classname=\"lockstep.check.job\" name=\"processes\" time=\"0\">\n";
  if (!r.missing_processes.empty() || died) {
    ++failures;
    std::string list;
    for (int32_t m : r.missing_processes) list += (list.empty() ? "" : ",") + std::to_string(m);
    std::string message = list.empty() ? "" : fmt::format("no trace file for rank(s) {}", list);
    std::string body;
    if (died) {
      message += (message.empty() ? "" : "; ") + headline(*died);
      body = died->explanation + "\n";
      for (auto& n : died->notes) body += "  note: " + n + "\n";
    }
    cases += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                         list.empty() ? "rank_died" : "missing_process", xml(message), xml(body));
  }
  cases += "    </testcase>\n";
  cases += "    <testcase classname=\"lockstep.check.job\" name=\"hang\" time=\"0\">\n";
  if (hang) {
    ++failures;
    std::string body = hang->explanation + "\n";
    for (auto& n : hang->notes) body += "  note: " + n + "\n";
    cases += fmt::format("      <failure type=\"hang\" message=\"{}\">{}</failure>\n", xml(headline(*hang)),
                         xml(body));
  }
  cases += "    </testcase>\n";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"lockstep check\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"0\">\n", tests,
      failures);
  out += fmt::format(
      "  <testsuite name=\"lockstep check {}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" "
      "time=\"0\">\n",
      xml(ctx.dir), tests, failures);
  out += fmt::format("    <properties><property name=\"verdict\" value=\"{}\"/></properties>\n",
                     xml(verdict(r)));
  out += cases;
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace lockstep::report
