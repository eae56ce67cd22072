// liblockstep_rt: named collectives negotiated across ranks (Horovod style), executed on MPI (CPU) or
// NCCL (GPU). Requests are asynchronous and matched by tensor name; docs/runtime.md has the full story.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#define LOCKSTEP_RT_API __attribute__((visibility("default")))

namespace lockstep::rt {

// Element types. f16 and bf16 are storage types: reductions convert to float, reduce, round back.
enum class DType : uint8_t { f16, bf16, f32, f64, i32, i64 };
// average is sum divided by the process set's size (integer division for i32/i64).
enum class ReduceOp : uint8_t { sum, average, min, max };
// name: Horovod-style negotiation (a request runs once every rank submitted its name, in an order the
// coordinator picks). order: no negotiation, each rank runs its requests in its own submission order,
// as raw MPI or NCCL would (reproduces cross-step mixing; see docs/runtime.md).
enum class Matching : uint8_t { name, order };

LOCKSTEP_RT_API size_t dtype_size(DType dtype);
LOCKSTEP_RT_API const char* dtype_name(DType dtype);
LOCKSTEP_RT_API const char* reduce_op_name(ReduceOp op);

// Outcome of a request: ok, or a one-line reason (mismatch across ranks, aborted, backend error).
struct Status {
  std::string message;
  bool ok() const { return message.empty(); }
};

struct Options {
  Matching matching = Matching::name;  // LOCKSTEP_RT_MATCHING=name|order overrides
};

// Initializes MPI if the application has not (MPI_THREAD_SERIALIZED; an application that calls MPI
// itself while the runtime runs must initialize MPI with MPI_THREAD_MULTIPLE), picks the backend and
// starts the background thread that does all of the runtime's MPI. Throws std::runtime_error.
LOCKSTEP_RT_API void init(int* argc = nullptr, char*** argv = nullptr, const Options& options = {});
// Collective: waits until every rank called it, stops the background thread, finalizes MPI if init
// initialized it. Requests still pending on other ranks make it stall (and abort, see the stall
// inspector in docs/runtime.md).
LOCKSTEP_RT_API void finalize();
LOCKSTEP_RT_API bool initialized();
LOCKSTEP_RT_API int rank();  // in the world
LOCKSTEP_RT_API int size();
LOCKSTEP_RT_API const char* backend_name();  // "mpi" or "nccl"
LOCKSTEP_RT_API Matching matching();

// Counters since init: data-plane collectives run, and the tensors they carried (more tensors than
// collectives means fusion happened).
struct Stats {
  uint64_t collectives = 0;
  uint64_t tensors = 0;
};
LOCKSTEP_RT_API Stats stats();

// A subgroup of ranks with its own communicators. id 0 is the global set; ids are equal on every rank.
class LOCKSTEP_RT_API ProcessSet {
 public:
  ProcessSet() = default;  // the global set
  explicit ProcessSet(uint64_t id) : id_(id) {}
  uint64_t id() const { return id_; }
  bool included() const;  // is this rank a member?
  int rank() const;       // rank within the set, -1 when not a member
  int size() const;
  std::vector<int> members() const;  // world ranks in set order

 private:
  uint64_t id_ = 0;
};

// Collective over all ranks (negotiated like a tensor named after the members): every rank passes
// the same world ranks; non-members get a set with included() == false. Throws std::runtime_error.
LOCKSTEP_RT_API ProcessSet add_process_set(const std::vector<int>& world_ranks);

namespace detail {
struct RequestState;
enum class Op : uint8_t { allreduce, allgather, broadcast, barrier, create_set };
struct Submission {
  Op op;
  std::string name;
  const void* in = nullptr;
  void* out = nullptr;
  size_t count = 0;
  DType dtype = DType::f32;
  ReduceOp reduce = ReduceOp::sum;
  int root = -1;
  uint64_t set = 0;
  uint64_t trace_token = 0;  // from lockstep_rt_collective_begin(_at), ended on completion
};
}  // namespace detail

// Wait handle of one request. Copyable; every copy waits on the same request.
class LOCKSTEP_RT_API Handle {
 public:
  Handle() = default;
  Status wait();      // blocks until the request completed or failed
  bool test() const;  // completed or failed already?
  bool valid() const { return static_cast<bool>(state_); }
  const std::string& name() const;

 private:
  friend Handle submit(detail::Submission&&, uint64_t);
  std::shared_ptr<detail::RequestState> state_;
};

// The collectives. Each records its own return address as the call site for the tracer, so that a
// finding names the application's line: call them directly from the code they belong to.

// in == out is allowed (in place). count elements of dtype; the result lands in out on every rank.
LOCKSTEP_RT_API Handle allreduce(const std::string& name, const void* in, void* out, size_t count,
                                 DType dtype, ReduceOp op, ProcessSet set = {});
// Every rank contributes count elements; out holds set.size() * count, in set rank order.
LOCKSTEP_RT_API Handle allgather(const std::string& name, const void* in, void* out, size_t count,
                                 DType dtype, ProcessSet set = {});
// root is a rank within the set; buf is read on the root and written everywhere else.
LOCKSTEP_RT_API Handle broadcast(const std::string& name, void* buf, size_t count, DType dtype, int root,
                                 ProcessSet set = {});
LOCKSTEP_RT_API Handle barrier(const std::string& name, ProcessSet set = {});

}  // namespace lockstep::rt
