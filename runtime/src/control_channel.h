// The transport of negotiation: readiness messages to the coordinator, plans to the workers and abort
// acknowledgements, as nonblocking messages on the control communicator (an MPI_Comm_dup of the global
// set's, so negotiation never mixes with data). What to send and when is the protocol's business
// (negotiation.cc); every call here is marked control plane for the tracer.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controller.h"

namespace lockstep::rt::internal {

// Marks the calling thread's MPI calls as control plane for the tracer while in scope.
struct ControlPlane {
  ControlPlane() { LOCKSTEP_CONTROL_PLANE(1); }
  ~ControlPlane() { LOCKSTEP_CONTROL_PLANE(0); }
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;
};

class ControlChannel {
 public:
  struct Message {
    int from = -1;
    std::vector<uint8_t> bytes;
  };

  ControlChannel(MPI_Comm comm, int world_size) : comm_(comm), world_size_(world_size) {}
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  void send_readiness(const Readiness& r);  // worker -> coordinator
  void send_plan(const Plan& p);            // coordinator -> every worker
  std::optional<Message> poll_readiness();  // coordinator: the next worker message that arrived
  std::optional<Message> poll_plan();       // worker: the next plan that arrived
  // Frees the buffers once every send completed.
  void reap();
  // Waits for every send (a shutdown plan must reach the workers before MPI_Finalize).
  void flush();

  // The abort: the coordinator sends `p` to every worker not in `unreachable` and waits up to
  // `patience` for each to say it printed its reason; a worker acknowledges within `patience`.
  void send_abort(const Plan& p, const std::vector<int>& unreachable, std::chrono::milliseconds patience);
  void ack_abort(std::chrono::milliseconds patience);

 private:
  static constexpr int kTagReady = 1;  // worker -> coordinator: Readiness
  static constexpr int kTagPlan = 2;   // coordinator -> workers: Plan
  static constexpr int kTagAck = 3;    // worker -> coordinator: abort received and printed
  std::optional<Message> poll(int source, int tag);

  MPI_Comm comm_;
  int world_size_;
  std::vector<MPI_Request> sends_;
  std::vector<std::vector<uint8_t>> bufs_;
};

}  // namespace lockstep::rt::internal
