// The few NCCL types and values the NCCL interposer needs, declared here so that liblockstep_trace.so
// builds without nccl.h and links against neither NCCL nor CUDA. Values and layouts are NCCL's ABI
// (stable since NCCL 2.x; checked against the real nccl.h by tests/nccl_standin/abi_check.cc).
#pragma once

#include <cstddef>
#include <cstdint>

// NCCL's opaque handle types, spelled as nccl.h spells them so the symbols' C signatures match.
struct ncclComm;
struct CUstream_st;

namespace lockstep::trace::nccl {

using Comm = ::ncclComm*;
using Stream = ::CUstream_st*;  // cudaStream_t

// The enums below are NCCL's numbering, written out value by value as nccl.h writes it (and compared
// value by value against it by abi_check.cc): they are alike in shape because NCCL's ABI is, and a
// table or macro in their place would hide the one thing they are for, the values.

// ncclResult_t
enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

// ncclDataType_t
enum DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11,
  kNumTypes = 12,
};

// ncclRedOp_t: values at or above kNumOps are ops made by ncclRedOpCreatePreMulSum.
enum RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4, kNumOps = 5 };

constexpr int kSplitNoColor = -1;  // NCCL_SPLIT_NOCOLOR

// ncclUniqueId: passed by value, 128 bytes.
struct UniqueId {
  char internal[128];
};
static_assert(sizeof(UniqueId) == 128);

// The leading fields of ncclConfig_t, which only grows at its end; commName is read when the caller's
// struct is large enough to hold it.
struct ConfigPrefix {
  size_t size;
  unsigned int magic;  // kConfigMagic once NCCL_CONFIG_INITIALIZER ran
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
};
constexpr unsigned int kConfigMagic = 0xcafebeef;
constexpr size_t kConfigCommNameEnd = offsetof(ConfigPrefix, commName) + sizeof(const char*);
struct Config;  // ncclConfig_t, passed through untouched

}  // namespace lockstep::trace::nccl
