/* Error paths that return before a collective (C). */
#include <mpi.h>
#include <stdio.h>

int load_shard(const char* path, float* out, int n) {
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  size_t got = fread(out, sizeof(float), (size_t)n, f);
  fclose(f);
  return got == (size_t)n ? 0 : -1;
}

int step_buggy(const char* path, float* shard, int n) {
  if (load_shard(path, shard, n) != 0) return -1;
  MPI_Allreduce(MPI_IN_PLACE, shard, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  /* CHECK-MESSAGES: :[[@LINE-1]]:3: warning: collective 'MPI_Allreduce' is skipped by ranks that leave early [conditional-collective] */
  /* CHECK-NOTES: :[[@LINE-3]]:7: note: early exit decided here */
  return 0;
}

/* Correct: agree on the failure first, then every rank leaves or every rank reduces. */
int step_fixed(const char* path, float* shard, int n) {
  int ok = load_shard(path, shard, n) == 0;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!all_ok) return -1;
  MPI_Allreduce(MPI_IN_PLACE, shard, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  return 0;
}

/* Correct: both sides of a rank-dependent branch run the same collectives. */
void both_sides(float* buf, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    printf("root\n");
    MPI_Bcast(buf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  } else {
    MPI_Bcast(buf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  }
}

/* Correct: a collective's error status is the same on every rank that took part; leaving on it,
   inside a loop with a uniform trip count, is not a finding. */
int checked_steps(float* buf, int n, int steps) {
  for (int s = 0; s < steps; ++s) {
    if (MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return 0;
}
