// Programs whose output must be the same with and without the tracer:
//   mpi_safety errors   MPI_ERRORS_RETURN; failing collectives and point-to-point calls print their error
//                       codes; exit code 3
//   mpi_safety fork     forks a child that does not use MPI (it exits through exit()), then goes on
#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = argc > 1 ? argv[1] : "";
  int exit_code = 0;
  if (std::strcmp(mode, "errors") == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = rank + 1, y = 0;
    int rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    std::printf("rank %d: allreduce rc %d sum %d\n", rank, rc, y);
    rc = MPI_Bcast(&x, 1, MPI_INT, size + 5, MPI_COMM_WORLD);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    std::printf("rank %d: bcast with a bad root rc %d class %d\n", rank, rc, cls);
    rc = MPI_Allreduce(&x, &y, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    std::printf("rank %d: allreduce with a negative count rc %d class %d\n", rank, rc, cls);
    rc = MPI_Barrier(MPI_COMM_WORLD);
    std::printf("rank %d: barrier rc %d\n", rank, rc);
    // Point-to-point calls that name no rank of the communicator: MPI_ERR_RANK before anything moves.
    const int nobody = size + 2;
    rc = MPI_Sendrecv(&x, 1, MPI_INT, nobody, 0, &y, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    std::printf("rank %d: sendrecv to no rank rc %d class %d\n", rank, rc, cls);
    rc = MPI_Sendrecv_replace(&x, 1, MPI_INT, rank, 1, nobody, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    std::printf("rank %d: sendrecv_replace from no rank rc %d class %d\n", rank, rc, cls);
    int flag = 0;
    rc = MPI_Iprobe(nobody, 0, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    std::printf("rank %d: iprobe of no rank rc %d class %d\n", rank, rc, cls);
    rc = MPI_Send(&x, 1, MPI_INT, nobody, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    std::printf("rank %d: send to no rank rc %d class %d\n", rank, rc, cls);
    exit_code = 3;
  } else if (std::strcmp(mode, "fork") == 0) {
    int x = rank + 1, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    std::fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      std::printf("rank %d: child computed %d\n", rank, y * 2);
      std::fflush(stdout);
      std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    std::printf("rank %d: parent sum %d, child exit %d\n", rank, y,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else {
    std::fprintf(stderr, "usage: mpi_safety errors|fork\n");
    exit_code = 2;
  }
  std::fflush(stdout);
  MPI_Finalize();
  return exit_code;
}
