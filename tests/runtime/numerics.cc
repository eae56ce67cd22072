// Every runtime collective, dtype and reduction checked against a reference computed here (not by the
// runtime): inputs are small integers, exact in every dtype, so sum/min/max must match bit for bit and
// average within the dtype's rounding. Runs each request alone and all at once (fused).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lockstep/rt.h"

using namespace lockstep::rt;

namespace {

const DType kTypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32, DType::i64};
const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::average, ReduceOp::min, ReduceOp::max};
const size_t kCounts[] = {1, 7, 1000, 70000};

int value(int rank, size_t i) { return static_cast<int>((rank * 7 + i * 3) % 11) - 5; }

// Encodes a double into dtype storage, independently of the runtime: the compiler's _Float16 for f16,
// float's top half for bf16 (exact for the values used here).
void store(void* buf, size_t i, DType t, double v) {
  switch (t) {
    case DType::f16: {
      _Float16 h = static_cast<_Float16>(v);
      std::memcpy(static_cast<char*>(buf) + 2 * i, &h, 2);
      break;
    }
    case DType::bf16: {
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      const uint16_t b = static_cast<uint16_t>(bits >> 16);
      std::memcpy(static_cast<char*>(buf) + 2 * i, &b, 2);
      break;
    }
    case DType::f32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case DType::f64:
      static_cast<double*>(buf)[i] = v;
      break;
    case DType::i32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case DType::i64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
  }
}

double load(const void* buf, size_t i, DType t) {
  switch (t) {
    case DType::f16: {
      _Float16 h;
      std::memcpy(&h, static_cast<const char*>(buf) + 2 * i, 2);
      return static_cast<double>(h);
    }
    case DType::bf16: {
      uint16_t b;
      std::memcpy(&b, static_cast<const char*>(buf) + 2 * i, 2);
      const uint32_t bits = static_cast<uint32_t>(b) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::f32:
      return static_cast<const float*>(buf)[i];
    case DType::f64:
      return static_cast<const double*>(buf)[i];
    case DType::i32:
      return static_cast<const int32_t*>(buf)[i];
    case DType::i64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
  }
  return NAN;
}

double tolerance(DType t) {
  switch (t) {
    case DType::f16:
      return 1e-3;
    case DType::bf16:
      return 8e-3;
    case DType::f32:
      return 1e-6;
    default:
      return 1e-12;
  }
}

bool is_int(DType t) { return t == DType::i32 || t == DType::i64; }

struct Case {
  std::string name;
  int kind;  // 0 allreduce, 1 allgather, 2 broadcast
  DType dtype;
  ReduceOp op;
  size_t count;
  int root;
  std::vector<char> in, out;
  Handle h;
};

int failures = 0;
long checks = 0;

void fail(const Case& c, const std::string& what) {
  if (failures++ < 10) std::fprintf(stderr, "rank %d: %s: %s\n", rank(), c.name.c_str(), what.c_str());
}

void verify(Case& c) {
  Status s = c.h.wait();
  if (!s.ok()) return fail(c, "error: " + s.message);
  const int n = size();
  for (size_t i = 0; i < c.count; ++i) {
    if (c.kind == 0) {
      double want = 0;
      if (c.op == ReduceOp::sum || c.op == ReduceOp::average) {
        long sum = 0;
        for (int r = 0; r < n; ++r) sum += value(r, i);
        const long truncated = sum / n;  // an integer dtype's average, as the runtime computes it
        want = c.op == ReduceOp::sum ? static_cast<double>(sum)
                                     : (is_int(c.dtype) ? static_cast<double>(truncated) : double(sum) / n);
      } else {
        want = value(0, i);
        for (int r = 1; r < n; ++r) {
          want = c.op == ReduceOp::min ? std::min<double>(want, value(r, i))
                                       : std::max<double>(want, value(r, i));
        }
      }
      const double got = load(c.out.data(), i, c.dtype);
      const double tol = c.op == ReduceOp::average ? tolerance(c.dtype) * std::max(1.0, std::fabs(want)) : 0;
      ++checks;
      if (std::fabs(got - want) > tol) {
        return fail(c, "element " + std::to_string(i) + ": got " + std::to_string(got) + ", want " +
                           std::to_string(want));
      }
    } else if (c.kind == 1) {
      for (int r = 0; r < n; ++r) {
        ++checks;
        if (load(c.out.data(), r * c.count + i, c.dtype) != value(r, i)) {
          return fail(c, "allgather slot of rank " + std::to_string(r) + " element " + std::to_string(i));
        }
      }
    } else {
      ++checks;
      if (load(c.out.data(), i, c.dtype) != value(c.root, i)) return fail(c, "element " + std::to_string(i));
    }
  }
}

std::vector<Case> make_cases(const std::string& tag) {
  std::vector<Case> cases;
  const int n = size();
  for (DType t : kTypes) {
    for (size_t count : kCounts) {
      const size_t esz = dtype_size(t);
      for (ReduceOp op : kOps) {
        Case c{tag + "/allreduce/" + dtype_name(t) + "/" + reduce_op_name(op) + "/" + std::to_string(count),
               0,
               t,
               op,
               count,
               -1,
               std::vector<char>(count * esz),
               std::vector<char>(count * esz),
               {}};
        for (size_t i = 0; i < count; ++i) store(c.in.data(), i, t, value(rank(), i));
        cases.push_back(std::move(c));
      }
      Case g{tag + "/allgather/" + dtype_name(t) + "/" + std::to_string(count),
             1,
             t,
             ReduceOp::sum,
             count,
             -1,
             std::vector<char>(count * esz),
             std::vector<char>(count * esz * n),
             {}};
      for (size_t i = 0; i < count; ++i) store(g.in.data(), i, t, value(rank(), i));
      cases.push_back(std::move(g));
      for (int root : {0, n - 1}) {
        Case b{tag + "/broadcast/" + dtype_name(t) + "/" + std::to_string(count) + "/root" +
                   std::to_string(root),
               2,
               t,
               ReduceOp::sum,
               count,
               root,
               {},
               std::vector<char>(count * esz),
               {}};
        for (size_t i = 0; i < count; ++i) store(b.out.data(), i, t, rank() == root ? value(rank(), i) : 99);
        cases.push_back(std::move(b));
      }
    }
  }
  return cases;
}

void submit(Case& c) {
  if (c.kind == 0) {
    c.h = allreduce(c.name, c.in.data(), c.out.data(), c.count, c.dtype, c.op);
  } else if (c.kind == 1) {
    c.h = allgather(c.name, c.in.data(), c.out.data(), c.count, c.dtype);
  } else {
    c.h = broadcast(c.name, c.out.data(), c.count, c.dtype, c.root);
  }
}

}  // namespace

int main(int argc, char** argv) {
  init(&argc, &argv);
  // One at a time: every request runs unfused.
  auto single = make_cases("single");
  for (auto& c : single) {
    submit(c);
    verify(c);
  }
  // All at once: small allreduces of one dtype and operation fuse into shared buffers.
  auto burst = make_cases("burst");
  for (auto& c : burst) submit(c);
  for (auto& c : burst) verify(c);
  // In place.
  std::vector<float> inplace(100);
  for (size_t i = 0; i < inplace.size(); ++i) inplace[i] = static_cast<float>(value(rank(), i));
  Status s =
      allreduce("inplace", inplace.data(), inplace.data(), inplace.size(), DType::f32, ReduceOp::sum).wait();
  for (size_t i = 0; i < inplace.size() && s.ok(); ++i) {
    long sum = 0;
    for (int r = 0; r < size(); ++r) sum += value(r, i);
    ++checks;
    if (inplace[i] != static_cast<float>(sum)) {
      std::fprintf(stderr, "rank %d: inplace element %zu wrong\n", rank(), i);
      ++failures;
      break;
    }
  }
  if (!s.ok()) ++failures;
  Status b = barrier("end").wait();
  if (!b.ok()) ++failures;
  const int me = rank(), n = size();
  const char* backend = backend_name();
  finalize();
  if (failures) {
    std::fprintf(stderr, "rank %d: %d failure(s)\n", me, failures);
    return 1;
  }
  if (me == 0) std::printf("numerics ok: %ld checks on %d ranks (%s backend)\n", checks, n, backend);
  return 0;
}
