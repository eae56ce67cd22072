// Ending the job is not a way out of every finding: a rank that returns (rather than ends the job) on
// local data still skips the collective, a collective made only on the way to the abort is still
// one-sided, and a noreturn helper that throws lets a caller catch and go on.
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

[[noreturn]] void raise_error(const char* why) { throw why; }

int step(float* grads, int n, int rank) {
  if (!isfinite(grads[0] * rank)) return 1;
  MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  return 0;
}

void report_then_abort(float* grads, int n, int rank) {
  if (grads[0] * rank > 1e30f) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

void caught(float* grads, int n, int rank) {
  try {
    if (grads[0] < rank) raise_error("negative");
    MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } catch (const char*) {
  }
}

void run(float* grads, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  step(grads, n, rank);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: call to 'step' performs collective 'MPI_Allreduce' under a condition computed from a rank-local argument [conditional-collective]
  // CHECK-NOTES: :[[@LINE-26]]:7: note: condition evaluated here
  report_then_abort(grads, n, rank);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: call to 'report_then_abort' performs collective 'MPI_Barrier' under a condition computed from a rank-local argument [conditional-collective]
  // CHECK-NOTES: :[[@LINE-23]]:7: note: condition evaluated here
  caught(grads, n, rank);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: call to 'caught' performs collective 'MPI_Allreduce' under a condition computed from a rank-local argument [conditional-collective]
  // CHECK-NOTES: :[[@LINE-17]]:9: note: condition evaluated here
}

