// A data plane: executes negotiated collectives on one process set's communicator. Backends are tried
// in the order LOCKSTEP_RT_BACKEND lists them (default "mpi"); the first that initializes wins.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/rt.h"

namespace lockstep::rt::internal {

// A process set as this rank holds it. Members only have communicators.
struct SetComm {
  uint64_t id = 0;
  std::vector<int> members;          // world ranks in set order
  int rank = -1;                     // this rank within the set, -1 when not a member
  MPI_Comm data = MPI_COMM_NULL;     // data-plane MPI traffic (and NCCL bootstrap)
  MPI_Comm control = MPI_COMM_NULL;  // negotiation only: MPI_Comm_dup of data, marked control-plane
  void* backend_comm = nullptr;      // the NCCL communicator, when NCCL is the backend
  int size() const { return static_cast<int>(members.size()); }
};

// What a backend calls between two polls of a collective it started and that has not finished yet.
// The runtime keeps answering the control plane meanwhile (heartbeats, and an abort naming a rank that
// died) and paces the polls; it may not return (the rank aborts). A backend therefore never blocks
// in a collective: a peer that died inside one would leave this rank deaf to the control plane.
class DataPlaneWait {
 public:
  virtual ~DataPlaneWait() = default;
  virtual void between_polls(std::chrono::steady_clock::time_point started) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  void set_waiter(DataPlaneWait* waiter) { waiter_ = waiter; }
  virtual const char* name() const = 0;
  // Sets up the backend's communicator for a set this rank belongs to (collective over the set).
  virtual Status add_set(SetComm& set) = 0;
  virtual void remove_set(SetComm& set) {}
  // in == out is allowed. average divides by the set size after the sum.
  virtual Status allreduce(SetComm& set, const void* in, void* out, size_t count, DType dtype,
                           ReduceOp op) = 0;
  virtual Status allgather(SetComm& set, const void* in, void* out, size_t count, DType dtype) = 0;
  virtual Status broadcast(SetComm& set, void* buf, size_t count, DType dtype, int root) = 0;
  // Fusion buffers live where the backend's tensors live (host for MPI, device for NCCL).
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;

 protected:
  DataPlaneWait* waiter_ = nullptr;
};

std::unique_ptr<Backend> make_mpi_backend();
// nullptr (and why in *why_not) when NCCL cannot be used here: not built, library or device missing.
std::unique_ptr<Backend> make_nccl_backend(std::string* why_not);

// The MPI datatype and reduction for a runtime dtype (user types and ops for f16/bf16).
MPI_Datatype mpi_datatype(DType dtype);
MPI_Op mpi_op(DType dtype, ReduceOp op);
std::string mpi_error_text(int code);
// Polls a nonblocking MPI operation to completion, calling `waiter` between polls (when set).
Status mpi_wait(MPI_Request& request, const char* what, DataPlaneWait* waiter);

}  // namespace lockstep::rt::internal
