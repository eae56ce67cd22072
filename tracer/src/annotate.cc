// The annotation API (lockstep/annotate.h): strong definitions of the weak symbols, so a library that
// calls LOCKSTEP_ANNOTATE_* reaches the tracer when it is preloaded and costs nothing when it is not.
#include "lockstep/annotate.h"

#include <cstring>

#include "session.h"

using namespace lockstep::trace;

#define LOCKSTEP_EXPORT extern "C" __attribute__((visibility("default")))

LOCKSTEP_EXPORT void lockstep_annotate(const char* text) {
  if (!text) return;
  marker(LST_MARK_ANNOTATION, 0, text, LOCKSTEP_CALLER());
}

LOCKSTEP_EXPORT void lockstep_rt_event(int event, const char* tensor, uint64_t elements,
                                       uint64_t process_set) {
  // value: the event; ref: the process set's id; extra: the element count; text: the tensor name.
  marker_ex(LST_MARK_RT_EVENT, static_cast<uint64_t>(event), process_set, elements, tensor, LOCKSTEP_CALLER(),
            0);
}

LOCKSTEP_EXPORT void lockstep_rt_process_set(uint64_t id, const char* name, const int32_t* members,
                                             int32_t size, int32_t my_rank) {
  comm_add(LST_API_RT, static_cast<uintptr_t>(id), LST_COMM_RT_PROCESS_SET, id, 0, LST_NONE, 0, size, my_rank,
           members, name, LOCKSTEP_CALLER());
}

// The thread's last runtime collective: its end usually comes next on the same thread, and then the
// record's slot and start time are known without looking the id up or reading the clock again.
static __attribute__((tls_model("initial-exec"))) thread_local Pending t_last_begun;
static __attribute__((tls_model("initial-exec"))) thread_local uint32_t t_last_begun_gen;

__attribute__((always_inline)) static inline uint64_t rt_collective_begin(uint64_t process_set, int op,
                                                                          const char* name, uint64_t count,
                                                                          int dtype, uint32_t dtype_size,
                                                                          int redop, int root,
                                                                          uint64_t caller) {
  lockstep::format::Writer* w = writer();
  if (!w) return 0;
  CollectiveArgs a;
  a.api = LST_API_RT;
  a.op = static_cast<uint8_t>(op);
  a.comm = comm_find(LST_API_RT, static_cast<uintptr_t>(process_set));
  a.count = count;
  a.dtype = static_cast<uint8_t>(dtype);
  a.dtype_size = dtype_size;
  a.redop = static_cast<uint8_t>(redop);
  a.root_or_peer = root;
  Pending p = collective_enter_named(a, name, caller);
  keep_pending(t_last_begun, p);
  t_last_begun_gen = writer_generation();
  // The token is the record id + 1, so that 0 can mean "not traced".
  return p.rec ? p.id + 1 : 0;
}

LOCKSTEP_EXPORT uint64_t lockstep_rt_collective_begin(uint64_t process_set, int op, const char* name,
                                                      uint64_t count, int dtype, uint32_t dtype_size,
                                                      int redop, int root) {
  return rt_collective_begin(process_set, op, name, count, dtype, dtype_size, redop, root, LOCKSTEP_CALLER());
}

LOCKSTEP_EXPORT uint64_t lockstep_rt_collective_begin_at(uint64_t process_set, int op, const char* name,
                                                         uint64_t count, int dtype, uint32_t dtype_size,
                                                         int redop, int root, uint64_t caller) {
  return rt_collective_begin(process_set, op, name, count, dtype, dtype_size, redop, root, caller);
}

LOCKSTEP_EXPORT void lockstep_rt_collective_end(uint64_t token, int ok) {
  if (token == 0) return;
  if (t_last_begun.rec && t_last_begun.id == token - 1 && t_last_begun_gen == writer_generation()) {
    collective_return(t_last_begun, ok != 0);  // checks that a ring has not reused the slot since
    return;
  }
  collective_return_id(token - 1, ok != 0);
}

LOCKSTEP_EXPORT void lockstep_control_plane(int enter) {
  ThreadState& ts = thread_state();
  if (enter) {
    ++ts.control;
  } else if (ts.control > 0) {
    --ts.control;
  }
}
