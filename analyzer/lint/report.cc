// Renders lint findings as clang-style text, JSON, or SARIF 2.1.0.
#include <nlohmann/json.hpp>

#include <filesystem>

#include "lint/finding.h"

namespace lockstep::lint {

const RuleInfo kRules[3] = {
    {"conditional-collective",
     "a collective (or a call that performs one) runs only on the ranks where a rank-local condition holds"},
    {"rank-dependent-argument",
     "a collective argument every rank must pass alike (count, datatype, root, reduction op, communicator) "
     "is computed from a rank-local value"},
    {"collective-after-error-exit",
     "a collective is skipped by ranks where a local API call failed and the error path left early "
     "(off by default: --enable collective-after-error-exit)"},
};

namespace {

std::string point(const SourcePoint& p) {
  return p.file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
}

nlohmann::json json_point(const SourcePoint& p) {
  return {{"file", p.file}, {"line", p.line}, {"column", p.column}};
}

std::string file_uri(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  std::string s = ec ? path : abs.string();
  std::string out = "file://";
  for (char c : s) {
    if (c == ' ')
      out += "%20";
    else if (c == '%')
      out += "%25";
    else
      out += c;
  }
  return out;
}

nlohmann::json sarif_location(const SourcePoint& p, const std::string* message) {
  nlohmann::json loc = {
      {"physicalLocation",
       {{"artifactLocation", {{"uri", file_uri(p.file)}}},
        {"region", {{"startLine", std::max(1u, p.line)}, {"startColumn", std::max(1u, p.column)}}}}}};
  if (message) loc["message"] = {{"text", *message}};
  return loc;
}

}  // namespace

std::string render_text(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings) {
    out += point(f.at) + ": warning: " + f.message + " [" + f.rule + "]\n";
    for (const auto& n : f.notes) out += point(n.at) + ": note: " + n.message + "\n";
  }
  return out;
}

std::string render_json(const std::vector<Finding>& findings, const std::vector<ToolNote>& notes) {
  nlohmann::json j = {
      {"version", 1}, {"findings", nlohmann::json::array()}, {"tool_notes", nlohmann::json::array()}};
  for (const auto& f : findings) {
    nlohmann::json item = {{"rule", f.rule},
                           {"message", f.message},
                           {"location", json_point(f.at)},
                           {"notes", nlohmann::json::array()}};
    for (const auto& n : f.notes)
      item["notes"].push_back({{"message", n.message}, {"location", json_point(n.at)}});
    j["findings"].push_back(std::move(item));
  }
  for (const auto& n : notes) j["tool_notes"].push_back({{"file", n.file}, {"message", n.message}});
  return j.dump(2) + "\n";
}

std::string render_sarif(const std::vector<Finding>& findings, const std::vector<ToolNote>& notes,
                         const std::string& tool_version) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : kRules)
    rules.push_back({{"id", r.id},
                     {"shortDescription", {{"text", r.summary}}},
                     {"helpUri", std::string("rules/README.md#") + r.id},
                     {"defaultConfiguration", {{"level", "warning"}}}});
  nlohmann::json results = nlohmann::json::array();
  for (const auto& f : findings) {
    int index = 0;
    for (int i = 0; i < 2; ++i)
      if (f.rule == kRules[i].id) index = i;
    nlohmann::json related = nlohmann::json::array();
    int id = 0;
    for (const auto& n : f.notes) {
      auto loc = sarif_location(n.at, &n.message);
      loc["id"] = id++;
      related.push_back(std::move(loc));
    }
    nlohmann::json result = {{"ruleId", f.rule},
                             {"ruleIndex", index},
                             {"level", "warning"},
                             {"message", {{"text", f.message}}},
                             {"locations", nlohmann::json::array({sarif_location(f.at, nullptr)})}};
    if (!related.empty()) result["relatedLocations"] = std::move(related);
    results.push_back(std::move(result));
  }
  nlohmann::json notifications = nlohmann::json::array();
  for (const auto& n : notes)
    notifications.push_back(
        {{"level", "note"},
         {"message", {{"text", n.message}}},
         {"locations", nlohmann::json::array(
                           {{{"physicalLocation", {{"artifactLocation", {{"uri", file_uri(n.file)}}}}}}})}});
  nlohmann::json invocation = {{"executionSuccessful", true}};
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = std::move(notifications);
  nlohmann::json log = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       nlohmann::json::array(
           {{{"tool",
              {{"driver",
                {{"name", "lockstep-lint"}, {"version", tool_version}, {"rules", std::move(rules)}}}}},
             {"invocations", nlohmann::json::array({invocation})},
             {"results", std::move(results)}}})}};
  return log.dump(2) + "\n";
}

}  // namespace lockstep::lint
