// Fault probe, in-process: single random byte overwrites of the records of real traces, each run
// through analyze_dir() with the options `lockstep check --no-symbolize` uses, so that thousands of
// trials take seconds (the CLI probe, damage_rate.py, pays a process start per trial).
//   faults_damage_probe DIR TRIALS SEED MIN_PERCENT
// DIR holds one job's *.lstrace files; the probe overwrites one byte of one file in place, checks,
// and puts the byte back. Outcomes as `lockstep check` would give them: "corruption" (exit 2: a
// LoadError of one line naming the file and a byte), "finding" (exit 1: damage read as a divergence),
// "clean" (exit 0). Fails when fewer than MIN_PERCENT of the trials are corruption, or on anything
// else (a crash, another exception, an error that does not name the file and a byte).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lockstep/check/analyze_dir.h"
#include "lockstep/format/reader.h"

namespace {

struct Target {
  std::string path;
  uint64_t lo = 0, hi = 0;  // the records region's used slots: [records_offset, + 64 * used)
};

bool put_byte(const std::string& path, uint64_t at, uint8_t v) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::pwrite(fd, &v, 1, off_t(at)) == 1;
  ::close(fd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DIR TRIALS SEED MIN_PERCENT\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const long trials = std::atol(argv[2]);
  std::mt19937_64 rng(std::strtoull(argv[3], nullptr, 10));
  const double min_percent = std::atof(argv[4]);
  lockstep::check::DirOptions options;
  options.symbolize = false;
  options.jobs = 1;

  std::vector<Target> targets;
  try {
    for (const std::string& p : lockstep::format::find_traces(dir)) {
      auto f = lockstep::format::TraceFile::open(p);
      const uint64_t lo = f.header().records_offset;
      targets.push_back({p, lo, lo + std::min(f.header().record_next, f.header().record_capacity) * 64});
    }
    if (!lockstep::check::analyze_dir(dir, options).result.in_lockstep()) {
      std::fprintf(stderr, "faults_damage_probe: the undamaged traces in %s have findings\n", dir.c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "faults_damage_probe: the undamaged traces do not load: %s\n", e.what());
    return 1;
  }
  if (targets.empty()) {
    std::fprintf(stderr, "faults_damage_probe: no traces in %s\n", dir.c_str());
    return 1;
  }

  long corruption = 0, at_record = 0, finding = 0, clean = 0;
  std::vector<std::string> wrong;  // anything `lockstep check` must never do
  for (long t = 0; t < trials; ++t) {
    const Target& target = targets[rng() % targets.size()];
    const uint64_t at = target.lo + rng() % (target.hi - target.lo);
    uint8_t old = 0;
    {
      const int fd = ::open(target.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::pread(fd, &old, 1, off_t(at)) != 1) return std::perror(target.path.c_str()), 1;
      ::close(fd);
    }
    const uint8_t value = uint8_t(old + 1 + rng() % 255);
    if (!put_byte(target.path, at, value)) return std::perror(target.path.c_str()), 1;
    std::string what;
    try {
      if (lockstep::check::analyze_dir(dir, options).result.in_lockstep())
        ++clean;
      else
        ++finding;
    } catch (const lockstep::check::LoadError& e) {
      what = e.what();
      const std::string byte = ": byte ";
      const size_t b = what.find(target.path + byte);
      if (b == std::string::npos || what.find('\n') != std::string::npos) {
        wrong.push_back("error not naming the file and a byte: " + what);
      } else {
        ++corruption;
        const uint64_t named =
            std::strtoull(what.c_str() + b + target.path.size() + byte.size(), nullptr, 10);
        const uint64_t slot = target.lo + (at - target.lo) / 64 * 64;
        if (named >= slot && named < slot + 64) ++at_record;
      }
    } catch (const std::exception& e) {
      wrong.push_back(std::string("other exception: ") + e.what());
    }
    if (!put_byte(target.path, at, old)) return std::perror(target.path.c_str()), 1;
  }

  const double percent = 100.0 * double(corruption) / double(trials);
  std::printf(
      "records %ld trials over %zu files: %ld reported as corruption (%.2f%%; %ld of them at the "
      "damaged record's bytes), %ld finding, %ld clean, %zu wrong\n",
      trials, targets.size(), corruption, percent, at_record, finding, clean, wrong.size());
  for (size_t i = 0; i < wrong.size() && i < 5; ++i) std::printf("  %s\n", wrong[i].c_str());
  if (!wrong.empty()) return 1;
  if (percent < min_percent) {
    std::printf("  FAIL: records damage must be reported as corruption in >= %.1f%% of trials\n",
                min_percent);
    return 1;
  }
  return 0;
}
