// When a rank dies, OpenMPI's mpirun sends SIGTERM to the others within about a second, usually before
// any heartbeat can time out. The handler below prints which peer is gone first, using only
// async-signal-safe calls, and then lets the previous handler (the tracer's, or the default) run.
#include "liveness.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

namespace lockstep::rt::internal {

namespace {

struct Peer {
  int32_t pid;
  char host[64];
};

std::vector<Peer> g_peers;
int g_rank = -1;
std::atomic<bool> g_quiet{false};
struct sigaction g_previous;

bool same_host(const Peer& p) {
  return std::strncmp(p.host, g_peers[static_cast<size_t>(g_rank)].host, 64) == 0;
}

bool gone(const Peer& p) { return same_host(p) && kill(p.pid, 0) == -1 && errno == ESRCH; }

// Signal-safe formatting into a fixed buffer.
struct Out {
  char buf[1024];
  size_t n = 0;
  void s(const char* t) {
    while (*t && n < sizeof buf - 1) buf[n++] = *t++;
  }
  void i(long v) {
    char d[24];
    int k = 0;
    bool neg = v < 0;
    unsigned long u = neg ? static_cast<unsigned long>(-v) : static_cast<unsigned long>(v);
    do {
      d[k++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u && k < 23);
    if (neg) s("-");
    while (k) {
      char c[2] = {d[--k], 0};
      s(c);
    }
  }
};

void on_sigterm(int sig, siginfo_t* info, void* ctx) {
  const int saved = errno;
  if (!g_quiet.load()) {
    Out o;
    o.s("lockstep-rt: rank ");
    o.i(g_rank);
    o.s(": terminated by SIGTERM (the launcher is stopping the job)");
    int dead = 0;
    for (size_t r = 0; r < g_peers.size(); ++r) {
      if (static_cast<int>(r) == g_rank || !gone(g_peers[r])) continue;
      o.s(dead++ ? ", " : "; gone before it: rank ");
      o.i(static_cast<long>(r));
      o.s(" (pid ");
      o.i(g_peers[r].pid);
      o.s(")");
    }
    o.s("\n");
    ssize_t ignored = write(2, o.buf, o.n);
    (void)ignored;
  }
  errno = saved;
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) {
      g_previous.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  } else if (g_previous.sa_handler == SIG_IGN) {
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void liveness_init(MPI_Comm comm, int rank, int size) {
  Peer me{};
  me.pid = static_cast<int32_t>(getpid());
  gethostname(me.host, sizeof me.host - 1);
  g_peers.assign(static_cast<size_t>(size), Peer{});
  MPI_Allgather(&me, sizeof me, MPI_BYTE, g_peers.data(), sizeof me, MPI_BYTE, comm);
  g_rank = rank;
  struct sigaction sa{};
  sa.sa_sigaction = on_sigterm;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &g_previous);
}

std::string describe_silent_rank(int rank, double seconds) {
  if (rank < 0 || static_cast<size_t>(rank) >= g_peers.size()) return "rank " + std::to_string(rank);
  const Peer& p = g_peers[static_cast<size_t>(rank)];
  std::string who = "rank " + std::to_string(rank) + " (pid " + std::to_string(p.pid) + " on " + p.host + ")";
  if (gone(p)) return who + " has died";
  char secs[32];
  snprintf(secs, sizeof secs, "%.1f", seconds);
  return who + " has not answered the control plane for " + secs + " s (dead, or stuck outside the runtime)";
}

void liveness_quiet() { g_quiet = true; }

}  // namespace lockstep::rt::internal
