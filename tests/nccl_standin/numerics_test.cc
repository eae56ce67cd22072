// Checks the CPU stand-in libnccl.so.2 (a test fixture) on 2-4 MPI ranks: every collective with every
// NCCL dtype, every built-in reduction op and the in-place forms, against references computed here
// from the inputs, plus grouped Send/Recv rings, communicator management and error reporting.
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_rank = 0, g_size = 1, g_failures = 0;

#define EXPECT(cond, ...)                                                     \
  do {                                                                        \
    if (!(cond)) {                                                            \
      if (g_failures++ < 20) {                                                \
        std::fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__); \
        std::fprintf(stderr, __VA_ARGS__);                                    \
        std::fputc('\n', stderr);                                             \
      }                                                                       \
    }                                                                         \
  } while (0)

#define NCCL_OK(call)                                                                           \
  do {                                                                                          \
    ncclResult_t rc_ = (call);                                                                  \
    if (rc_ != ncclSuccess) {                                                                   \
      std::fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, #call, ncclGetErrorString(rc_)); \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                             \
    }                                                                                           \
  } while (0)

// The element types as this test sees them: width, and how a value is written and read back.
// Narrow floats are written only with small integers (exact in every format) and read by decoding
// sign, exponent and mantissa by hand.
struct Type {
  ncclDataType_t t;
  const char* name;
  size_t size;
  bool is_signed;
  bool is_float;
  int exp_bits, man_bits;  // narrow floats only
  bool fn;                 // e4m3: no infinities
};
const Type kTypes[] = {
    {ncclInt8, "int8", 1, true, false, 0, 0, false},
    {ncclUint8, "uint8", 1, false, false, 0, 0, false},
    {ncclInt32, "int32", 4, true, false, 0, 0, false},
    {ncclUint32, "uint32", 4, false, false, 0, 0, false},
    {ncclInt64, "int64", 8, true, false, 0, 0, false},
    {ncclUint64, "uint64", 8, false, false, 0, 0, false},
    {ncclFloat16, "half", 2, true, true, 5, 10, false},
    {ncclFloat32, "float", 4, true, true, 0, 0, false},
    {ncclFloat64, "double", 8, true, true, 0, 0, false},
    {ncclBfloat16, "bfloat16", 2, true, true, 8, 7, false},
    {ncclFloat8e4m3, "fp8e4m3", 1, true, true, 4, 3, true},
    {ncclFloat8e5m2, "fp8e5m2", 1, true, true, 5, 2, false},
};

// Small integer -> narrow float bits, exact for |v| <= 16 in every format used here.
uint32_t narrow_from_int(int v, const Type& ty) {
  const uint32_t sign = v < 0 ? 1u << (ty.exp_bits + ty.man_bits) : 0;
  unsigned a = unsigned(std::abs(v));
  if (a == 0) return sign;
  int e = 0;
  while ((a >> (e + 1)) != 0) ++e;
  const int bias = (1 << (ty.exp_bits - 1)) - 1;
  const uint32_t mant = (a - (1u << e)) << (ty.man_bits - e);
  return sign | (uint32_t(e + bias) << ty.man_bits) | mant;
}

double narrow_to_double(uint32_t bits, const Type& ty) {
  const int bias = (1 << (ty.exp_bits - 1)) - 1;
  const uint32_t e = (bits >> ty.man_bits) & ((1u << ty.exp_bits) - 1);
  const uint32_t m = bits & ((1u << ty.man_bits) - 1);
  const bool neg = bits >> (ty.exp_bits + ty.man_bits) & 1;
  double mag = e == 0 ? std::ldexp(m, 1 - bias - ty.man_bits)
                      : std::ldexp(1.0 + std::ldexp(m, -ty.man_bits), int(e) - bias);
  return neg ? -mag : mag;
}

void put(uint8_t* buf, size_t i, const Type& ty, int v) {
  uint8_t* p = buf + i * ty.size;
  switch (ty.t) {
    case ncclInt8: {
      int8_t x = int8_t(v);
      std::memcpy(p, &x, 1);
      break;
    }
    case ncclUint8: {
      uint8_t x = uint8_t(v);
      std::memcpy(p, &x, 1);
      break;
    }
    case ncclInt32: {
      int32_t x = v;
      std::memcpy(p, &x, 4);
      break;
    }
    case ncclUint32: {
      uint32_t x = uint32_t(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case ncclInt64: {
      int64_t x = v;
      std::memcpy(p, &x, 8);
      break;
    }
    case ncclUint64: {
      uint64_t x = uint64_t(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case ncclFloat32: {
      float x = float(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case ncclFloat64: {
      double x = v;
      std::memcpy(p, &x, 8);
      break;
    }
    case ncclFloat16:
    case ncclBfloat16: {
      uint16_t x = uint16_t(narrow_from_int(v, ty));
      std::memcpy(p, &x, 2);
      break;
    }
    default: {
      uint8_t x = uint8_t(narrow_from_int(v, ty));
      std::memcpy(p, &x, 1);
      break;
    }
  }
}

double get(const uint8_t* buf, size_t i, const Type& ty) {
  const uint8_t* p = buf + i * ty.size;
  switch (ty.t) {
    case ncclInt8: {
      int8_t x;
      std::memcpy(&x, p, 1);
      return x;
    }
    case ncclUint8: {
      uint8_t x;
      std::memcpy(&x, p, 1);
      return x;
    }
    case ncclInt32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case ncclUint32: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case ncclInt64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return double(x);
    }
    case ncclUint64: {
      uint64_t x;
      std::memcpy(&x, p, 8);
      return double(x);
    }
    case ncclFloat32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case ncclFloat64: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case ncclFloat16:
    case ncclBfloat16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      return narrow_to_double(x, ty);
    }
    default: {
      uint8_t x;
      std::memcpy(&x, p, 1);
      return narrow_to_double(x, ty);
    }
  }
}

struct RedOp {
  ncclRedOp_t op;
  const char* name;
};
const RedOp kOps[] = {
    {ncclSum, "sum"}, {ncclProd, "prod"}, {ncclMax, "max"}, {ncclMin, "min"}, {ncclAvg, "avg"}};

// Input element i of rank r for a reduction: small integers whose sums and products stay exact.
int input(int r, size_t i, const Type& ty, ncclRedOp_t op) {
  if (op == ncclProd) {
    int v = 1 + int((r + i) % 2);
    return ty.is_signed && i % 3 == 0 && r == 0 ? -v : v;
  }
  return int((r * 3 + i) % 4) - (ty.is_signed ? 1 : 0);
}

double reference(size_t i, const Type& ty, ncclRedOp_t op, int nranks) {
  double acc = input(0, i, ty, op);
  for (int r = 1; r < nranks; ++r) {
    const double v = input(r, i, ty, op);
    switch (op) {
      case ncclSum:
      case ncclAvg:
        acc += v;
        break;
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        break;
    }
  }
  if (op == ncclAvg) acc = ty.is_float ? acc / nranks : std::trunc(acc / nranks);
  return acc;
}

// Averages of a non-power-of-two rank count round; everything else here is exact.
bool close(double got, double want, const Type& ty) {
  if (!ty.is_float) return got == want;
  const int man = ty.man_bits ? ty.man_bits : (ty.t == ncclFloat32 ? 23 : 52);
  return std::fabs(got - want) <= std::fabs(want) * std::ldexp(1.0, -man) + 1e-300;
}

void check_reduced(const char* what, const uint8_t* out, size_t first, size_t count, const Type& ty,
                   const RedOp& op) {
  for (size_t i = 0; i < count; ++i) {
    const double want = reference(first + i, ty, op.op, g_size), got = get(out, i, ty);
    EXPECT(close(got, want, ty), "%s %s %s: element %zu is %g, want %g", what, ty.name, op.name, first + i,
           got, want);
  }
}

int my_rank(ncclComm_t comm) {
  int r = -1;
  NCCL_OK(ncclCommUserRank(comm, &r));
  return r;
}

uint8_t pattern(int r, size_t byte) { return uint8_t(r * 131 + byte * 7 + 3); }

void test_reductions(ncclComm_t comm) {
  const int me = my_rank(comm);
  const size_t n = 37;  // not a multiple of anything interesting
  for (const Type& ty : kTypes) {
    for (const RedOp& op : kOps) {
      std::vector<uint8_t> in(n * g_size * ty.size), out(n * g_size * ty.size, 0xEE);
      for (size_t i = 0; i < n * g_size; ++i) put(in.data(), i, ty, input(me, i, ty, op.op));

      NCCL_OK(ncclAllReduce(in.data(), out.data(), n, ty.t, op.op, comm, nullptr));
      check_reduced("allreduce", out.data(), 0, n, ty, op);

      std::vector<uint8_t> inplace(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n * ty.size));
      NCCL_OK(ncclAllReduce(inplace.data(), inplace.data(), n, ty.t, op.op, comm, nullptr));
      check_reduced("allreduce in place", inplace.data(), 0, n, ty, op);

      const int root = g_size - 1;
      std::fill(out.begin(), out.end(), 0xEE);
      NCCL_OK(ncclReduce(in.data(), out.data(), n, ty.t, op.op, root, comm, nullptr));
      if (me == root) check_reduced("reduce", out.data(), 0, n, ty, op);

      // Reduce-scatter: rank r gets block r of the reduction of everyone's n*size elements.
      std::fill(out.begin(), out.end(), 0xEE);
      NCCL_OK(ncclReduceScatter(in.data(), out.data(), n, ty.t, op.op, comm, nullptr));
      check_reduced("reducescatter", out.data(), n * me, n, ty, op);

      std::vector<uint8_t> rs(in);
      NCCL_OK(ncclReduceScatter(rs.data(), rs.data() + n * me * ty.size, n, ty.t, op.op, comm, nullptr));
      check_reduced("reducescatter in place", rs.data() + n * me * ty.size, n * me, n, ty, op);
    }
  }
}

void test_data_movement(ncclComm_t comm) {
  const int me = my_rank(comm);
  const size_t n = 19;
  for (const Type& ty : kTypes) {
    const size_t bytes = n * ty.size;
    auto fill = [&](std::vector<uint8_t>& v, int r, size_t offset) {
      for (size_t b = 0; b < v.size(); ++b) v[b] = pattern(r, offset + b);
    };
    std::vector<uint8_t> mine(bytes), all(bytes * g_size), out(bytes * g_size);
    fill(mine, me, 0);
    for (int root = 0; root < g_size; ++root) {
      std::vector<uint8_t> buf(bytes, 0);
      if (me == root) buf = mine;
      NCCL_OK(ncclBcast(buf.data(), n, ty.t, root, comm, nullptr));
      std::vector<uint8_t> want(bytes);
      fill(want, root, 0);
      EXPECT(buf == want, "bcast %s root %d", ty.name, root);

      std::vector<uint8_t> got(bytes, 0);
      NCCL_OK(ncclBroadcast(mine.data(), got.data(), n, ty.t, root, comm, nullptr));
      EXPECT(got == want, "broadcast %s root %d", ty.name, root);

      std::fill(out.begin(), out.end(), 0);
      NCCL_OK(ncclGather(mine.data(), out.data(), n, ty.t, root, comm, nullptr));
      if (me == root) {
        for (int r = 0; r < g_size; ++r) {
          fill(want, r, 0);
          EXPECT(std::memcmp(out.data() + r * bytes, want.data(), bytes) == 0, "gather %s root %d block %d",
                 ty.name, root, r);
        }
      }

      // Scatter: the root's buffer holds block r for rank r.
      std::vector<uint8_t> src(bytes * g_size);
      fill(src, root, 0);
      std::fill(got.begin(), got.end(), 0);
      NCCL_OK(ncclScatter(src.data(), got.data(), n, ty.t, root, comm, nullptr));
      EXPECT(std::memcmp(got.data(), src.data() + me * bytes, bytes) == 0, "scatter %s root %d", ty.name,
             root);
    }

    std::fill(out.begin(), out.end(), 0);
    NCCL_OK(ncclAllGather(mine.data(), out.data(), n, ty.t, comm, nullptr));
    for (int r = 0; r < g_size; ++r) {
      std::vector<uint8_t> want(bytes);
      fill(want, r, 0);
      EXPECT(std::memcmp(out.data() + r * bytes, want.data(), bytes) == 0, "allgather %s block %d", ty.name,
             r);
    }
    std::vector<uint8_t> ag(bytes * g_size, 0);
    std::memcpy(ag.data() + me * bytes, mine.data(), bytes);
    NCCL_OK(ncclAllGather(ag.data() + me * bytes, ag.data(), n, ty.t, comm, nullptr));
    EXPECT(ag == out, "allgather in place %s", ty.name);

    // Alltoall: block j of rank r's input goes to rank j as block r.
    fill(all, me, 0);
    NCCL_OK(ncclAlltoAll(all.data(), out.data(), n, ty.t, comm, nullptr));
    for (int r = 0; r < g_size; ++r) {
      std::vector<uint8_t> src(bytes * g_size);
      fill(src, r, 0);
      EXPECT(std::memcmp(out.data() + r * bytes, src.data() + me * bytes, bytes) == 0, "alltoall %s block %d",
             ty.name, r);
    }
  }
}

// A ring in both directions inside one group, repeated: without the group's concurrency this deadlocks.
void test_send_recv(ncclComm_t comm) {
  const int me = my_rank(comm);
  const size_t n = 1000;
  const int next = (me + 1) % g_size, prev = (me + g_size - 1) % g_size;
  std::vector<uint8_t> to_next(n * 4), to_prev(n * 4), from_prev(n * 4), from_next(n * 4);
  for (size_t b = 0; b < to_next.size(); ++b) {
    to_next[b] = pattern(me, b);
    to_prev[b] = pattern(me + 7, b);
  }
  for (int round = 0; round < 3; ++round) {
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(to_next.data(), n, ncclFloat32, next, comm, nullptr));
    NCCL_OK(ncclSend(to_prev.data(), n, ncclFloat32, prev, comm, nullptr));
    NCCL_OK(ncclGroupStart());  // nested: runs at the outermost end
    NCCL_OK(ncclRecv(from_prev.data(), n, ncclFloat32, prev, comm, nullptr));
    NCCL_OK(ncclRecv(from_next.data(), n, ncclFloat32, next, comm, nullptr));
    NCCL_OK(ncclGroupEnd());
    NCCL_OK(ncclGroupEnd());
    for (size_t b = 0; b < from_prev.size(); ++b) {
      EXPECT(from_prev[b] == pattern(prev, b), "ring from prev byte %zu", b);
      EXPECT(from_next[b] == pattern(next + 7, b), "ring from next byte %zu", b);
      if (g_failures) return;
    }
  }
  // A collective inside a group runs at the end of the group.
  std::vector<int32_t> in(5, me + 1), out(5, 0);
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(in.data(), out.data(), 5, ncclInt32, ncclSum, comm, nullptr));
  NCCL_OK(ncclGroupEnd());
  EXPECT(out[4] == g_size * (g_size + 1) / 2, "grouped allreduce gave %d", out[4]);
}

void test_management(ncclComm_t world) {
  int version = 0, count = 0, rank = -1, dev = -1;
  NCCL_OK(ncclGetVersion(&version));
  EXPECT(version == NCCL_VERSION_CODE, "version %d", version);
  NCCL_OK(ncclCommCount(world, &count));
  NCCL_OK(ncclCommUserRank(world, &rank));
  NCCL_OK(ncclCommCuDevice(world, &dev));
  EXPECT(count == g_size && rank == g_rank && dev >= 0, "count %d rank %d device %d", count, rank, dev);

  // Split by parity, ordered by descending key: ranks are renumbered within each colour.
  ncclComm_t half = nullptr;
  NCCL_OK(ncclCommSplit(world, g_rank % 2, -g_rank, &half, nullptr));
  NCCL_OK(ncclCommCount(half, &count));
  NCCL_OK(ncclCommUserRank(half, &rank));
  const int members = (g_size + 1 - g_rank % 2) / 2;
  EXPECT(count == members, "split size %d, want %d", count, members);
  EXPECT(rank == members - 1 - g_rank / 2, "split rank %d", rank);
  int32_t one = 1, sum = 0;
  NCCL_OK(ncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, half, nullptr));
  EXPECT(sum == members, "split allreduce %d", sum);
  NCCL_OK(ncclCommDestroy(half));

  ncclComm_t none = reinterpret_cast<ncclComm_t>(&none);
  NCCL_OK(ncclCommSplit(world, g_rank == 0 ? NCCL_SPLIT_NOCOLOR : 0, 0, &none, nullptr));
  EXPECT((g_rank == 0) == (none == nullptr), "NOCOLOR split gave %p", static_cast<void*>(none));
  if (none) NCCL_OK(ncclCommDestroy(none));

  // Shrink away rank 0: the rest are renumbered 0..n-2.
  int excluded = 0;
  ncclComm_t shrunk = nullptr;
  NCCL_OK(ncclCommShrink(world, &excluded, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT));
  if (g_rank == 0) {
    EXPECT(shrunk == nullptr, "excluded rank got a communicator");
  } else {
    NCCL_OK(ncclCommUserRank(shrunk, &rank));
    EXPECT(rank == g_rank - 1, "shrunk rank %d", rank);
    NCCL_OK(ncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, shrunk, nullptr));
    EXPECT(sum == g_size - 1, "shrunk allreduce %d", sum);
    NCCL_OK(ncclCommFinalize(shrunk));
    NCCL_OK(ncclCommDestroy(shrunk));
  }

  ncclComm_t self = nullptr;
  NCCL_OK(ncclCommInitAll(&self, 1, nullptr));
  NCCL_OK(ncclCommCount(self, &count));
  EXPECT(count == 1, "InitAll size %d", count);
  NCCL_OK(ncclCommDestroy(self));
  ncclComm_t two[2];
  EXPECT(ncclCommInitAll(two, 2, nullptr) == ncclInvalidUsage, "InitAll(2) should be refused on CPU");

  // Errors come back as codes with a message, never as a crash.
  int32_t x = 0;
  EXPECT(ncclAllReduce(&x, &x, 1, ncclNumTypes, ncclSum, world, nullptr) == ncclInvalidArgument,
         "bad dtype accepted");
  EXPECT(std::strlen(ncclGetLastError(world)) > 0, "no last error text");
  EXPECT(ncclBcast(&x, 1, ncclInt32, g_size, world, nullptr) == ncclInvalidArgument, "bad root accepted");
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclNumOps, world, nullptr) == ncclInvalidArgument,
         "bad op accepted");
  EXPECT(ncclGroupEnd() == ncclInvalidUsage, "GroupEnd outside a group accepted");
  EXPECT(std::string(ncclGetErrorString(ncclUnhandledCudaError)).find("cuda") != std::string::npos,
         "error string");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  // Communicator B has the world's ranks reversed, with its id made by its rank 0 (world's last).
  ncclUniqueId id_a, id_b;
  if (g_rank == 0) NCCL_OK(ncclGetUniqueId(&id_a));
  if (g_rank == g_size - 1) NCCL_OK(ncclGetUniqueId(&id_b));
  MPI_Bcast(&id_a, sizeof id_a, MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&id_b, sizeof id_b, MPI_BYTE, g_size - 1, MPI_COMM_WORLD);
  if (std::memcmp(id_a.internal, "LSNCCLID", 8) != 0) {
    std::fprintf(stderr, "rank %d: the unique id is not the stand-in's: is the real libnccl.so.2 loaded?\n",
                 g_rank);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  ncclComm_t a = nullptr, b = nullptr;
  NCCL_OK(ncclCommInitRank(&a, g_size, id_a, g_rank));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  NCCL_OK(ncclCommInitRankConfig(&b, g_size, id_b, g_size - 1 - g_rank, &config));

  test_reductions(a);
  test_data_movement(b);
  test_send_recv(a);
  test_send_recv(b);
  test_management(a);

  NCCL_OK(ncclCommDestroy(b));
  NCCL_OK(ncclCommAbort(a));
  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%s: %d failures on %d ranks\n", total ? "FAIL" : "PASS", total, g_size);
  MPI_Finalize();
  return total ? 1 : 0;
}
