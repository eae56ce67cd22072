// Fields of a struct are told apart, and the field that holds rank-local data is still rank-local:
// read in place, through a pointer or reference parameter, as a copy of an array element, or written
// on some ranks only.
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
  for (int i = 0; i < cfg.rank; ++i)
    MPI_Allreduce(MPI_IN_PLACE, x, cfg.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Allreduce' runs once per loop iteration, but the trip count depends on a rank-local value [conditional-collective]
    // CHECK-NOTES: :[[@LINE-3]]:19: note: loop condition evaluated here
    // CHECK-NOTES: :[[@LINE-7]]:3: note: rank obtained from 'MPI_Comm_rank' here
}

void run(const Config* cfg, float* x) {
  for (int i = 0; i < cfg->steps; ++i)
    MPI_Allreduce(MPI_IN_PLACE, x, cfg->rank, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

void through_pointer(float* x) {
  Config cfg = {0, 10, 4};
  MPI_Comm_rank(MPI_COMM_WORLD, &cfg.rank);
  run(&cfg, x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: call to 'run' passes a rank-local value as the count of collective 'MPI_Allreduce' [rank-dependent-argument]
  // CHECK-NOTES: :[[@LINE-3]]:3: note: rank obtained from 'MPI_Comm_rank' here
  // CHECK-NOTES: :[[@LINE-9]]:5: note: collective 'MPI_Allreduce' called here
}

void broadcast(const Config& cfg, float* x) { MPI_Bcast(x, cfg.count, MPI_FLOAT, 0, MPI_COMM_WORLD); }

void through_reference(float* x) {
  Config cfg{0, 1, 4};
  MPI_Comm_rank(MPI_COMM_WORLD, &cfg.rank);
  if (cfg.rank == 0) cfg.count = 8;
  broadcast(cfg, x);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: call to 'broadcast' passes a rank-local value as the count of collective 'MPI_Bcast' [rank-dependent-argument]
  // CHECK-NOTES: :[[@LINE-4]]:3: note: rank obtained from 'MPI_Comm_rank' here
  // CHECK-NOTES: :[[@LINE-9]]:47: note: collective 'MPI_Bcast' called here
}

void array_of_structs(float* x) {
  Config phases[2] = {{0, 3, 4}, {0, 5, 8}};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int p = 0; p < 2; ++p) phases[p].steps += rank;
  for (int p = 0; p < 2; ++p) {
    Config c = phases[p];
    for (int i = 0; i < c.steps; ++i)
      MPI_Allreduce(MPI_IN_PLACE, x, c.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: collective 'MPI_Allreduce' runs once per loop iteration, but the trip count depends on a rank-local value [conditional-collective]
      // CHECK-NOTES: :[[@LINE-3]]:21: note: loop condition evaluated here
      // CHECK-NOTES: :[[@LINE-8]]:3: note: rank obtained from 'MPI_Comm_rank' here
  }
}

// The whole struct is overwritten by a function that is given the rank: every field may now hold it.
void fill(Config* cfg, int rank);
void whole_object(float* x) {
  Config cfg = {0, 1, 4};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fill(&cfg, rank);
  MPI_Bcast(x, cfg.count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: the count of 'MPI_Bcast' is computed from a rank-local value [rank-dependent-argument]
  // CHECK-NOTES: :[[@LINE-4]]:3: note: rank obtained from 'MPI_Comm_rank' here
}
