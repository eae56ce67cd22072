// Kills traced MPI processes with SIGKILL at random moments, many times, and checks that every trace
// still loads and validates, and that every collective the process had seen return (by its own
// progress log) is in its trace with the right op, sequence number and state.
//   kill_test TRACER WORK KILLS LANES PROGRAM MPIRUN [MPIRUN FLAGS...]
// Most jobs are singletons (one process started directly, the fastest MPI start); every fifth job
// is a 2-rank mpirun job of which one rank is killed. LANES jobs run at once. Seed: LOCKSTEP_KILL_SEED.
// No job outlives the test: each runs in its own process group and gets PR_SET_PDEATHSIG, so a test
// killed by ctest's timeout takes its jobs with it; SIGINT/SIGTERM/SIGHUP and a watchdog
// (LOCKSTEP_KILL_DEADLINE seconds, below ctest's timeout) kill every live job group before exiting.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/format/layout.h"
#include "lockstep/format/reader.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::mutex g_out;
std::atomic<int> g_errors{0};
std::atomic<long> g_checked{0}, g_unpublished{0}, g_files{0}, g_kills{0};

#define FAILF(...)                            \
  do {                                        \
    std::lock_guard<std::mutex> lock_(g_out); \
    if (g_errors++ < 30) {                    \
      std::fprintf(stderr, __VA_ARGS__);      \
      std::fputc('\n', stderr);               \
    }                                         \
  } while (0)

// The process group of each lane's live job (0: none), read by the signal handler and the watchdog.
constexpr int kMaxLanes = 64;
std::atomic<pid_t> g_live[kMaxLanes];

void kill_live_jobs() {
  for (auto& g : g_live) {
    pid_t pgid = g.load();
    if (pgid > 0) kill(-pgid, SIGKILL);
  }
}

void on_signal(int sig) {
  kill_live_jobs();
  signal(sig, SIG_DFL);
  raise(sig);
}

struct Config {
  std::string tracer, work, program;
  std::vector<std::string> mpirun;
};

struct Progress {
  int pid = 0;
  std::set<long> returned;
};

Progress read_progress(const fs::path& path) {
  Progress p;
  std::ifstream in(path);
  std::string tag;
  long v;
  while (in >> tag >> v) {
    if (tag == "pid") p.pid = static_cast<int>(v);
    if (tag == "A") p.returned.insert(v);
  }
  return p;
}

int pid_from(const fs::path& path) {
  std::ifstream in(path);
  std::string tag;
  int v = 0;
  if (in >> tag >> v && tag == "pid") return v;
  return 0;
}

const uint8_t kOps[4] = {LST_OP_ALLREDUCE, LST_OP_BCAST, LST_OP_ALLREDUCE, LST_OP_BARRIER};

void verify(const fs::path& job) {
  std::map<int, const Progress*> by_pid;
  std::vector<Progress> progress;
  for (const auto& e : fs::directory_iterator(job / "progress")) progress.push_back(read_progress(e.path()));
  for (const Progress& p : progress) by_pid[p.pid] = &p;
  std::set<int> traced;
  std::vector<std::string> files;
  if (fs::exists(job / "traces")) files = lockstep::format::find_traces((job / "traces").string());
  for (const std::string& path : files) {
    ++g_files;
    try {
      auto f = lockstep::format::TraceFile::open(path);
      f.validate();
      g_unpublished += static_cast<long>(f.unpublished());
      int pid = static_cast<int>(f.header().pid);
      traced.insert(pid);
      auto it = by_pid.find(pid);
      if (it == by_pid.end()) continue;  // killed before it logged anything
      // The world communicator's collectives, by sequence number.
      uint64_t world = 0;
      std::map<uint32_t, const lst_record*> by_seq;
      for (uint64_t id = f.first_id(); id < f.end_id(); ++id) {
        const lst_record* r = f.record(id);
        if (!r) continue;
        if (LST_WORD_KIND(r->word) == LST_KIND_COMM && r->op == LST_COMM_WORLD && r->u.comm.size >= 1 &&
            world == 0 && r->aux && f.string(r->aux) == "MPI_COMM_WORLD")
          world = r->comm;
        if (LST_WORD_KIND(r->word) == LST_KIND_COLLECTIVE && r->comm == world) by_seq[r->u.coll.seq] = r;
      }
      for (long i : it->second->returned) {
        auto c = by_seq.find(static_cast<uint32_t>(i));
        if (c == by_seq.end()) {
          FAILF("%s: collective %ld returned before the kill but is not in the trace", path.c_str(), i);
          continue;
        }
        const lst_record* r = c->second;
        unsigned st = LST_WORD_STATE(r->word);
        unsigned want = i % 4 == 2 ? LST_STATE_COMPLETED : LST_STATE_RETURNED;
        if (r->op != kOps[i % 4] || st != want)
          FAILF("%s: collective %ld has op %u state %u, want op %u state %u", path.c_str(), i, r->op, st,
                kOps[i % 4], want);
        ++g_checked;
      }
    } catch (const std::exception& e) {
      FAILF("%s", e.what());
    }
  }
  for (const Progress& p : progress)
    if (!p.returned.empty() && !traced.count(p.pid))
      FAILF("%s: pid %d made collectives but has no trace", job.c_str(), p.pid);
}

pid_t spawn(const Config& c, const fs::path& job, bool two_ranks) {
  std::vector<std::string> args;
  std::string progress = (job / "progress").string(), traces = (job / "traces").string();
  if (two_ranks) {
    args = c.mpirun;
    for (const char* x : {"-np", "2", "-x", "LD_PRELOAD", "-x", "LOCKSTEP_TRACE_DIR"}) args.push_back(x);
  }
  args.push_back(c.program);
  args.push_back(progress);
  const pid_t self = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // Dies with the lane thread that forked it, which outlives the job; kept across exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != self) _exit(127);
    setenv("LD_PRELOAD", c.tracer.c_str(), 1);
    setenv("LOCKSTEP_TRACE_DIR", traces.c_str(), 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Waits for `pid` up to `limit`; afterwards kills its whole process group.
void reap(pid_t pid, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  int status;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > end) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  kill(-pid, SIGKILL);
}

void lane(const Config& c, int index, int jobs, uint64_t seed) {
  std::mt19937_64 rng(seed + static_cast<uint64_t>(index) * 7919);
  for (int j = 0; j < jobs; ++j) {
    fs::path job = fs::path(c.work) / ("job-" + std::to_string(index) + "-" + std::to_string(j));
    fs::create_directories(job / "progress");
    bool two = j % 5 == 4;
    pid_t leader = spawn(c, job, two);
    g_live[index].store(leader);
    auto delay = std::chrono::milliseconds(rng() % 300);
    if (!two && j % 4 == 0) {
      // Any moment from start-up on, MPI_Init included.
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 900));
      kill(leader, SIGKILL);
    } else if (!two) {
      // Once it is running collectives.
      fs::path target = job / "progress" / "progress-0";
      for (int tries = 0; tries < 400 && pid_from(target) == 0; ++tries) std::this_thread::sleep_for(5ms);
      std::this_thread::sleep_for(delay);
      kill(leader, SIGKILL);
    } else {
      // Wait for both ranks to be running, then kill one of them at a random moment.
      fs::path target = job / "progress" / ("progress-" + std::to_string(rng() % 2));
      int pid = 0;
      for (int tries = 0; tries < 400 && pid == 0; ++tries) {
        std::this_thread::sleep_for(10ms);
        pid = pid_from(target);
      }
      std::this_thread::sleep_for(delay);
      if (pid > 0) kill(pid, SIGKILL);
    }
    ++g_kills;
    reap(leader, two ? 10000ms : 2000ms);
    g_live[index].store(0);
    verify(job);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: kill_test TRACER WORK KILLS LANES PROGRAM MPIRUN [FLAGS...]\n");
    return 2;
  }
  Config c;
  c.tracer = argv[1];
  c.work = argv[2];
  int kills = std::atoi(argv[3]), lanes = std::atoi(argv[4]);
  c.program = argv[5];
  for (int i = 6; i < argc; ++i) c.mpirun.push_back(argv[i]);
  if (lanes < 1 || lanes > kMaxLanes || kills < 1) {
    std::fprintf(stderr, "kill_test: KILLS must be >= 1 and LANES 1..%d\n", kMaxLanes);
    return 2;
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, on_signal);
  long deadline_s = 200;
  if (const char* d = std::getenv("LOCKSTEP_KILL_DEADLINE")) deadline_s = std::atol(d);
  std::thread([deadline_s] {
    std::this_thread::sleep_for(std::chrono::seconds(deadline_s));
    kill_live_jobs();
    std::fprintf(stderr, "kill_test: not done after %ld s (LOCKSTEP_KILL_DEADLINE); killed every live job\n",
                 deadline_s);
    std::fflush(stderr);
    _exit(1);
  }).detach();
  fs::remove_all(c.work);
  fs::create_directories(c.work);
  uint64_t seed = 20261202;
  if (const char* s = std::getenv("LOCKSTEP_KILL_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::vector<std::thread> pool;
  int per_lane = (kills + lanes - 1) / lanes;
  for (int i = 0; i < lanes; ++i) pool.emplace_back(lane, std::cref(c), i, per_lane, seed);
  for (auto& t : pool) t.join();
  std::printf(
      "kill_test: seed %llu, %ld kills, %ld trace files loaded, %ld returned collectives found, "
      "%ld unpublished slots skipped\n",
      static_cast<unsigned long long>(seed), g_kills.load(), g_files.load(), g_checked.load(),
      g_unpublished.load());
  if (g_checked == 0) FAILF("no collective was checked: the kills all came before MPI_Init returned");
  return g_errors ? 1 : 0;
}
