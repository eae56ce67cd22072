// Device-side completion of NCCL collectives: right after an intercepted collective returns, a CUDA
// event is recorded on its stream; the tracer's GPU thread polls the events (cudaEventQuery, with no
// lock held) and marks each record COMPLETED with a DEVICE record. The CUDA runtime is loaded at run
// time (the injected library links no CUDA); without one this is a silent no-op, without a device it
// warns once. A collective that never finishes on the device stays RETURNED: the hang post-mortem.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "gpu_hooks.h"
#include "gpu_records.h"
#include "gpu_state.h"
#include "lockstep/env.h"
#include "session.h"

namespace lockstep::trace::gpu {
namespace {

// ---- the CUDA runtime, resolved at run time ------------------------------------------------------

// The few runtime entry points used, declared from the CUDA runtime API (cudaError_t is an int enum,
// events and streams are opaque pointers). cuda_abi_check.cc verifies them against cuda_runtime_api.h.
constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorNotReady = 600;
constexpr int kCudaErrorCudartUnloading = 4;  // the runtime is being torn down at exit
constexpr unsigned kCudaEventDisableTiming = 0x02;

struct CudaRuntime {
  int (*getDeviceCount)(int*) = nullptr;
  int (*getDevice)(int*) = nullptr;
  int (*eventCreateWithFlags)(void**, unsigned) = nullptr;
  int (*eventRecord)(void*, void*) = nullptr;
  int (*eventQuery)(void*) = nullptr;
  int (*eventDestroy)(void*) = nullptr;
  int (*streamIsCapturing)(void*, int*) = nullptr;
  const char* (*getErrorName)(int) = nullptr;
};

enum RuntimeState { kUntried = 0, kReady, kUnavailable };
std::atomic<int> g_rt_state{kUntried};
std::mutex g_rt_mutex;
CudaRuntime g_rt;

const char* error_name(int rc) {
  const char* n = g_rt.getErrorName ? g_rt.getErrorName(rc) : nullptr;
  return n ? n : "unknown error";
}

void* open_runtime() {
  if (const char* path = env::get(env::Var::kCudart)) return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  // The runtime the application already loaded, if it uses a shared one; else the toolkit's. Events and
  // streams are driver objects, so a second runtime instance works with the application's streams.
  for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) return h;
  for (const char* name : {"libcudart.so.13", "libcudart.so"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

bool load_runtime_locked() {
  if (!env::on(env::Var::kTraceDevice)) return false;
  void* h = open_runtime();
  if (!h) return false;  // no CUDA runtime in reach: nothing to watch, nothing to say
  CudaRuntime rt;
  rt.getDeviceCount = reinterpret_cast<int (*)(int*)>(dlsym(h, "cudaGetDeviceCount"));
  rt.getDevice = reinterpret_cast<int (*)(int*)>(dlsym(h, "cudaGetDevice"));
  rt.eventCreateWithFlags = reinterpret_cast<int (*)(void**, unsigned)>(dlsym(h, "cudaEventCreateWithFlags"));
  rt.eventRecord = reinterpret_cast<int (*)(void*, void*)>(dlsym(h, "cudaEventRecord"));
  rt.eventQuery = reinterpret_cast<int (*)(void*)>(dlsym(h, "cudaEventQuery"));
  rt.eventDestroy = reinterpret_cast<int (*)(void*)>(dlsym(h, "cudaEventDestroy"));
  rt.streamIsCapturing = reinterpret_cast<int (*)(void*, int*)>(dlsym(h, "cudaStreamIsCapturing"));
  rt.getErrorName = reinterpret_cast<const char* (*)(int)>(dlsym(h, "cudaGetErrorName"));
  if (!rt.getDeviceCount || !rt.getDevice || !rt.eventCreateWithFlags || !rt.eventRecord || !rt.eventQuery ||
      !rt.eventDestroy) {
    warn_once(kWarnCudaNoDevice, "the CUDA runtime lacks the event API: device-side completion is off");
    return false;
  }
  g_rt = rt;
  int n = 0;
  int rc = rt.getDeviceCount(&n);
  if (rc != kCudaSuccess || n <= 0) {
    warn_once(kWarnCudaNoDevice,
              "no CUDA device (cudaGetDeviceCount: %s, %d): device-side completion is off, host-side tracing "
              "continues",
              rc != kCudaSuccess ? error_name(rc) : "0 devices", rc);
    return false;
  }
  return true;
}

bool runtime_ready() {
  int st = g_rt_state.load(std::memory_order_acquire);
  if (st != kUntried) return st == kReady;
  std::lock_guard<std::mutex> lock(g_rt_mutex);
  st = g_rt_state.load(std::memory_order_acquire);
  if (st == kUntried) {
    st = load_runtime_locked() ? kReady : kUnavailable;
    g_rt_state.store(st, std::memory_order_release);
  }
  return st == kReady;
}

// ---- events in flight ----------------------------------------------------------------------------

void on_exit_stop_thread();

struct Tracked {
  uint64_t record_id;
  void* event;
};

// Bounded: while the GPU thread watches this many collectives, further ones are not tracked (warned once).
constexpr size_t kMaxInFlight = 1u << 16;
constexpr size_t kMaxPooled = 4096;

// Shared with the GPU thread, which may still run while static destructors do at exit: allocated once,
// never destroyed.
struct Shared {
  std::mutex mu;  // guards the overflow list and the pool; never held across a CUDA call
  std::condition_variable cv;
  std::vector<Tracked> overflow;  // recorded while the ring below was full
  std::vector<void*> pool;        // events ready for reuse (one device per process is the rule)
  std::atomic<bool> idle{false};  // the GPU thread waits on cv, or is about to: a push must wake it
};
Shared& shared() {
  static Shared* s = new Shared();
  return *s;
}

// Recorded events on their way to the GPU thread, without a lock on the calling thread: a bounded ring
// that any thread pushes into with one compare-and-swap on its head and the GPU thread alone drains.
// Each cell's sequence number says whose turn it is: a pusher's at position p when it reads p, the
// drain's when it reads p + 1 (the pusher's store after filling it); the drain then gives the cell to
// the push one lap later. A full ring sends the push to the locked overflow list.
constexpr uint64_t kQueueCells = 4096;  // power of two
// Two to a cache line, none across two: a push takes the line the drain last wrote from the GPU thread
// once per two calls.
struct alignas(32) QueueCell {
  std::atomic<uint64_t> seq;
  Tracked t;
};
struct Queue {
  alignas(64) std::atomic<uint64_t> head{0};  // the next position to push
  alignas(64) uint64_t tail = 0;              // the next position to drain (the GPU thread's)
  alignas(64) QueueCell cells[kQueueCells];
  Queue() {
    for (uint64_t i = 0; i < kQueueCells; ++i) cells[i].seq.store(i, std::memory_order_relaxed);
  }
};
Queue& queue() {
  static Queue* q = new Queue();
  return *q;
}

bool push(const Tracked& t) noexcept {
  Queue& q = queue();
  uint64_t pos = q.head.load(std::memory_order_relaxed);
  while (true) {
    QueueCell& c = q.cells[pos & (kQueueCells - 1)];
    const auto turn = static_cast<int64_t>(c.seq.load(std::memory_order_acquire) - pos);
    if (turn == 0) {
      // seq_cst: ordered before the load of `idle` that follows the push (wake_idle).
      if (q.head.compare_exchange_weak(pos, pos + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
        c.t = t;
        c.seq.store(pos + 1, std::memory_order_release);
        return true;
      }
    } else if (turn < 0) {
      return false;  // the cell still holds the push of a lap ago: full
    } else {
      pos = q.head.load(std::memory_order_relaxed);  // another thread took this position
    }
  }
}

// The GPU thread's: what was pushed and published, in order, up to `max`; a push still filling its
// cell stops the drain there until the next one.
void drain(std::vector<Tracked>& out, size_t max) noexcept {
  Queue& q = queue();
  for (size_t n = 0; n < max; ++n) {
    QueueCell& c = q.cells[q.tail & (kQueueCells - 1)];
    if (c.seq.load(std::memory_order_acquire) != q.tail + 1) return;
    out.push_back(c.t);
    c.seq.store(q.tail + kQueueCells, std::memory_order_release);
    ++q.tail;
  }
}

// Whether a push has taken a position the GPU thread has not drained yet (published or not).
bool queue_busy() noexcept { return queue().head.load(std::memory_order_seq_cst) != queue().tail; }

std::atomic<bool> g_saturated{false};  // the GPU thread watches kMaxInFlight collectives
std::atomic<bool> g_stop{false};
std::atomic<bool> g_thread_done{false};
std::atomic<bool> g_forked{false};
std::atomic<bool> g_interposed{false};
std::atomic<bool> g_plugin{false};
// The GPU thread started, and the exit pass registered after the runtime.
std::atomic<bool> g_tracking{false};
std::once_flag g_thread_once;

// Events this thread took from the pool and has not used yet: the pool's lock is taken once per
// kEventBatch calls, and the lines the GPU thread wrote (the lock, the pool's pointers) are taken from it
// as rarely. At the thread's exit they go back to the pool.
constexpr int kEventBatch = 64;
struct EventCache {
  void* ev[kEventBatch];
  int n = 0;
  ~EventCache() {
    // A forked child may have been forked while another thread held the lock: it never takes it.
    if (g_forked.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(shared().mu);
    while (n > 0) shared().pool.push_back(ev[--n]);
  }
};
using EventsOf = PerThread<EventCache>;

__attribute__((noinline)) void* take_event_slow(EventCache* c) {
  if (c) {
    std::lock_guard<std::mutex> lock(shared().mu);
    std::vector<void*>& pool = shared().pool;
    while (c->n < kEventBatch && !pool.empty()) {
      c->ev[c->n++] = pool.back();
      pool.pop_back();
    }
  }
  if (c && c->n > 0) return c->ev[--c->n];
  void* ev = nullptr;
  if (g_rt.eventCreateWithFlags(&ev, kCudaEventDisableTiming) != kCudaSuccess) return nullptr;
  return ev;
}

void* take_event() {
  EventCache* c = EventsOf::get_or_make();
  if (__builtin_expect(c && c->n > 0, 1)) return c->ev[--c->n];
  return take_event_slow(c);
}

void give_event(void* ev) {
  if (EventCache* c = EventsOf::get(); c && c->n < kEventBatch) {
    c->ev[c->n++] = ev;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(shared().mu);
    if (shared().pool.size() < kMaxPooled) {
      shared().pool.push_back(ev);
      return;
    }
  }
  g_rt.eventDestroy(ev);
}

// The first tracked collective starts the GPU thread, and registers its exit pass again now that the
// runtime is initialised: exit handlers run in reverse order, so this last pass comes before the
// runtime's own teardown.
__attribute__((noinline)) void start_tracking() {
  start_gpu_thread();
  static std::once_flag after_runtime;
  std::call_once(after_runtime, [] { std::atexit(on_exit_stop_thread); });
  g_tracking.store(true, std::memory_order_release);
}

// The GPU thread waits on cv only after it stored `idle` and then found the ring empty; a push read
// `idle` after taking its position. Both in one total order: either the thread sees the position taken
// and does not wait, or the push sees it idle and wakes it, through the lock it waits under.
__attribute__((noinline)) void wake_idle() {
  {
    std::lock_guard<std::mutex> lock(shared().mu);
  }
  shared().cv.notify_one();
}

void track(uint64_t record_id, void* stream) {
  if (!runtime_ready()) return;
  if (__builtin_expect(!g_tracking.load(std::memory_order_acquire), 0)) start_tracking();
  if (g_thread_done.load(std::memory_order_relaxed)) return;  // no GPU thread to watch it
  if (g_rt.streamIsCapturing) {
    // Inside stream capture an event record becomes a graph node: the collective runs at replay.
    int capturing = 0;
    if (g_rt.streamIsCapturing(stream, &capturing) == kCudaSuccess && capturing != 0) return;
  }
  if (g_saturated.load(std::memory_order_relaxed)) {
    warn_once(kWarnEventQueueFull,
              "more than %zu NCCL collectives in flight on the device: the rest are not "
              "tracked to completion",
              kMaxInFlight);
    return;
  }
  void* ev = take_event();
  if (!ev) {
    warn_once(kWarnCudaEvent, "cudaEventCreateWithFlags failed: device-side completion is incomplete");
    return;
  }
  int rc = g_rt.eventRecord(ev, stream);
  if (rc != kCudaSuccess) {
    warn_once(kWarnCudaEvent,
              "cudaEventRecord on the collective's stream failed (%s, %d): device-side "
              "completion is incomplete",
              error_name(rc), rc);
    give_event(ev);
    return;
  }
  if (__builtin_expect(!push({record_id, ev}), 0)) {
    std::lock_guard<std::mutex> lock(shared().mu);
    shared().overflow.push_back({record_id, ev});
  }
  // Only an idle thread is woken: a steady stream of calls finds it polling, and costs no wake-up.
  if (shared().idle.load(std::memory_order_seq_cst)) wake_idle();
}

// ---- NCCL groups ----------------------------------------------------------------------------------

// Members of an NCCL group run in the kernel launched at ncclGroupEnd: an event recorded when a member
// returns would complete before that kernel even starts, so members wait here until the group ends.
struct Deferred {
  uint64_t record_id;
  void* stream;
};
constexpr int kMaxDeferred = 256;
struct GroupMembers {
  Deferred members[kMaxDeferred];
  int n = 0;
};
using GroupOf = PerThread<GroupMembers>;

void flush_deferred(uint64_t group_end) {
  GroupMembers* g = GroupOf::get();
  if (!g || g->n == 0) return;
  int n = g->n;
  g->n = 0;
  uint64_t ids[kMaxDeferred];  // the first n only: a group end need not zero 2 KiB
  for (int i = 0; i < n; ++i) ids[i] = g->members[i].record_id;
  cupti_bind(group_end, ids, static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) track(g->members[i].record_id, g->members[i].stream);
}

// Nothing on the device to watch, for good: the CUDA runtime was looked for and found no device (or
// LOCKSTEP_TRACE_DEVICE=0), and CUPTI, which starts when the library loads or never, is off. Then a
// collective, or a group's end, has nothing to hand over, and returns without touching the thread's
// GPU state (the calls that bind launches, flush a group and track an event).
bool nothing_to_watch() noexcept {
  return g_rt_state.load(std::memory_order_relaxed) == kUnavailable && !cupti_active();
}

void on_nccl_collective(uint64_t record_id, void* stream) noexcept {
  if (g_forked.load(std::memory_order_relaxed)) return;
  // Read first: a store on every call would bounce the cache line between the calling threads.
  if (!g_interposed.load(std::memory_order_relaxed)) g_interposed.store(true, std::memory_order_relaxed);
  if (nothing_to_watch()) return;
  if (thread_state().nccl_group_depth > 0) {
    // What the member launched itself (a one-rank NCCL copies at once) is its own; the group's kernel
    // comes at ncclGroupEnd.
    cupti_bind(record_id, &record_id, 1);
    if (GroupMembers* g = GroupOf::get_or_make(); g && g->n < kMaxDeferred)
      g->members[g->n++] = {record_id, stream};
    return;
  }
  // This call's own launches first: the flush below forgets what it does not bind.
  cupti_bind(record_id, &record_id, 1);
  // A group whose end was not reported: its members are watched from now on, which is late but never
  // reports a completion too early.
  flush_deferred(UINT64_MAX);
  track(record_id, stream);
}

void on_nccl_group_end(uint64_t marker_id) noexcept {
  if (g_forked.load(std::memory_order_relaxed)) return;
  if (thread_state().nccl_group_depth > 0) return;  // an inner group ended; the kernel comes later
  if (nothing_to_watch()) return;  // members deferred before that was known would be dropped anyway
  flush_deferred(marker_id);
}

// ---- the GPU thread -------------------------------------------------------------------------------

void sleep_ns(long ns) {
  struct timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

void* gpu_thread_main(void*) {
  std::vector<Tracked> pending;
  std::vector<void*> done;
  std::vector<uint64_t> completed;  // the record ids of `done`'s events
  pending.reserve(1024);
  done.reserve(1024);
  completed.reserve(1024);
  long idle_sleep_ns = 50'000;
  // Beyond kMaxInFlight watched, the rest waits where it is and new calls are not tracked.
  auto room = [&pending] { return pending.size() < kMaxInFlight ? kMaxInFlight - pending.size() : 0; };
  int idle_polls = 0;  // polls that found nothing to do; after ~10 ms of them the thread waits on cv
  uint64_t last_flush = now_ns();
  bool stopping = false;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(shared().mu);
      if (pending.empty() && !queue_busy() && shared().overflow.empty() &&
          !g_stop.load(std::memory_order_acquire)) {
        if (idle_polls < 200) {
          ++idle_polls;
          lock.unlock();
          sleep_ns(50'000);
          continue;
        }
        // Idle first, then the ring looked at again (wake_idle says why).
        shared().idle.store(true, std::memory_order_seq_cst);
        if (!queue_busy()) shared().cv.wait_for(lock, std::chrono::milliseconds(100));
        shared().idle.store(false, std::memory_order_relaxed);
      }
      if (queue_busy() || !shared().overflow.empty()) idle_polls = 0;
      const size_t from_overflow = std::min(room(), shared().overflow.size());
      pending.insert(pending.end(), shared().overflow.end() - static_cast<std::ptrdiff_t>(from_overflow),
                     shared().overflow.end());
      shared().overflow.resize(shared().overflow.size() - from_overflow);
      stopping = g_stop.load(std::memory_order_acquire);
    }
    drain(pending, room());
    // Stored only when it changes: the application's threads read it on every call.
    if (const bool full = pending.size() >= kMaxInFlight; full != g_saturated.load(std::memory_order_relaxed))
      g_saturated.store(full, std::memory_order_relaxed);
    bool progressed = false;
    size_t keep = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      Tracked t = pending[i];
      int rc = g_rt.eventQuery(t.event);  // no lock held: this may take long on a busy device
      if (rc == kCudaErrorNotReady) {
        pending[keep++] = t;
        continue;
      }
      if (rc == kCudaErrorCudartUnloading) {
        // The process is exiting and the runtime is gone: what has not been seen complete stays so.
        g_rt_state.store(kUnavailable, std::memory_order_release);
        keep = 0;
        break;
      }
      progressed = true;
      if (rc == kCudaSuccess) {
        completed.push_back(t.record_id);
        done.push_back(t.event);
      } else {
        warn_once(kWarnCudaEvent, "cudaEventQuery failed (%s, %d): a collective's completion is unknown",
                  error_name(rc), rc);
      }
    }
    pending.resize(keep);
    if (!completed.empty()) {
      // Dated by this poll, which saw them complete.
      complete_on_device(completed.data(), completed.size(), now_ns());
      completed.clear();
    }
    if (!done.empty()) {
      // Back to the pool in one go: the application's threads take from it kEventBatch at a time.
      size_t kept = 0;
      {
        std::lock_guard<std::mutex> lock(shared().mu);
        while (kept < done.size() && shared().pool.size() < kMaxPooled) shared().pool.push_back(done[kept++]);
      }
      for (size_t i = kept; i < done.size(); ++i) g_rt.eventDestroy(done[i]);
      done.clear();
    }
    uint64_t now = now_ns();
    if (cupti_active() && (stopping || now - last_flush > 100'000'000ull)) {
      cupti_flush(stopping);
      last_flush = now;
    }
    if (stopping) break;
    if (!pending.empty() || queue_busy()) {  // the latter: a push between its position and its cell
      // Poll fast while collectives finish, back off while the device is busy with a long one.
      idle_sleep_ns = progressed ? 50'000 : (idle_sleep_ns < 2'000'000 ? idle_sleep_ns * 2 : 2'000'000);
      sleep_ns(idle_sleep_ns);
    }
  }
  g_thread_done.store(true, std::memory_order_release);
  return nullptr;
}

void on_exit_stop_thread() {
  if (g_forked.load(std::memory_order_relaxed)) return;
  g_stop.store(true, std::memory_order_release);
  shared().cv.notify_all();
  // A last pass records what finished; a hung device must not hang the exit, so wait a bounded time.
  for (int i = 0; i < 100 && !g_thread_done.load(std::memory_order_acquire); ++i) sleep_ns(2'000'000);
}

void on_fork_child() {
  // CUDA is unusable in a forked child and the GPU thread does not exist there.
  g_forked.store(true, std::memory_order_relaxed);
}

__attribute__((constructor)) void on_load() {
  pthread_atfork(nullptr, nullptr, on_fork_child);
  set_after_nccl_collective_hook(on_nccl_collective);
  set_after_nccl_group_end_hook(on_nccl_group_end);
  cupti_start();
}

}  // namespace

bool nccl_interposed() noexcept { return g_interposed.load(std::memory_order_relaxed); }
void note_plugin_active() noexcept { g_plugin.store(true, std::memory_order_relaxed); }
bool plugin_active() noexcept { return g_plugin.load(std::memory_order_relaxed); }

void start_gpu_thread() noexcept {
  std::call_once(g_thread_once, [] {
    queue();
    // The thread takes no signals: the application's handlers must not run on it.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    if (pthread_create(&th, nullptr, gpu_thread_main, nullptr) == 0) {
      pthread_detach(th);
      std::atexit(on_exit_stop_thread);
    } else {
      g_thread_done.store(true, std::memory_order_release);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  });
}

void wake_gpu_thread() noexcept { shared().cv.notify_one(); }

}  // namespace lockstep::trace::gpu
