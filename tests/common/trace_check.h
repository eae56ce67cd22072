// What the trace_check programs of the tracer and NCCL tests share: reading a directory of traces back
// with the validating reader, and a failure counter that prints the first mismatches only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/format/layout.h"
#include "lockstep/format/reader.h"

namespace lockstep::test {

inline int g_errors = 0;  // mismatches so far; the program exits 1 when it is not 0

// Counts a mismatch; prints it while there are few (the first ones explain the rest).
#define FAILF(...)                           \
  do {                                       \
    if (::lockstep::test::g_errors++ < 30) { \
      std::fprintf(stderr, __VA_ARGS__);     \
      std::fputc('\n', stderr);              \
    }                                        \
  } while (0)

struct Trace {
  format::TraceFile file;
  std::vector<const lst_record*> records;  // published records, in id order
  std::vector<const lst_record*> of_kind(unsigned kind) const {
    std::vector<const lst_record*> out;
    for (const lst_record* r : records)
      if (LST_WORD_KIND(r->word) == kind) out.push_back(r);
    return out;
  }
};

// Every trace file of `dir`, validated and keyed by world rank; `want_files` > 0 also checks their number.
inline std::map<int, Trace> load_traces(const std::string& dir, size_t want_files = 0) {
  std::map<int, Trace> out;
  std::vector<std::string> files = format::find_traces(dir);
  if (want_files && files.size() != want_files)
    FAILF("%s: %zu trace files, want %zu", dir.c_str(), files.size(), want_files);
  for (const std::string& path : files) {
    format::TraceFile f = format::TraceFile::open(path);
    f.validate();
    if (f.unpublished() != 0)
      FAILF("%s: %llu unpublished slots", path.c_str(), static_cast<unsigned long long>(f.unpublished()));
    const int rank = f.header().world_rank;
    Trace t{std::move(f), {}};
    for (uint64_t id = t.file.first_id(); id < t.file.end_id(); ++id)
      if (const lst_record* r = t.file.record(id)) t.records.push_back(r);
    if (out.count(rank)) FAILF("%s: a second trace for world rank %d", path.c_str(), rank);
    out.emplace(rank, std::move(t));
  }
  return out;
}

inline unsigned kind(const lst_record* r) { return LST_WORD_KIND(r->word); }
inline unsigned state(const lst_record* r) { return LST_WORD_STATE(r->word); }
inline unsigned flags(const lst_record* r) { return LST_WORD_FLAGS(r->word); }

}  // namespace lockstep::test
