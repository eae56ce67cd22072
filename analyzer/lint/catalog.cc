// Reads the YAML API catalogs (rules/*.yaml) with yaml-cpp; see rules/README.md for the format.
#include "lint/catalog.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <iterator>
#include <stdexcept>

namespace lockstep::lint {
namespace {

struct RoleName {
  const char* name;
  ArgRole role;
};
constexpr RoleName kRoles[] = {
    {"other", ArgRole::kOther},
    {"in", ArgRole::kInput},
    {"out_uniform", ArgRole::kOutUniform},
    {"inout_uniform", ArgRole::kInOutUniform},
    {"out_local", ArgRole::kOutLocal},
    {"count", ArgRole::kCount},
    {"counts", ArgRole::kPerRankCounts},
    {"datatype", ArgRole::kDatatype},
    {"op", ArgRole::kReduceOp},
    {"root", ArgRole::kRoot},
    {"comm", ArgRole::kCommunicator},
    {"peer", ArgRole::kPeer},
    {"new_comm", ArgRole::kNewComm},
};
// The one table of role names, read both ways (role_name, and the catalog parser): one row per role.
static_assert(std::size(kRoles) == static_cast<size_t>(ArgRole::kNewComm) + 1, "a role without a name");

std::string last_component(const std::string& name) {
  auto pos = name.rfind("::");
  return pos == std::string::npos ? name : name.substr(pos + 2);
}

[[noreturn]] void fail(const std::string& path, const YAML::Node& node, const std::string& what) {
  auto mark = node.Mark();
  throw std::runtime_error(path + ":" + std::to_string(mark.line + 1) + ": " + what);
}

}  // namespace

const char* role_name(ArgRole role) {
  for (const auto& r : kRoles)
    if (r.role == role) return r.name;
  return "other";
}

bool role_must_agree(ArgRole role) {
  switch (role) {
    case ArgRole::kCount:
    case ArgRole::kDatatype:
    case ArgRole::kReduceOp:
    case ArgRole::kRoot:
    case ArgRole::kCommunicator:
      return true;
    default:
      return false;
  }
}

bool qualified_name_matches(const std::string& qualified, const std::string& pattern) {
  // A plain C name means the C (or std::) function, never a method or a namespaced function that
  // happens to share it (a user's Scaler::finite is not finite(3)).
  if (pattern.find("::") == std::string::npos) return qualified == pattern || qualified == "std::" + pattern;
  if (qualified.size() < pattern.size()) return false;
  if (qualified.compare(qualified.size() - pattern.size(), pattern.size(), pattern) != 0) return false;
  size_t start = qualified.size() - pattern.size();
  return start == 0 || (start >= 2 && qualified.compare(start - 2, 2, "::") == 0);
}

void Catalog::load_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::runtime_error(path + ": cannot read rules file");
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw std::runtime_error(path + ": expected a mapping at the top level");
  try {
    if (auto opts = root["options"]) {
      if (auto argv = opts["argv"]) {
        auto v = argv.as<std::string>();
        if (v != "local" && v != "uniform") fail(path, argv, "options.argv must be 'local' or 'uniform'");
        argv_local_ = v == "local";
      }
    }
    if (auto list = root["rank_environment"]) {
      if (!list.IsSequence()) fail(path, list, "'rank_environment' must be a list of variable names");
      for (const auto& item : list) rank_env_.insert(item.as<std::string>());
    }
    if (auto list = root["collectives"]) {
      if (!list.IsSequence()) fail(path, list, "'collectives' must be a list");
      for (const auto& item : list) {
        Collective c;
        if (!item["name"]) fail(path, item, "collective without a 'name'");
        c.name = item["name"].as<std::string>();
        c.catalog = path;
        if (auto args = item["args"]) {
          if (!args.IsSequence()) fail(path, args, "'args' of " + c.name + " must be a list of roles");
          for (const auto& a : args) {
            auto s = a.as<std::string>();
            auto it = std::find_if(std::begin(kRoles), std::end(kRoles),
                                   [&](const RoleName& r) { return s == r.name; });
            if (it == std::end(kRoles)) fail(path, a, "unknown argument role '" + s + "' for " + c.name);
            c.args.push_back(it->role);
          }
        }
        if (auto members = item["members"]) {
          auto v = members.as<std::string>();
          if (v != "arguments" && v != "communicator")
            fail(path, members, "'members' of " + c.name + " must be 'arguments' or 'communicator'");
          c.members_from_arguments = v == "arguments";
        }
        collectives_.emplace(last_component(c.name), std::move(c));
      }
    }
    auto read_sources = [&](const char* key, ValueSource::Kind kind, const char* default_what) {
      auto list = root[key];
      if (!list) return;
      if (!list.IsSequence()) fail(path, list, std::string("'") + key + "' must be a list");
      for (const auto& item : list) {
        ValueSource s;
        s.kind = kind;
        if (item.IsScalar()) {
          s.name = item.as<std::string>();
        } else {
          if (!item["name"]) fail(path, item, std::string("entry of '") + key + "' without a 'name'");
          s.name = item["name"].as<std::string>();
          if (auto out = item["out"]) {
            if (out.IsScalar() && out.as<std::string>() == "all")
              s.all_out_args = true;
            else
              s.out_arg = out.as<int>();
          }
          if (auto what = item["what"]) s.what = what.as<std::string>();
        }
        if (s.what.empty()) s.what = default_what;
        sources_.emplace(last_component(s.name), std::move(s));
      }
    };
    read_sources("rank_sources", ValueSource::Kind::kRank, "rank obtained here");
    read_sources("local_sources", ValueSource::Kind::kLocal, "rank-local value read here");
    read_sources("uniform_sources", ValueSource::Kind::kUniform, "");
    read_sources("finiteness_tests", ValueSource::Kind::kFiniteness,
                 "finiteness test on rank-local data here");
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

void Catalog::load_dir(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  if (ec) throw std::runtime_error(dir + ": cannot read rules directory: " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) load_file(f);
}

const Collective* Catalog::find_collective(const std::string& qualified_name) const {
  auto [lo, hi] = collectives_.equal_range(last_component(qualified_name));
  for (auto it = lo; it != hi; ++it)
    if (qualified_name_matches(qualified_name, it->second.name)) return &it->second;
  return nullptr;
}

const ValueSource* Catalog::find_source(const std::string& qualified_name) const {
  auto [lo, hi] = sources_.equal_range(last_component(qualified_name));
  for (auto it = lo; it != hi; ++it)
    if (qualified_name_matches(qualified_name, it->second.name)) return &it->second;
  return nullptr;
}

}  // namespace lockstep::lint
