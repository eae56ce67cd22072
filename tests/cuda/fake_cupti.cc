// TEST FIXTURE, NOT CUPTI: the CUPTI calls the tracer makes (callbacks, activity buffers, timestamps),
// on the CPU, loaded through LOCKSTEP_CUPTI. A test "launches" a kernel with fake_cupti_launch(): the
// subscriber's launch callback runs on the calling thread with a fresh correlation id, exactly as
// CUPTI runs it inside cuLaunchKernel, and a kernel activity record with that id is queued; flushing
// hands the queued records to the tracer in CUPTI's buffer format. LOCKSTEP_FAKE_CUPTI_SUBSCRIBE=999
// makes cuptiSubscribe fail as CUPTI does on a machine without a GPU.
#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

std::mutex g_mu;
CUpti_CallbackFunc g_callback = nullptr;
void* g_userdata = nullptr;
std::set<std::pair<int, int>> g_enabled;  // (domain, cbid)
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
CUpti_TimestampCallbackFunc g_timestamp = nullptr;
std::atomic<uint32_t> g_next_correlation{1000};

// One record slot: big enough for either record kind, 8-byte aligned like CUPTI's.
union Slot {
  CUpti_Activity base;
  CUpti_ActivityKernel10 kernel;
  CUpti_ActivityMemcpy6 memcpy;
};
struct Pending {
  Slot slot;
  std::string name;  // kernel names must outlive the buffer hand-over
};
std::vector<Pending*> g_queue;

uint64_t timestamp() {
  if (g_timestamp) return g_timestamp();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec) + 777;  // a clock CUPTI's own
}

// One API call's callbacks, fired the way CUPTI fires them when the subscriber enabled that call.
struct ApiCall {
  ApiCall(CUpti_CallbackDomain d, CUpti_CallbackId id, const char* function, uint32_t corr)
      : domain(d), cbid(id) {
    std::lock_guard<std::mutex> lock(g_mu);
    enabled = g_callback && g_enabled.count({int(domain), int(cbid)});
    std::memset(&data, 0, sizeof data);
    data.correlationId = corr;
    data.functionName = function;
  }
  void fire(CUpti_ApiCallbackSite site) {
    data.callbackSite = site;
    if (enabled) g_callback(g_userdata, domain, cbid, &data);
  }
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  bool enabled = false;
  CUpti_CallbackData data;
};

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc cb, void* userdata) {
  if (const char* v = std::getenv("LOCKSTEP_FAKE_CUPTI_SUBSCRIBE"))
    return static_cast<CUptiResult>(std::atoi(v));
  std::lock_guard<std::mutex> lock(g_mu);
  g_callback = cb;
  g_userdata = userdata;
  *sub = reinterpret_cast<CUpti_SubscriberHandle>(&g_callback);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                         CUpti_CallbackId cbid) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (enable) g_enabled.insert({int(domain), int(cbid)});
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
  g_timestamp = f;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* t) {
  *t = timestamp();
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult rc, const char** s) {
  *s = rc == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN" : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* n) {
  *n = 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  uint8_t* next = *record ? reinterpret_cast<uint8_t*>(*record) + sizeof(Slot) : buffer;
  if (next + sizeof(Slot) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  std::vector<Pending*> batch;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    batch.swap(g_queue);
  }
  if (batch.empty() || !g_request || !g_complete) return CUPTI_SUCCESS;
  uint8_t* buf = nullptr;
  size_t size = 0, max_records = 0;
  g_request(&buf, &size, &max_records);
  size_t n = size / sizeof(Slot) < batch.size() ? size / sizeof(Slot) : batch.size();
  for (size_t i = 0; i < n; ++i) std::memcpy(buf + i * sizeof(Slot), &batch[i]->slot, sizeof(Slot));
  g_complete(nullptr, 0, buf, size, n * sizeof(Slot));
  for (Pending* p : batch) delete p;
  return CUPTI_SUCCESS;
}

// Test controls. A kernel `name` (nullptr: a copy) launched now from this thread through the runtime's
// cudaLaunchKernel (copies: cudaMemcpyAsync), which calls the driver's cuLaunchKernel (cuMemcpyAsync)
// under the same correlation id, as CUDA does: both callbacks fire. It runs for 5 microseconds.
__attribute__((visibility("default"))) uint32_t fake_cupti_launch(const char* name) {
  uint32_t corr = g_next_correlation.fetch_add(1);
  ApiCall rt(
      CUPTI_CB_DOMAIN_RUNTIME_API,
      name ? CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
      name ? "cudaLaunchKernel" : "cudaMemcpyAsync", corr);
  ApiCall drv(CUPTI_CB_DOMAIN_DRIVER_API,
              name ? CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel : CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
              name ? "cuLaunchKernel" : "cuMemcpyAsync", corr);
  rt.fire(CUPTI_API_ENTER);
  drv.fire(CUPTI_API_ENTER);
  auto* p = new Pending();
  std::memset(&p->slot, 0, sizeof p->slot);
  uint64_t start = timestamp();
  if (name) {
    p->name = name;
    p->slot.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    p->slot.kernel.start = start;
    p->slot.kernel.end = start + 5000;
    p->slot.kernel.correlationId = corr;
    p->slot.kernel.name = p->name.c_str();
  } else {
    p->slot.memcpy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    p->slot.memcpy.start = start;
    p->slot.memcpy.end = start + 5000;
    p->slot.memcpy.correlationId = corr;
  }
  drv.fire(CUPTI_API_EXIT);
  rt.fire(CUPTI_API_EXIT);
  std::lock_guard<std::mutex> lock(g_mu);
  g_queue.push_back(p);
  return corr;
}
}
