// Joins CUPTI's kernel activity records to the NCCL calls that launched them. During an intercepted
// call the runtime/driver API callback sees the launch's correlation id; after the call the id is bound
// to the call's record. Kernel records arrive later, on CUPTI's thread, in either order with the
// binding. Unmatched NCCL kernels become inferred collectives when no NCCL call could be interposed.
// No CUDA headers: CUPTI records are converted to KernelActivity by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "nccl_names.h"

namespace lockstep::trace::gpu {

struct KernelActivity {
  uint32_t correlation_id = 0;
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  uint64_t end_ns = 0;
  const char* name = nullptr;  // mangled or demangled; only read during on_kernel()
  uint32_t device = 0;
  uint32_t stream = 0;
};

// Where the correlator's results go: the trace in production, a recorder in tests.
class CorrelationSink {
 public:
  virtual ~CorrelationSink() = default;
  // Kernel `k` ran collective record `record_id`.
  virtual void kernel_of_record(uint64_t record_id, const KernelActivity& k) = 0;
  // An NCCL kernel no intercepted call accounts for, numbered `seq` among the inferred ones.
  virtual void inferred_kernel(const KernelInfo& info, uint32_t seq, const KernelActivity& k) = 0;
};

class Correlator {
 public:
  // `capacity` bounds both the bindings waiting for their kernel and the kernels waiting for their
  // binding; the oldest is dropped first (counted in dropped()).
  explicit Correlator(CorrelationSink* sink, size_t capacity = 8192) : sink_(sink), capacity_(capacity) {}

  // The call that produced `record_id` launched work with this correlation id. Several records may
  // share one id: the members of an NCCL group run in the kernel launched at ncclGroupEnd.
  void bind(uint32_t correlation_id, uint64_t record_id);
  // A kernel finished. `infer_unmatched`: nothing was interposed, so an NCCL kernel with no binding
  // is reported as an inferred collective at once instead of waiting for a binding.
  void on_kernel(const KernelActivity& k, bool infer_unmatched);

  uint64_t matched() const { return matched_; }
  uint64_t inferred() const { return inferred_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t ignored() const { return ignored_; }  // kernels that are not NCCL's

 private:
  struct Held {
    KernelActivity k;  // name cleared: the caller's buffer does not outlive on_kernel()
    bool matched = false;
  };
  void trim_locked();

  CorrelationSink* sink_;
  size_t capacity_;
  std::mutex mu_;
  std::unordered_multimap<uint32_t, uint64_t> bound_;  // correlation id -> record ids
  std::deque<uint32_t> bound_order_;
  // NCCL kernels that arrived before their binding; kept (bounded) after a match, since more members
  // of the same group may bind to them.
  std::unordered_map<uint32_t, Held> held_;
  std::deque<uint32_t> held_order_;
  uint32_t next_inferred_seq_ = 0;
  uint64_t matched_ = 0, inferred_ = 0, dropped_ = 0, ignored_ = 0;
};

}  // namespace lockstep::trace::gpu
