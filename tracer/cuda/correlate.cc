// Correlation of kernel activity with intercepted NCCL calls (correlate.h). The sink is called with the
// lock released, so a sink that writes the trace never runs under the correlator's lock.
#include "correlate.h"

namespace lockstep::trace::gpu {

void Correlator::trim_locked() {
  while (bound_order_.size() > capacity_) {
    // A binding whose kernel never came (the kernel record was lost, or the call launched nothing).
    dropped_ += bound_.erase(bound_order_.front());
    bound_order_.pop_front();
  }
  while (held_order_.size() > capacity_) {
    auto h = held_.find(held_order_.front());
    if (h != held_.end()) {
      if (!h->second.matched) ++dropped_;
      held_.erase(h);
    }
    held_order_.pop_front();
  }
}

void Correlator::bind(uint32_t correlation_id, uint64_t record_id) {
  KernelActivity k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto held = held_.find(correlation_id);
    if (held == held_.end()) {
      bound_.emplace(correlation_id, record_id);
      bound_order_.push_back(correlation_id);
      trim_locked();
      return;
    }
    k = held->second.k;
    held->second.matched = true;
    ++matched_;
  }
  sink_->kernel_of_record(record_id, k);
}

void Correlator::on_kernel(const KernelActivity& k, bool infer_unmatched) {
  KernelInfo info;
  bool nccl = k.name && parse_nccl_kernel(k.name, &info);
  uint64_t records[64];
  size_t nrecords = 0;
  uint32_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [first, last] = bound_.equal_range(k.correlation_id);
    if (first != last) {
      // Any kernel launched inside an intercepted call is that call's, NCCL-named or not.
      for (auto b = first; b != last && nrecords < 64; ++b) records[nrecords++] = b->second;
      bound_.erase(first, last);
      matched_ += nrecords;
    } else if (!nccl) {
      ++ignored_;
      return;
    } else if (infer_unmatched) {
      seq = next_inferred_seq_++;
      ++inferred_;
    } else {
      Held h{k};
      h.k.name = nullptr;
      held_[k.correlation_id] = h;
      held_order_.push_back(k.correlation_id);
      trim_locked();
      return;
    }
  }
  if (nrecords) {
    for (size_t i = 0; i < nrecords; ++i) sink_->kernel_of_record(records[i], k);
  } else {
    sink_->inferred_kernel(info, seq, k);
  }
}

}  // namespace lockstep::trace::gpu
