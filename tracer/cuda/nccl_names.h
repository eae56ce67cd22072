// NCCL names as the GPU side sees them, mapped onto the trace's enums: kernel symbols
// (ncclDevKernel_AllReduce_Sum_f32_RING_LL, legacy ncclKernel_..., symmetric ncclSymkDevKernel_...)
// and the strings the profiler plugin passes (func "AllReduce", datatype "ncclFloat32"). No CUDA needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lockstep::trace::gpu {

struct KernelInfo {
  uint8_t op = 0;           // lst_op; LST_OP_UNKNOWN for kernels that serve any operation (Generic, SendRecv)
  uint8_t redop = 0;        // lst_redop; LST_RED_NONE when the name carries none, UNKNOWN when ambiguous
  uint8_t dtype = 0;        // lst_dtype; LST_DT_NONE when the name carries none
  uint32_t dtype_size = 0;  // bytes per element, 0 when unknown
  bool symmetric = false;   // ncclSymkDevKernel_*
  char base[96] = {};       // the kernel's own name: unmangled, without parameters (NUL terminated)
  char func[16] = {};       // operation as spelled in the name ("AllReduce", "SendRecv", "Generic")
  char algo[24] = {};       // "RING", "TREE", "COLLNET_DIRECT", ... (empty when none)
  char proto[8] = {};       // "LL", "LL128", "SIMPLE" (empty when none)
};

// True when `name` (mangled "_Z39ncclDevKernel_...", demangled "ncclDevKernel_...(args)" or plain)
// is an NCCL kernel; fills `out` with what the name tells.
bool parse_nccl_kernel(std::string_view name, KernelInfo* out) noexcept;

// Profiler-plugin strings: NCCL's ncclFuncToString and ncclDatatypeToString spellings.
uint8_t op_from_nccl_func(const char* func) noexcept;                     // LST_OP_UNKNOWN if unknown
uint8_t dtype_from_nccl_name(const char* name, uint32_t* size) noexcept;  // LST_DT_UNKNOWN if unknown

}  // namespace lockstep::trace::gpu
