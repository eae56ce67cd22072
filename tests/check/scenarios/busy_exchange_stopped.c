/* A job that never hangs, stopped by `lockstep run --timeout` while it runs: each step every rank sends
 * to its right neighbour, waits for its left neighbour's message and joins an allreduce, as fast as it
 * can. One MPI_ANY_SOURCE receive at the start leaves the message counts undecided (the tracer cannot
 * tell whose message it took), so only the clock tells the stop's snapshot of calls under way (ranks
 * waiting in a ring of receives, ranks inside an allreduce others have left) from a hang: the one finding
 * is the hang that the stop itself is. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  const int right = (scenario_rank + 1) % scenario_size,
            left = (scenario_rank + scenario_size - 1) % scenario_size;
  double out[64] = {0}, in[64];
  MPI_Sendrecv(out, 1, MPI_DOUBLE, right, 1, in, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  for (;;) {
    MPI_Request req;
    MPI_Irecv(in, 64, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req);
    MPI_Send(out, 64, MPI_DOUBLE, right, 0, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    double x = in[0], y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
}
