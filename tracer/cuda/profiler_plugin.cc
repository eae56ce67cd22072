// NCCL profiler-plugin mode: liblockstep_trace.so exports ncclProfiler_v5 and ncclProfiler_v4, so
// NCCL_PROFILER_PLUGIN=/path/liblockstep_trace.so records every collective and point-to-point task
// with NCCL's communicator hash and rank even where NCCL is linked statically and nothing can be
// interposed. A task is ENTERED when NCCL starts its event, RETURNED when NCCL stops it (enqueued),
// and COMPLETED, with a DEVICE record, when every kernel channel that runs it has stopped.
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>

#include "gpu_records.h"
#include "gpu_state.h"
#include "lockstep/nccl_profiler/profiler_v4.h"
#include "lockstep/nccl_profiler/profiler_v5.h"
#include "nccl_names.h"
#include "session.h"

namespace lockstep::trace::gpu {
namespace {

constexpr uint32_t kCommMagic = 0x4c53434du;     // "LSCM"
constexpr uint32_t kTaskMagic = 0x4c535441u;     // "LSTA"
constexpr uint32_t kChannelMagic = 0x4c534348u;  // "LSCH"
// Events live in per-communicator rings and are never freed while the communicator lives: NCCL may
// still name a stopped task as the parent of its kernel channels. A slot is reused only this many
// tasks later, far beyond the operations NCCL keeps in flight.
constexpr uint32_t kTaskRing = 2048;
constexpr uint32_t kChannelRing = 8192;

struct PluginComm;

// Both event kinds start with their magic, published with release order once the rest is filled: NCCL
// calls back from its proxy thread with handles the application thread created.
struct Task {
  std::atomic<uint32_t> magic{0};
  PluginComm* comm = nullptr;
  uint64_t record_id = UINT64_MAX;
  uint32_t nchannels = 0;
  std::atomic<uint32_t> ch_started{0};
  std::atomic<uint32_t> ch_stopped{0};
  // The records' own clock (record_clock: TSC-derived where the kernel keeps time with the TSC), so that a
  // kernel is never placed before the call that launched it by two clocks' disagreement, and each of the
  // two readings per kernel channel, on NCCL's proxy thread, costs no clock_gettime call.
  std::atomic<uint64_t> host_start{0};  // when the first channel was reported started
  std::atomic<uint64_t> host_end{0};    // ... and when the last one was reported stopped
  std::atomic<uint64_t> gpu_start{0};   // GPU globaltimer: earliest channel start, latest stop
  std::atomic<uint64_t> gpu_end{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> completed{false};
};

struct Channel {
  std::atomic<uint32_t> magic{0};
  Task* task = nullptr;
  uint64_t gpu_start = 0;
  uint64_t gpu_stop = 0;
};

struct PluginComm {
  uint32_t magic = kCommMagic;
  uint64_t comm_hash = 0;
  int32_t rank = LST_NONE;
  int32_t nranks = LST_NONE;
  std::atomic<uint32_t> next_seq{0};
  std::atomic<uint64_t> op_seen[LST_OP__COUNT] = {};  // per operation: NCCL numbers each type apart
  std::atomic<uint32_t> next_task{0};
  std::atomic<uint32_t> next_channel{0};
  Task tasks[kTaskRing];
  Channel channels[kChannelRing];
};

// The fields of a v4 or v5 descriptor this plugin uses.
struct Descr {
  uint64_t type = 0;
  void* parent = nullptr;
  int rank = LST_NONE;
  uint64_t seq_number = 0;
  const char* func = nullptr;
  const char* datatype = nullptr;
  size_t count = 0;
  int root_or_peer = LST_NONE;
  uint32_t nchannels = 0;
  const char* algo = nullptr;
  uint64_t ch_timer = 0;
};

void min_store(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while ((cur == 0 || v < cur) && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
void max_store(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// NCCL reports kernel channels only when asked; without them a task stays RETURNED.
constexpr int kMask = LST_NCCL_PROFILE_COLL | LST_NCCL_PROFILE_P2P | LST_NCCL_PROFILE_KERNEL_CH;

// Decided once per process at the first init: whether the plugin writes records. Not when the NCCL
// interposer already records this process's calls (the first communicator was created inside an
// intercepted ncclCommInit*), which would otherwise count every collective twice.
std::once_flag g_mode_once;
bool g_plugin_records = false;

lst_nccl_result plugin_init(void** context, uint64_t comm_hash, int* mask, const char* name, int nranks,
                            int rank) noexcept {
  if (context) *context = nullptr;
  std::call_once(g_mode_once, [] {
    g_plugin_records = writer() != nullptr && thread_state().depth == 0;
    if (g_plugin_records) note_plugin_active();
  });
  if (!g_plugin_records) {
    // Nothing to record: ask NCCL for no events at all, so the plugin costs nothing.
    if (mask) *mask = 0;
    return LST_NCCL_SUCCESS;
  }
  auto* c = new (std::nothrow) PluginComm();
  if (!c) {
    warn_once(kWarnPlugin, "NCCL profiler plugin: out of memory, communicator %llx not traced",
              static_cast<unsigned long long>(comm_hash));
    if (mask) *mask = 0;
    return LST_NCCL_SUCCESS;
  }
  c->comm_hash = comm_hash;
  c->rank = rank;
  c->nranks = nranks;
  if (format::Writer* w = writer()) {
    // With a statically linked NCCL and no MPI, the first communicator is the only source of a rank.
    if (w->header() && w->header()->world_rank == LST_NONE && rank >= 0) w->set_world(rank, nranks);
  }
  write_inferred_comm(comm_hash, nranks, rank, name);
  if (mask) *mask = kMask;
  *context = c;
  return LST_NCCL_SUCCESS;
}

Task* task_from(void* handle) {
  auto* t = static_cast<Task*>(handle);
  return (t && t->magic.load(std::memory_order_acquire) == kTaskMagic) ? t : nullptr;
}

void maybe_complete(Task* t) {
  uint32_t stopped = t->ch_stopped.load(std::memory_order_acquire);
  uint32_t started = t->ch_started.load(std::memory_order_acquire);
  uint32_t want = t->nchannels > started ? t->nchannels : started;
  if (!t->stopped.load(std::memory_order_acquire) || stopped == 0 || stopped < want) return;
  if (t->completed.exchange(true)) return;
  uint64_t end = t->host_end.load(std::memory_order_relaxed);
  uint64_t start = t->host_start.load(std::memory_order_relaxed);
  // The GPU timer runs on another clock; its span, ending at the host time the stop was seen, places
  // the kernel on the trace's clock more exactly than the proxy thread's polling does.
  uint64_t g0 = t->gpu_start.load(std::memory_order_relaxed), g1 = t->gpu_end.load(std::memory_order_relaxed);
  if (g0 && g1 > g0 && g1 - g0 < end) start = end - (g1 - g0);
  write_device(t->record_id, start, end);
  advance_record(t->record_id, LST_STATE_COMPLETED);
}

lst_nccl_result plugin_start(void* context, void** handle, const Descr& d) noexcept {
  if (handle) *handle = nullptr;
  auto* c = static_cast<PluginComm*>(context);
  if (!c || c->magic != kCommMagic || !handle) return LST_NCCL_SUCCESS;
  if (d.type == LST_NCCL_PROFILE_COLL || d.type == LST_NCCL_PROFILE_P2P) {
    Task* t = &c->tasks[c->next_task.fetch_add(1, std::memory_order_relaxed) % kTaskRing];
    t->magic.store(0, std::memory_order_relaxed);
    t->comm = c;
    t->nchannels = d.nchannels;
    t->ch_started.store(0, std::memory_order_relaxed);
    t->ch_stopped.store(0, std::memory_order_relaxed);
    t->host_start.store(0, std::memory_order_relaxed);
    t->host_end.store(0, std::memory_order_relaxed);
    t->gpu_start.store(0, std::memory_order_relaxed);
    t->gpu_end.store(0, std::memory_order_relaxed);
    t->stopped.store(false, std::memory_order_relaxed);
    t->completed.store(false, std::memory_order_relaxed);
    InferredCollective rec;
    rec.comm = c->comm_hash;
    rec.op = op_from_nccl_func(d.func);
    if (d.type == LST_NCCL_PROFILE_P2P && rec.op != LST_OP_SEND && rec.op != LST_OP_RECV)
      rec.op = LST_OP_UNKNOWN;
    rec.seq = c->next_seq.fetch_add(1, std::memory_order_relaxed);
    rec.dtype = dtype_from_nccl_name(d.datatype, &rec.dtype_size);
    // The plugin interface does not pass the reduction operator.
    bool reduces = rec.op == LST_OP_ALLREDUCE || rec.op == LST_OP_REDUCE || rec.op == LST_OP_REDUCE_SCATTER;
    rec.redop = reduces ? LST_RED_UNKNOWN : LST_RED_NONE;
    rec.count = d.count;
    bool rooted = rec.op == LST_OP_BCAST || rec.op == LST_OP_REDUCE || rec.op == LST_OP_GATHER ||
                  rec.op == LST_OP_SCATTER || rec.op == LST_OP_SEND || rec.op == LST_OP_RECV;
    rec.root_or_peer = rooted ? d.root_or_peer : LST_NONE;
    rec.name = d.algo;
    rec.state = LST_STATE_ENTERED;
    t->record_id = write_inferred_collective(rec);
    if (d.type == LST_NCCL_PROFILE_COLL && rec.op < LST_OP__COUNT) {
      // NCCL numbers each operation type on its own; a gap means NCCL ran tasks we were not told of.
      uint64_t expect = c->op_seen[rec.op].fetch_add(1, std::memory_order_relaxed);
      if (d.seq_number != expect)
        warn_once(kWarnPluginSeq,
                  "NCCL profiler plugin: NCCL's sequence number of %s on communicator %llx is %llu, expected "
                  "%llu: some tasks were not reported",
                  d.func ? d.func : "?", static_cast<unsigned long long>(c->comm_hash),
                  static_cast<unsigned long long>(d.seq_number), static_cast<unsigned long long>(expect));
      c->op_seen[rec.op].store(d.seq_number + 1, std::memory_order_relaxed);
    }
    t->magic.store(kTaskMagic, std::memory_order_release);
    *handle = t;
  } else if (d.type == LST_NCCL_PROFILE_KERNEL_CH) {
    Task* t = task_from(d.parent);
    if (!t || t->comm != c) return LST_NCCL_SUCCESS;
    Channel* ch = &c->channels[c->next_channel.fetch_add(1, std::memory_order_relaxed) % kChannelRing];
    ch->magic.store(0, std::memory_order_relaxed);
    ch->task = t;
    ch->gpu_start = d.ch_timer;
    ch->gpu_stop = 0;
    t->ch_started.fetch_add(1, std::memory_order_acq_rel);
    min_store(t->host_start, record_clock(nullptr));
    if (d.ch_timer) min_store(t->gpu_start, d.ch_timer);
    ch->magic.store(kChannelMagic, std::memory_order_release);
    *handle = ch;
  }
  return LST_NCCL_SUCCESS;
}

lst_nccl_result plugin_stop(void* handle) noexcept {
  if (!handle) return LST_NCCL_SUCCESS;
  uint32_t magic = static_cast<std::atomic<uint32_t>*>(handle)->load(std::memory_order_acquire);
  if (magic == kTaskMagic) {
    auto* t = static_cast<Task*>(handle);
    advance_record(t->record_id, LST_STATE_RETURNED);
    t->stopped.store(true, std::memory_order_release);
    maybe_complete(t);
  } else if (magic == kChannelMagic) {
    auto* ch = static_cast<Channel*>(handle);
    ch->magic.store(0, std::memory_order_relaxed);
    Task* t = ch->task;
    if (!task_from(t)) return LST_NCCL_SUCCESS;
    max_store(t->host_end, record_clock(nullptr));
    if (ch->gpu_stop) max_store(t->gpu_end, ch->gpu_stop);
    t->ch_stopped.fetch_add(1, std::memory_order_acq_rel);
    maybe_complete(t);
  }
  return LST_NCCL_SUCCESS;
}

lst_nccl_result plugin_state(void* handle, lst_nccl_event_state state, uint64_t ch_timer) noexcept {
  if (!handle || state != LST_NCCL_STATE_KERNEL_CH_STOP) return LST_NCCL_SUCCESS;
  auto* ch = static_cast<Channel*>(handle);
  if (ch->magic.load(std::memory_order_acquire) == kChannelMagic) ch->gpu_stop = ch_timer;
  return LST_NCCL_SUCCESS;
}

lst_nccl_result plugin_finalize(void* context) noexcept {
  auto* c = static_cast<PluginComm*>(context);
  if (!c || c->magic != kCommMagic) return LST_NCCL_SUCCESS;
  c->magic = 0;
  delete c;
  return LST_NCCL_SUCCESS;
}

// v4 and v5 descriptors name the fields this plugin reads alike: one body for both.
template <typename EventDescr>
lst_nccl_result start_event(void* context, void** handle, const EventDescr* e) noexcept {
  if (handle) *handle = nullptr;
  if (!e) return LST_NCCL_SUCCESS;
  Descr d;
  d.type = e->type;
  d.parent = e->parentObj;
  d.rank = e->rank;
  if (e->type == LST_NCCL_PROFILE_COLL) {
    d.seq_number = e->coll.seqNumber;
    d.func = e->coll.func;
    d.datatype = e->coll.datatype;
    d.count = e->coll.count;
    d.root_or_peer = e->coll.root;
    d.nchannels = e->coll.nChannels;
    d.algo = e->coll.algo;
  } else if (e->type == LST_NCCL_PROFILE_P2P) {
    d.func = e->p2p.func;
    d.datatype = e->p2p.datatype;
    d.count = e->p2p.count;
    d.root_or_peer = e->p2p.peer;
    d.nchannels = e->p2p.nChannels;
  } else if (e->type == LST_NCCL_PROFILE_KERNEL_CH) {
    d.ch_timer = e->kernelCh.pTimer;
  } else {
    return LST_NCCL_SUCCESS;
  }
  return plugin_start(context, handle, d);
}

// ---- v5 ----------------------------------------------------------------------------------------

lst_nccl_result v5_init(void** context, uint64_t comm_id, int* mask, const char* name, int nnodes, int nranks,
                        int rank, lst_nccl_logger) {
  return plugin_init(context, comm_id, mask, name, nranks, rank);
}

lst_nccl_result v5_start(void* context, void** handle, lst_nccl_event_descr_v5* e) {
  return start_event(context, handle, e);
}

lst_nccl_result v5_state(void* handle, lst_nccl_event_state state, lst_nccl_state_args_v5* args) {
  return plugin_state(handle, state, args ? args->kernelCh.pTimer : 0);
}

// ---- v4 ----------------------------------------------------------------------------------------

lst_nccl_result v4_init(void** context, int* mask, const char* name, uint64_t comm_hash, int nnodes,
                        int nranks, int rank, lst_nccl_logger) {
  return plugin_init(context, comm_hash, mask, name, nranks, rank);
}

lst_nccl_result v4_start(void* context, void** handle, lst_nccl_event_descr_v4* e) {
  return start_event(context, handle, e);
}

lst_nccl_result v4_state(void* handle, lst_nccl_event_state state, lst_nccl_state_args_v4* args) {
  return plugin_state(handle, state, args ? args->kernelCh.pTimer : 0);
}

}  // namespace
}  // namespace lockstep::trace::gpu

// NCCL looks these up with dlsym, newest version first.
extern "C" {
__attribute__((visibility("default"))) lst_nccl_profiler_v5 ncclProfiler_v5 = {
    "lockstep",
    lockstep::trace::gpu::v5_init,
    lockstep::trace::gpu::v5_start,
    lockstep::trace::gpu::plugin_stop,
    lockstep::trace::gpu::v5_state,
    lockstep::trace::gpu::plugin_finalize,
};
__attribute__((visibility("default"))) lst_nccl_profiler_v4 ncclProfiler_v4 = {
    "lockstep",
    lockstep::trace::gpu::v4_init,
    lockstep::trace::gpu::v4_start,
    lockstep::trace::gpu::plugin_stop,
    lockstep::trace::gpu::v4_state,
    lockstep::trace::gpu::plugin_finalize,
};
}
