// Loads every *.lstrace file of a directory into one Job: memory-mapped, validated, ingested in
// parallel across files. Anything that is not one readable job is a LoadError naming the file(s).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/check/model.h"

namespace lockstep::check {

struct LoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One trace file as loaded: its rank, call sites keyed, or why it could not be loaded (`error`);
// `warning` when the symbolizer failed on it (its sites are then keyed by module and offset).
struct LoadedFile {
  Rank rank;
  std::string error, warning;
};

// The trace files the inputs name (sorted, each once), the entries left out of the directories
// (symbolic links, special files), and, once loaded, each file in the order of `paths`.
struct Listing {
  std::vector<std::string> paths, skipped;
  std::vector<LoadedFile> files;
};

struct LoadOptions;
// Lists and loads the inputs somewhere else than in this process alone (`check --mpi`: every process of
// an MPI job lists the inputs on its own node and loads a share). Returns the whole listing, loaded.
using LoadElsewhere =
    std::function<Listing(const std::vector<std::string>& inputs, const LoadOptions& options)>;

struct LoadOptions {
  int jobs = 0;  // worker threads; 0: one per core, at most one per file
  // Also run the reader's full validation pass (strings, module table, every field) before ingest;
  // ingest itself range-checks what it uses, so a damaged record is reported either way.
  bool validate = false;
  std::string this_host;  // empty: gethostname(); processes on this host are looked up in /proc
  SiteKeys site_keys;     // how call sites are told apart (default: module + offset)
  // Keep every collective's signature and record index in memory from the start (ingest), instead of
  // streaming the records and walking them again only for the ranks an analysis looks into
  // (ingest_stream). The findings are the same; this is for traces still being written (a second walk
  // could see calls the first did not) and for tests comparing the two.
  bool materialize = false;
  // With it, a file that cannot be loaded is left out and its one-line error appended here (and to the
  // job's warnings) instead of failing the whole load; the load still fails when no file is left.
  std::vector<std::string>* skipped = nullptr;
  // Leave the records' pages mapped once read, instead of dropping them from this process behind each
  // walk: for a caller that reads every rank again after the analysis (the report, the export), whose
  // second pass then finds them mapped. Peak resident memory then counts the traces (pages of the page
  // cache, not copies). Only where the files take at most half of the memory available; else ignored.
  bool keep_mapped = false;
  // Unset: the files are listed and loaded here (list_inputs, load_files).
  LoadElsewhere load_elsewhere;
};

// The inputs' trace files (LoadError for an input that names none). `files` stays empty.
Listing list_inputs(const std::vector<std::string>& inputs);
// Loads each file into its own rank, options.jobs at a time, and keys its call sites (options.site_keys).
std::vector<LoadedFile> load_files(const std::vector<std::string>& paths, const LoadOptions& options);

Job load_dir(const std::string& dir, const LoadOptions& options = {});
// Several inputs that together hold one job (node-local directories of one run, say): each is a
// directory (its *.lstrace files), a trace file, or a glob pattern matching either. Files of two jobs,
// or two files of one rank, are a LoadError.
Job load_paths(const std::vector<std::string>& inputs, const LoadOptions& options = {});
// One file as one rank (no job grouping), for `show`-like tools and tests.
Rank load_file(const std::string& path, const LoadOptions& options = {});

}  // namespace lockstep::check
