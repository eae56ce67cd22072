// Loading real trace files written with the Writer: one job, missing ranks, two jobs in one directory,
// damaged files, and the `lockstep check` command's exit codes and one-line errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "lockstep/check/check.h"
#include "lockstep/check/distributed.h"
#include "lockstep/check/load.h"
#include "lockstep/report/report.h"
#include "lockstep/report/timeline.h"
#include "temp_dir.h"
#include "trace_writer.h"

namespace lockstep::check {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

void write_job(const std::string& dir, int size, uint64_t n, int comms, int skip_rank = -1,
               int64_t skip_at = -1, const char* job = "synthetic-job") {
  for (int r = 0; r < size; ++r) {
    gen::Spec s;
    s.dir = dir;
    s.job = job;
    s.rank = r;
    s.size = size;
    s.collectives = n;
    s.comms = comms;
    if (r == skip_rank) s.skip_at = skip_at;
    gen::write_rank(s);
  }
}

struct Cli {
  int rc;
  std::string out;
};

Cli lockstep(const std::string& args) {
  std::string cmd = std::string(LOCKSTEP_BIN) + " " + args + " 2>&1";
  Cli c{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) c.out.append(buf, n);
  int st = pclose(p);
  c.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return c;
}

// The trace file of world rank `rank` in dir (empty if none), and a trace file's header.
std::string rank_file(const std::string& dir, int rank) {
  const std::string prefix = "rank-" + std::to_string(rank) + ".";
  for (auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().rfind(prefix, 0) == 0) return f.path().string();
  return {};
}
lst_header header_of(const std::string& path) {
  lst_header h{};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  return h;
}

TEST(Load, CleanJobOverThreeCommunicators) {
  TempDir d;
  write_job(d.path(), 4, 3000, 3);
  LoadOptions lo;
  lo.jobs = 2;
  Job job = load_dir(d.path(), lo);
  ASSERT_EQ(job.ranks.size(), 4u);
  EXPECT_EQ(job.ranks[3].world_rank, 3);
  EXPECT_EQ(job.ranks[0].end, EndState::kExited);
  Result r = analyze(job);
  EXPECT_TRUE(r.in_lockstep());
  EXPECT_EQ(r.summary.communicators, 4);  // world, dup, and the two halves
  EXPECT_EQ(r.summary.collectives, 3000u / 3 * 2 + 2 * 1000u);
}

// A job still writing its traces (a hang looked at while its processes live on): the walks copy a
// growing file's records with pread, and a copy may catch a record between the two stores of its return
// (duration, then word). Such a copy reads as the ENTERED record it still is (the torn-return rule), and
// any copy that fails its check is read again through the mapping: loading and checking never call a
// record damage, and every record a load saw published is there in the next.
TEST(Load, TracesStillBeingWrittenLoadWithoutDamage) {
  TempDir d;
  gen::Spec s1;
  s1.dir = d.path();
  s1.rank = 1;
  s1.size = 2;
  s1.collectives = 2000;
  s1.finalize = false;
  gen::write_rank(s1);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  std::thread live([&] {
    format::Writer w;
    format::WriterConfig c;
    c.dir = d.path().c_str();
    c.rank_hint = 0;
    c.job_id = s1.job.c_str();
    c.cmdline = "live";
    c.chunk_records = 4096;
    c.meta_slots = 256;
    c.max_records = 1u << 20;
    char err[256];
    if (!w.open(c, err, sizeof err)) return;
    w.set_world(0, 2);
    const uint64_t site = reinterpret_cast<uint64_t>(&gen::site_a) + 4;
    w.note_module(site);
    uint64_t id;
    for (uint32_t seq = 0; !stop.load(std::memory_order_relaxed); ++seq) {
      lst_record* r = w.reserve(&id);
      if (!r) break;
      r->op = LST_OP_ALLREDUCE;
      r->api = LST_API_MPI;
      r->dtype = LST_DT_FLOAT32;
      r->redop = LST_RED_SUM;
      r->comm = gen::comm_id(0, 0);
      r->u.coll.seq = seq;
      r->u.coll.root_or_peer = LST_NONE;
      r->u.coll.dtype_size = 4;
      r->u.coll.id_lo = uint32_t(id);
      r->u.coll.count = 1024;
      r->caller = site;
      r->t_ns = 1000 + 1000ull * seq;
      format::Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
      if (seq % 7 == 0) std::this_thread::yield();  // a reader may copy it still ENTERED
      format::Writer::finish_own(r, __atomic_load_n(&r->word, __ATOMIC_ACQUIRE), LST_STATE_RETURNED,
                                 1 + seq % 5);
      written.store(seq + 1, std::memory_order_relaxed);
      if (seq % 64 == 63) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  while (written.load() < 1000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  uint64_t before = 0;
  int loads = 0;
  for (; loads < 150; ++loads) {
    Job job;
    ASSERT_NO_THROW(job = load_dir(d.path())) << "load " << loads;
    ASSERT_EQ(job.ranks.size(), 2u);
    const Rank& live_rank = job.ranks[0].world_rank == 0 ? job.ranks[0] : job.ranks[1];
    EXPECT_GE(live_rank.records, before) << "load " << loads;
    before = live_rank.records;
    ASSERT_NO_THROW((void)analyze(job)) << "load " << loads;
  }
  stop = true;
  live.join();
  EXPECT_GT(before, 1000u);
}

// The timeline numbers a call's kind from a cache keyed by the record's own words: two calls from one
// line whose count and element size differ only where a folded key would lose or cancel the difference
// keep their own kinds. Element sizes of 64 and 128 KiB (derived datatypes) once shared a key: the fold
// shifted everything above their low 16 bits out.
TEST(Timeline, CallsDifferingInCountOrElementSizeKeepTheirOwnKinds) {
  struct Case {
    uint32_t even_size, odd_size;
    uint64_t odd_count;
  };
  for (const Case& c : {Case{4, 8, 1024 | uint64_t{12} << 48}, Case{65536, 131072, 0}}) {
    TempDir d;
    for (int32_t rank = 0; rank < 2; ++rank) {
      gen::Spec s;
      s.dir = d.path();
      s.rank = rank;
      s.size = 2;
      s.collectives = 40;
      s.dtype_size = c.even_size;
      s.odd_dtype_size = c.odd_size;
      s.odd_count = c.odd_count;
      gen::write_rank(s);
    }
    LoadOptions lo;
    lo.this_host = "another-host";
    Job job = load_dir(d.path(), lo);
    EXPECT_TRUE(analyze(job).in_lockstep());
    report::Timeline t(job);
    for (auto& r : job.ranks) {
      std::vector<report::Lane> lanes = t.lanes(r);
      ASSERT_EQ(lanes.size(), 1u);
      ASSERT_EQ(lanes[0].calls.size(), 40u);
      for (size_t i = 0; i < lanes[0].calls.size(); ++i) {
        const report::CallKind& k = t.kinds[lanes[0].calls[i].kind];
        const std::string where =
            fmt::format("size {}/{}: rank {} call {}", c.even_size, c.odd_size, r.world_rank, i);
        EXPECT_EQ(k.count, i % 2 && c.odd_count ? c.odd_count : 1024u) << where;
        EXPECT_EQ(k.dtype_size, i % 2 ? c.odd_size : c.even_size) << where;
      }
    }
    EXPECT_EQ(t.kinds.size(), 2u);
  }
}

TEST(Load, SkippedCollectiveInAFile) {
  TempDir d;
  write_job(d.path(), 4, 300, 1, /*skip_rank=*/1, /*skip_at=*/120);
  Result r = analyze(load_dir(d.path()));
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, Kind::kMissingCollective);
  EXPECT_EQ(r.findings[0].culprits, std::vector<int32_t>{1});
}

TEST(Load, MissingRankFileIsAMissingProcess) {
  TempDir d;
  write_job(d.path(), 4, 50, 1);
  for (auto& e : fs::directory_iterator(d.path()))
    if (e.path().filename().string().rfind("rank-2.", 0) == 0) fs::remove(e.path());
  Job job = load_dir(d.path());
  EXPECT_EQ(job.missing, std::vector<int32_t>{2});
  Result r = analyze(job);
  EXPECT_EQ(r.missing_processes, std::vector<int32_t>{2});
  EXPECT_FALSE(r.in_lockstep());
  Cli c = lockstep("check --no-symbolize " + d.path());
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_NE(c.out.find("missing process"), std::string::npos) << c.out;
}

TEST(Load, TwoJobsInOneDirectoryNameBothFiles) {
  TempDir d;
  write_job(d.path(), 2, 10, 1, -1, -1, "job-a");
  TempDir e;
  write_job(e.path(), 2, 10, 1, -1, -1, "job-b");
  std::string moved;
  for (auto& f : fs::directory_iterator(e.path()))
    if (f.path().filename().string().rfind("rank-1.", 0) == 0) {
      moved = d.path() + "/other-" + f.path().filename().string();
      fs::rename(f.path(), moved);
    }
  try {
    load_dir(d.path());
    FAIL() << "two jobs loaded as one";
  } catch (const LoadError& err) {
    std::string m = err.what();
    EXPECT_NE(m.find("two jobs"), std::string::npos) << m;
    EXPECT_NE(m.find("job-a"), std::string::npos) << m;
    EXPECT_NE(m.find("job-b"), std::string::npos) << m;
    EXPECT_NE(m.find(moved), std::string::npos) << m;
  }
  Cli c = lockstep("check " + d.path());
  EXPECT_EQ(c.rc, 2) << c.out;
}

// Processes that MPI_Comm_spawn started (MPI_INIT's key of their own world) in the job's directory: their
// ranks 0..n-1 are not the job's, so they are set aside with one warning naming them, never an error.
TEST(Load, SpawnedProcessesAreSetAsideNamedInAWarning) {
  TempDir d;
  write_job(d.path(), 4, 20, 1);
  auto spawned = [&](int32_t rank, int32_t size, uint64_t world) {
    TempDir own;  // one process writes every file here: each gets a directory, then a name, of its own
    gen::Spec s;
    s.dir = own.path();
    s.rank = rank;
    s.size = size;
    s.collectives = 5;
    s.spawned_world = world;
    const std::string to =
        d.path() + "/spawned-" + std::to_string(world) + "-" + std::to_string(rank) + ".lstrace";
    fs::rename(gen::write_rank(s), to);
    return to;
  };
  std::vector<std::string> files = {spawned(0, 2, 7), spawned(1, 2, 7), spawned(0, 1, 9)};
  Job job = load_dir(d.path());
  EXPECT_EQ(job.ranks.size(), 4u);
  std::string said;
  for (auto& w : job.warnings)
    if (w.find("MPI_Comm_spawn") != std::string::npos) said = w;
  EXPECT_NE(said.find("not checked: 3 trace files of processes that MPI_Comm_spawn started, in 2 "
                      "MPI_COMM_WORLDs of their own"),
            std::string::npos)
      << said;
  for (auto& f : files) EXPECT_NE(said.find(f), std::string::npos) << f << " in " << said;
  EXPECT_TRUE(analyze(job).in_lockstep());

  // A directory of spawned processes only: the first file's world is checked.
  TempDir e;
  for (auto& f : files) fs::rename(f, e.path() + "/" + fs::path(f).filename().string());
  Job only = load_dir(e.path());
  ASSERT_FALSE(only.ranks.empty());
  const uint64_t world = only.ranks.front().spawned_world;
  for (auto& r : only.ranks) EXPECT_EQ(r.spawned_world, world);
  bool told = false;
  for (auto& w : only.warnings) told |= w.find("the world checked is the first file's") != std::string::npos;
  EXPECT_TRUE(told);
}

// `lockstep run --timeout` leaves what it read in /proc of each traced process of its host: a rank gets
// the line of its own pid and file on run's host, and no other; a line that does not parse, or names a
// state run never writes, is left out.
TEST(Load, TheStopNoteGivesEachRankItsStateAtTheStop) {
  TempDir d;
  write_job(d.path(), 3, 30, 1);
  std::vector<Rank> seen = load_dir(d.path(), LoadOptions{}).ranks;
  ASSERT_EQ(seen.size(), 3u);
  auto file = [](const Rank& r) { return fs::path(r.file).filename().string(); };
  {
    std::ofstream note(d.path() + "/lockstep-run-timeout.txt");
    note << "lockstep run stopped the job at its --timeout (5.0 s)\n"
         << "SIGTERM at CLOCK_MONOTONIC 1000 ns on " << seen[0].host << "\n"
         << "process " << seen[0].pid << " " << file(seen[0]) << " state running cpu 0.98\n"
         << "process " << seen[1].pid << " " << file(seen[1])
         << " state uninterruptible cpu 0.00 wchan nfs_wait_bit_killable\n"
         << "process " << seen[2].pid + 1 << " " << file(seen[2])
         << " state stopped cpu 0.00\n"                                                      // another pid
         << "process " << seen[2].pid << " " << file(seen[2]) << " state frozen cpu 0.00\n"  // no such state
         << "process garbage\n";
  }
  Job job = load_dir(d.path(), LoadOptions{});
  ASSERT_EQ(job.ranks.size(), 3u);
  EXPECT_EQ(job.ranks[0].at_stop, "running");
  EXPECT_DOUBLE_EQ(job.ranks[0].at_stop_cpu, 0.98);
  EXPECT_FALSE(job.ranks[0].frozen_at_stop());
  EXPECT_EQ(job.ranks[1].at_stop, "uninterruptible");
  EXPECT_EQ(job.ranks[1].at_stop_wchan, "nfs_wait_bit_killable");
  EXPECT_TRUE(job.ranks[1].frozen_at_stop());
  EXPECT_EQ(job.ranks[2].at_stop, "");
  EXPECT_EQ(job.stopped_at_ns, 1000u);
  // The report says it per rank, in the text and in the JSON.
  Result r = analyze(job);
  const std::string text = report::text(r, report::Context{});
  EXPECT_NE(text.find("at the stop: in an uninterruptible sleep in the kernel (at nfs_wait_bit_killable)"),
            std::string::npos)
      << text;
  const std::string json = report::json(r, report::Context{});
  EXPECT_NE(json.find("\"wchan\": \"nfs_wait_bit_killable\""), std::string::npos) << json;
}

TEST(Load, DamagedFileIsBadInputNamingTheFile) {
  TempDir d;
  write_job(d.path(), 2, 10, 1);
  const std::string victim = rank_file(d.path(), 1);
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.write("NOTATRACE", 8);
  }
  EXPECT_THROW(load_dir(d.path()), LoadError);
  Cli c = lockstep("check " + d.path());
  EXPECT_EQ(c.rc, 2) << c.out;
  EXPECT_NE(c.out.find(victim), std::string::npos) << c.out;
  EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 1) << c.out;

  fs::resize_file(victim, 100);  // truncated inside the header
  c = lockstep("check " + d.path());
  EXPECT_EQ(c.rc, 2) << c.out;
  EXPECT_NE(c.out.find(victim), std::string::npos) << c.out;
}

TEST(Load, DamagedRecordIsBadInputNamingTheFile) {
  TempDir d;
  write_job(d.path(), 2, 100, 1);
  const std::string victim = rank_file(d.path(), 0);
  const lst_header h = header_of(victim);
  {
    // Record 50 gets a published word with a kind that does not exist.
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(h.records_offset + 50 * sizeof(lst_record)));
    uint32_t word = LST_WORD(77, 1, 0);
    f.write(reinterpret_cast<const char*>(&word), sizeof word);
  }
  for (const char* flags : {"", "--validate "}) {
    Cli c = lockstep(std::string("check --no-symbolize ") + flags + d.path());
    EXPECT_EQ(c.rc, 2) << c.out;
    EXPECT_NE(c.out.find(victim), std::string::npos) << c.out;
    EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 1) << c.out;
  }
}

// A damaged byte in a record amid thousands of equal calls (the ingest's fast path for a call
// repeating its slot's last one, and its bulk step for a run of them) is found as anywhere else: in a
// field that changes from call to call (number, id, time, the check bits), or in one the fast path
// compares (every other field, the word's flags included).
TEST(Load, DamageInARunOfEqualCallsIsBadInput) {
  const int kRecord = 2000;  // well inside the run: the calls before it filled the slots
  for (size_t offset :
       {offsetof(lst_record, u.coll.seq), offsetof(lst_record, u.coll.id_lo), offsetof(lst_record, t_ns) + 2,
        offsetof(lst_record, t_return_us), offsetof(lst_record, u.coll.count) + 1,
        offsetof(lst_record, caller), offsetof(lst_record, comm) + 7, offsetof(lst_record, op),
        offsetof(lst_record, word), offsetof(lst_record, word) + 3, offsetof(lst_record, api),
        offsetof(lst_record, dtype), offsetof(lst_record, redop), offsetof(lst_record, u.coll.root_or_peer),
        offsetof(lst_record, u.coll.dtype_size) + 1, offsetof(lst_record, aux) + 2}) {
    TempDir d;
    write_job(d.path(), 2, 3000, 1);
    const std::string victim = rank_file(d.path(), 1);
    const lst_header h = header_of(victim);
    const uint64_t at = h.records_offset + kRecord * sizeof(lst_record) + offset;
    {
      std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(std::streamoff(at));
      char c = 0;
      f.read(&c, 1);
      c = char(c ^ 0x10);
      f.seekp(std::streamoff(at));
      f.write(&c, 1);
    }
    Cli c = lockstep("check --no-symbolize " + d.path());
    EXPECT_EQ(c.rc, 2) << "offset " << offset << ": " << c.out;
    const std::string where = fmt::format("{}: byte {}: record {}:", victim,
                                          h.records_offset + kRecord * sizeof(lst_record), kRecord);
    EXPECT_NE(c.out.find(where), std::string::npos) << "offset " << offset << ": " << c.out;
    EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 1) << c.out;
  }
}

TEST(Load, EmptyOrAbsentDirectoryIsBadInput) {
  TempDir d;
  EXPECT_EQ(lockstep("check " + d.path()).rc, 2);
  EXPECT_EQ(lockstep("check " + d.path() + "/absent").rc, 2);
  EXPECT_EQ(lockstep("check --format xml " + d.path()).rc, 2);
}

TEST(Cli, ExitCodesAndVerdictLine) {
  TempDir clean, bad;
  write_job(clean.path(), 4, 200, 2);
  write_job(bad.path(), 4, 200, 2, 3, 77);
  Cli c = lockstep("check --no-symbolize -j 2 " + clean.path());
  EXPECT_EQ(c.rc, 0) << c.out;
  EXPECT_EQ(c.out.rfind("lockstep: 4 ranks, 2 communicators, 200 collectives: IN LOCKSTEP", 0), 0u) << c.out;
  c = lockstep("check --no-symbolize " + bad.path());
  EXPECT_EQ(c.rc, 1) << c.out;
  // Every call on `dup` is identical, so the first place the ranks differ is the end of the sequence.
  EXPECT_NE(c.out.find("rank 3 never called MPI_Allreduce #99 on dup"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("#0..#99 are identical calls"), std::string::npos) << c.out;
  std::string out = bad.path() + "/report.json";
  c = lockstep("check --no-symbolize --format json -o " + out + " " + bad.path());
  EXPECT_EQ(c.rc, 1);
  EXPECT_TRUE(c.out.empty()) << c.out;
  EXPECT_GT(fs::file_size(out), 100u);
}

TEST(Diff, AddedRemovedAndChangedCollectives) {
  TempDir base, same, now;
  write_job(base.path(), 4, 60, 2, -1, -1, "run-1");
  write_job(same.path(), 4, 60, 2, -1, -1, "run-2");
  for (int r = 0; r < 4; ++r) {
    gen::Spec s;
    s.dir = now.path();
    s.job = "run-3";
    s.rank = r;
    s.collectives = 60;
    s.comms = 2;
    s.count_change_at = 10;  // world #5 passes twice the data
    s.skip_at = 21;          // dup #10 is gone
    gen::write_rank(s);
  }
  Cli c = lockstep("diff --no-symbolize " + base.path() + " " + same.path());
  EXPECT_EQ(c.rc, 0) << c.out;
  c = lockstep("diff --no-symbolize " + base.path() + " " + now.path());
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_NE(c.out.find("2 differences (0 added, 1 removed, 1 changed"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("changed  on MPI_COMM_WORLD: MPI_Allreduce #5 (1024 x float32"), std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("now: MPI_Allreduce #5 (2048 x float32"), std::string::npos) << c.out;
  // All calls on dup are identical, so the removal shows at the end of its schedule.
  EXPECT_NE(c.out.find("removed  on dup: MPI_Allreduce #29"), std::string::npos) << c.out;
  c = lockstep("diff --no-symbolize --accept-count-changes " + base.path() + " " + now.path());
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_NE(c.out.find("1 difference (0 added, 1 removed, 0 changed"), std::string::npos) << c.out;
  c = lockstep("diff --no-symbolize --format json " + now.path() + " " + base.path());
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.out.find("\"change\": \"added\""), std::string::npos) << c.out;
  EXPECT_EQ(lockstep("diff " + base.path() + " " + base.path() + "/absent").rc, 2);
}

// The streaming ingest (the default) and the one that keeps every call in memory find the same: one job
// per kind of difference, every finding rendered as JSON and compared byte for byte, with call sites
// keyed by module + offset and by a key that merges two sites (as a symbolizer merges two copies of one
// line), which makes the streaming path number its sites again from the records.
TEST(Load, StreamingAndMaterializingPathsFindTheSame) {
  struct Case {
    const char* name;
    int size, comms;
    uint64_t n;
    std::function<void(gen::Spec&)> bug;
  };
  const std::vector<Case> cases = {
      {"clean", 4, 3, 600, [](gen::Spec&) {}},
      {"skip and continue", 4, 3, 600,
       [](gen::Spec& s) {
         if (s.rank == 2) s.skip_at = 200;
       }},
      {"two sites per step", 4, 2, 600,
       [](gen::Spec& s) {
         s.two_sites = true;
         if (s.rank == 0) s.skip_at = 301;
       }},
      {"two sites, clean", 4, 2, 600, [](gen::Spec& s) { s.two_sites = true; }},
      {"count change", 4, 2, 400,
       [](gen::Spec& s) {
         if (s.rank == 1) s.count_change_at = 51;
       }},
      {"two ranks differ", 5, 3, 300,
       [](gen::Spec& s) {
         if (s.rank == 1) s.skip_at = 31;
         if (s.rank == 3) s.count_change_at = 100;
       }},
      {"tie of two", 2, 1, 200,
       [](gen::Spec& s) {
         if (s.rank == 1) s.skip_at = 150;
       }},
      {"hang", 4, 3, 300,
       [](gen::Spec& s) {
         s.finalize = false;
         if (s.rank == 0) s.collectives = 250;
         s.last_entered = true;
       }},
      {"blocked receive", 3, 1, 90,
       [](gen::Spec& s) {
         s.finalize = false;
         if (s.rank == 2) s.skip_at = 80;
         s.blocked_recv_from = (s.rank + 1) % 3;
       }},
      // Runs of equal calls that stay open (nonblocking, never waited for) on every rank, in a job
      // that hangs: the open positions come from the ingest's fast path for repeated calls.
      {"unwaited nonblocking calls, hang", 4, 2, 300,
       [](gen::Spec& s) {
         s.finalize = false;
         s.nonblocking_from = 240 + s.rank;
         if (s.rank == 0) s.collectives = 280;
       }},
      {"cut short", 4, 3, 600,
       [](gen::Spec& s) {
         if (s.rank == 3) s.collectives = 450;
       }},
      // Ring mode: each rank keeps its last 256 records, and the markers after the collectives make the
      // ranks keep windows that start at different calls, so every rank's sequences are trimmed.
      {"ring, clean", 4, 3, 900,
       [](gen::Spec& s) {
         s.ring_records = 256;
         s.trailing_markers = uint32_t(s.rank) * 7;
       }},
      {"ring, two sites, clean", 4, 2, 900,
       [](gen::Spec& s) {
         s.ring_records = 256;
         s.two_sites = true;
         s.trailing_markers = uint32_t(s.rank) * 5;
       }},
      {"ring, skip and continue", 4, 3, 900,
       [](gen::Spec& s) {
         s.ring_records = 256;
         s.trailing_markers = uint32_t(3 - s.rank) * 4;
         if (s.rank == 2) s.skip_at = 820;
       }},
      {"ring, count change", 4, 2, 900,
       [](gen::Spec& s) {
         s.ring_records = 256;
         s.trailing_markers = uint32_t(s.rank % 2) * 9;
         if (s.rank == 1) s.count_change_at = 850;
       }},
      {"ring, two sites per step", 4, 2, 900,
       [](gen::Spec& s) {
         s.ring_records = 200;
         s.two_sites = true;
         s.trailing_markers = uint32_t(s.rank) * 3;
         if (s.rank == 0) s.skip_at = 861;
       }},
      {"ring, hang", 4, 3, 900,
       [](gen::Spec& s) {
         s.ring_records = 256;
         s.finalize = false;
         s.trailing_markers = uint32_t(s.rank) * 2;
         if (s.rank == 0) s.collectives = 880;
         s.last_entered = true;
       }},
  };
  SiteKeys merged = [](const Rank& rank, const std::vector<uint64_t>& addrs) {
    std::vector<uint64_t> k = module_site_keys(rank, addrs);
    for (auto& x : k) x = 42;  // every site one line
    return k;
  };
  for (const Case& c : cases) {
    TempDir d;
    for (int r = 0; r < c.size; ++r) {
      gen::Spec s;
      s.dir = d.path();
      s.rank = r;
      s.size = c.size;
      s.collectives = c.n;
      s.comms = c.comms;
      c.bug(s);
      gen::write_rank(s);
    }
    for (bool merge : {false, true}) {
      // Streamed, materialized, and streamed with every rank's model encoded and decoded again as
      // `check --mpi` sends it to process 0 (the decoded rank reading the same file) and read again on
      // two threads.
      std::string out[3];
      // What the report and the export draw: per communicator, each rank's number of calls, and each
      // lane's calls (kind, state, times).
      std::string drawn[3];
      for (int materialize = 0; materialize < 3; ++materialize) {
        LoadOptions lo;
        lo.jobs = 2;
        lo.materialize = materialize == 1;
        lo.this_host = "another-host";  // never look the synthetic pids up in /proc
        if (merge) lo.site_keys = merged;
        if (materialize == 2)
          lo.load_elsewhere = [](const std::vector<std::string>& inputs, const LoadOptions& o) {
            Listing l = list_inputs(inputs);
            l.files = load_files(l.paths, o);
            // Odd files with their member lists written out, even ones numbered into a table.
            for (size_t i = 0; i < l.files.size(); ++i) {
              LoadedFile& f = l.files[i];
              mpi::MemberLists lists, again;
              const bool table = i % 2 == 0;
              const std::string bytes = mpi::encode_rank(f.rank, table ? &lists : nullptr);
              auto source = f.rank.source;
              f.rank = mpi::decode_rank(
                  bytes,
                  [&](uint64_t first, uint64_t end, uint32_t major) {
                    EXPECT_EQ(first, source->first_id());
                    EXPECT_EQ(end, source->end_id());
                    EXPECT_EQ(major, source->format_major());
                    return source;
                  },
                  table ? &lists.lists : nullptr);
              EXPECT_EQ(mpi::encode_rank(f.rank, table ? &again : nullptr), bytes) << f.rank.file;
            }
            return l;
          };
        Job job = load_dir(d.path(), lo);
        EXPECT_EQ(job.ranks.front().streamed, !lo.materialize);
        // The encoded ranks' calls are read again on two threads where views differ, the others' on one.
        Options ao;
        ao.jobs = materialize == 2 ? 2 : 1;
        out[materialize] = report::json(analyze(job, ao), report::Context{"traces", "test"});
        report::Timeline t(job);
        for (auto& tc : t.comms) {
          drawn[materialize] += fmt::format("{:#x} min {}:", tc.ref.id, tc.min_length);
          for (size_t n : tc.lengths) drawn[materialize] += fmt::format(" {}", n);
          drawn[materialize] += "\n";
        }
        for (auto& r : job.ranks)
          for (auto& lane : t.lanes(r)) {
            drawn[materialize] += fmt::format("rank {} comm {}:", lane.rank, lane.comm);
            for (auto& call : lane.calls)
              drawn[materialize] += fmt::format(" {}/{}/{}", call.kind, call.state, call.t0_ns);
            drawn[materialize] += "\n";
          }
      }
      EXPECT_EQ(out[0], out[1]) << c.name << (merge ? " (sites merged)" : "");
      EXPECT_EQ(drawn[0], drawn[1]) << c.name << (merge ? " (sites merged)" : "");
      EXPECT_EQ(out[0], out[2]) << c.name << " (models encoded and decoded)"
                                << (merge ? " (sites merged)" : "");
      EXPECT_EQ(drawn[0], drawn[2]) << c.name << " (models encoded and decoded)"
                                    << (merge ? " (sites merged)" : "");
      const bool clean = std::string(c.name).find("clean") != std::string::npos;
      EXPECT_EQ(out[0].find("\"kind\"") == std::string::npos, clean) << c.name;
    }
  }
}

}  // namespace
}  // namespace lockstep::check
