/* MPI_Allreduce (or its PMPI_ twin) called 8 frames deep, for the stack-capture benchmark: built
 * twice, with and without frame pointers (CHAIN_PREFIX names each copy; bench/tracer/CMakeLists.txt). */
#include <mpi.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(n) CAT(CHAIN_PREFIX, n)

typedef int (*leaf_fn)(int);

/* noinline and a use of the result after every call: each level keeps its own frame. */
#define LEVEL(n, next)                                                         \
  __attribute__((noinline, noclone)) static int NAME(n)(leaf_fn leaf, int x) { \
    int y = next(leaf, x + 1);                                                 \
    __asm__ volatile("" : "+r"(y));                                            \
    return y;                                                                  \
  }

__attribute__((noinline, noclone)) static int NAME(level0)(leaf_fn leaf, int x) {
  int y = leaf(x);
  __asm__ volatile("" : "+r"(y));
  return y;
}
LEVEL(level1, NAME(level0))
LEVEL(level2, NAME(level1))
LEVEL(level3, NAME(level2))
LEVEL(level4, NAME(level3))
LEVEL(level5, NAME(level4))
LEVEL(level6, NAME(level5))
LEVEL(level7, NAME(level6))

__attribute__((noinline, noclone)) static int NAME(traced)(int x) {
  int y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  return y;
}

__attribute__((noinline, noclone)) static int NAME(untraced)(int x) {
  int y = 0;
  PMPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  return y;
}

int NAME(allreduce)(int traced) { return NAME(level7)(traced ? NAME(traced) : NAME(untraced), 1); }
