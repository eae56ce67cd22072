// Telling a dead rank from a slow one: every rank's pid and host, exchanged at init, and a SIGTERM
// handler that names the rank that died when the launcher (mpirun) tears the job down after a death.
#pragma once

#include <mpi.h>

#include <string>

namespace lockstep::rt::internal {

void liveness_init(MPI_Comm comm, int rank, int size);
// "rank 2 (pid 4242 on node1) has exited" when it is gone, else "rank 2 (pid ...) has not answered for N s".
std::string describe_silent_rank(int rank, double seconds);
// The runtime is exiting on purpose (abort or finalize): the SIGTERM handler then stays silent.
void liveness_quiet();

}  // namespace lockstep::rt::internal
