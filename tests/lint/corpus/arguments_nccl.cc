// Root, count and datatype computed from the rank with NCCL.
#include <nccl.h>

void root_buggy(float* buf, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  ncclBroadcast(buf, buf, n, ncclFloat, rank == 0 ? 0 : 1, comm, s);
  // CHECK-MESSAGES: :[[@LINE-1]]:41: warning: the root of 'ncclBroadcast' is computed from a rank-local value [rank-dependent-argument]
}

void count_and_type_buggy(void* buf, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  size_t count = rank ? n : n / 2;
  ncclDataType_t type = rank ? ncclFloat : ncclFloat16;
  ncclAllReduce(buf, buf, count, type, ncclSum, comm, s);
  // CHECK-MESSAGES: :[[@LINE-1]]:27: warning: the count of 'ncclAllReduce' is computed from a rank-local value [rank-dependent-argument]
  // CHECK-MESSAGES: :[[@LINE-2]]:34: warning: the datatype of 'ncclAllReduce' is computed from a rank-local value [rank-dependent-argument]
}

// Correct: constants and communicator size; send/recv peers may differ.
void arguments_fixed(float* buf, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0, nranks = 1;
  ncclCommUserRank(comm, &rank);
  ncclCommCount(comm, &nranks);
  ncclBroadcast(buf, buf, n, ncclFloat, nranks - 1, comm, s);
  ncclGroupStart();
  ncclSend(buf, n, ncclFloat, (rank + 1) % nranks, comm, s);
  ncclRecv(buf, n, ncclFloat, (rank + nranks - 1) % nranks, comm, s);
  ncclGroupEnd();
}
