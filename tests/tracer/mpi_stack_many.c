/* More distinct call stacks than the tracer's frame lists can hold, so that LOCKSTEP_TRACE_STACK's
 * frames go both ways of format 2.2: in one STACK record with a frame list (written once per distinct
 * stack), and, once no list can be had, two frames per STACK record. Call i goes main -> step[d0] ->
 * step[d1] -> ... -> step[d6] -> leaf -> MPI_Allreduce, where dj is the j-th octal digit of i: eight
 * step functions, each a frame of its own, so every call's chain is distinct and known from i alone
 * (tests/tracer/stack_many.py checks each one).
 *   mpi_stack_many CALLS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define DEPTH 7 /* step frames per call */

/* noinline and noclone keep each level's frame; the asm after each call keeps the call from being a
 * tail call; the step functions differ in a constant, so that identical-code folding leaves each its
 * own address. */
#define LEVEL __attribute__((noinline, noclone))

typedef int (*step_fn)(int left, unsigned code);
static step_fn steps[8];

LEVEL static int leaf(int x) {
  int y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  __asm__ volatile("" : "+r"(y));
  return y;
}

#define STEP(k)                                                               \
  LEVEL static int step##k(int left, unsigned code) {                         \
    int y = left == 0 ? leaf(k) : steps[code & 7](left - 1, code >> 3) + (k); \
    __asm__ volatile("" : "+r"(y));                                           \
    return y;                                                                 \
  }
STEP(0)
STEP(1)
STEP(2)
STEP(3)
STEP(4)
STEP(5)
STEP(6)
STEP(7)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int calls = argc > 1 ? atoi(argv[1]) : 100;
  step_fn all[8] = {step0, step1, step2, step3, step4, step5, step6, step7};
  for (int k = 0; k < 8; ++k) steps[k] = all[k];
  long sum = 0;
  for (int i = 0; i < calls; ++i) sum += steps[i & 7](DEPTH - 1, (unsigned)i >> 3);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("sum %ld\n", sum);
  MPI_Finalize();
  return 0;
}
