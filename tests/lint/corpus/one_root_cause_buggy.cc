// One rank-local condition guards three collectives: one finding, at the first, the others as notes.
#include <mpi.h>

void save(float* w, int n) { MPI_Bcast(w, n, MPI_FLOAT, 0, MPI_COMM_WORLD); }

void checkpoint(float* w, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Barrier' runs only on ranks where a rank-local condition holds [conditional-collective]
    // CHECK-NOTES: :[[@LINE-3]]:7: note: condition evaluated here
    MPI_Allreduce(MPI_IN_PLACE, w, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    // CHECK-NOTES: :[[@LINE-1]]:5: note: collective 'MPI_Allreduce' under the same condition here
    save(w, n);
    // CHECK-NOTES: :[[@LINE-1]]:5: note: call to 'save' under the same condition here
  }
}
