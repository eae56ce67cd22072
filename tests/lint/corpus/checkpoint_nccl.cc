// Rank-0-only code that calls a function hiding an NCCL collective.
#include <nccl.h>

static void gather_for_checkpoint(float* shard, float* all, size_t n, ncclComm_t comm, cudaStream_t s) {
  ncclAllGather(shard, all, n, ncclFloat, comm, s);
}

void checkpoint_buggy(float* shard, float* all, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  if (rank == 0) {
    gather_for_checkpoint(shard, all, n, comm, s);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: call to 'gather_for_checkpoint' (performs collective 'ncclAllGather') runs only on ranks where a rank-local condition holds [conditional-collective]
    // CHECK-NOTES: :[[@LINE-4]]:3: note: rank obtained from 'ncclCommUserRank' here
  }
}

void write_file(const float* data, size_t n);

// Correct: every rank gathers, rank 0 writes.
void checkpoint_fixed(float* shard, float* all, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  gather_for_checkpoint(shard, all, n, comm, s);
  if (rank == 0) write_file(all, n);
}
