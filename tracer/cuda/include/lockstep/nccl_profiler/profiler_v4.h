/* NCCL profiler plugin ABI, version 4 (NCCL 2.25-2.26; still loaded by later NCCL): the symbol
 * `ncclProfiler_v4` is an lst_nccl_profiler_v4. Shipped: never edit; add profiler_vN.h instead. */
#ifndef LOCKSTEP_NCCL_PROFILER_V4_H
#define LOCKSTEP_NCCL_PROFILER_V4_H

#include <stddef.h>
#include <stdint.h>

#include "lockstep/nccl_profiler/profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lst_nccl_event_descr_v4 {
  uint8_t type;    /* LST_NCCL_PROFILE_* */
  void* parentObj; /* handle of the parent event (a collective's group; a kernel channel's task) */
  int rank;        /* originating rank in the communicator */
  union {
    struct {
      uint64_t seqNumber; /* NCCL's own counter of this operation type on the communicator */
      const char* func;   /* "AllReduce", "Broadcast", ... */
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype; /* "ncclFloat32", ... */
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func; /* "Send" or "Recv" */
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      int pid; /* pid_t */
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer; /* GPU globaltimer at the channel's start */
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} lst_nccl_event_descr_v4;

typedef union lst_nccl_state_args_v4 {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer; /* GPU globaltimer at the channel's stop */
  } kernelCh;
} lst_nccl_state_args_v4;

typedef struct lst_nccl_profiler_v4 {
  const char* name;
  /* v4 passes the communicator name before its hash. */
  lst_nccl_result (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash,
                          int nNodes, int nranks, int rank, lst_nccl_logger logfn);
  lst_nccl_result (*startEvent)(void* context, void** eHandle, lst_nccl_event_descr_v4* eDescr);
  lst_nccl_result (*stopEvent)(void* eHandle);
  lst_nccl_result (*recordEventState)(void* eHandle, lst_nccl_event_state eState,
                                      lst_nccl_state_args_v4* eStateArgs);
  lst_nccl_result (*finalize)(void* context);
} lst_nccl_profiler_v4;

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_NCCL_PROFILER_V4_H */
