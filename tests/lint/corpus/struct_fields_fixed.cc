// Fields of a struct are told apart: a struct that holds the rank next to values every rank agrees on
// does not make those values rank-local, whether it is read in place, through a pointer or reference
// parameter, or as a copy of an array element.
#include <mpi.h>

struct Config {
  int rank;
  int steps;
  int count;
};

void local_struct(float* x) {
  Config cfg;
  MPI_Comm_rank(MPI_COMM_WORLD, &cfg.rank);
  cfg.steps = 10;
  cfg.count = 4;
  for (int i = 0; i < cfg.steps; ++i)
    MPI_Allreduce(MPI_IN_PLACE, x, cfg.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

void run(const Config* cfg, float* x) {
  for (int i = 0; i < cfg->steps; ++i)
    MPI_Allreduce(MPI_IN_PLACE, x, cfg->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

void through_pointer(float* x) {
  Config cfg = {0, 10, 4};
  MPI_Comm_rank(MPI_COMM_WORLD, &cfg.rank);
  run(&cfg, x);
}

void broadcast(const Config& cfg, float* x) { MPI_Bcast(x, cfg.count, MPI_FLOAT, 0, MPI_COMM_WORLD); }

void through_reference(float* x) {
  Config cfg{0, 1, 4};
  MPI_Comm_rank(MPI_COMM_WORLD, &cfg.rank);
  broadcast(cfg, x);
}

void array_of_structs(float* x) {
  Config phases[2] = {{0, 3, 4}, {0, 5, 8}};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int p = 0; p < 2; ++p) phases[p].rank = rank;
  for (int p = 0; p < 2; ++p) {
    Config c = phases[p];
    for (int i = 0; i < c.steps; ++i)
      MPI_Allreduce(MPI_IN_PLACE, x, c.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
}

// The rank-local field is overwritten with an agreed value before it decides anything.
void overwritten(float* x) {
  Config cfg = {0, 1, 4};
  MPI_Comm_rank(MPI_COMM_WORLD, &cfg.count);
  MPI_Allreduce(MPI_IN_PLACE, &cfg.count, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Bcast(x, cfg.count, MPI_FLOAT, 0, MPI_COMM_WORLD);
}
