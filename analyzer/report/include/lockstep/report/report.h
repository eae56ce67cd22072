// Renderers for `lockstep check` results: text for people (the verdict in one line first), JSON
// (docs/check-output.md), SARIF 2.1.0 for code-scanning UIs, JUnit XML for CI test tabs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "lockstep/check/check.h"

namespace lockstep::report {

enum class Format { kText, kJson, kSarif, kJunit };
std::optional<Format> parse_format(std::string_view name);

struct Context {
  std::string dir;       // the trace directory checked
  std::string version;   // lockstep's version
};

// The one-line verdict: "lockstep: 4 ranks, 3 communicators, 10,000 collectives: IN LOCKSTEP".
std::string verdict(const check::Result& r);
// A short phrase for one finding: "rank 2 skipped MPI_Allreduce #57 on MPI_COMM_WORLD (train.cc:88)".
std::string headline(const check::Finding& f);
// "1,234,567"
std::string thousands(uint64_t n);

std::string text(const check::Result& r, const Context& ctx);
std::string json(const check::Result& r, const Context& ctx);
std::string sarif(const check::Result& r, const Context& ctx);
std::string junit(const check::Result& r, const Context& ctx);
std::string render(const check::Result& r, Format format, const Context& ctx);

// The hang picture alone (per rank: blocked where, waiting for whom; who to look at), as text.
std::string hang_text(const check::Result& r);

}  // namespace lockstep::report
