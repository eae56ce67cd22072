/* A known call chain for the stack tests: main -> outer_level -> middle_level -> inner_level ->
 * MPI_Allreduce; a second one through other_path -> inner_level; and a twin of the first,
 * main -> outer_twin -> middle_twin -> inner_level, whose frames have the same sizes, so that every
 * return address sits in the same stack slot as in the first chain: the walk must follow each call's
 * own chain, never one remembered from another call (built once with frame pointers and once without,
 * tests/tracer/CMakeLists.txt).
 *   mpi_stack CALLS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* noinline + a use of the result after each call: every level keeps its own frame (no inlining, no
 * tail call), so the expected chain is exactly the source's. */
#define LEVEL __attribute__((noinline, noclone))

LEVEL int inner_level(int x) {
  int y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  __asm__ volatile("" : "+r"(y));
  return y;
}

/* The first chain and its twin, from one definition: the twin's frames are the same sizes by
 * construction. */
#define CHAIN(OUTER, MIDDLE)        \
  LEVEL int MIDDLE(int x) {         \
    int y = inner_level(x + 1);     \
    __asm__ volatile("" : "+r"(y)); \
    return y - 1;                   \
  }                                 \
  LEVEL int OUTER(int x) {          \
    int y = MIDDLE(x * 2);          \
    __asm__ volatile("" : "+r"(y)); \
    return y + 3;                   \
  }
CHAIN(outer_level, middle_level)
CHAIN(outer_twin, middle_twin)

LEVEL int other_path(int x) {
  int y = inner_level(x - 1);
  __asm__ volatile("" : "+r"(y));
  return y ^ 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int calls = argc > 1 ? atoi(argv[1]) : 50;
  long sum = 0;
  for (int i = 0; i < calls; ++i)
    sum += i % 5 == 4 ? other_path(i) : i % 5 == 2 ? outer_twin(i) : outer_level(i);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("sum %ld\n", sum);
  MPI_Finalize();
  return 0;
}
