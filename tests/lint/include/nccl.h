/* Minimal NCCL declarations for the lint corpus, so that it runs without a CUDA toolkit. */
#ifndef LOCKSTEP_LINT_FAKE_NCCL_H
#define LOCKSTEP_LINT_FAKE_NCCL_H
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct ncclComm* ncclComm_t;
typedef struct CUstream_st* cudaStream_t;
typedef enum { ncclSuccess = 0 } ncclResult_t;
typedef enum { ncclInt8 = 0, ncclInt32 = 2, ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat = 7, ncclFloat64 = 8 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclAllReduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* in, void* out, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclAllGather(const void* in, void* out, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart(void);
const char* ncclGetErrorString(ncclResult_t result);
#ifndef __CUDACC__  /* .cu files get the toolkit's runtime API */
typedef enum { cudaSuccess = 0 } cudaError_t;
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaMalloc(void** ptr, size_t bytes);
const char* cudaGetErrorString(cudaError_t error);
#endif
ncclResult_t ncclGroupEnd(void);
typedef struct { char internal[128]; } ncclUniqueId;
ncclResult_t ncclGetUniqueId(ncclUniqueId* id);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
#ifdef __cplusplus
}
#endif
#endif
