/* Shared by the 4-rank check scenarios: every scenario is a small MPI program with one deliberate
 * collective-order bug; scenarios that hang are stopped by `lockstep run --timeout`. */
#ifndef LOCKSTEP_CHECK_SCENARIO_COMMON_H
#define LOCKSTEP_CHECK_SCENARIO_COMMON_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int scenario_rank, scenario_size;

/* MPI_Init, for a scenario of `ranks` ranks (it stops a job of any other size). */
static void scenario_init_ranks(int* argc, char*** argv, int ranks) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &scenario_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &scenario_size);
  /* Report errors instead of aborting, so a mismatch that MPI notices still leaves a clean trace. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (scenario_size != ranks) {
    if (scenario_rank == 0) fprintf(stderr, "this scenario needs %d ranks\n", ranks);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

static void scenario_init(int* argc, char*** argv) { scenario_init_ranks(argc, argv, 4); }

/* A few well-formed collectives, so the bug is not at position 0. */
static void warm_up(int n) {
  double x = scenario_rank, y = 0;
  for (int i = 0; i < n; ++i) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
#endif
