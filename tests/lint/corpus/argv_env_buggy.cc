// Launcher variables that carry the rank differ by rank even though the environment is uniform.
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int local = atoi(getenv("OMPI_COMM_WORLD_LOCAL_RANK"));
  if (local == 0) MPI_Barrier(MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: collective 'MPI_Barrier' runs only on ranks where a rank-local condition holds [conditional-collective]
  // CHECK-NOTES: :[[@LINE-3]]:20: note: rank-dependent environment variable 'OMPI_COMM_WORLD_LOCAL_RANK' read here
  int proc = atoi(getenv("SLURM_PROCID"));
  float v = 0;
  MPI_Bcast(&v, 1, MPI_FLOAT, proc, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:31: warning: the root of 'MPI_Bcast' is computed from a rank-local value [rank-dependent-argument]
  return MPI_Finalize();
}
