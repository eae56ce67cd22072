/* NCCL profiler plugin ABI, version 5 (NCCL 2.27 onwards; NCCL 2.28 adapts it to its v6): the symbol
 * `ncclProfiler_v5` is an lst_nccl_profiler_v5. Shipped: never edit; add profiler_vN.h instead. */
#ifndef LOCKSTEP_NCCL_PROFILER_V5_H
#define LOCKSTEP_NCCL_PROFILER_V5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lockstep/nccl_profiler/profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lst_nccl_event_descr_v5 {
  uint64_t type;   /* LST_NCCL_PROFILE_*: 64 bits from v5 on */
  void* parentObj; /* handle of the parent event (a task's API event; a kernel channel's task) */
  int rank;        /* originating rank in the communicator */
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
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
      void* parentGroup; /* the group event (v4's parentObj) */
    } coll;
    struct {
      const char* func; /* "Send" or "Recv" */
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
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
} lst_nccl_event_descr_v5;

typedef union lst_nccl_state_args_v5 {
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
} lst_nccl_state_args_v5;

typedef struct lst_nccl_profiler_v5 {
  const char* name;
  /* v5 passes the communicator id first, then the mask, then the name. */
  lst_nccl_result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                          int nNodes, int nranks, int rank, lst_nccl_logger logfn);
  lst_nccl_result (*startEvent)(void* context, void** eHandle, lst_nccl_event_descr_v5* eDescr);
  lst_nccl_result (*stopEvent)(void* eHandle);
  lst_nccl_result (*recordEventState)(void* eHandle, lst_nccl_event_state eState,
                                      lst_nccl_state_args_v5* eStateArgs);
  lst_nccl_result (*finalize)(void* context);
} lst_nccl_profiler_v5;

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_NCCL_PROFILER_V5_H */
