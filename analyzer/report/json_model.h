// JSON pieces shared by the JSON and SARIF renderers (private to analyzer/report).
#pragma once

#include <nlohmann/json.hpp>

#include "lockstep/check/check.h"
#include "lockstep/report/report.h"

namespace lockstep::report {
std::string hex_id(uint64_t id);
nlohmann::json comm_json(const check::CommRef& c);
nlohmann::json detail_json(const check::RankDetail& d);
nlohmann::json site_json(const check::Site& s);
nlohmann::json edge_json(const check::WaitEdge& e);
nlohmann::json finding_json(const check::Finding& f);
// `check --lint`: the lint finding joined to a check finding (the JSON `static` object).
nlohmann::json static_json(const StaticReason& s);
}  // namespace lockstep::report
