// Collectives on MPI_COMM_WORLD until killed; logs its progress to PROGRESS_DIR/progress-<rank>:
// "pid P" once, then "B i" before and "A i" after collective i returned (or completed, for the
// nonblocking ones). write() on an O_APPEND file is in the kernel when it returns, so the log
// survives SIGKILL exactly like the trace's MAP_SHARED pages do.
// It is bounded on its own: it dies with its launcher (PR_SET_PDEATHSIG, so a harness or mpirun that
// is itself killed leaves no orphan) and exits after kMaxSeconds even if nobody kills it.
//   mpi_killed PROGRESS_DIR
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace {
int g_fd = -1;
// kill_test kills every job within a few seconds of its start; anything alive this long was forgotten.
constexpr long kMaxSeconds = 30;

long now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long>(ts.tv_sec);
}
void log_line(char tag, long i) {
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%c %ld\n", tag, i);
  if (write(g_fd, buf, static_cast<size_t>(n)) != n) _exit(3);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  // Under mpirun the parent is the launcher's daemon, not kill_test: die with whichever it is.
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 4;  // the parent died before the prctl took effect
  const long deadline = now_s() + kMaxSeconds;
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char path[4096];
  std::snprintf(path, sizeof path, "%s/progress-%d", argv[1], rank);
  g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (g_fd < 0) return 3;
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "pid %d\n", static_cast<int>(getpid()));
  if (write(g_fd, buf, static_cast<size_t>(n)) != n) return 3;
  int in[64] = {1}, out[64];
  for (long i = 0;; ++i) {
    // No MPI_Finalize: the peer rank of a 2-rank job may be gone, and finalizing would wait on it.
    if (i % 256 == 0 && now_s() > deadline) _exit(4);
    log_line('B', i);
    switch (i % 4) {  // kill_test knows this order: allreduce, bcast, iallreduce + wait, barrier
      case 0:
        MPI_Allreduce(in, out, 1 + static_cast<int>(i % 64), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case 1:
        MPI_Bcast(in, 8, MPI_INT, 0, MPI_COMM_WORLD);
        break;
      case 2: {
        MPI_Request req;
        MPI_Iallreduce(in, out, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
      }
      default:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
    log_line('A', i);
  }
}
