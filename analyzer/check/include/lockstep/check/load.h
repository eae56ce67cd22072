// Loads every *.lstrace file of a directory into one Job: memory-mapped, validated, ingested in
// parallel across files. Anything that is not one readable job is a LoadError naming the file(s).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/check/model.h"

namespace lockstep::check {

struct LoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct LoadOptions {
  int jobs = 0;  // worker threads; 0: one per core, at most one per file
  // Also run the reader's full validation pass (strings, module table, every field) before ingest;
  // ingest itself range-checks what it uses, so a damaged record is reported either way.
  bool validate = false;
  std::string this_host;  // empty: gethostname(); processes on this host are looked up in /proc
  SiteKeys site_keys;     // how call sites are told apart (default: module + offset)
  // With it, a file that cannot be loaded is left out and its one-line error appended here (and to the
  // job's warnings) instead of failing the whole load; the load still fails when no file is left.
  std::vector<std::string>* skipped = nullptr;
};

Job load_dir(const std::string& dir, const LoadOptions& options = {});
// Several inputs that together hold one job (node-local directories of one run, say): each is a
// directory (its *.lstrace files), a trace file, or a glob pattern matching either. Files of two jobs,
// or two files of one rank, are a LoadError.
Job load_paths(const std::vector<std::string>& inputs, const LoadOptions& options = {});
// One file as one rank (no job grouping), for `show`-like tools and tests.
Rank load_file(const std::string& path, const LoadOptions& options = {});

}  // namespace lockstep::check
