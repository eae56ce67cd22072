// Compile-time check that tracer/src/nccl_abi.h, which lets liblockstep_trace.so build without
// nccl.h, agrees with the real nccl.h of the toolkit: built only when a toolkit is present.
#include <nccl.h>

#include <cstddef>
#include <type_traits>

#include "nccl_abi.h"

namespace abi = lockstep::trace::nccl;

static_assert(sizeof(abi::UniqueId) == sizeof(ncclUniqueId));
static_assert(sizeof(ncclResult_t) == sizeof(int) && sizeof(ncclDataType_t) == sizeof(int) &&
              sizeof(ncclRedOp_t) == sizeof(int));
static_assert(abi::kSuccess == ncclSuccess && abi::kUnhandledCudaError == ncclUnhandledCudaError &&
              abi::kSystemError == ncclSystemError && abi::kInternalError == ncclInternalError &&
              abi::kInvalidArgument == ncclInvalidArgument && abi::kInvalidUsage == ncclInvalidUsage &&
              abi::kRemoteError == ncclRemoteError && abi::kInProgress == ncclInProgress);
static_assert(abi::kInt8 == ncclInt8 && abi::kUint8 == ncclUint8 && abi::kInt32 == ncclInt32 &&
              abi::kUint32 == ncclUint32 && abi::kInt64 == ncclInt64 && abi::kUint64 == ncclUint64 &&
              abi::kFloat16 == ncclFloat16 && abi::kFloat32 == ncclFloat32 && abi::kFloat64 == ncclFloat64 &&
              abi::kBfloat16 == ncclBfloat16 && abi::kFloat8e4m3 == ncclFloat8e4m3 &&
              abi::kFloat8e5m2 == ncclFloat8e5m2 && abi::kNumTypes == ncclNumTypes);
static_assert(abi::kSum == ncclSum && abi::kProd == ncclProd && abi::kMax == ncclMax &&
              abi::kMin == ncclMin && abi::kAvg == ncclAvg && abi::kNumOps == ncclNumOps);
static_assert(abi::kSplitNoColor == NCCL_SPLIT_NOCOLOR);
static_assert(offsetof(abi::ConfigPrefix, magic) == offsetof(ncclConfig_t, magic) &&
              offsetof(abi::ConfigPrefix, commName) == offsetof(ncclConfig_t, commName) &&
              abi::kConfigCommNameEnd <= sizeof(ncclConfig_t));
static_assert(sizeof(cudaStream_t) == sizeof(abi::Stream) && sizeof(ncclComm_t) == sizeof(abi::Comm));
// The interposer's handle types are NCCL's own.
static_assert(std::is_same_v<ncclComm_t, abi::Comm> && std::is_same_v<cudaStream_t, abi::Stream>);
