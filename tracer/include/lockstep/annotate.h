/* Annotation API: lets a library (the bundled runtime, or an application) tell the tracer about its
 * logical events. Every symbol is weak: when liblockstep_trace.so is not loaded they resolve to null
 * and the LOCKSTEP_ANNOTATE_* wrappers below cost one predictable branch, with no link dependency.
 * Versioned by adding functions, never by changing one. */
#ifndef LOCKSTEP_ANNOTATE_H
#define LOCKSTEP_ANNOTATE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Free-form text marker in this process's trace. */
/* An annotation that starts with this prefix says why the bundled runtime stopped the process (the
 * rest is the reason); `lockstep check` reports it as the rank's end, not as a step of the program. */
#define LOCKSTEP_RT_ABORT_PREFIX "lockstep-rt abort: "
void lockstep_annotate(const char* text) __attribute__((weak));

/* A runtime event (lst_rt_event in lockstep/format/layout.h) about a named tensor. */
void lockstep_rt_event(int event, const char* tensor, uint64_t elements, uint64_t process_set)
    __attribute__((weak));

/* Announces a runtime process set (communicator of named collectives): `id` is the same on every
 * member, `members` are world ranks in set order. */
void lockstep_rt_process_set(uint64_t id, const char* name, const int32_t* members, int32_t size,
                             int32_t my_rank) __attribute__((weak));

/* A runtime-level collective on a process set, recorded as a collective record of api "rt" with the
 * tensor name; `op`/`dtype`/`redop` are lst_op/lst_dtype/lst_redop values. Returns a token for
 * lockstep_rt_collective_end (0 when not traced). */
uint64_t lockstep_rt_collective_begin(uint64_t process_set, int op, const char* name, uint64_t count,
                                      int dtype, uint32_t dtype_size, int redop, int root)
    __attribute__((weak));
void lockstep_rt_collective_end(uint64_t token, int ok) __attribute__((weak));

/* Added in 1.1: lockstep_rt_collective_begin with the call site given by the caller (`caller`: a return
 * address in the application, such as the runtime API function's own return address), so that the
 * record points at the application's line rather than at the runtime's. */
uint64_t lockstep_rt_collective_begin_at(uint64_t process_set, int op, const char* name, uint64_t count,
                                         int dtype, uint32_t dtype_size, int redop, int root, uint64_t caller)
    __attribute__((weak));

/* While nonzero on the calling thread, its intercepted MPI/NCCL calls are marked control-plane
 * (LST_F_CONTROL), so checks and reports can tell negotiation traffic from data. Nests. */
void lockstep_control_plane(int enter) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#define LOCKSTEP_ANNOTATE(text)                     \
  do {                                              \
    if (lockstep_annotate) lockstep_annotate(text); \
  } while (0)
#define LOCKSTEP_RT_EVENT(ev, tensor, elements, pset)                             \
  do {                                                                            \
    if (lockstep_rt_event) lockstep_rt_event((ev), (tensor), (elements), (pset)); \
  } while (0)
#define LOCKSTEP_CONTROL_PLANE(enter)                          \
  do {                                                         \
    if (lockstep_control_plane) lockstep_control_plane(enter); \
  } while (0)

#endif /* LOCKSTEP_ANNOTATE_H */
