/* MPI's own error: every rank reduces with MPI_DATATYPE_NULL (returned; Open MPI says MPI_ERR_OP, the
 * reduction being undefined on it). The datatype is the same everywhere, so only the invalid_argument
 * check sees it. */
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&x, &y, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
