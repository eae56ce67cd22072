// Kernel-name and plugin-string parsing (nccl_names.h). Table driven, allocation free: it runs on
// CUPTI's buffer thread and inside the profiler plugin.
#include "nccl_names.h"

#include <cstring>

#include "lockstep/format/layout.h"

namespace lockstep::trace::gpu {
namespace {

struct Named {
  std::string_view name;
  uint8_t value;
  uint32_t size;
};

// Kernel operations, as NCCL's generator spells them.
constexpr Named kOps[] = {
    {"AllReduce", LST_OP_ALLREDUCE, 0},
    {"Broadcast", LST_OP_BCAST, 0},
    {"Reduce", LST_OP_REDUCE, 0},
    {"AllGather", LST_OP_ALLGATHER, 0},
    {"ReduceScatter", LST_OP_REDUCE_SCATTER, 0},
    {"AlltoAll", LST_OP_ALLTOALL, 0},
    {"AllToAll", LST_OP_ALLTOALL, 0},
    {"Gather", LST_OP_GATHER, 0},
    {"Scatter", LST_OP_SCATTER, 0},
    {"Send", LST_OP_SEND, 0},
    {"Recv", LST_OP_RECV, 0},
    // One kernel serves both directions (SendRecv) or any operation (Generic): the name cannot say.
    {"SendRecv", LST_OP_UNKNOWN, 0},
    {"Generic", LST_OP_UNKNOWN, 0},
};

// Reduction operators: NCCL 2.19+ kernels (Sum, Prod, MinMax, PreMulSum, SumPostDiv), legacy kernels
// (Min, Max, Avg), symmetric kernels (lower case).
constexpr Named kRedops[] = {
    {"Sum", LST_RED_SUM, 0},
    {"sum", LST_RED_SUM, 0},
    {"Prod", LST_RED_PROD, 0},
    {"Min", LST_RED_MIN, 0},
    {"Max", LST_RED_MAX, 0},
    {"Avg", LST_RED_AVG, 0},
    {"PreMulSum", LST_RED_PREMULSUM, 0},
    // Average is implemented as a sum divided afterwards.
    {"SumPostDiv", LST_RED_AVG, 0},
    // One kernel for min and max: the name cannot tell which.
    {"MinMax", LST_RED_UNKNOWN, 0},
};

// Element types. Kernels use unsigned names for signed and unsigned integers alike (u8 serves
// ncclInt8 and ncclUint8): the size is exact, the signedness is not.
constexpr Named kKernelTypes[] = {
    {"i8", LST_DT_INT8, 1},
    {"u8", LST_DT_UINT8, 1},
    {"i32", LST_DT_INT32, 4},
    {"u32", LST_DT_UINT32, 4},
    {"i64", LST_DT_INT64, 8},
    {"u64", LST_DT_UINT64, 8},
    {"f16", LST_DT_FLOAT16, 2},
    {"bf16", LST_DT_BFLOAT16, 2},
    {"f32", LST_DT_FLOAT32, 4},
    {"f64", LST_DT_FLOAT64, 8},
    {"f8e4m3", LST_DT_FP8_E4M3, 1},
    {"f8e5m2", LST_DT_FP8_E5M2, 1},
    // legacy (NCCL < 2.19) spellings
    {"int8", LST_DT_INT8, 1},
    {"uint8", LST_DT_UINT8, 1},
    {"int32", LST_DT_INT32, 4},
    {"uint32", LST_DT_UINT32, 4},
    {"int64", LST_DT_INT64, 8},
    {"uint64", LST_DT_UINT64, 8},
    {"half", LST_DT_FLOAT16, 2},
    {"float", LST_DT_FLOAT32, 4},
    {"double", LST_DT_FLOAT64, 8},
};

constexpr Named kProtos[] = {{"LL", 0, 0}, {"LL128", 0, 0}, {"SIMPLE", 0, 0}};
constexpr Named kAlgos[] = {{"RING", 0, 0}, {"TREE", 0, 0},   {"COLLNET", 0, 0}, {"NVLS", 0, 0},
                            {"PAT", 0, 0},  {"DIRECT", 0, 0}, {"CHAIN", 0, 0}};

// ncclDatatypeToString spellings.
constexpr Named kPluginTypes[] = {
    {"ncclInt8", LST_DT_INT8, 1},           {"ncclChar", LST_DT_INT8, 1},
    {"ncclUint8", LST_DT_UINT8, 1},         {"ncclInt32", LST_DT_INT32, 4},
    {"ncclInt", LST_DT_INT32, 4},           {"ncclUint32", LST_DT_UINT32, 4},
    {"ncclInt64", LST_DT_INT64, 8},         {"ncclUint64", LST_DT_UINT64, 8},
    {"ncclFloat16", LST_DT_FLOAT16, 2},     {"ncclHalf", LST_DT_FLOAT16, 2},
    {"ncclFloat32", LST_DT_FLOAT32, 4},     {"ncclFloat", LST_DT_FLOAT32, 4},
    {"ncclFloat64", LST_DT_FLOAT64, 8},     {"ncclDouble", LST_DT_FLOAT64, 8},
    {"ncclBfloat16", LST_DT_BFLOAT16, 2},   {"ncclFloat8e4m3", LST_DT_FP8_E4M3, 1},
    {"ncclFloat8e5m2", LST_DT_FP8_E5M2, 1},
};

template <size_t N>
const Named* find(const Named (&table)[N], std::string_view s) {
  for (const Named& n : table)
    if (n.name == s) return &n;
  return nullptr;
}

void copy(char* dst, size_t cap, std::string_view s) {
  size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

void append(char* dst, size_t cap, std::string_view s) {
  size_t len = std::strlen(dst);
  if (len && len + 1 < cap) dst[len++] = '_';
  size_t n = s.size() < cap - 1 - len ? s.size() : cap - 1 - len;
  std::memcpy(dst + len, s.data(), n);
  dst[len + n] = '\0';
}

// The kernel's identifier from a mangled (_Z<len><identifier>...) or demangled ("void f(args)") name.
std::string_view identifier(std::string_view name) {
  if (name.size() > 2 && name[0] == '_' && name[1] == 'Z') {
    size_t i = 2;
    size_t len = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && len < 4096)
      len = len * 10 + (name[i++] - '0');
    if (i == 2 || len == 0 || len > name.size() - i) return {};
    return name.substr(i, len);
  }
  if (size_t paren = name.find('('); paren != std::string_view::npos) name = name.substr(0, paren);
  if (size_t sp = name.rfind(' '); sp != std::string_view::npos) name = name.substr(sp + 1);
  return name;
}

}  // namespace

bool parse_nccl_kernel(std::string_view name, KernelInfo* out) noexcept {
  std::string_view id = identifier(name);
  std::string_view rest;
  bool symmetric = false;
  for (std::string_view prefix : {std::string_view("ncclDevKernel_"), std::string_view("ncclKernel_"),
                                  std::string_view("ncclSymkDevKernel_")}) {
    if (id.substr(0, prefix.size()) == prefix) {
      rest = id.substr(prefix.size());
      symmetric = prefix == "ncclSymkDevKernel_";
      break;
    }
  }
  if (rest.empty()) return false;
  KernelInfo info;
  info.symmetric = symmetric;
  info.redop = LST_RED_NONE;
  info.dtype = LST_DT_NONE;
  copy(info.base, sizeof info.base, id);
  // Legacy kernels spell bfloat16 and fp8 as CUDA type names, whose underscores would split them.
  for (auto [spelling, dtype] : {std::pair{std::string_view("__nv_bfloat16"), uint8_t{LST_DT_BFLOAT16}},
                                 std::pair{std::string_view("__nv_fp8_e4m3"), uint8_t{LST_DT_FP8_E4M3}},
                                 std::pair{std::string_view("__nv_fp8_e5m2"), uint8_t{LST_DT_FP8_E5M2}}}) {
    if (size_t at = rest.find(spelling); at != std::string_view::npos) {
      info.dtype = dtype;
      info.dtype_size = dtype == LST_DT_BFLOAT16 ? 2 : 1;
      rest = rest.substr(0, at);
    }
  }
  bool have_op = false;
  while (!rest.empty()) {
    size_t us = rest.find('_');
    std::string_view tok = rest.substr(0, us);
    rest = us == std::string_view::npos ? std::string_view() : rest.substr(us + 1);
    if (tok.empty()) continue;
    if (!have_op) {
      const Named* op = find(kOps, tok);
      if (!op) return false;  // ncclDevKernel_<something else>: not a collective kernel we know
      info.op = op->value;
      copy(info.func, sizeof info.func, tok);
      have_op = true;
    } else if (const Named* r = find(kRedops, tok)) {
      info.redop = r->value;
    } else if (const Named* t = find(kKernelTypes, tok)) {
      info.dtype = t->value;
      info.dtype_size = t->size;
    } else if (find(kProtos, tok)) {
      copy(info.proto, sizeof info.proto, tok);
    } else if (find(kAlgos, tok) || symmetric) {
      // Multi-word algorithms (COLLNET_DIRECT, NVLS_TREE) and symmetric variants (AGxLL_R) are joined.
      append(info.algo, sizeof info.algo, tok);
    }
    // Other tokens (the "t" of a legacy "int8_t", future suffixes) carry nothing we record.
  }
  if (!have_op) return false;
  *out = info;
  return true;
}

uint8_t op_from_nccl_func(const char* func) noexcept {
  if (!func) return LST_OP_UNKNOWN;
  const Named* op = find(kOps, func);
  return op ? op->value : static_cast<uint8_t>(LST_OP_UNKNOWN);
}

uint8_t dtype_from_nccl_name(const char* name, uint32_t* size) noexcept {
  const Named* t = name ? find(kPluginTypes, name) : nullptr;
  if (size) *size = t ? t->size : 0;
  return t ? t->value : static_cast<uint8_t>(LST_DT_UNKNOWN);
}

}  // namespace lockstep::trace::gpu
