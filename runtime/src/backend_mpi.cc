// The MPI data plane (CPU, the default). f16/bf16 travel as 2-byte user types reduced by user
// operations that compute in float; everything else uses MPI's built-in types and operations.
#include <climits>
#include <cstring>
#include <mutex>
#include <thread>

#include "backend.h"
#include "dtype.h"

namespace lockstep::rt::internal {

namespace {

MPI_Datatype g_f16 = MPI_DATATYPE_NULL;
MPI_Datatype g_bf16 = MPI_DATATYPE_NULL;
MPI_Op g_ops[2][3];  // [f16, bf16][sum, min, max]
std::once_flag g_types_once;

template <DType D, ReduceOp R>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, static_cast<size_t>(*len), D, R);
}

void make_types() {
  MPI_Type_contiguous(2, MPI_BYTE, &g_f16);
  MPI_Type_commit(&g_f16);
  MPI_Type_contiguous(2, MPI_BYTE, &g_bf16);
  MPI_Type_commit(&g_bf16);
  MPI_Op_create(&user_reduce<DType::f16, ReduceOp::sum>, 1, &g_ops[0][0]);
  MPI_Op_create(&user_reduce<DType::f16, ReduceOp::min>, 1, &g_ops[0][1]);
  MPI_Op_create(&user_reduce<DType::f16, ReduceOp::max>, 1, &g_ops[0][2]);
  MPI_Op_create(&user_reduce<DType::bf16, ReduceOp::sum>, 1, &g_ops[1][0]);
  MPI_Op_create(&user_reduce<DType::bf16, ReduceOp::min>, 1, &g_ops[1][1]);
  MPI_Op_create(&user_reduce<DType::bf16, ReduceOp::max>, 1, &g_ops[1][2]);
}

// MPI counts are int: large tensors go in chunks.
constexpr size_t kMaxChunk = static_cast<size_t>(INT_MAX) / 8;

Status check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return {};
  return {std::string(what) + " failed: " + mpi_error_text(rc)};
}

class MpiBackend final : public Backend {
 public:
  MpiBackend() { std::call_once(g_types_once, make_types); }
  const char* name() const override { return "mpi"; }
  Status add_set(SetComm&) override { return {}; }

  Status allreduce(SetComm& set, const void* in, void* out, size_t count, DType dtype, ReduceOp op) override {
    const size_t esz = dtype_size(dtype);
    for (size_t off = 0; off < count || (count == 0 && off == 0); off += kMaxChunk) {
      const size_t n = std::min(kMaxChunk, count - off);
      char* o = static_cast<char*>(out) + off * esz;
      const void* i = in == out ? MPI_IN_PLACE : static_cast<const char*>(in) + off * esz;
      MPI_Request rq;
      Status s = check(
          MPI_Iallreduce(i, o, static_cast<int>(n), mpi_datatype(dtype), mpi_op(dtype, op), set.data, &rq),
          "MPI_Iallreduce");
      if (s.ok()) s = mpi_wait(rq, "MPI_Iallreduce", waiter_);
      if (!s.ok()) return s;
      if (count == 0) break;
    }
    if (op == ReduceOp::average) internal::divide(out, count, dtype, set.size());
    return {};
  }

  Status allgather(SetComm& set, const void* in, void* out, size_t count, DType dtype) override {
    if (count > kMaxChunk) return {"allgather of more than 2^28 elements per rank is not supported"};
    const void* i = in;
    // In place when the caller passes its own slot of the output.
    if (in == static_cast<const char*>(out) + static_cast<size_t>(set.rank) * count * dtype_size(dtype)) {
      i = MPI_IN_PLACE;
    }
    MPI_Request rq;
    Status s = check(MPI_Iallgather(i, static_cast<int>(count), mpi_datatype(dtype), out,
                                    static_cast<int>(count), mpi_datatype(dtype), set.data, &rq),
                     "MPI_Iallgather");
    return s.ok() ? mpi_wait(rq, "MPI_Iallgather", waiter_) : s;
  }

  Status broadcast(SetComm& set, void* buf, size_t count, DType dtype, int root) override {
    const size_t esz = dtype_size(dtype);
    for (size_t off = 0; off < count; off += kMaxChunk) {
      const size_t n = std::min(kMaxChunk, count - off);
      MPI_Request rq;
      Status s = check(MPI_Ibcast(static_cast<char*>(buf) + off * esz, static_cast<int>(n),
                                  mpi_datatype(dtype), root, set.data, &rq),
                       "MPI_Ibcast");
      if (s.ok()) s = mpi_wait(rq, "MPI_Ibcast", waiter_);
      if (!s.ok()) return s;
    }
    return {};
  }

  void* alloc(size_t bytes) override { return ::operator new(bytes); }
  void release(void* p) override { ::operator delete(p); }
  Status copy(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return {};
  }
};

}  // namespace

MPI_Datatype mpi_datatype(DType dtype) {
  std::call_once(g_types_once, make_types);
  switch (dtype) {
    case DType::f16:
      return g_f16;
    case DType::bf16:
      return g_bf16;
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(DType dtype, ReduceOp op) {
  std::call_once(g_types_once, make_types);
  const int k = op == ReduceOp::min ? 1 : op == ReduceOp::max ? 2 : 0;
  if (dtype == DType::f16) return g_ops[0][k];
  if (dtype == DType::bf16) return g_ops[1][k];
  return k == 1 ? MPI_MIN : k == 2 ? MPI_MAX : MPI_SUM;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(len));
}

Status mpi_wait(MPI_Request& request, const char* what, DataPlaneWait* waiter) {
  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return check(rc, what);
    if (done) return {};
    if (waiter) {
      waiter->between_polls(started);
    } else {
      std::this_thread::yield();
    }
  }
}

std::unique_ptr<Backend> make_mpi_backend() { return std::make_unique<MpiBackend>(); }

}  // namespace lockstep::rt::internal
