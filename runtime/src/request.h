// One submitted request as the runtime holds it, shared between the application's Handle and the
// background thread, and the description of it that travels to the coordinator.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "lockstep/annotate.h"
#include "lockstep/format/layout.h"
#include "lockstep/rt.h"

namespace lockstep::rt::detail {

struct RequestState {
  Submission sub;
  std::vector<int> members;  // create_set: the new set's world ranks
  std::chrono::steady_clock::time_point submitted_at;

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  uint64_t new_set = 0;  // create_set: the id the set got
};

}  // namespace lockstep::rt::detail

namespace lockstep::rt::internal {

using detail::Op;
using detail::RequestState;
using detail::Submission;
using Clock = std::chrono::steady_clock;

// What a rank tells the coordinator about one request; two ranks' descriptions of the same name must
// agree on everything but the rank for the request to run.
struct RequestInfo {
  std::string name;
  Op op = Op::allreduce;
  DType dtype = DType::f32;
  ReduceOp reduce = ReduceOp::sum;
  uint64_t count = 0;
  int32_t root = -1;
  uint64_t set = 0;          // process set id
  std::vector<int> members;  // create_set only
};

const char* op_name(Op op);

}  // namespace lockstep::rt::internal
