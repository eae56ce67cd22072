/* Calls through a declaration without a prototype (`int f1();`): the definition's parameters are the
   ones the summary speaks of. A rank passed through such calls still decides the broadcast. */
#include <mpi.h>

int f1();
int f0(int r) { return f1(r); }
int f1(int r) { return r; }

void step(float* buf, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (f0(rank) == 0) MPI_Bcast(buf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  /* CHECK-MESSAGES: :[[@LINE-1]]:22: warning: collective 'MPI_Bcast' runs only on ranks where a rank-local condition holds [conditional-collective] */
  /* CHECK-NOTES: :[[@LINE-3]]:3: note: rank obtained from 'MPI_Comm_rank' here */
}
