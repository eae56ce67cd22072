// Checker throughput on synthetic traces written with the real Writer:
//   check_bench gen DIR RANKS COLLECTIVES [COMMS [RING [MESSAGES [SKIP_AT [staggered|recv_ring]]]]]
//                                                       write one job (once; several GB at full size);
//                                                       RING > 0: ring-mode files keeping RING records;
//                                                       MESSAGES: sends and receives after each
//                                                       collective (a ring exchange); SKIP_AT >= 0: odd
//                                                       ranks leave out that call; staggered: each rank
//                                                       hangs at another call; recv_ring: each blocks
//                                                       receiving from the one before (gen() below)
//   check_bench run DIR [JOBS]                            baseline read pass vs check, each in a child
//   check_bench split DIR [JOBS [ROUNDS]]                 baseline read on 1 thread, JOBS threads and
//                                                       JOBS processes, alternating, user/system CPU
// The baseline reads every record (what merely reading costs: with pread, as the check does, and through
// the mapping, in the lines after it); the check loads
// (mapping, validation, ingest) and analyzes, streaming (the default) and with every call kept in memory
// (LoadOptions::materialize, the earlier path). Each runs in its own child so peak RSS is its own.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/check/check.h"
#include "lockstep/check/distributed.h"
#include "lockstep/check/load.h"
#include "lockstep/format/reader.h"
#include "trace_writer.h"

namespace fs = std::filesystem;
using lockstep::check::gen::Spec;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// skip_at >= 0: every odd rank leaves out call #skip_at, so that half the ranks differ from the majority
// and the check reads their calls again to align them. hang "staggered": rank r makes r calls fewer
// than n and never returns from its last (a hang of the whole job, each rank stopped at another place),
// so that every rank holds a view of its own and the check reads every rank's calls again. hang
// "recv_ring": after its calls every rank blocks in MPI_Recv from the rank before it (a wait-for cycle
// through the whole job), and the check reads every rank again to place its receive.
int gen(const std::string& dir, int ranks, uint64_t n, int comms, uint64_t ring, uint32_t messages,
        int64_t skip_at, const std::string& hang) {
  if (!hang.empty() && hang != "staggered" && hang != "recv_ring")
    throw std::invalid_argument("hang: staggered or recv_ring, not " + hang);
  fs::create_directories(dir);
  std::atomic<int> next{0};
  auto work = [&] {
    for (int r; (r = next.fetch_add(1)) < ranks;) {
      Spec s;
      s.dir = dir;
      s.job = "bench-job";
      s.rank = r;
      s.size = ranks;
      s.collectives = n;
      s.comms = comms;
      s.ring_records = ring;
      s.messages = messages;
      if (r % 2) s.skip_at = skip_at;
      if (hang == "staggered") {
        s.collectives = n > uint64_t(r) ? n - uint64_t(r) : 1;
        s.last_entered = true;
      }
      if (hang == "recv_ring") s.blocked_recv_from = (r + ranks - 1) % ranks;
      if (!hang.empty()) s.finalize = false;
      // Ring mode: ranks keep windows that start at different calls, as in a real job, so the check
      // trims every rank to the calls they all still have.
      if (ring) s.trailing_markers = uint32_t(r % 4) * 5;
      lockstep::check::gen::write_rank(s);
    }
  };
  std::thread t(work);
  work();
  t.join();
  return 0;
}

struct Measure {
  double seconds = 0;      // wall, measured in the child
  double cpu_seconds = 0;  // user + system CPU of the child: steadier on a shared machine
  double sys_seconds = 0;  // the system part of it
  uint64_t records = 0;
  long max_rss_kb = 0;
  int rc = 0;
};

// Runs fn in a child process; the child writes its record count and time back through a pipe.
template <class Fn>
Measure in_child(Fn fn) {
  int p[2];
  if (pipe(p) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    double t0 = now_s();
    uint64_t recs = fn();
    double t = now_s() - t0;
    if (write(p[1], &recs, sizeof recs) < 0 || write(p[1], &t, sizeof t) < 0) _exit(3);
    _exit(0);
  }
  close(p[1]);
  Measure m;
  if (read(p[0], &m.records, sizeof m.records) != sizeof m.records ||
      read(p[0], &m.seconds, sizeof m.seconds) != sizeof m.seconds)
    m.rc = -1;
  close(p[0]);
  int st = 0;
  struct rusage ru{};
  wait4(pid, &st, 0, &ru);
  m.max_rss_kb = ru.ru_maxrss;
  m.cpu_seconds = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  m.sys_seconds = double(ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_stime.tv_usec);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) m.rc = -1;
  return m;
}

std::vector<std::string> trace_files(const std::string& dir) {
  std::vector<std::string> v;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".lstrace") v.push_back(e.path().string());
  return v;
}

// How the baseline reads: the slots with pread, 4,096 at a time into one buffer, as the check's walks
// do; every record through the mapping; the same with each window of 65,536 records of a growing file
// faulted in ahead of its read, one byte per 64 KiB block (the kernel maps the block around it), as the
// check's walks did before they read with pread.
enum class Read { kPread, kMapped, kMappedAhead };

// Published records read with pread (a growing file's slots [first, end), a ring's every slot), each
// touched as below.
uint64_t pread_records(const lockstep::format::TraceFile& f, uint64_t& acc) {
  const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  constexpr uint64_t kPiece = 4096;
  std::vector<lst_record> piece(kPiece);
  uint64_t n = 0;
  const bool ring = f.header().flags & LST_HDR_RING;
  const uint64_t lo = ring ? 0 : f.first_id(),
                 hi = ring ? std::min(f.end_id() - f.first_id(), f.header().record_capacity) : f.end_id();
  for (uint64_t a = lo; a < hi; a += kPiece) {
    const uint64_t b = std::min(hi, a + kPiece);
    const ssize_t got = ::pread(fd, piece.data(), (b - a) * sizeof(lst_record),
                                off_t(f.header().records_offset + a * sizeof(lst_record)));
    if (got <= 0) break;
    for (size_t i = 0; i < size_t(got) / sizeof(lst_record); ++i)
      if (piece[i].word) {
        acc += piece[i].word + piece[i].u.coll.count;
        ++n;
      }
  }
  ::close(fd);
  return n;
}

uint64_t baseline(const std::vector<std::string>& files, int jobs, Read how = Read::kPread) {
  const bool populate = how == Read::kMappedAhead;
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> total{0}, sink{0};
  auto work = [&] {
    uint64_t n = 0, acc = 0;
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      auto f = lockstep::format::TraceFile::open(files[i]);
      const bool ring = f.header().flags & LST_HDR_RING;
      if (how == Read::kPread) {
        n += pread_records(f, acc);
        continue;
      }
      for (uint64_t id = f.first_id(); id < f.end_id(); ++id) {
        if (populate && !ring && (id - f.first_id()) % 65536 == 0) {
          const uint64_t last = std::min(f.end_id(), id + 65536) - 1;
          const auto* a = reinterpret_cast<const uint8_t*>(f.record(id));
          const auto* b = reinterpret_cast<const uint8_t*>(f.record(last));
          if (a && b && b > a)
            for (uintptr_t p = uintptr_t(a); p < uintptr_t(b) + 64; p = (p | 0xFFFF) + 1)
              acc += *reinterpret_cast<const volatile uint8_t*>(p);
        }
        if (const lst_record* r = f.record(id)) {
          acc += r->word + r->u.coll.count;
          ++n;
        }
      }
    }
    total += n;
    sink += acc;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < jobs; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return total + (sink == 42 ? 1 : 0);
}

int run(const std::string& dir, int jobs) {
  auto files = trace_files(dir);
  uint64_t bytes = 0;
  for (auto& f : files) bytes += fs::file_size(f);
  fmt::print("traces: {} files, {:.2f} GiB in {}; {} thread(s)\n", files.size(), double(bytes) / (1ull << 30),
             dir, jobs);
  in_child([&] { return baseline(files, jobs); });  // warm the page cache
  Measure base = in_child([&] { return baseline(files, jobs); });
  Measure base_map = in_child([&] { return baseline(files, jobs, Read::kMapped); });
  Measure base_pop = in_child([&] { return baseline(files, jobs, Read::kMappedAhead); });
  auto check = [&](bool validate, bool materialize = false) {
    return in_child([&] {
      lockstep::check::LoadOptions lo;
      lo.jobs = jobs;
      lo.validate = validate;
      lo.materialize = materialize;
      auto job = lockstep::check::load_dir(dir, lo);
      auto res = lockstep::check::analyze(job);
      if (!res.in_lockstep()) std::fprintf(stderr, "unexpected findings\n");
      return res.summary.records;
    });
  };
  Measure full = check(true);
  Measure fast = check(false);
  Measure old = check(false, true);
  auto line = [&](const char* name, const Measure& m) {
    double rate = double(m.records) / m.seconds, cpu_rate = double(m.records) / m.cpu_seconds;
    fmt::print(
        "{:<30} {:>10} records  wall {:>6.2f} s ({:>5.1f} M/s)  CPU {:>6.2f} s ({:>5.1f} M records/s per "
        "core)  "
        "peak RSS {:>5.2f} GiB ({:.0f}% of traces){}\n",
        name, m.records, m.seconds, rate / 1e6, m.cpu_seconds, cpu_rate / 1e6,
        double(m.max_rss_kb) / (1 << 20), 100.0 * double(m.max_rss_kb) * 1024 / double(bytes),
        m.rc ? " FAILED" : "");
  };
  line("baseline (pread every record)", base);
  line("baseline, mapped, touch each", base_map);
  line("baseline, windows mapped ahead", base_pop);
  line("check (+ --validate pass)", full);
  line("check (default)", fast);
  line("check, every call in memory", old);
  fmt::print(
      "ratio check/baseline, CPU time: {:.2f} (default), {:.2f} (with --validate); wall: {:.2f}, {:.2f}\n",
      fast.cpu_seconds / base.cpu_seconds, full.cpu_seconds / base.cpu_seconds, fast.seconds / base.seconds,
      full.seconds / base.seconds);
  fmt::print("ratio check/baseline-mapped, CPU time: {:.2f}; wall: {:.2f}\n",
             fast.cpu_seconds / base_map.cpu_seconds, fast.seconds / base_map.seconds);
  fmt::print("ratio check/baseline-mapped-ahead, CPU time: {:.2f}; wall: {:.2f}\n",
             fast.cpu_seconds / base_pop.cpu_seconds, fast.seconds / base_pop.seconds);
  fmt::print("ratio every-call-in-memory/streaming, CPU time: {:.2f}; wall: {:.2f}\n",
             old.cpu_seconds / fast.cpu_seconds, old.seconds / fast.seconds);
  return base.rc || full.rc || fast.rc || old.rc ? 1 : 0;
}

// Whether a second worker costs more CPU per record because the two share one address space (each
// release of a window flushes the other CPU's TLB; mapping takes the address space's locks) or because
// two cores read memory at once: the bare read with the files shared out over threads, then over
// processes (file i to process i % jobs; a process's usage includes its children it waited for).
uint64_t baseline_procs(const std::vector<std::string>& files, int jobs) {
  auto share = [&](int k) {
    std::vector<std::string> mine;
    for (size_t i = size_t(k); i < files.size(); i += size_t(jobs)) mine.push_back(files[i]);
    return mine;
  };
  std::vector<pid_t> kids;
  for (int k = 1; k < jobs; ++k) {
    const pid_t pid = fork();
    if (pid == 0) _exit(baseline(share(k), 1) == 0 ? 1 : 0);
    kids.push_back(pid);
  }
  uint64_t n = baseline(share(0), 1);
  for (pid_t pid : kids) {
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) _exit(3);
  }
  return n;  // this process's share: the rate is taken from the threads' count
}

int split(const std::string& dir, int jobs, int rounds) {
  auto files = trace_files(dir);
  in_child([&] { return baseline(files, jobs); });  // warm the page cache
  fmt::print("traces: {} files in {}; bare read, {} worker(s) as threads and as processes\n", files.size(),
             dir, jobs);
  int rc = 0;
  for (int r = 0; r < rounds; ++r) {
    Measure one = in_child([&] { return baseline(files, 1); });
    Measure threads = in_child([&] { return baseline(files, jobs); });
    Measure procs = in_child([&] { return baseline_procs(files, jobs); });
    procs.records = threads.records;
    for (auto [name, m] : {std::pair{"1 thread", one}, {"threads", threads}, {"processes", procs}}) {
      fmt::print("round {} {:<10} CPU {:.3f} s (user {:.3f}, system {:.3f})  {:.1f} M records/s per core{}\n",
                 r + 1, name, m.cpu_seconds, m.cpu_seconds - m.sys_seconds, m.sys_seconds,
                 double(m.records) / m.cpu_seconds / 1e6, m.rc ? " FAILED" : "");
      rc |= m.rc;
    }
  }
  return rc ? 1 : 0;
}

// What `check --mpi` sends process 0 per rank: each rank's model as the streaming ingest leaves it,
// encoded (distributed.h), with its member lists written out, and as one process sends its ranks (each
// distinct member list once), against the ranks' trace bytes.
int model(const std::string& dir) {
  lockstep::check::LoadOptions o;
  o.jobs = 1;
  const lockstep::check::Job job = lockstep::check::load_dir(dir, o);
  uint64_t alone = 0, largest = 0, shared = 0, traces = 0;
  lockstep::check::mpi::MemberLists lists;
  for (const lockstep::check::Rank& r : job.ranks) {
    const uint64_t n = lockstep::check::mpi::encode_rank(r).size();
    alone += n;
    largest = std::max(largest, n);
    shared += lockstep::check::mpi::encode_rank(r, &lists).size();
    struct stat st{};
    if (::stat(r.file.c_str(), &st) == 0) traces += uint64_t(st.st_size);
  }
  for (const auto& l : lists.lists) shared += 8 + 4 * l->size();
  // A differing rank's calls as its owner sends them back (encode_calls), against the 12 bytes a call
  // its vectors hold; every rank read, as when every rank differs.
  uint64_t calls = 0, call_bytes = 0, messages = 0, message_bytes = 0;
  for (const lockstep::check::Rank& r : job.ranks) {
    r.materialize();
    for (const auto& s : r.seqs) calls += s.sig.size();
    call_bytes += lockstep::check::mpi::encode_calls(r).size();
    r.release();
    // Its message calls as an owner sends them (encode_messages), against the records they are.
    std::vector<lockstep::check::P2P> m;
    r.for_each_message([&](const lockstep::check::P2P& p) {
      m.push_back(p);
      return true;
    });
    messages += m.size();
    message_bytes += lockstep::check::mpi::encode_messages(m).size();
  }
  const auto ranks = double(job.ranks.size());
  fmt::print(
      "{} ranks, traces {} bytes; model sent to process 0, member lists in each rank's: {} bytes, {:.0f} per "
      "rank (largest {}), {:.6f} of the traces; sent by one process (each list once): {} bytes, {:.0f} per "
      "rank, {:.6f} of the traces\n",
      job.ranks.size(), traces, alone, double(alone) / ranks, largest, double(alone) / double(traces), shared,
      double(shared) / ranks, double(shared) / double(traces));
  fmt::print(
      "calls sent back for every rank: {} calls, {} bytes, {:.2f} per call ({:.4f} of the traces; as "
      "vectors {:.4f})\n",
      calls, call_bytes, double(call_bytes) / double(calls), double(call_bytes) / double(traces),
      12.0 * double(calls) / double(traces));
  if (messages)
    fmt::print(
        "message calls sent back for every rank: {} calls, {} bytes, {:.2f} per call (as records 65)\n",
        messages, message_bytes, double(message_bytes) / double(messages));
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() >= 4 && a[0] == "gen")
    return gen(a[1], std::stoi(a[2]), std::stoull(a[3]), a.size() > 4 ? std::stoi(a[4]) : 3,
               a.size() > 5 ? std::stoull(a[5]) : 0, a.size() > 6 ? uint32_t(std::stoul(a[6])) : 0,
               a.size() > 7 ? std::stoll(a[7]) : -1, a.size() > 8 ? a[8] : std::string());
  if (a.size() >= 2 && a[0] == "run") return run(a[1], a.size() > 2 ? std::stoi(a[2]) : 1);
  if (a.size() >= 2 && a[0] == "model") return model(a[1]);
  if (a.size() >= 2 && a[0] == "split")
    return split(a[1], a.size() > 2 ? std::stoi(a[2]) : 2, a.size() > 3 ? std::stoi(a[3]) : 5);
  std::fprintf(stderr,
               "usage: check_bench gen DIR RANKS COLLECTIVES [COMMS [RING [MESSAGES [SKIP_AT "
               "[staggered|recv_ring]]]]] | "
               "check_bench run DIR "
               "[THREADS] | "
               "check_bench split DIR [JOBS [ROUNDS]] | check_bench model DIR\n");
  return 2;
} catch (const std::exception& e) {  // a number that does not parse, a directory that cannot be written
  std::fprintf(stderr, "check_bench: %s\n", e.what());
  return 2;
}
