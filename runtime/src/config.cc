// Reads LOCKSTEP_RT_* settings once at init; a bad value is an init error naming the variable.
#include "config.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace lockstep::rt::internal {

namespace {

bool env(const char* name, std::string* out) {
  const char* v = std::getenv(name);
  if (!v || !*v) return false;
  *out = v;
  return true;
}

double number(const char* name, const std::string& v, double min) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(d >= min)) {
    throw std::runtime_error(std::string("lockstep::rt: ") + name + "='" + v +
                             "' is not a number >= " + std::to_string(static_cast<long long>(min)));
  }
  return d;
}

}  // namespace

Config load_config(const Options& options) {
  Config c;
  c.matching = options.matching;
  std::string v;
  if (env("LOCKSTEP_RT_MATCHING", &v)) {
    if (v == "name") {
      c.matching = Matching::name;
    } else if (v == "order") {
      c.matching = Matching::order;
    } else {
      throw std::runtime_error("lockstep::rt: LOCKSTEP_RT_MATCHING='" + v + "' is not 'name' or 'order'");
    }
  }
  if (env("LOCKSTEP_RT_BACKEND", &v)) {
    c.backends.clear();
    size_t start = 0;
    while (start <= v.size()) {
      const size_t comma = std::min(v.find(',', start), v.size());
      if (comma > start) c.backends.push_back(v.substr(start, comma - start));
      start = comma + 1;
    }
    if (c.backends.empty()) throw std::runtime_error("lockstep::rt: LOCKSTEP_RT_BACKEND is empty");
  }
  if (env("LOCKSTEP_RT_FUSION_BYTES", &v))
    c.fusion_bytes = static_cast<size_t>(number("LOCKSTEP_RT_FUSION_BYTES", v, 0));
  if (env("LOCKSTEP_RT_CYCLE_MS", &v)) c.cycle_ms = number("LOCKSTEP_RT_CYCLE_MS", v, 0);
  if (env("LOCKSTEP_RT_STALL_WARN", &v)) c.stall_warn_s = number("LOCKSTEP_RT_STALL_WARN", v, 0);
  if (env("LOCKSTEP_RT_STALL_ABORT", &v)) c.stall_abort_s = number("LOCKSTEP_RT_STALL_ABORT", v, 0);
  // A dead rank must be named within the abort time, so the heartbeat never waits longer than half of it.
  c.heartbeat_s = c.stall_abort_s > 0 ? std::min(30.0, c.stall_abort_s / 2) : 30.0;
  if (env("LOCKSTEP_RT_HEARTBEAT", &v)) c.heartbeat_s = number("LOCKSTEP_RT_HEARTBEAT", v, 0);
  c.heartbeat_s = std::max(c.heartbeat_s, 0.5);
  return c;
}

}  // namespace lockstep::rt::internal
