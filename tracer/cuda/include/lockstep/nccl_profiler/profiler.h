/* The parts of NCCL's profiler-plugin ABI that every plugin version shares: result codes, the logger,
 * event type bits and event states. Our own declaration of the facts in NCCL's nccl_profiler.h; the
 * per-version structs live in profiler_vN.h, one header per version, never edited once shipped. */
#ifndef LOCKSTEP_NCCL_PROFILER_H
#define LOCKSTEP_NCCL_PROFILER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ncclResult_t is a C enum: int sized. Only the values a plugin returns are named. */
typedef int lst_nccl_result;
#define LST_NCCL_SUCCESS 0
#define LST_NCCL_INTERNAL_ERROR 3

/* ncclDebugLogger_t: (level, subsystem flags, file, line, printf format, ...). */
typedef void (*lst_nccl_logger)(int level, unsigned long flags, const char* file, int line, const char* fmt,
                                ...);

/* Event type bits: the descriptor's `type` and the activation mask the plugin returns from init. */
enum {
  LST_NCCL_PROFILE_GROUP = 1 << 0, /* a group of operations launched together */
  LST_NCCL_PROFILE_COLL = 1 << 1,  /* a collective task (host side) */
  LST_NCCL_PROFILE_P2P = 1 << 2,   /* a send or receive task */
  LST_NCCL_PROFILE_PROXY_OP = 1 << 3,
  LST_NCCL_PROFILE_PROXY_STEP = 1 << 4,
  LST_NCCL_PROFILE_PROXY_CTRL = 1 << 5,
  LST_NCCL_PROFILE_KERNEL_CH = 1 << 6, /* one channel of the kernel that runs a task (device side) */
  LST_NCCL_PROFILE_NET_PLUGIN = 1 << 7,
  LST_NCCL_PROFILE_GROUP_API = 1 << 8,     /* v5: ncclGroupStart/End calls */
  LST_NCCL_PROFILE_COLL_API = 1 << 9,      /* v5: the collective API call itself */
  LST_NCCL_PROFILE_P2P_API = 1 << 10,      /* v5: the send/recv API call itself */
  LST_NCCL_PROFILE_KERNEL_LAUNCH = 1 << 11 /* v5: the kernel launch of a group */
};

/* Event states (recordEventState). The numeric values are ABI: NCCL passes them unchanged to every
 * plugin version. */
enum {
  LST_NCCL_STATE_PROXY_OP_IN_PROGRESS_V4 = 19,
  LST_NCCL_STATE_PROXY_STEP_SEND_PEER_WAIT_V4 = 20,
  LST_NCCL_STATE_NET_PLUGIN_UPDATE = 21,
  LST_NCCL_STATE_KERNEL_CH_STOP = 22,       /* args: kernelCh.pTimer, the channel's GPU stop time */
  LST_NCCL_STATE_GROUP_START_API_STOP = 23, /* v5 */
  LST_NCCL_STATE_GROUP_END_API_START = 24   /* v5 */
};
typedef int lst_nccl_event_state; /* ncclProfilerEventState_t: a C enum */

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_NCCL_PROFILER_H */
