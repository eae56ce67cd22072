/* Runtime-level named collectives (annotate.h): at #1 on the process set rank 1 reduces tensor
 * "grad/w3" where the others reduce "grad/w2" (same size: MPI itself sees nothing wrong). */
#include "common.h"
#include "lockstep/annotate.h"
static void named_allreduce(uint64_t set, const char* name, float* buf, int n) {
  uint64_t t = lockstep_rt_collective_begin
                   ? lockstep_rt_collective_begin(set, 4 /* LST_OP_ALLREDUCE */, name, (uint64_t)n,
                                                  11 /* LST_DT_FLOAT32 */, 4, 1 /* LST_RED_SUM */, -1)
                   : 0;
  float out[64];
  int rc = MPI_Allreduce(buf, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (lockstep_rt_collective_end) lockstep_rt_collective_end(t, rc == MPI_SUCCESS);
}
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  const uint64_t set = 0x5e70001;
  int32_t members[4] = {0, 1, 2, 3};
  if (lockstep_rt_process_set) lockstep_rt_process_set(set, "rt.process_set.0", members, 4, scenario_rank);
  float g[64] = {0};
  named_allreduce(set, "grad/w1", g, 64);
  named_allreduce(set, scenario_rank == 1 ? "grad/w3" : "grad/w2", g, 64);
  named_allreduce(set, "grad/w4", g, 64);
  MPI_Finalize();
  return 0;
}
