// Renderers for `lockstep check` results: text for people (the verdict in one line first), JSON
// (docs/check-output.md), SARIF 2.1.0 for code-scanning UIs, JUnit XML for CI test tabs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/check/check.h"

namespace lockstep::report {

enum class Format { kText, kJson, kSarif, kJunit };
std::optional<Format> parse_format(std::string_view name);

// Why lint flags the call site of a finding (the static reason joined to the dynamic finding).
struct StaticReason {
  std::string rule;     // "conditional-collective"
  std::string message;  // lint's message
  std::string file;     // the collective's line as lint reports it
  int line = 0;
  struct Note {
    std::string file;
    int line = 0;
    std::string message;  // "the condition ...", "rank-local value from ..."
  };
  std::vector<Note> notes;  // the condition and the origin of the rank-local value
  std::string summary;      // one sentence: "the call runs only where `...` holds (line 140), ..."
};
// Static reasons by finding index (Result::findings).
using StaticReasons = std::map<size_t, StaticReason>;

struct Context {
  std::string dir;                         // the trace directory checked
  std::string version;                     // lockstep's version
  const StaticReasons* reasons = nullptr;  // `check --lint`: lint's reason for findings, by index
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
// A rank's call site followed, when the job recorded stacks (LOCKSTEP_TRACE_STACK), by the frames above
// it, without the C library's start-up frames: "train.c:12 < train.c:17 < train.c:32" ("?" for a site
// with no text).
std::string site_chain(const check::RankDetail& d);

}  // namespace lockstep::report
