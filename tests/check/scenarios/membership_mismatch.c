/* The ranks announce one runtime process set (annotate.h) with the same id but rank 3 lists different
 * members: ranks 0-2 say {0,1,2,3}, rank 3 says {0,1,3}. */
#include "common.h"
#include "lockstep/annotate.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  const uint64_t set = 0x5e70002;
  int32_t all[4] = {0, 1, 2, 3}, three[3] = {0, 1, 3};
  if (lockstep_rt_process_set) {
    if (scenario_rank == 3)
      lockstep_rt_process_set(set, "rt.process_set.1", three, 3, 2);
    else
      lockstep_rt_process_set(set, "rt.process_set.1", all, 4, scenario_rank);
  }
  warm_up(2);
  MPI_Finalize();
  return 0;
}
