// The fusion buffer: small allreduces of one process set, dtype and reduction, packed back to back,
// reduced with one collective and unpacked. It lives where the backend's tensors live (host memory
// for MPI, device memory for NCCL) and only grows.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "backend.h"
#include "request.h"

namespace lockstep::rt::internal {

class FusionBuffer {
 public:
  FusionBuffer(Backend& backend, size_t threshold_bytes) : backend_(backend), threshold_(threshold_bytes) {}
  ~FusionBuffer() { release(); }
  FusionBuffer(const FusionBuffer&) = delete;
  FusionBuffer& operator=(const FusionBuffer&) = delete;

  // One allreduce over every request's tensor (all of the same dtype and reduction), in their order.
  Status allreduce(SetComm& set, const std::vector<std::shared_ptr<RequestState>>& states);
  // Frees the buffer (finalize: before the backend goes).
  void release();

 private:
  Backend& backend_;
  size_t threshold_;  // LOCKSTEP_RT_FUSION_BYTES: the buffer is at least this large once used
  void* buf_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lockstep::rt::internal
