// LINT-ARGS: --assume-local argv,env
// Under a launcher that passes each rank its own arguments (--assume-local argv,env), a branch on argv
// decides per rank.
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc > 2) MPI_Barrier(MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: collective 'MPI_Barrier' runs only on ranks where a rank-local condition holds [conditional-collective]
  // CHECK-NOTES: :[[@LINE-4]]:14: note: command-line argument 'argc' declared here
  return MPI_Finalize();
}
