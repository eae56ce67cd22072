// SARIF 2.1.0: one result per finding, located at the culprit's call site (the first rank's when no
// rank is blamed), with the other ranks' call sites as related locations.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "json_model.h"
#include "lockstep/report/report.h"

namespace lockstep::report {

namespace {

using Json = nlohmann::json;

const check::Kind kAllKinds[] = {
    check::Kind::kMissingCollective, check::Kind::kOpMismatch,      check::Kind::kCountMismatch,
    check::Kind::kDtypeMismatch,     check::Kind::kRootMismatch,    check::Kind::kRedopMismatch,
    check::Kind::kPeerMismatch,      check::Kind::kNameMismatch,    check::Kind::kMembershipMismatch,
    check::Kind::kDeadlockCycle,     check::Kind::kUnfinished,      check::Kind::kHang,
    check::Kind::kCallsiteMismatch,  check::Kind::kInvalidArgument, check::Kind::kRankDied};

const char* rule_text(check::Kind k) {
  switch (k) {
    case check::Kind::kMissingCollective:
      return "a rank did not make a collective call the others made";
    case check::Kind::kOpMismatch:
      return "ranks made different collective calls at the same position";
    case check::Kind::kCountMismatch:
      return "ranks passed different amounts of data to the same collective";
    case check::Kind::kDtypeMismatch:
      return "ranks passed different datatypes to the same collective";
    case check::Kind::kRootMismatch:
      return "ranks named different roots for the same collective";
    case check::Kind::kRedopMismatch:
      return "ranks used different reduction operations for the same collective";
    case check::Kind::kPeerMismatch:
      return "a send or receive names a peer that does not expect it";
    case check::Kind::kNameMismatch:
      return "ranks reduced differently named tensors together";
    case check::Kind::kMembershipMismatch:
      return "ranks disagree on the members of a communicator";
    case check::Kind::kDeadlockCycle:
      return "ranks wait for each other in a cycle";
    case check::Kind::kUnfinished:
      return "every rank entered a collective and some never finished it";
    case check::Kind::kHang:
      return "the job hung: stopped at its timeout, or every running rank blocked";
    case check::Kind::kInvalidArgument:
      return "an argument MPI rejects (a root outside the communicator, MPI_COMM_NULL, MPI_DATATYPE_NULL, a "
             "negative "
             "split colour other than MPI_UNDEFINED), or a communicator creation MPI failed";
    case check::Kind::kCallsiteMismatch:
      return "a rank made a collective from another line than its own pattern (same arguments)";
    case check::Kind::kRankDied:
      return "a rank died (a fatal signal, MPI_Abort, or a non-zero exit before MPI_Finalize) while every "
             "rank's collectives agreed";
  }
  return "";
}

Json location(const check::RankDetail& d, const std::string& comm) {
  Json loc = Json::object();
  const check::Site& s = d.site;
  Json phys = Json::object();
  if (!s.file.empty()) {
    phys["artifactLocation"] = {{"uri", s.file}};
    if (s.line > 0) phys["region"] = {{"startLine", s.line}};
  } else if (!s.module.empty()) {
    phys["artifactLocation"] = {{"uri", s.module}};
    phys["address"] = {{"relativeAddress", s.offset}, {"kind", "instruction"}};
  }
  if (!phys.empty()) loc["physicalLocation"] = phys;
  std::string what = d.present ? fmt::format("rank {}: {} #{} on {}", d.rank, d.operation, d.seq, comm)
                               : fmt::format("rank {}: no call here", d.rank);
  if (!d.context.empty()) what += " (in " + d.context + ")";
  loc["message"] = {{"text", what}};
  if (!s.function.empty())
    loc["logicalLocations"] = Json::array({{{"name", s.function}, {"kind", "function"}}});
  return loc;
}

}  // namespace

std::string sarif(const check::Result& r, const Context& ctx) {
  Json rules = Json::array();
  for (auto k : kAllKinds)
    rules.push_back({{"id", check::kind_name(k)},
                     {"name", check::kind_name(k)},
                     {"shortDescription", {{"text", rule_text(k)}}},
                     {"helpUri", "https://github.com/lockstep/lockstep/blob/main/docs/check-output.md"}});
  Json results = Json::array();
  for (size_t fi = 0; fi < r.findings.size(); ++fi) {
    const check::Finding& f = r.findings[fi];
    Json res;
    res["ruleId"] = check::kind_name(f.kind);
    res["ruleIndex"] = int(f.kind);
    res["level"] = f.severity == check::Severity::kError ? "error" : "warning";
    res["message"] = {{"text", headline(f) + ": " + f.explanation}};
    const check::RankDetail* at = nullptr;
    for (auto& d : f.detail)
      for (int32_t c : f.culprits)
        if (!at && d.rank == c && d.present) at = &d;
    for (auto& d : f.detail)
      if (!at && d.present) at = &d;
    Json locs = Json::array(), related = Json::array();
    int id = 0;
    for (auto& d : f.detail) {
      Json l = location(d, f.comm.name);
      if (&d == at) {
        locs.push_back(l);
      } else {
        l["id"] = id++;
        related.push_back(l);
      }
    }
    if (locs.empty()) locs.push_back({{"message", {{"text", fmt::format("{} #{}", f.comm.name, f.seq)}}}});
    res["locations"] = locs;
    // `check --lint`: lint's finding at this call site, then its condition and origin notes.
    const StaticReason* why = ctx.reasons && ctx.reasons->count(fi) ? &ctx.reasons->at(fi) : nullptr;
    if (why) {
      auto loc = [](const std::string& file, int line, const std::string& text) {
        Json l = {{"message", {{"text", text}}}};
        if (!file.empty())
          l["physicalLocation"] = {{"artifactLocation", {{"uri", file}}},
                                   {"region", {{"startLine", std::max(line, 1)}}}};
        return l;
      };
      Json l = loc(why->file, why->line, "lint [" + why->rule + "]: " + why->message);
      l["id"] = id++;
      related.push_back(l);
      for (auto& n : why->notes) {
        Json nl = loc(n.file, n.line, "lint: " + n.message);
        nl["id"] = id++;
        related.push_back(nl);
      }
      res["message"]["text"] = res["message"]["text"].get<std::string>() + " (static: " + why->summary + ")";
    }
    if (!related.empty()) res["relatedLocations"] = related;
    res["properties"] = finding_json(f);
    if (why) res["properties"]["static"] = static_json(*why);
    results.push_back(res);
  }
  Json notes = Json::array();
  for (int32_t m : r.missing_processes)
    notes.push_back({{"level", "error"},
                     {"message", {{"text", fmt::format("rank {} has no trace file (missing process)", m)}}}});
  for (auto& w : r.warnings) notes.push_back({{"level", "warning"}, {"message", {{"text", w}}}});
  Json inv = {{"executionSuccessful", true}, {"exitCode", r.in_lockstep() ? 0 : 1}};
  if (!notes.empty()) inv["toolExecutionNotifications"] = notes;
  Json log = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
              {"version", "2.1.0"},
              {"runs", Json::array({{{"tool",
                                      {{"driver",
                                        {{"name", "lockstep"},
                                         {"version", ctx.version},
                                         {"informationUri", "https://github.com/lockstep/lockstep"},
                                         {"rules", rules}}}}},
                                     {"invocations", Json::array({inv})},
                                     {"results", results},
                                     {"properties", {{"directory", ctx.dir}, {"verdict", verdict(r)}}}}})}};
  // Paths, argv and names from a trace may hold any bytes: invalid UTF-8 is written as U+FFFD.
  return log.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace lockstep::report
