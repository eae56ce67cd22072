// CUPTI kernel activity (LOCKSTEP_TRACE_CUPTI=1): libcupti is loaded at run time; a runtime/driver API
// callback notes the correlation id of every kernel launch made inside an intercepted NCCL call, and the
// activity records of those kernels (start/end) become DEVICE records of the call's record. Where no NCCL
// call could be interposed (static NCCL), NCCL kernels become inferred collectives instead. Without a
// GPU cuptiSubscribe fails (CUPTI_ERROR_UNKNOWN, 999): one warning, host-side tracing continues.
#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "correlate.h"
#include "gpu_records.h"
#include "gpu_state.h"
#include "lockstep/env.h"
#include "session.h"

namespace lockstep::trace::gpu {
namespace {

struct Cupti {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableCallback) enableCallback = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) registerCallbacks = nullptr;
  decltype(&cuptiActivityEnable) activityEnable = nullptr;
  decltype(&cuptiActivityFlushAll) flushAll = nullptr;
  decltype(&cuptiActivityGetNextRecord) getNextRecord = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) getNumDropped = nullptr;
  decltype(&cuptiGetResultString) resultString = nullptr;
  decltype(&cuptiGetTimestamp) getTimestamp = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) registerTimestamp = nullptr;
};
Cupti g_cupti;
std::atomic<bool> g_active{false};
int64_t g_clock_offset = 0;  // added to CUPTI timestamps when CUPTI cannot use our clock

// The NCCL kernels of a statically linked NCCL share one communicator id on every rank: the kernels
// do not say which communicator launched them.
constexpr uint64_t kInferredComm = 0x6e63636c6b726e6cull;  // "ncclkrnl"

class TraceSink final : public CorrelationSink {
 public:
  void kernel_of_record(uint64_t record_id, const KernelActivity& k) override {
    write_device(record_id, k.start_ns, k.end_ns);
    collective_complete(record_id);
  }
  void inferred_kernel(const KernelInfo& info, uint32_t seq, const KernelActivity& k) override {
    InferredCollective c;
    c.comm = kInferredComm;
    c.seq = seq;
    c.op = info.op;
    c.dtype = info.dtype;
    c.dtype_size = info.dtype_size;
    c.redop = info.redop;
    c.count = 0;  // a kernel name does not tell the element count
    c.state = LST_STATE_COMPLETED;
    c.t_ns = k.start_ns;
    c.name = info.base;
    uint64_t id = write_inferred_collective(c);
    if (id != UINT64_MAX) write_device(id, k.start_ns, k.end_ns);
  }
};
// Built on first use (the load-time constructor that starts CUPTI may run before static initializers)
// and never destroyed: the GPU thread's last flush at exit runs after static destructors may have.
Correlator& correlator() {
  // Room for the bindings of every call made between two buffer deliveries (a launch is noted by its
  // runtime and its driver call, one of which the kernel record names): 2^18 is ~100 ms of calls at
  // over a million calls per second.
  static Correlator* c = new Correlator(new TraceSink(), 1u << 18);
  return *c;
}

// Launches made by this thread inside recorded calls, not yet bound: the correlation id and the record
// of the call that made it (ThreadState::inside, id + 1).
constexpr int kMaxThreadIds = 64;
struct Launch {
  uint32_t correlation_id;
  uint64_t inside;
};
struct ThreadIds {
  Launch ids[kMaxThreadIds];
  int n = 0;
};
using ThreadIdsOf = PerThread<ThreadIds>;  // every NCCL call reads it (cupti_bind)

const char* result_name(CUptiResult rc) {
  const char* s = nullptr;
  if (g_cupti.resultString && g_cupti.resultString(rc, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error";
}

// The records' own clock (TSC-derived where the kernel keeps time with the TSC): a kernel's start is
// then never placed before the call that launched it by the two clocks' small disagreement.
uint64_t CUPTIAPI record_timestamp() { return record_clock(nullptr); }

void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (!cb || cb->callbackSite != CUPTI_API_ENTER) return;
  // Only launches made inside a recorded call belong to a record: a communicator's creation copies
  // too, and its copies are no collective's.
  const uint64_t inside = thread_state().inside;
  if (inside == 0) return;
  ThreadIds* t = ThreadIdsOf::get_or_make();
  if (!t) return;
  // A runtime launch (cudaMemcpyAsync, cudaLaunchKernel) calls the driver's under the same
  // correlation id: both callbacks fire, and the launch is noted once.
  for (int i = t->n - 1; i >= 0; --i)
    if (t->ids[i].correlation_id == cb->correlationId && t->ids[i].inside == inside) return;
  if (t->n < kMaxThreadIds) t->ids[t->n++] = {cb->correlationId, inside};
}

constexpr size_t kBufferBytes = 1u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  if (buffer && valid > 0) {
    bool infer = !nccl_interposed() && !plugin_active();
    CUpti_Activity* rec = nullptr;
    while (g_cupti.getNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      KernelActivity k;
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* kr = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        k.correlation_id = kr->correlationId;
        k.start_ns = static_cast<uint64_t>(static_cast<int64_t>(kr->start) + g_clock_offset);
        k.end_ns = static_cast<uint64_t>(static_cast<int64_t>(kr->end) + g_clock_offset);
        k.name = kr->name;
        k.device = kr->deviceId;
        k.stream = kr->streamId;
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        // A one-rank communicator runs most collectives as a copy, not a kernel. A copy has no name,
        // so only a copy made inside an intercepted call is kept.
        const auto* mr = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        k.correlation_id = mr->correlationId;
        k.start_ns = static_cast<uint64_t>(static_cast<int64_t>(mr->start) + g_clock_offset);
        k.end_ns = static_cast<uint64_t>(static_cast<int64_t>(mr->end) + g_clock_offset);
        k.device = mr->deviceId;
        k.stream = mr->streamId;
      } else {
        continue;
      }
      correlator().on_kernel(k, infer);
    }
    size_t dropped = 0;
    if (g_cupti.getNumDropped && g_cupti.getNumDropped(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
      warn_once(kWarnCuptiBuffer, "CUPTI dropped %zu kernel records: some collectives lack kernel times",
                dropped);
  }
  std::free(buffer);
}

template <typename F>
bool resolve(void* h, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(h, name));
  return *out != nullptr;
}

}  // namespace

void cupti_start() noexcept {
  if (!env::on(env::Var::kTraceCupti)) return;
  void* h = nullptr;
  if (const char* path = env::get(env::Var::kCupti)) {
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  } else {
    for (const char* name : {"libcupti.so.13", "libcupti.so"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!h) {
    warn_once_stderr(kWarnCupti,
                     "LOCKSTEP_TRACE_CUPTI=1 but libcupti could not be loaded (%s): kernel activity "
                     "is not recorded",
                     dlerror());
    return;
  }
  Cupti& c = g_cupti;
  bool ok = resolve(h, "cuptiSubscribe", &c.subscribe) &&
            resolve(h, "cuptiEnableCallback", &c.enableCallback) &&
            resolve(h, "cuptiActivityRegisterCallbacks", &c.registerCallbacks) &&
            resolve(h, "cuptiActivityEnable", &c.activityEnable) &&
            resolve(h, "cuptiActivityFlushAll", &c.flushAll) &&
            resolve(h, "cuptiActivityGetNextRecord", &c.getNextRecord) &&
            resolve(h, "cuptiGetTimestamp", &c.getTimestamp);
  resolve(h, "cuptiGetResultString", &c.resultString);
  resolve(h, "cuptiActivityGetNumDroppedRecords", &c.getNumDropped);
  resolve(h, "cuptiActivityRegisterTimestampCallback", &c.registerTimestamp);
  if (!ok) {
    warn_once_stderr(kWarnCupti, "libcupti lacks the activity API: kernel activity is not recorded");
    return;
  }
  CUpti_SubscriberHandle sub = nullptr;
  CUptiResult rc = c.subscribe(&sub, on_api, nullptr);
  if (rc != CUPTI_SUCCESS) {
    warn_once_stderr(kWarnCupti,
                     "CUPTI is unavailable (cuptiSubscribe: %s, %d): kernel activity is not recorded, "
                     "host-side tracing continues",
                     result_name(rc), static_cast<int>(rc));
    return;
  }
  // The launch entry points NCCL and CUDA programs use, through the runtime and the driver.
  for (CUpti_CallbackId id :
       {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
        CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000})
    c.enableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2})
    c.enableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
  rc = c.registerCallbacks(buffer_requested, buffer_completed);
  if (rc == CUPTI_SUCCESS) {
    // Kernel times on the trace's clock; older CUPTI: measure the offset once.
    if (!c.registerTimestamp || c.registerTimestamp(record_timestamp) != CUPTI_SUCCESS) {
      uint64_t t = 0;
      if (c.getTimestamp(&t) == CUPTI_SUCCESS)
        g_clock_offset = static_cast<int64_t>(record_clock(nullptr)) - static_cast<int64_t>(t);
    }
    rc = c.activityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (rc == CUPTI_SUCCESS) rc = c.activityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  }
  if (rc != CUPTI_SUCCESS) {
    warn_once_stderr(kWarnCupti,
                     "CUPTI kernel activity could not be enabled (%s, %d): kernel activity is not "
                     "recorded, host-side tracing continues",
                     result_name(rc), static_cast<int>(rc));
    return;
  }
  g_active.store(true, std::memory_order_release);
  start_gpu_thread();
}

bool cupti_active() noexcept { return g_active.load(std::memory_order_acquire); }

void cupti_bind(uint64_t made_in, const uint64_t* records, size_t n) noexcept {
  ThreadIds* t = ThreadIdsOf::get();
  if (!t || t->n == 0) return;
  int nids = t->n;
  t->n = 0;
  if (!cupti_active()) return;
  // made_in + 1 is 0 for UINT64_MAX, which no noted launch carries.
  for (int i = 0; i < nids; ++i)
    if (t->ids[i].inside == made_in + 1)
      for (size_t r = 0; r < n; ++r) correlator().bind(t->ids[i].correlation_id, records[r]);
}

void cupti_flush(bool final) noexcept {
  if (!cupti_active()) return;
  g_cupti.flushAll(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

}  // namespace lockstep::trace::gpu
