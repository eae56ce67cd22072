// Two ranks; rank 1 makes rank 0 wait about DELAY_MS before each of four calls can finish: an MPI_Wait,
// an MPI_Waitall and a polling MPI_Test loop on a receive, then an MPI_Allreduce. The recorded durations
// must cover those waits (the Wait calls read their return clock before settling their requests,
// docs/tracer.md), and the one MPI_Test that completed its receive is recorded as short as it was.
//   mpi_durations DELAY_MS
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {
void pause_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}
}  // namespace

int main(int argc, char** argv) {
  const long delay = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 300;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "mpi_durations: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int x = 1, y = 0;
  if (rank == 1) {
    for (int tag = 1; tag <= 3; ++tag) {
      pause_ms(delay);
      MPI_Send(&x, 1, MPI_INT, 0, tag, MPI_COMM_WORLD);
    }
    pause_ms(delay);
  } else {
    MPI_Request r;
    MPI_Irecv(&y, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Irecv(&y, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, &r);
    MPI_Waitall(1, &r, MPI_STATUSES_IGNORE);
    MPI_Irecv(&y, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &r);
    for (int flag = 0; !flag;) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  }
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
