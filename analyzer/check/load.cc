// Trace directory loading: one worker per core pulls files off a shared index; each file is mapped by
// the format reader, validated, and ingested into its own Rank, so workers share nothing but the index.
#include "lockstep/check/load.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "lockstep/format/escape.h"
#include "lockstep/format/reader.h"
#include "parallel.h"
#include "record_sig.h"

namespace lockstep::check {
namespace {

class FileSource : public RecordSource {
 public:
  FileSource(format::TraceFile f, bool keep) : file_(std::move(f)), keep_(keep) {
    const lst_header& h = file_.header();
    // The header opens the mapping; slot i is records_offset + 64 * i (TraceFile::offset_of).
    slots_ = reinterpret_cast<const lst_record*>(reinterpret_cast<const uint8_t*>(&h) + h.records_offset);
    if (h.flags & LST_HDR_RING) capacity_ = h.record_capacity;
  }
  uint64_t first_id() const override { return file_.first_id(); }
  uint64_t end_id() const override { return file_.end_id(); }
  const lst_record* record(uint64_t id) const override { return file_.record(id); }
  std::string_view string(uint32_t id) const override { return file_.string(id); }
  std::vector<int32_t> members(uint32_t id) const override { return file_.members(id); }
  // Pages already ingested are dropped from this process: they stay in the page cache, and resident
  // memory stays near the model's size rather than the traces'.
  // With `keep` (LoadOptions::keep_mapped), nothing is dropped: the caller reads every rank again.
  void release(uint64_t lo, uint64_t hi) const override {
    if (keep_) return;
    // A ring is small (its capacity) and its windows wrap: it goes at once when its walk ends.
    if (capacity_) {
      if (hi != end_id()) return;
      lo = first_id();
    }
    runs(lo, hi, [](const uint8_t* a, const uint8_t* b) {
      const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
      uintptr_t p0 = (reinterpret_cast<uintptr_t>(a) + page - 1) & ~(page - 1);
      uintptr_t p1 = reinterpret_cast<uintptr_t>(b) & ~(page - 1);
      if (p1 > p0) ::madvise(reinterpret_cast<void*>(p0), p1 - p0, MADV_DONTNEED);
    });
  }
  // Maps a window in ahead of its walk, so that the walk rarely stops on a fault: one read per 64 KiB
  // faults in the whole block (the kernel's fault-around, 16 pages by default). Measured cheaper than
  // madvise(MADV_POPULATE_READ), which after faulting walks the page table again page by page: 0.15-0.2 s
  // less system time per 100M records, one thread or two. Only the window's own record bytes are read.
  // A ring's window too, where the walk reads it whole (the walk that trims a ring's hash stops after a
  // few calls, and asks for nothing ahead): 0.1 s less CPU per 67M records, mostly the walk's own.
  void prefetch(uint64_t lo, uint64_t hi) const override {
    runs(lo, hi, [](const uint8_t* a, const uint8_t* b) {
      constexpr uintptr_t kBlock = uintptr_t{64} << 10;
      for (uintptr_t p = reinterpret_cast<uintptr_t>(a); p < reinterpret_cast<uintptr_t>(b);
           p = (p | (kBlock - 1)) + 1)
        (void)*reinterpret_cast<const volatile uint8_t*>(p);
    });
  }
  int open_slots(uint64_t& offset) const override {
    offset = file_.header().records_offset;
    const int fd = ::open(file_.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return fd;
  }
  const format::TraceFile& file() const { return file_; }
  uint32_t format_major() const override { return file_.header().version_major; }
  const lst_record* contiguous() const override { return capacity_ ? nullptr : slots_ + first_id(); }
  const lst_record* ring(uint64_t& capacity) const override {
    capacity = capacity_;
    return capacity_ ? slots_ : nullptr;
  }

 private:
  // The slots of ids [lo, hi) as byte ranges of the mapping: one, or two where a ring wraps.
  template <class Fn>
  void runs(uint64_t lo, uint64_t hi, Fn fn) const {
    lo = std::max(lo, first_id());
    hi = std::min(hi, end_id());
    if (hi <= lo) return;
    auto bytes = [&](uint64_t slot, uint64_t n) {
      const auto* a = reinterpret_cast<const uint8_t*>(slots_ + slot);
      fn(a, a + n * sizeof(lst_record));
    };
    if (!capacity_) return bytes(lo, hi - lo);
    if (hi - lo >= capacity_) return bytes(0, capacity_);
    const uint64_t s0 = lo % capacity_, n0 = std::min(hi - lo, capacity_ - s0);
    bytes(s0, n0);
    if (n0 < hi - lo) bytes(0, hi - lo - n0);
  }

  format::TraceFile file_;
  bool keep_ = false;
  const lst_record* slots_ = nullptr;
  uint64_t capacity_ = 0;  // a ring's slots; 0: a growing file
};

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::string fixed(const char* p, size_t n) { return std::string(p, strnlen(p, n)); }

// No MPI or NCCL job has had more processes than this; a larger world_size is damage, and trusting it
// would size per-rank tables by it.
constexpr int32_t kMaxWorld = 1 << 24;

// The header's rank and size, bounded by what the file itself says (its MPI_COMM_WORLD record).
void check_world(const Rank& r) {
  auto bad = [&](size_t field, const std::string& what) {
    return LoadError(fmt::format("{}: byte {}: {}", r.file, field, what));
  };
  if (r.world_size < LST_NONE || r.world_size == 0 || r.world_size > kMaxWorld)
    throw bad(offsetof(lst_header, world_size),
              fmt::format("world_size {} is impossible (1 to {} processes)", r.world_size, kMaxWorld));
  if (r.world_rank < LST_NONE || (r.world_size > 0 && r.world_rank >= r.world_size))
    throw bad(offsetof(lst_header, world_rank),
              fmt::format("world_rank {} is outside world_size {}", r.world_rank, r.world_size));
  for (const CommView& v : r.comms)
    if (v.api == LST_API_MPI && v.create_op == LST_COMM_WORLD && v.size > 1 &&
        (v.size != r.world_size || v.rank != r.world_rank))
      throw bad(
          offsetof(lst_header, world_size),
          fmt::format("world_size: the header says rank {} of {}, its MPI_COMM_WORLD record rank {} of {}",
                      r.world_rank, r.world_size, v.rank, v.size));
}

Rank load_one(const std::string& path, const LoadOptions& options, const std::string& host,
              bool keep = false) {
  auto file = format::TraceFile::open(path);
  if (options.validate) file.validate();
  auto src = std::make_shared<FileSource>(std::move(file), keep);
  const format::TraceFile& f = src->file();
  const lst_header& h = f.header();
  Rank r;
  r.file = path;
  r.world_rank = h.world_rank;
  r.world_size = h.world_size;
  r.host = fixed(h.host, sizeof h.host);
  r.pid = h.pid;
  r.job_hash = h.job_hash;
  r.job_id = fixed(h.job_id, sizeof h.job_id);
  r.start_wall_ns = h.start_wall_ns;
  r.start_mono_ns = h.start_mono_ns;
  r.header_end_state = h.end_state;
  r.ring = (h.flags & LST_HDR_RING) != 0;
  r.dropped = h.dropped_records;
  for (auto& m : f.modules()) r.modules.push_back({m.path, m.build_id, m.base, m.lo, m.hi, 0});
  try {
    // Ring mode (format 2.1): the communicators whose creation records the ring may have overwritten,
    // from their copies in the metadata region; a creation record still in the window replaces its copy.
    if (r.ring)
      for (const lst_record& c : f.comm_copies()) recordsig::ingest_event(r, *src, c, c.word, 0);
    if (options.materialize) {
      ingest(r, src, /*defer_sites=*/bool(options.site_keys));
    } else {
      ingest_stream(r, src);
      if (!options.site_keys) resolve_stream(r);  // keyed by module + offset, here in the worker
    }
  } catch (const format::FormatError&) {
    throw;
  } catch (const std::exception& e) {
    // Ingest names the record ("record ID: ..."); the error names its byte, as the reader's do.
    unsigned long long id = 0;
    // NOLINTNEXTLINE(cert-err34-c): no match, or a number out of range, leaves the message as it is
    if (std::sscanf(e.what(), "record %llu:", &id) == 1 && id >= f.first_id() && id < f.end_id())
      throw LoadError(fmt::format("{}: byte {}: {}", format::printable(path), f.offset_of(id),
                                  format::printable(e.what())));
    throw LoadError(fmt::format("{}: {}", format::printable(path), format::printable(e.what())));
  }
  classify_end(r, host);
  check_world(r);
  return r;
}

// Returns a warning when the symbolizer failed: that costs precision (sites keyed by module and offset,
// so a call inlined into two places is two sites), never the check, but the reader should know.
std::string resolve(Rank& r, const LoadOptions& options) {
  if (!options.site_keys) return {};  // keyed by module + offset during ingest
  try {
    if (r.streamed)
      resolve_stream(r, options.site_keys);
    else
      resolve_sites(r, options.site_keys);
    return {};
  } catch (const std::exception& e) {
    if (r.streamed)
      resolve_stream(r);
    else
      resolve_sites(r);
    return fmt::format("{}: call sites not symbolized ({}): keyed by module and offset", r.file,
                       format::printable(e.what()));
  }
}

}  // namespace

Rank load_file(const std::string& path, const LoadOptions& options) {
  std::string host = options.this_host.empty() ? hostname() : options.this_host;
  try {
    Rank r = load_one(path, options, host);
    if (std::string w = resolve(r, options); !w.empty())
      std::fprintf(stderr, "lockstep: warning: %s\n", w.c_str());
    return r;
  } catch (const format::FormatError& e) {
    throw LoadError(e.what());
  }
}

namespace {
// Expands the inputs into trace file paths: a directory gives its *.lstrace files (symbolic links and
// special files in it are left out and named in `skipped`), a pattern its matches (directories or
// files), a regular file itself. Sorted, duplicates dropped.
std::vector<std::string> trace_paths(const std::vector<std::string>& inputs,
                                     std::vector<std::string>& skipped) {
  std::vector<std::string> paths;
  auto add = [&](const std::string& in, bool matched) {
    struct stat st;
    if (::stat(in.c_str(), &st) != 0) {
      if (matched) return;
      throw LoadError(fmt::format("{}: {}", format::printable(in), std::strerror(errno)));
    }
    if (S_ISDIR(st.st_mode)) {
      size_t before = paths.size();
      try {
        for (auto& p : format::find_traces(in, &skipped)) paths.push_back(p);
      } catch (const format::FormatError& e) {
        throw LoadError(e.what());
      }
      if (paths.size() == before && !matched)
        throw LoadError(fmt::format("{}: no trace files (*.lstrace)", format::printable(in)));
    } else if (S_ISREG(st.st_mode)) {
      paths.push_back(in);
    } else if (!matched) {
      throw LoadError(fmt::format("{}: not a directory", format::printable(in)));
    }
  };
  for (const std::string& in : inputs) {
    struct stat st;
    if (in.find_first_of("*?[") == std::string::npos || ::stat(in.c_str(), &st) == 0) {
      add(in, false);
      continue;
    }
    glob_t g{};
    int rc = ::glob(in.c_str(), GLOB_NOSORT, nullptr, &g);
    std::vector<std::string> hits(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
    ::globfree(&g);
    if (hits.empty()) throw LoadError(fmt::format("{}: matches no file or directory", format::printable(in)));
    size_t before = paths.size();
    for (auto& h : hits) add(h, true);
    if (paths.size() == before)
      throw LoadError(
          fmt::format("{}: no trace files (*.lstrace) in what it matches", format::printable(in)));
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  // In the order of their paths, not the directory's: the same on every machine (`check --mpi` merges
  // the lists of several processes).
  std::sort(skipped.begin(), skipped.end());
  skipped.erase(std::unique(skipped.begin(), skipped.end()), skipped.end());
  return paths;
}
}  // namespace

Job load_dir(const std::string& dir, const LoadOptions& options) { return load_paths({dir}, options); }

namespace {
// True when the files take at most half the memory the kernel says is available (MemAvailable): their
// pages can then stay mapped for a second pass without crowding out what else the machine runs.
bool fits_in_memory(const std::vector<std::string>& paths) {
  uint64_t bytes = 0;
  for (auto& p : paths) {
    struct stat st{};
    if (::stat(p.c_str(), &st) == 0) bytes += uint64_t(st.st_size);
  }
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return false;
  uint64_t kib = 0;
  bool found = false;
  char line[256];
  constexpr std::string_view kKey = "MemAvailable:";
  while (!found && std::fgets(line, sizeof line, f)) {
    if (std::string_view(line).substr(0, kKey.size()) != kKey) continue;
    char* end = nullptr;
    errno = 0;
    kib = std::strtoull(line + kKey.size(), &end, 10);
    found = errno == 0 && end != line + kKey.size();
  }
  std::fclose(f);
  return found && bytes <= uint64_t(kib) * 1024 / 2;
}

// Processes that MPI_Comm_spawn started write into the job's directory too, each with an MPI_COMM_WORLD
// of its own (their own ranks 0..n-1): the job is the world of the launched processes (the first file's
// world when every file is a spawned one), and the others are set aside with one warning.
void set_aside_spawned(std::vector<Rank>& ranks, std::vector<std::string>& warnings) {
  if (ranks.empty()) return;
  uint64_t job_world = ranks.front().spawned_world;
  for (const Rank& r : ranks)
    if (r.spawned_world == 0) job_world = 0;
  if (std::all_of(ranks.begin(), ranks.end(), [&](const Rank& r) { return r.spawned_world == job_world; }))
    return;
  std::vector<Rank> kept;
  std::set<uint64_t> worlds;
  std::vector<std::string> files;
  for (Rank& r : ranks) {
    if (r.spawned_world == job_world) {
      kept.push_back(std::move(r));
      continue;
    }
    worlds.insert(r.spawned_world);
    files.push_back(r.file);
  }
  ranks.swap(kept);
  std::string named;
  for (size_t i = 0; i < files.size() && i < 3; ++i) named += (i ? ", " : "") + files[i];
  if (files.size() > 3) named += fmt::format(" and {} more", files.size() - 3);
  warnings.push_back(fmt::format(
      "not checked: {} trace file{} of processes that MPI_Comm_spawn started, in {} MPI_COMM_WORLD{} of "
      "their "
      "own (their ranks are not the job's){}: {}",
      files.size(), files.size() == 1 ? "" : "s", worlds.size(), worlds.size() == 1 ? "" : "s",
      job_world ? "; every file is a spawned process's, and the world checked is the first file's" : "",
      named));
}
}  // namespace

std::vector<LoadedFile> load_files(const std::vector<std::string>& paths, const LoadOptions& options) {
  const std::string host = options.this_host.empty() ? hostname() : options.this_host;
  const bool keep = options.keep_mapped && fits_in_memory(paths);
  std::vector<LoadedFile> files(paths.size());
  for_each_parallel(paths.size(), options.jobs, [&](size_t i) {
    try {
      files[i].rank = load_one(paths[i], options, host, keep);
    } catch (const std::exception& e) {
      files[i].error = e.what();
    }
  });
  // Serial: the symbolizer runs one external process per batch and keeps one cache for every rank.
  for (auto& f : files)
    if (f.error.empty()) f.warning = resolve(f.rank, options);
  return files;
}

Listing list_inputs(const std::vector<std::string>& inputs) {
  Listing l;
  l.paths = trace_paths(inputs, l.skipped);
  return l;
}

Job load_paths(const std::vector<std::string>& inputs, const LoadOptions& options) {
  std::string dir;  // how the inputs are named in messages
  for (auto& in : inputs) dir += (dir.empty() ? "" : ", ") + in;
  Listing listing = options.load_elsewhere ? options.load_elsewhere(inputs, options) : list_inputs(inputs);
  if (listing.paths.empty()) throw LoadError(fmt::format("{}: no trace files (*.lstrace)", dir));
  if (!options.load_elsewhere) listing.files = load_files(listing.paths, options);
  const std::vector<std::string>& paths = listing.paths;
  const std::vector<std::string>& skipped = listing.skipped;
  std::vector<Rank> ranks;
  ranks.reserve(paths.size());
  std::vector<std::string> bad, bad_paths, resolved;
  for (size_t i = 0; i < paths.size(); ++i) {
    LoadedFile& f = listing.files[i];
    if (f.error.empty()) {
      ranks.push_back(std::move(f.rank));
      if (!f.warning.empty()) resolved.push_back(std::move(f.warning));
      continue;
    }
    if (!options.skipped) throw LoadError(f.error);
    options.skipped->push_back(f.error);
    bad.push_back(f.error);
    bad_paths.push_back(paths[i]);
  }
  if (ranks.empty())
    throw LoadError(
        fmt::format("{}: no readable trace file ({} skipped)", format::printable(dir), bad.size()));
  Job job;
  job.warnings = std::move(resolved);
  for (auto& sk : skipped) job.warnings.push_back(format::printable(sk));
  for (auto& b : bad) job.warnings.push_back("skipped (--skip-bad): " + b);
  set_aside_spawned(ranks, job.warnings);
  std::map<int32_t, const Rank*> by_rank;
  for (auto& r : ranks) {
    const Rank& first = ranks.front();
    if (r.job_hash != first.job_hash || r.job_id != first.job_id)
      throw LoadError(fmt::format("files of two jobs in {}: {} (job '{}') and {} (job '{}')", dir, first.file,
                                  first.job_id, r.file, r.job_id));
    if (r.world_rank < 0) {
      job.warnings.push_back(
          fmt::format("{}: the process never learned its rank (no MPI_Init, and no RANK with WORLD_SIZE "
                      "or launcher rank variable): skipped",
                      r.file));
      continue;
    }
    if (r.world_size != first.world_size && r.world_size > 0 && first.world_size > 0)
      throw LoadError(fmt::format("{}: byte {}: world_size {} contradicts world_size {} of {}", r.file,
                                  offsetof(lst_header, world_size), r.world_size, first.world_size,
                                  first.file));
    auto [it, fresh] = by_rank.emplace(r.world_rank, &r);
    if (!fresh)
      throw LoadError(
          fmt::format("two trace files for rank {}: {} and {}", r.world_rank, it->second->file, r.file));
    if (r.unpublished)
      job.warnings.push_back(
          fmt::format("{}: {} record slot(s) reserved but never written (a thread died mid-call)", r.file,
                      r.unpublished));
    if (r.dropped)
      job.warnings.push_back(
          fmt::format("{}: the tracer dropped {} record(s) (file could not grow)", r.file, r.dropped));
  }
  job.job_id = ranks.front().job_id;
  job.job_hash = ranks.front().job_hash;
  job.ranks.reserve(ranks.size());
  for (auto& r : ranks)
    if (r.world_rank >= 0) job.ranks.push_back(std::move(r));
  if (job.ranks.empty())
    throw LoadError(fmt::format(
        "{}: no trace file names its rank (a process learns it from MPI_Init, else from RANK with "
        "WORLD_SIZE, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID in its environment)",
        dir));
  for (auto& in : inputs) {
    std::error_code ec;
    std::filesystem::path note = std::filesystem::path(in) / kRunTimeoutNote;
    if (!std::filesystem::is_regular_file(note, ec)) continue;
    if (std::FILE* f = std::fopen(note.c_str(), "r")) {
      char line[1024] = {};
      if (std::fgets(line, sizeof line, f)) job.stopped_by_run = std::string(line, strcspn(line, "\n"));
      // A rank on the host of `lockstep run` that exited (MPI_Finalize not done) at or after its SIGTERM
      // was ended by that stop, not by its own doing, whatever status its exit carried (an MPI library
      // that loses its launcher exits with one): it counts as killed while it hung.
      constexpr std::string_view kAt = "SIGTERM at CLOCK_MONOTONIC ", kOn = " ns on ";
      if (std::fgets(line, sizeof line, f)) {
        const std::string_view text(line, strcspn(line, "\n"));
        char* end = nullptr;
        const unsigned long long term_ns =
            text.substr(0, kAt.size()) == kAt ? std::strtoull(line + kAt.size(), &end, 10) : 0;
        const std::string_view rest = end ? text.substr(size_t(end - line)) : std::string_view();
        if (term_ns > 0 && rest.substr(0, kOn.size()) == kOn) {
          const std::string run_host(rest.substr(kOn.size()));  // a copy: `line` is read into again below
          job.stopped_at_ns = term_ns;
          job.stopped_on_host = run_host;
          for (auto& r : job.ranks)
            if (r.end == EndState::kExited && !r.finalize_returned && r.host == run_host &&
                r.end_t_ns >= term_ns)
              r.end = EndState::kKilled;
          // "process PID FILE state WORD cpu F [wchan W]": what run read in /proc just before the stop.
          while (std::fgets(line, sizeof line, f)) {
            char file[512] = {}, state[32] = {}, wchan[64] = {};
            unsigned pid = 0;
            double cpu = -1;
            // NOLINTNEXTLINE(cert-err34-c): a line that does not parse is left out
            const int n = std::sscanf(line, "process %u %511s state %31s cpu %lf wchan %63s", &pid, file,
                                      state, &cpu, wchan);
            const std::string_view word = state;
            if (n < 4 || !(word == "stopped" || word == "traced" || word == "uninterruptible" ||
                           word == "running" || word == "sleeping" || word == "exiting" || word == "unknown"))
              continue;
            for (auto& r : job.ranks)
              if (r.host == run_host && r.pid == pid &&
                  std::filesystem::path(r.file).filename() == std::filesystem::path(file).filename()) {
                r.at_stop = state;
                r.at_stop_cpu = cpu;
                if (n == 5) r.at_stop_wchan = wchan;
              }
          }
        }
      }
      std::fclose(f);
    }
    if (job.stopped_by_run.empty()) job.stopped_by_run = "lockstep run stopped the job at --timeout";
  }
  finish_job(job);
  // A rank whose file was skipped is not missing: its file is there, unreadable, and named in a warning.
  for (const auto& path : bad_paths) {
    const std::string name = path.substr(path.rfind('/') + 1);
    int32_t rank = -1;
    // NOLINTNEXTLINE(cert-err34-c): a name that is not rank-N.* names no missing rank
    if (std::sscanf(name.c_str(), "rank-%d.", &rank) == 1) std::erase(job.missing, rank);
  }
  return job;
}

}  // namespace lockstep::check
