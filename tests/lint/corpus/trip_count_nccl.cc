// Per-rank trip counts with NCCL.
#include <nccl.h>
#include <stdlib.h>

void buckets_buggy(float** buckets, size_t n, ncclComm_t comm, cudaStream_t s) {
  int count = atoi(getenv("LOCAL_RANK"));
  for (int i = 0; i < count; ++i) {
    ncclAllReduce(buckets[i], buckets[i], n, ncclFloat, ncclSum, comm, s);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'ncclAllReduce' runs once per loop iteration [conditional-collective]
    // CHECK-NOTES: :[[@LINE-4]]:20: note: rank-dependent environment variable 'LOCAL_RANK' read here
  }
}

// Correct: an ordinary environment variable is the same on every rank of an SPMD launch.
void buckets_from_env(float** buckets, size_t n, ncclComm_t comm, cudaStream_t s) {
  int count = atoi(getenv("LOCAL_BUCKETS"));
  for (int i = 0; i < count; ++i) ncclAllReduce(buckets[i], buckets[i], n, ncclFloat, ncclSum, comm, s);
}

// Correct: the bucket count comes from the communicator size.
void buckets_fixed(float** buckets, size_t n, ncclComm_t comm, cudaStream_t s) {
  int nranks = 0;
  ncclCommCount(comm, &nranks);
  for (int i = 0; i < nranks; ++i) ncclAllReduce(buckets[i], buckets[i], n, ncclFloat, ncclSum, comm, s);
}
