// `lockstep run`: runs a job with liblockstep_trace.so injected into every process (also through
// OpenMPI's mpirun), watches the traces for a stall, stops the job at --timeout, and exits with the
// job's exit code.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli/command.h"
#include "lockstep/env.h"
#include "lockstep/format/fnv.h"
#include "lockstep/format/reader.h"
#include "run/stall_report.h"

namespace fs = std::filesystem;

namespace lockstep::run {
namespace {

struct Options {
  std::string out;
  double stall_s = 0;
  double timeout_s = 0;
  double grace_s = 5;
  std::string tracer;
  bool clean = false;
  bool report = false;
  std::vector<std::string> cmd;
};

constexpr int kTimeoutExit = 124;

// ---- setting up --------------------------------------------------------------------------------

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return fs::path(buf).parent_path().string();
}

std::string find_tracer(const Options& o) {
  std::string path = o.tracer;
  const char* from = "--tracer";
  if (path.empty()) {
    if (const char* v = env::get(env::Var::kTracerLib)) {
      path = v;
      from = env::name(env::Var::kTracerLib);
    }
  }
  if (path.empty()) {
    path = (fs::path(self_dir()) / ".." / "lib" / "liblockstep_trace.so").lexically_normal().string();
    from = "the default location";
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw cli::BadInput("run: " + path + ": trace library not found (" + from + "); pass --tracer PATH");
  return fs::absolute(path, ec).string();
}

// The trace directory: created 0700 if missing; refused when it is not a directory or already holds
// traces (each run is one job; --clean removes the old *.lstrace files first).
std::string prepare_dir(const Options& o) {
  std::error_code ec;
  fs::path dir = fs::absolute(o.out, ec);
  if (ec) throw cli::BadInput("run: " + o.out + ": " + ec.message());
  struct stat st;
  if (lstat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw cli::BadInput("run: " + o.out + ": exists and is not a directory");
  } else {
    fs::create_directories(dir, ec);
    if (ec) throw cli::BadInput("run: " + o.out + ": cannot create: " + ec.message());
    chmod(dir.c_str(), 0700);
  }
  std::vector<fs::path> old;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".lstrace") old.push_back(e.path());
  if (ec) throw cli::BadInput("run: " + o.out + ": cannot read: " + ec.message());
  if (!old.empty()) {
    if (!o.clean)
      throw cli::BadInput(
          "run: " + o.out + ": already holds " + std::to_string(old.size()) +
          " trace file(s) of another job; pass --clean to remove them or choose another directory");
    for (const fs::path& p : old) fs::remove(p, ec);
  }
  return dir.string();
}

std::string make_job_id() {
  if (const char* v = env::get(env::Var::kJobId)) return v;
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  auto now = std::chrono::system_clock::now().time_since_epoch();
  char buf[128];
  std::snprintf(buf, sizeof buf, "lockstep-%s-%d-%lld", host, static_cast<int>(getpid()),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()));
  return buf;
}

std::string which(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    fs::path cand = fs::path(p.substr(start, end - start)) / name;
    if (access(cand.c_str(), X_OK) == 0) return cand.string();
    start = end + 1;
  }
  return name;
}

// OpenMPI's launchers need -x to pass environment variables to the ranks they start, also on remote
// hosts. Other launchers (and plain commands) inherit the environment.
bool is_launcher_name(const std::string& cmd0) {
  std::string base = fs::path(cmd0).filename().string();
  return base == "mpirun" || base == "mpiexec" || base == "orterun" || base.rfind("mpirun.", 0) == 0 ||
         base.rfind("mpiexec.", 0) == 0;
}

bool is_openmpi_launcher(const std::string& cmd0) {
  if (!is_launcher_name(cmd0)) return false;
  std::error_code ec;
  std::string real = fs::canonical(which(cmd0), ec).string();
  if (!ec && (real.find("openmpi") != std::string::npos || real.find("orterun") != std::string::npos))
    return true;
  std::string probe = "'" + which(cmd0) + "' --version 2>/dev/null";
  std::FILE* p = popen(probe.c_str(), "r");
  if (!p) return false;
  char line[256];
  bool ompi = false;
  while (std::fgets(line, sizeof line, p))
    if (std::strstr(line, "Open MPI") || std::strstr(line, "OpenRTE")) ompi = true;
  pclose(p);
  return ompi;
}

// ---- watching ---------------------------------------------------------------------------------

// A process (other than this one) that has a trace file of `dir` open: a traced process still running
// on this host, and the name of its file.
struct Writer {
  pid_t pid;
  std::string file;
};

// The pid a trace file's name gives (format::parse_trace_file_name), 0 for any other name.
pid_t pid_of_trace_name(std::string_view name) {
  const std::optional<format::TraceFileName> t = format::parse_trace_file_name(name);
  return t ? pid_t(t->pid) : 0;
}

// Every such process. Only the processes that the trace files' names give are looked at, and only
// through /proc/PID/fd, which the tracer's descriptor of its file shows under the file's current name
// (a rename shows): never another process of the host, and never a process's memory map, whose read
// waits for that process's address-space lock. A pid another host's file names, or one reused since
// its file was written, has no descriptor of a file here and does not count.
std::vector<Writer> trace_writer_files(const fs::path& dir) {
  std::error_code ec;
  const std::string prefix = fs::canonical(dir, ec).string() + "/";
  std::vector<Writer> out;
  if (ec) return out;
  std::vector<pid_t> pids;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (pid_t pid = pid_of_trace_name(e.path().filename().string())) pids.push_back(pid);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  const pid_t self = getpid();
  for (pid_t pid : pids) {
    if (pid == self) continue;
    const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
    std::string file;
    std::error_code fd_ec;  // gone meanwhile, or not ours to read
    for (const fs::directory_entry& fd : fs::directory_iterator(fds, fd_ec)) {
      char target[PATH_MAX];
      const ssize_t n = readlink(fd.path().c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      const std::string_view t(target, size_t(n));
      if (t.starts_with(prefix) && t.find('/', prefix.size()) == std::string_view::npos &&
          pid_of_trace_name(t.substr(prefix.size())) == pid) {
        file = t.substr(prefix.size());
        break;
      }
    }
    if (!file.empty()) out.push_back({pid, std::move(file)});
  }
  return out;
}

std::vector<pid_t> trace_writers(const fs::path& dir) {
  std::vector<pid_t> out;
  for (const Writer& w : trace_writer_files(dir)) out.push_back(w.pid);
  return out;
}

// What a traced process was doing when the job was stopped, from /proc: the kernel's state of its
// threads and the CPU it used. A rank that the kernel holds (stopped by a signal or a debugger, or in an
// uninterruptible sleep: a file system, a device) while the others wait is where a hang comes from, and
// its trace alone cannot say so: it shows a rank inside a call like the others.
struct ProcSample {
  bool ok = false;
  char state = '?';  // the process's: 'T' or 't' when any thread is, else 'D' when any is, else 'R' when
                     // any is, else its main thread's
  uint64_t cpu_ticks = 0;
  std::string wchan;  // for 'D': where the kernel holds that thread
};

std::string read_small(const std::string& path) {
  std::string s;
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    s.assign(buf, n);
    std::fclose(f);
  }
  return s;
}

// The state letter (and, with `cpu`, utime + stime) of a /proc .../stat text: fields after the last ')'.
char stat_state(const std::string& stat, uint64_t* cpu) {
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return '?';
  const char state = stat[close + 2];
  if (cpu) {
    // Fields 3 (state) to 15 (stime): utime is field 14, stime field 15.
    const char* p = stat.c_str() + close + 2;
    unsigned long long v[13] = {};
    int field = 3;
    for (; *p && field <= 15; ++field) {
      while (*p == ' ') ++p;
      if (field >= 4) v[field - 3] = std::strtoull(p, nullptr, 10);
      while (*p && *p != ' ') ++p;
    }
    *cpu = field > 15 ? v[11] + v[12] : 0;
  }
  return state;
}

ProcSample sample_process(pid_t pid) {
  ProcSample s;
  const std::string base = "/proc/" + std::to_string(pid);
  const std::string stat = read_small(base + "/stat");
  if (stat.empty()) return s;
  s.state = stat_state(stat, &s.cpu_ticks);
  std::error_code ec;
  char stopped = 0, d_tid_state = 0;
  bool running = false;
  std::string d_tid;
  for (const fs::directory_entry& t : fs::directory_iterator(base + "/task", ec)) {
    const char c = stat_state(read_small((t.path() / "stat").string()), nullptr);
    if (c == 'T' || c == 't') stopped = c;
    if (c == 'D' && d_tid.empty()) {
      d_tid = t.path().filename().string();
      d_tid_state = c;
    }
    running |= c == 'R';
  }
  if (stopped)
    s.state = stopped;
  else if (d_tid_state) {
    s.state = 'D';
    s.wchan = read_small(base + "/task/" + d_tid + "/wchan");
    s.wchan = s.wchan.substr(0, s.wchan.find_first_of(" \n\t"));
    if (s.wchan == "0") s.wchan.clear();
  } else if (running)
    s.state = 'R';
  s.ok = true;
  return s;
}

const char* state_word(char c) {
  switch (c) {
    case 'T':
      return "stopped";
    case 't':
      return "traced";
    case 'D':
      return "uninterruptible";
    case 'R':
      return "running";
    case 'S':
    case 'I':
      return "sleeping";
    case 'Z':
    case 'X':
      return "exiting";
    default:
      return "unknown";
  }
}

// One line per traced process of this host, for the note the checker reads: "process PID FILE state
// WORD cpu F [wchan W]". Two samples `window` apart: the CPU share is over that window, and a process
// counts as held by the kernel (stopped, traced, uninterruptible) only when both samples say so.
struct Snapshot {
  std::vector<std::string> lines;
  std::vector<pid_t> pids, stopped;  // every process seen; those stopped by a signal in both samples
};
Snapshot snapshot_processes(const fs::path& dir, std::chrono::milliseconds window) {
  Snapshot out;
  std::vector<Writer> procs = trace_writer_files(dir);
  std::vector<ProcSample> first;
  for (const Writer& w : procs) first.push_back(sample_process(w.pid));
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(window).count();
  struct timespec ts = {time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
  const double ticks = double(sysconf(_SC_CLK_TCK)) * (double(ns) / 1e9);
  for (size_t i = 0; i < procs.size(); ++i) {
    const ProcSample& a = first[i];
    const ProcSample b = sample_process(procs[i].pid);
    if (!b.ok) continue;
    out.pids.push_back(procs[i].pid);
    if (!a.ok || procs[i].file.find_first_of(" \n") != std::string::npos) continue;
    char state = b.state;
    const bool held = [](char c) { return c == 'T' || c == 't' || c == 'D'; }(state);
    if (held && a.state != state) state = a.state == 'T' || a.state == 't' || a.state == 'D' ? 'R' : a.state;
    const double cpu =
        ticks > 0 && b.cpu_ticks >= a.cpu_ticks ? double(b.cpu_ticks - a.cpu_ticks) / ticks : 0;
    char share[32];
    std::snprintf(share, sizeof share, "%.2f", cpu);
    std::string line = "process " + std::to_string(procs[i].pid) + " " + procs[i].file + " state " +
                       state_word(state) + " cpu " + share;
    if (state == 'D' && !b.wchan.empty()) line += " wchan " + b.wchan;
    if (state == 'T') out.stopped.push_back(procs[i].pid);
    out.lines.push_back(std::move(line));
  }
  return out;
}

// Open MPI starts every rank in a process group of its own, so the launcher can end, or be stopped,
// while ranks are still running and writing their traces: a post-mortem read at once would race them
// (and see another hang than the one left behind). Waits up to `grace_s` for every traced process of
// this host to end; those of a job stopped at --timeout that are still running then are killed, the
// others are named.
void settle_writers(const fs::path& dir, double grace_s, bool stopped) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(grace_s);
  std::vector<pid_t> left = trace_writers(dir);
  while (!left.empty() && clock::now() < deadline) {
    struct timespec ts = {0, 50'000'000};
    nanosleep(&ts, nullptr);
    left = trace_writers(dir);
  }
  if (left.empty()) return;
  std::string pids;
  for (pid_t p : left) pids += (pids.empty() ? "" : " ") + std::to_string(p);
  if (!stopped) {
    std::fprintf(stderr,
                 "lockstep run: warning: %zu traced process(es) still running after the launcher ended "
                 "(pid %s): their traces may still change\n",
                 left.size(), pids.c_str());
    return;
  }
  std::fprintf(stderr,
               "lockstep run: %zu traced process(es) outlived the stopped launcher (pid %s): SIGKILL\n",
               left.size(), pids.c_str());
  for (pid_t p : left) kill(p, SIGKILL);
  const auto killed_by = clock::now() + std::chrono::seconds(2);
  while (!trace_writers(dir).empty() && clock::now() < killed_by) {
    struct timespec ts = {0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
}

volatile sig_atomic_t g_child_pgid = 0;

void forward_signal(int sig) {
  if (g_child_pgid > 0) kill(-g_child_pgid, sig);
}

// What changes whenever a process records something: the record count and the words (states) of the
// newest records, which a return or a completion updates in place.
struct Progress {
  uint64_t signature = 0;
  bool inside = false;  // a collective or wait still in state ENTERED
};

Progress probe(const std::string& path) {
  Progress p;
  try {
    format::TraceFile f = format::TraceFile::open(path);
    uint64_t end = f.end_id();
    uint64_t from = end > 256 && end - 256 > f.first_id() ? end - 256 : f.first_id();
    uint64_t h = format::kFnvOffset ^ end ^ (uint64_t(f.header().end_state) << 56);
    for (uint64_t id = from; id < end; ++id) {
      const lst_record* r = f.record(id);
      uint32_t w = r ? r->word : 0;
      h = format::fnv1a_word(w, h);
      uint8_t kind = LST_WORD_KIND(w);
      if ((kind == LST_KIND_COLLECTIVE || kind == LST_KIND_WAIT) && LST_WORD_STATE(w) == LST_STATE_ENTERED)
        p.inside = true;
    }
    p.signature = h;
  } catch (const std::exception&) {
    // A file still being created: counts as progress until it reads.
    p.signature = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return p;
}

class StallWatch {
 public:
  StallWatch(std::string dir, double stall_s) : dir_(std::move(dir)), stall_s_(stall_s) {}

  void poll(std::chrono::steady_clock::time_point now) {
    std::vector<std::string> files;
    try {
      files = format::find_traces(dir_);
    } catch (const std::exception&) {
      return;
    }
    bool changed = files.size() != last_.size();
    bool inside = false;
    std::map<std::string, uint64_t> sigs;
    for (const std::string& f : files) {
      Progress p = probe(f);
      sigs[f] = p.signature;
      inside = inside || p.inside;
      auto it = last_.find(f);
      if (it == last_.end() || it->second != p.signature) changed = true;
    }
    last_ = std::move(sigs);
    if (changed || !started_) {
      started_ = true;
      last_progress_ = now;
      reported_ = false;
      return;
    }
    double idle = std::chrono::duration<double>(now - last_progress_).count();
    if (!reported_ && inside && idle >= stall_s_) {
      reported_ = true;
      stall_reporter()(files, idle, stderr);
    }
  }

 private:
  std::string dir_;
  double stall_s_;
  bool started_ = false;
  bool reported_ = false;
  std::chrono::steady_clock::time_point last_progress_;
  std::map<std::string, uint64_t> last_;
};

// The tracer cannot say so without writing into the job's output: a misspelt setting or a value it will
// not use is reported here, once, before the job starts. The variables are forwarded as they are.
void warn_about_settings(std::FILE* out) {
  constexpr const char kPrefix[] = "LOCKSTEP_TRACE";
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, kPrefix, sizeof kPrefix - 1) != 0) continue;
    const size_t len = std::strcspn(*e, "=");
    const char* value = (*e)[len] == '=' ? *e + len + 1 : "";
    const env::Entry* entry = env::find(*e, len);
    if (!entry) {
      std::fprintf(
          out, "lockstep run: warning: %.*s is not a tracer setting (docs/tracer.md lists them); ignored\n",
          static_cast<int>(len), *e);
    } else if (*value && !env::valid(*entry, value)) {
      std::fprintf(out, "lockstep run: warning: %s=%s is not a valid %s; the tracer uses %s\n", entry->name,
                   value, entry->type, entry->fallback);
    }
  }
}

int run_job(const Options& o) {
  if (o.cmd.empty()) throw cli::BadInput("run: no command given (lockstep run -o DIR -- CMD...)");
  std::string tracer = find_tracer(o);
  std::string dir = prepare_dir(o);
  std::error_code stale;
  std::filesystem::remove(std::filesystem::path(dir) / "lockstep-run-timeout.txt",
                          stale);  // a previous run's
  std::string job = make_job_id();
  warn_about_settings(stderr);

  std::string preload = tracer;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += ":" + std::string(old);
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv(env::name(env::Var::kTraceDir), dir.c_str(), 1);
  setenv(env::name(env::Var::kJobId), job.c_str(), 1);

  std::vector<std::string> argv_s = o.cmd;
  const bool openmpi = is_openmpi_launcher(o.cmd[0]);
  if (!openmpi && is_launcher_name(o.cmd[0]))
    std::fprintf(
        stderr,
        "lockstep run: warning: %s is not Open MPI's launcher: LD_PRELOAD and LOCKSTEP_* are not passed with "
        "-x; ranks on other hosts are traced only if the launcher forwards the environment\n",
        o.cmd[0].c_str());
  if (openmpi) {
    // Every LOCKSTEP_* setting travels, not a list that falls behind the tracer's variables.
    std::vector<std::string> x = {"-x", "LD_PRELOAD"};
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "LOCKSTEP_", 9) == 0) {
        x.push_back("-x");
        x.push_back(std::string(*e, std::strcspn(*e, "=")));
      }
    argv_s.insert(argv_s.begin() + 1, x.begin(), x.end());
  }
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::fprintf(stderr, "lockstep run: tracing into %s (job %s)\n", dir.c_str(), job.c_str());
  std::fflush(stderr);
  std::fflush(stdout);

  bool tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  pid_t child = fork();
  if (child < 0) throw cli::BadInput(std::string("run: cannot fork: ") + std::strerror(errno));
  if (child == 0) {
    // Its own process group, so --timeout can stop the job and everything it started.
    setpgid(0, 0);
    if (tty) {
      signal(SIGTTOU, SIG_IGN);
      tcsetpgrp(STDIN_FILENO, getpid());
      signal(SIGTTOU, SIG_DFL);
    }
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "lockstep run: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child);
  g_child_pgid = child;
  struct sigaction fwd;
  std::memset(&fwd, 0, sizeof fwd);
  fwd.sa_handler = forward_signal;
  sigemptyset(&fwd.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &fwd, nullptr);

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  std::unique_ptr<StallWatch> watch;
  if (o.stall_s > 0) watch = std::make_unique<StallWatch>(dir, o.stall_s);
  auto next_poll = start;
  bool timed_out = false, killed = false;
  clock::time_point term_at;
  struct timespec term_mono{};       // CLOCK_MONOTONIC at the SIGTERM, for the checker (the traces' clock)
  std::vector<std::string> at_stop;  // snapshot_processes' lines
  int status = 0;
  for (;;) {
    pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) break;
    if (r < 0 && errno != EINTR) break;
    auto now = clock::now();
    double elapsed = std::chrono::duration<double>(now - start).count();
    if (o.timeout_s > 0 && !timed_out && elapsed >= o.timeout_s) {
      timed_out = true;
      // What each traced process here was doing as the job stood, before the stop changes it.
      const Snapshot snap = snapshot_processes(dir, std::chrono::milliseconds(200));
      at_stop = snap.lines;
      term_at = now = clock::now();
      clock_gettime(CLOCK_MONOTONIC, &term_mono);
      std::fprintf(stderr, "lockstep run: timeout after %.1f s: stopping the job (SIGTERM)\n", o.timeout_s);
      // The traced processes of this host first, each where it stands: Open MPI's launcher sends its
      // ranks SIGCONT before SIGTERM, and a job one stopped rank held would run on for a while, its
      // traces then showing a job that moves rather than the one that hung. A stopped process takes its
      // SIGTERM as it continues, before any more of its own code.
      for (pid_t p : snap.pids) kill(p, SIGTERM);
      for (pid_t p : snap.stopped) kill(p, SIGCONT);
      kill(-child, SIGTERM);
    }
    if (timed_out && !killed && std::chrono::duration<double>(now - term_at).count() >= o.grace_s) {
      killed = true;
      std::fprintf(stderr, "lockstep run: the job did not stop within %.1f s: SIGKILL\n", o.grace_s);
      kill(-child, SIGKILL);
    }
    if (watch && now >= next_poll) {
      watch->poll(now);
      next_poll = now + std::chrono::milliseconds(500);
    }
    struct timespec ts = {0, 50'000'000};
    nanosleep(&ts, nullptr);
  }
  g_child_pgid = 0;
  if (timed_out) kill(-child, SIGKILL);  // leftovers of a stopped job
  settle_writers(dir, o.grace_s, timed_out);
  if (tty) {
    signal(SIGTTOU, SIG_IGN);
    tcsetpgrp(STDIN_FILENO, getpgrp());
    signal(SIGTTOU, SIG_DFL);
  }

  try {
    std::fprintf(stderr, "lockstep run: %zu trace file(s) in %s\n", format::find_traces(dir).size(),
                 dir.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep run: cannot list the trace files: %s\n", e.what());
  }
  if (timed_out) {
    // The checker reads this note: a job stopped at --timeout hung, whatever its traces look like.
    if (std::FILE* f = std::fopen((std::filesystem::path(dir) / "lockstep-run-timeout.txt").c_str(), "w")) {
      std::fprintf(f, "lockstep run stopped the job at its --timeout (%.1f s)\n", o.timeout_s);
      // A rank on this host that exits after this moment was ended by the stop, not by its own doing.
      char host[256] = {};
      if (::gethostname(host, sizeof host - 1) != 0) host[0] = 0;
      std::fprintf(f, "SIGTERM at CLOCK_MONOTONIC %llu ns on %s\n",
                   static_cast<unsigned long long>(term_mono.tv_sec) * 1000000000ull +
                       static_cast<unsigned long long>(term_mono.tv_nsec),
                   host);
      for (const std::string& line : at_stop) std::fprintf(f, "%s\n", line.c_str());
      std::fclose(f);
    }
  }
  if (FinishHook hook = finish_hook()) hook(dir, stderr);
  if (FinishHook hook = report_hook(); hook && o.report) hook(dir, stderr);
  std::fflush(stderr);

  if (timed_out) return kTimeoutExit;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace
}  // namespace lockstep::run

LOCKSTEP_COMMAND(run, [](CLI::App& app) {
  auto opt = std::make_shared<lockstep::run::Options>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a job with every process traced: lockstep run -o DIR [--stall S] [--timeout S] -- CMD...");
  sub->add_option("-o,--output", opt->out,
                  "trace directory (created 0700; must not hold another job's traces)")
      ->required();
  sub->add_option("--stall", opt->stall_s, "report live when no rank has progressed for S seconds")
      ->check(CLI::PositiveNumber);
  sub->add_option("--timeout", opt->timeout_s, "stop the job after S seconds (exit 124)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--grace", opt->grace_s, "seconds between SIGTERM and SIGKILL at --timeout (default 5)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--tracer", opt->tracer,
                  "trace library (default: ../lib/liblockstep_trace.so next to lockstep, "
                  "or $LOCKSTEP_TRACER_LIB)");
  sub->add_flag("--report", opt->report,
                "after the job, write the HTML report to report.html in the trace directory");
  sub->add_flag("--clean", opt->clean, "remove *.lstrace files already in the trace directory");
  sub->add_option("command", opt->cmd, "the job, after --")->required();
  sub->callback([opt] { lockstep::cli::set_exit_code(lockstep::run::run_job(*opt)); });
});
