// TEST FIXTURE, NOT CUDA: the handful of CUDA runtime calls the tracer's device-completion path makes,
// on the CPU, loaded through LOCKSTEP_CUDART. A "stream" is a FIFO of recorded events that the test
// program completes explicitly (fake_cuda_stream_release), so it can leave collectives stuck "on the
// device". LOCKSTEP_FAKE_CUDA_DEVICES=0 reports no device, as the real runtime does on a machine
// without a GPU.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace {

// A line of its own, as the events: recording takes it with a locked add on every call, and the tracer's
// GPU thread reads the data next to it (the query's settings) as often.
struct alignas(64) FakeStream {
  std::atomic<uint64_t> recorded{0};
  std::atomic<uint64_t> released{0};
};
// A cache line each, as a real runtime's event object spans one or more: 16-byte events packed four to a
// line would have the application's thread, recording one, and the tracer's GPU thread, querying its
// neighbour, take the line from each other on every call, a cost no real runtime shows.
struct alignas(64) FakeEvent {
  FakeStream* stream = nullptr;
  uint64_t ticket = 0;
};
FakeStream g_default_stream;
std::atomic<bool> g_hold_queries{false};

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kNoDevice = 100;
constexpr int kNotReady = 600;

FakeStream* stream_of(void* s) { return s ? static_cast<FakeStream*>(s) : &g_default_stream; }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cudaGetDeviceCount(int* n) {
  const char* v = std::getenv("LOCKSTEP_FAKE_CUDA_DEVICES");
  int devices = v ? std::atoi(v) : 1;
  if (n) *n = devices > 0 ? devices : 0;
  return devices > 0 ? kSuccess : kNoDevice;
}
__attribute__((visibility("default"))) int cudaGetDevice(int* d) {
  if (d) *d = 0;
  return kSuccess;
}
__attribute__((visibility("default"))) int cudaEventCreateWithFlags(void** ev, unsigned) {
  if (!ev) return kInvalidValue;
  *ev = new FakeEvent();
  return kSuccess;
}
__attribute__((visibility("default"))) int cudaEventRecord(void* ev, void* stream) {
  if (!ev) return kInvalidValue;
  auto* e = static_cast<FakeEvent*>(ev);
  e->stream = stream_of(stream);
  e->ticket = e->stream->recorded.fetch_add(1) + 1;
  return kSuccess;
}
// LOCKSTEP_FAKE_CUDA_INSTANT=1: every event is complete when first queried (for benchmarks). While the
// test program holds the queries (fake_cuda_hold_queries), a query waits: the caller, the tracer's GPU
// thread, stands still.
__attribute__((visibility("default"))) int cudaEventQuery(void* ev) {
  static const bool instant = std::getenv("LOCKSTEP_FAKE_CUDA_INSTANT") != nullptr;
  while (g_hold_queries.load()) usleep(1000);
  auto* e = static_cast<FakeEvent*>(ev);
  if (!e || !e->stream) return kInvalidValue;
  return instant || e->stream->released.load() >= e->ticket ? kSuccess : kNotReady;
}
__attribute__((visibility("default"))) int cudaEventDestroy(void* ev) {
  delete static_cast<FakeEvent*>(ev);
  return kSuccess;
}
__attribute__((visibility("default"))) int cudaStreamIsCapturing(void*, int* status) {
  if (status) *status = 0;
  return kSuccess;
}
__attribute__((visibility("default"))) const char* cudaGetErrorName(int rc) {
  switch (rc) {
    case kSuccess:
      return "cudaSuccess";
    case kNoDevice:
      return "cudaErrorNoDevice";
    case kNotReady:
      return "cudaErrorNotReady";
    default:
      return "cudaErrorInvalidValue";
  }
}

// Test controls.
__attribute__((visibility("default"))) void* fake_cuda_stream_create() { return new FakeStream(); }
// Lets the next `n` events recorded on `stream` complete, in order.
__attribute__((visibility("default"))) void fake_cuda_stream_release(void* stream, uint64_t n) {
  stream_of(stream)->released.fetch_add(n);
}
__attribute__((visibility("default"))) void fake_cuda_hold_queries(int hold) {
  g_hold_queries.store(hold != 0);
}
__attribute__((visibility("default"))) uint64_t fake_cuda_stream_recorded(void* stream) {
  return stream_of(stream)->recorded.load();
}
}
