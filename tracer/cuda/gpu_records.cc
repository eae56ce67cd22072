// Record writers for the GPU parts (gpu_records.h). Same commit protocol as the session: fill the slot,
// publish the word last; later state changes only move forward.
#include "gpu_records.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "session.h"

namespace lockstep::trace::gpu {
namespace {

void clear(lst_record* r) noexcept {
  std::memset(reinterpret_cast<char*>(r) + sizeof(uint32_t), 0, sizeof(lst_record) - sizeof(uint32_t));
}

std::atomic<bool> g_warned[kWarn__count];

void store_device(lst_record* r, uint64_t ref, uint64_t start_ns, uint64_t end_ns, uint64_t t_ns) noexcept {
  clear(r);
  r->api = LST_API_CUDA;
  r->u.device.ref = ref;
  r->u.device.start_ns = start_ns;
  r->u.device.end_ns = end_ns;
  r->t_ns = t_ns;
  format::Writer::publish(r, LST_WORD(LST_KIND_DEVICE, 0, 0));
}

}  // namespace

void write_device(uint64_t ref, uint64_t start_ns, uint64_t end_ns) noexcept {
  format::Writer* w = writer();
  if (!w) return;
  uint64_t id = 0;
  if (lst_record* r = w->reserve(&id)) store_device(r, ref, start_ns, end_ns, now_ns());
}

void complete_on_device(const uint64_t* refs, size_t n, uint64_t end_ns) noexcept {
  format::Writer* w = writer();
  if (!w) return;
  constexpr size_t kBlock = 64;
  for (size_t from = 0; from < n; from += kBlock) {
    const size_t m = std::min(kBlock, n - from);
    lst_record* slots[kBlock];
    uint64_t first = 0;
    w->reserve_n(slots, static_cast<int>(m), &first);
    // Written when the poll saw them complete: the record's own time is end_ns too.
    for (size_t k = 0; k < m; ++k)
      if (slots[k]) store_device(slots[k], refs[from + k], 0, end_ns, end_ns);
    // Every ref was reserved before this block was: first + m is a cursor value read after them all.
    collective_complete(refs + from, m, first + m);
  }
}

uint64_t write_inferred_collective(const InferredCollective& c) noexcept {
  format::Writer* w = writer();
  if (!w) return UINT64_MAX;
  uint32_t name = (c.name && *c.name) ? w->intern(c.name, std::strlen(c.name)) : 0;
  uint64_t id = 0;
  lst_record* r = w->reserve(&id);
  if (!r) return UINT64_MAX;
  clear(r);
  r->op = c.op;
  r->api = LST_API_NCCL;
  r->dtype = c.dtype;
  r->redop = c.redop;
  r->comm = c.comm;
  r->u.coll.seq = c.seq;
  r->u.coll.root_or_peer = c.root_or_peer;
  r->u.coll.dtype_size = c.dtype_size;
  r->u.coll.id_lo = static_cast<uint32_t>(id);
  r->u.coll.count = c.count;
  r->t_ns = c.t_ns ? c.t_ns : now_ns();
  r->aux = name;
  format::Writer::publish(
      r, LST_WORD(LST_KIND_COLLECTIVE, c.state ? c.state : uint8_t{LST_STATE_ENTERED}, LST_F_INFERRED));
  return id;
}

void advance_record(uint64_t id, uint8_t state) noexcept {
  if (id == UINT64_MAX) return;
  format::Writer* w = writer();
  if (!w) return;
  lst_record* r = w->at(id);
  if (!r) return;
  const uint32_t old = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  if (LST_WORD_KIND(old) != LST_KIND_COLLECTIVE || r->u.coll.id_lo != static_cast<uint32_t>(id)) return;
  if (state == LST_STATE_RETURNED) {
    uint64_t us = (now_ns() - r->t_ns) / 1000;
    format::Writer::finish(r, state, us > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(us));
  } else {
    format::Writer::advance(r, state);
  }
}

void write_inferred_comm(uint64_t comm, int32_t size, int32_t rank, const char* name) noexcept {
  format::Writer* w = writer();
  if (!w) return;
  uint32_t name_id = (name && *name) ? w->intern(name, std::strlen(name)) : 0;
  uint64_t id = 0;
  lst_record* r = w->reserve(&id);
  if (!r) return;
  clear(r);
  r->op = LST_COMM_NCCL_INIT_RANK;
  r->api = LST_API_NCCL;
  r->comm = comm;
  r->u.comm.parent = 0;
  r->u.comm.color = LST_NONE;
  r->u.comm.key = LST_NONE;
  r->u.comm.size = size;
  r->u.comm.rank = rank;
  r->t_ns = now_ns();
  r->aux = name_id;
  format::Writer::publish(r, LST_WORD(LST_KIND_COMM, 0, LST_F_INFERRED));
}

namespace {
void vwarn(int flag, bool record, const char* fmt, va_list ap) noexcept {
  if (flag < 0 || flag >= kWarn__count || g_warned[flag].exchange(true)) return;
  char text[256];
  std::vsnprintf(text, sizeof text, fmt, ap);
  std::fprintf(stderr, "lockstep: %s (pid %d)\n", text, static_cast<int>(getpid()));
  if (record) marker(LST_MARK_TRACER_WARNING, 0, text, 0);
}
}  // namespace

void warn_once(int flag, const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  vwarn(flag, true, fmt, ap);
  va_end(ap);
}

void warn_once_stderr(int flag, const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  vwarn(flag, false, fmt, ap);
  va_end(ap);
}

}  // namespace lockstep::trace::gpu
