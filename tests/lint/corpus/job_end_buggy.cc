// Ending the job is not a way out of every finding: a rank that returns (rather than ends the job) on
// local data still skips the collective, a collective made only on the way to the abort is still
// one-sided, and a noreturn helper that throws lets a caller catch and go on.
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

[[noreturn]] void raise_error(const char* why) { throw why; }

int step(float* grads, int n) {
  if (!isfinite(grads[0])) return 1;
  MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: collective 'MPI_Allreduce' is skipped by ranks that leave early [conditional-collective]
  // CHECK-NOTES: :[[@LINE-3]]:7: note: early exit decided here
  return 0;
}

void report_then_abort(float* grads, int n) {
  if (grads[0] > 1e30f) {
    MPI_Barrier(MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Barrier' runs only on ranks where a rank-local condition holds [conditional-collective]
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

void caught(float* grads, int n) {
  try {
    if (grads[0] < 0) raise_error("negative");
    MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Allreduce' is skipped by ranks that leave early [conditional-collective]
    // CHECK-NOTES: :[[@LINE-3]]:9: note: early exit decided here
  } catch (const char*) {
  }
}
