/* A correct job that starts helpers with MPI_Comm_spawn: the 4 ranks reduce, rank 0 spawns 2 workers of
 * this same program for the whole world, each side synchronizes on the intercommunicator, and the
 * workers reduce among themselves in their own MPI_COMM_WORLD. The workers' traces land in the job's
 * directory with ranks 0 and 1 of a world of 2: the check checks the job's 4 ranks and says that it set
 * the 2 spawned processes aside, instead of refusing the directory. */
#include <mpi.h>
#include <string.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  double x = 1, y = 0;
  if (parent == MPI_COMM_NULL) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm workers;
    MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &workers,
                   MPI_ERRCODES_IGNORE);
    MPI_Barrier(workers);
    MPI_Comm_disconnect(&workers);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  } else {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(parent);
    MPI_Comm_disconnect(&parent);
  }
  MPI_Finalize();
  return 0;
}
