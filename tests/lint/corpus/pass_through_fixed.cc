// A buffer passed by reference to a function that leaves it as it was (under a rank-local condition)
// keeps its size; a vector filled with a constant holds a uniform value; a stopping test reported
// inside a helper is not reported again at the helper's call.
#include <mpi.h>
#include <stdio.h>

#include <vector>

void log_size(std::vector<float>& v) { printf("%zu values\n", v.size()); }

void reduce(std::vector<float>& v) {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

void train(int steps) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<float> grad(256), scale(4, 1.0f);
  for (int s = 0; s < steps; ++s) {
    if (rank == 0) log_size(grad);
    reduce(grad);
  }
  if (scale[0] > 0.5f) MPI_Barrier(MPI_COMM_WORLD);
}
