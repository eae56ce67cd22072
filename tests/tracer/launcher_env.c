/* A rank of a job without MPI, as torchrun starts its workers: its rank comes from RANK (WORLD_SIZE
 * workers; without them, a lone process), and its collectives are the runtime's (annotate.h), on one
 * process set of every rank.
 *   launcher_env CALLS [ODD_AT]: CALLS allreduces of "grad"; at position ODD_AT (if given) rank 1
 *   broadcasts instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lockstep/annotate.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: launcher_env CALLS [ODD_AT]\n");
    return 2;
  }
  const long calls = strtol(argv[1], NULL, 10);
  const long odd_at = argc > 2 ? strtol(argv[2], NULL, 10) : -1;
  const char* r = getenv("RANK");
  const char* s = getenv("WORLD_SIZE");
  if (!lockstep_rt_process_set || !lockstep_rt_collective_begin) {
    fprintf(stderr, "launcher_env: needs the tracer preloaded\n");
    return 2;
  }
  /* Without RANK and WORLD_SIZE: a lone process. */
  const int32_t rank = r ? (int32_t)atoi(r) : 0, size = s ? (int32_t)atoi(s) : 1;
  int32_t members[64];
  for (int32_t i = 0; i < size && i < 64; ++i) members[i] = i;
  const uint64_t set = 0x7e57;
  lockstep_rt_process_set(set, "workers", members, size, rank);
  for (long i = 0; i < calls; ++i) {
    const int bcast = rank == 1 && i == odd_at;
    const uint64_t t = lockstep_rt_collective_begin(
        set, bcast ? 2 /* LST_OP_BCAST */ : 4 /* LST_OP_ALLREDUCE */, "grad", 1024, 11 /* LST_DT_FLOAT32 */,
        4, bcast ? 0 : 1 /* LST_RED_SUM */, bcast ? 0 : -1);
    lockstep_rt_collective_end(t, 1);
  }
  return 0;
}
