// JSON report (docs/check-output.md, docs/check-output.schema.Json). Communicator ids are hex strings:
// they are 64-bit hashes, beyond what JSON numbers carry exactly.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "json_model.h"
#include "lockstep/format/reader.h"
#include "lockstep/report/report.h"

namespace lockstep::report {

using Json = nlohmann::json;

std::string hex_id(uint64_t id) { return fmt::format("{:#018x}", id); }

nlohmann::json comm_json(const check::CommRef& c) {
  return {{"id", hex_id(c.id)}, {"name", c.name}, {"size", c.size}};
}

nlohmann::json site_json(const check::Site& s) {
  Json j = {{"text", s.text()}};
  if (!s.file.empty()) j["file"] = s.file;
  if (s.line > 0) j["line"] = s.line;
  if (!s.function.empty()) j["function"] = s.function;
  if (!s.module.empty()) {
    j["module"] = s.module;
    j["offset"] = s.offset;
  }
  return j;
}

nlohmann::json detail_json(const check::RankDetail& d) {
  Json j = {{"rank", d.rank}, {"present", d.present}};
  if (!d.note.empty()) j["note"] = d.note;
  if (!d.context.empty()) j["context"] = d.context;
  if (!d.present) return j;
  j["seq"] = d.seq;
  if (!d.position.empty()) j["position"] = d.position;  // seq -1: where the message stands
  j["operation"] = d.operation;
  j["count"] = d.count;
  j["bytes"] = d.bytes;
  j["datatype"] = d.datatype.empty() ? format::dtype_name(d.dtype) : d.datatype;
  j["root"] = d.root == LST_NONE && !d.rooted ? Json(nullptr) : Json(d.root);
  j["redop"] = d.redop ? Json(format::redop_name(d.redop)) : Json(nullptr);
  j["peer"] = d.peer == LST_NONE ? Json(nullptr) : Json(d.peer);
  j["state"] = format::state_name(d.state);
  j["call_site"] = site_json(d.site);
  if (!d.callers.empty()) {
    Json callers = Json::array();
    for (const auto& c : d.callers) callers.push_back(site_json(c));
    j["callers"] = callers;
  }
  j["time_s"] = d.time_s;
  if (!d.tensor.empty()) j["tensor"] = d.tensor;
  return j;
}

nlohmann::json edge_json(const check::WaitEdge& e) {
  return {{"from", e.from},
          {"to", e.to},
          {"communicator", hex_id(e.comm)},
          {"communicator_name", e.comm_name},
          {"seq", e.seq},
          {"operation", e.operation},
          {"message", e.message}};
}

nlohmann::json finding_json(const check::Finding& f) {
  Json j = {{"kind", check::kind_name(f.kind)},
            {"severity", check::severity_name(f.severity)},
            {"communicator", comm_json(f.comm)},
            {"seq", f.seq},
            {"ranks", f.ranks},
            {"culprits", f.culprits},
            {"tie", f.tie},
            {"control_plane", f.control},
            {"summary", headline(f)},
            {"explanation", f.explanation},
            {"notes", f.notes},
            {"detail", Json::array()}};
  for (auto& d : f.detail) j["detail"].push_back(detail_json(d));
  if (!f.tensor.empty()) j["tensor"] = f.tensor;
  if (!f.skipped_tensors.empty()) j["skipped_tensors"] = f.skipped_tensors;
  if (f.kind == check::Kind::kMissingCollective && f.mispaired > 0) {
    j["mispaired"] = f.mispaired;
    j["silently_wrong"] = f.silently_wrong;
  }
  if (!f.edges.empty()) {
    j["edges"] = Json::array();
    for (auto& e : f.edges) j["edges"].push_back(edge_json(e));
  }
  return j;
}

nlohmann::json static_json(const StaticReason& s) {
  Json j = {{"rule", s.rule}, {"message", s.message}, {"file", s.file},
            {"line", s.line}, {"summary", s.summary}, {"notes", Json::array()}};
  for (auto& n : s.notes) j["notes"].push_back({{"file", n.file}, {"line", n.line}, {"message", n.message}});
  return j;
}

std::string json(const check::Result& r, const Context& ctx) {
  Json j;
  j["schema_version"] = "1.4";
  j["tool"] = {{"name", "lockstep"}, {"version", ctx.version}};
  j["directory"] = ctx.dir;
  j["verdict"] = r.in_lockstep() ? "in_lockstep" : "findings";
  j["summary"] = {{"ranks", r.summary.ranks},
                  {"world_size", r.summary.world_size},
                  {"communicators", r.summary.communicators},
                  {"collectives", r.summary.collectives},
                  {"records", r.summary.records},
                  {"job_id", r.summary.job_id},
                  {"text", verdict(r)}};
  j["missing_processes"] = r.missing_processes;
  j["warnings"] = r.warnings;
  j["communicators"] = Json::array();
  for (auto& c : r.comms) j["communicators"].push_back(comm_json(c));
  j["findings"] = Json::array();
  for (size_t i = 0; i < r.findings.size(); ++i) {
    Json f = finding_json(r.findings[i]);
    if (ctx.reasons && ctx.reasons->count(i)) f["static"] = static_json(ctx.reasons->at(i));
    j["findings"].push_back(std::move(f));
  }
  Json hang = {
      {"hung", r.hung}, {"ranks", Json::array()}, {"wait_for", Json::array()}, {"look_here", r.look_here}};
  for (auto& st : r.states) {
    Json s = {{"rank", st.rank},
              {"file", st.file},
              {"host", st.host},
              {"pid", st.pid},
              {"end", check::end_state_name(st.end)},
              {"blocked", st.blocked},
              {"waits_for", st.waits_for}};
    if (st.end == check::EndState::kCrashed) s["signal"] = st.signal;
    if (st.under_way_with != LST_NONE) s["under_way_with"] = st.under_way_with;
    if (!st.at_stop.empty()) {
      s["at_stop"] = {{"state", st.at_stop}};
      if (st.at_stop_cpu >= 0) s["at_stop"]["cpu"] = st.at_stop_cpu;
      if (!st.at_stop_wchan.empty()) s["at_stop"]["wchan"] = st.at_stop_wchan;
    }
    if (st.blocked) {
      s["in"] = detail_json(st.in);
      s["communicator"] = comm_json(st.comm);
    }
    hang["ranks"].push_back(s);
  }
  for (auto& e : r.wait_for) hang["wait_for"].push_back(edge_json(e));
  j["hang"] = hang;
  // Paths, argv and names from a trace may hold any bytes: invalid UTF-8 is written as U+FFFD.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace lockstep::report
