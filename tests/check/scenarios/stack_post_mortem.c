/* The TF 2.4 case, traced with LOCKSTEP_TRACE_STACK=8: each step, train_step -> apply_gradients ->
 * allreduce_gradients -> MPI_Allreduce, but only where the local gradients are finite; at step 3 rank 2's
 * overflowed, so it skips the allreduce and blocks in the next step's loss-scale broadcast
 * (train_step -> update_loss_scale -> MPI_Bcast) while the others wait in the allreduce. The
 * post-mortem must say, for every rank, the chain of calls it is blocked in. */
#include "common.h"

#define LEVEL __attribute__((noinline))

LEVEL static void allreduce_gradients(double* g) {
  double sum = 0;
  MPI_Allreduce(g, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  *g = sum;
}

LEVEL static void apply_gradients(double* g) {
  allreduce_gradients(g);
  *g *= 0.5;
}

LEVEL static void update_loss_scale(double* scale) { MPI_Bcast(scale, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); }

LEVEL static void train_step(int step, double* g, double* scale) {
  const int finite = !(scenario_rank == 2 && step == 3);
  if (finite) apply_gradients(g);
  update_loss_scale(scale);
}

int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  double g = scenario_rank, scale = 1;
  for (int step = 0; step < 6; ++step) train_step(step, &g, &scale);
  MPI_Finalize();
  return 0;
}
