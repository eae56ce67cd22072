// What the GPU parts of the tracer (device events, CUPTI, the profiler plugin) share: which sources of
// NCCL records are active in this process, and the tracer thread that polls events and flushes CUPTI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace lockstep::trace::gpu {

// True once an NCCL call was interposed in this process: kernels then belong to intercepted records
// and are never turned into inferred collectives.
bool nccl_interposed() noexcept;
// The profiler plugin writes this process's NCCL records itself (statically linked NCCL).
void note_plugin_active() noexcept;
bool plugin_active() noexcept;

// The tracer's GPU thread: polls the CUDA events of tracked collectives and flushes CUPTI buffers.
// Started on first use; at exit it makes a last pass, bounded in time, so a hung GPU cannot hang exit.
void start_gpu_thread() noexcept;
void wake_gpu_thread() noexcept;

// CUPTI (cupti.cc; no-ops in builds without the CUDA toolkit, see cupti_none.cc).
void cupti_start() noexcept;  // LOCKSTEP_TRACE_CUPTI=1, at load
bool cupti_active() noexcept;
// A launch is noted with the record whose real call made it (ThreadState::inside); launches made outside
// a recorded call (a communicator's creation, say) belong to no record. cupti_bind binds the launches
// made inside the record `made_in` (a call's own, or a GROUP_END marker's; UINT64_MAX: none) to every
// one of `records` (that call, or the group's members) and forgets every other launch noted on this
// thread.
void cupti_bind(uint64_t made_in, const uint64_t* records, size_t n) noexcept;
void cupti_flush(bool final) noexcept;  // from the GPU thread only

// One heap object of type T per thread, made on its first use there and freed when the thread exits.
// Every call reads the pointer from static TLS (initial-exec: one load relative to the thread pointer,
// no __tls_get_addr and no guard, though the library is dlopen'ed when NCCL loads it as a profiler
// plugin; 8 bytes, which the small static TLS surplus left for such libraries holds). Only the first
// use on a thread touches the thread_local that frees it: a destructor, registered by the C++ runtime,
// which keeps the library loaded until it has run.
template <class T>
class PerThread {
 public:
  static T* get() noexcept { return ptr_; }  // null before the first make() on this thread
  static T* get_or_make() noexcept {
    T* p = ptr_;
    return __builtin_expect(p != nullptr, 1) ? p : make();
  }

 private:
  struct Owner {
    T* p = nullptr;
    ~Owner() {
      ptr_ = nullptr;
      gone_ = true;  // a call from a later thread-exit destructor makes none again
      delete p;
    }
  };
  __attribute__((noinline)) static T* make() noexcept {
    if (gone_) return nullptr;
    T* p = new (std::nothrow) T();
    if (p) {
      owner_.p = p;
      ptr_ = p;
    }
    return p;
  }
  [[gnu::tls_model("initial-exec")]] static inline constinit thread_local T* ptr_ = nullptr;
  [[gnu::tls_model("initial-exec")]] static inline constinit thread_local bool gone_ = false;
  static inline thread_local Owner owner_;
};

}  // namespace lockstep::trace::gpu
