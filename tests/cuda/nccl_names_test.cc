// Kernel-name and profiler-string parsing (tracer/cuda/nccl_names.h), on names as NCCL 2.28 and older
// releases emit them: mangled as CUPTI reports them, demangled, legacy and symmetric kernels.
#include "nccl_names.h"

#include <gtest/gtest.h>

#include <string>

#include "lockstep/format/layout.h"

namespace {

using lockstep::trace::gpu::dtype_from_nccl_name;
using lockstep::trace::gpu::KernelInfo;
using lockstep::trace::gpu::op_from_nccl_func;
using lockstep::trace::gpu::parse_nccl_kernel;

// Itanium mangling of a kernel `name` with one parameter type, as in libnccl.so's symbol table.
std::string mangle(const std::string& name,
                   const std::string& params = "24ncclDevKernelArgsStorageILm4096EE") {
  return "_Z" + std::to_string(name.size()) + name + params;
}

struct Case {
  const char* name;
  uint8_t op, redop, dtype;
  uint32_t size;
  const char* func;
  const char* algo;
  const char* proto;
};

// Kernels of NCCL 2.28.9 (its libnccl.so.2 symbol table) and of NCCL 2.18 (legacy naming).
const Case kCases[] = {
    {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", LST_OP_ALLREDUCE, LST_RED_SUM, LST_DT_FLOAT32, 4, "AllReduce",
     "RING", "LL"},
    {"ncclDevKernel_AllReduce_Sum_bf16_TREE_LL", LST_OP_ALLREDUCE, LST_RED_SUM, LST_DT_BFLOAT16, 2,
     "AllReduce", "TREE", "LL"},
    {"ncclDevKernel_AllReduce_Sum_f8e4m3_RING_LL", LST_OP_ALLREDUCE, LST_RED_SUM, LST_DT_FP8_E4M3, 1,
     "AllReduce", "RING", "LL"},
    {"ncclDevKernel_ReduceScatter_Sum_u64_RING_LL", LST_OP_REDUCE_SCATTER, LST_RED_SUM, LST_DT_UINT64, 8,
     "ReduceScatter", "RING", "LL"},
    {"ncclDevKernel_Reduce_Sum_f16_RING_LL", LST_OP_REDUCE, LST_RED_SUM, LST_DT_FLOAT16, 2, "Reduce", "RING",
     "LL"},
    {"ncclDevKernel_AllGather_RING_LL", LST_OP_ALLGATHER, LST_RED_NONE, LST_DT_NONE, 0, "AllGather", "RING",
     "LL"},
    {"ncclDevKernel_Broadcast_RING_LL", LST_OP_BCAST, LST_RED_NONE, LST_DT_NONE, 0, "Broadcast", "RING",
     "LL"},
    {"ncclDevKernel_SendRecv", LST_OP_UNKNOWN, LST_RED_NONE, LST_DT_NONE, 0, "SendRecv", "", ""},
    {"ncclDevKernel_Generic", LST_OP_UNKNOWN, LST_RED_NONE, LST_DT_NONE, 0, "Generic", "", ""},
    {"ncclDevKernel_AllReduce_MinMax_f64_COLLNET_DIRECT_SIMPLE", LST_OP_ALLREDUCE, LST_RED_UNKNOWN,
     LST_DT_FLOAT64, 8, "AllReduce", "COLLNET_DIRECT", "SIMPLE"},
    {"ncclDevKernel_AllReduce_SumPostDiv_u32_RING_LL128", LST_OP_ALLREDUCE, LST_RED_AVG, LST_DT_UINT32, 4,
     "AllReduce", "RING", "LL128"},
    {"ncclDevKernel_AllReduce_PreMulSum_f32_RING_SIMPLE", LST_OP_ALLREDUCE, LST_RED_PREMULSUM, LST_DT_FLOAT32,
     4, "AllReduce", "RING", "SIMPLE"},
    {"ncclKernel_AllReduce_RING_LL_Sum_float", LST_OP_ALLREDUCE, LST_RED_SUM, LST_DT_FLOAT32, 4, "AllReduce",
     "RING", "LL"},
    {"ncclKernel_AllReduce_TREE_LL128_Prod_int8_t", LST_OP_ALLREDUCE, LST_RED_PROD, LST_DT_INT8, 1,
     "AllReduce", "TREE", "LL128"},
    {"ncclKernel_Reduce_RING_SIMPLE_Max___nv_bfloat16", LST_OP_REDUCE, LST_RED_MAX, LST_DT_BFLOAT16, 2,
     "Reduce", "RING", "SIMPLE"},
    {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", LST_OP_UNKNOWN, LST_RED_SUM, LST_DT_INT8, 1, "SendRecv",
     "RING", "SIMPLE"},
    {"ncclSymkDevKernel_AllReduce_AGxLLMC_R_sum_bf16", LST_OP_ALLREDUCE, LST_RED_SUM, LST_DT_BFLOAT16, 2,
     "AllReduce", "AGxLLMC_R", ""},
    {"ncclSymkDevKernel_AllGather_LL", LST_OP_ALLGATHER, LST_RED_NONE, LST_DT_NONE, 0, "AllGather", "", "LL"},
};

void expect_case(const Case& c, const KernelInfo& k, const std::string& how) {
  SCOPED_TRACE(how + " " + c.name);
  EXPECT_EQ(k.op, c.op);
  EXPECT_EQ(k.redop, c.redop);
  EXPECT_EQ(k.dtype, c.dtype);
  EXPECT_EQ(k.dtype_size, c.size);
  EXPECT_STREQ(k.func, c.func);
  EXPECT_STREQ(k.algo, c.algo);
  EXPECT_STREQ(k.proto, c.proto);
  EXPECT_STREQ(k.base, c.name);
  EXPECT_EQ(k.symmetric, std::string(c.name).rfind("ncclSymk", 0) == 0);
}

TEST(KernelNames, PlainMangledAndDemangledSpellingsAgree) {
  for (const Case& c : kCases) {
    KernelInfo plain, mangled, demangled;
    ASSERT_TRUE(parse_nccl_kernel(c.name, &plain)) << c.name;
    expect_case(c, plain, "plain");
    std::string params = std::string(c.name).rfind("ncclSymk", 0) == 0
                             ? "21ncclSymkDevWorkArgs4K"
                             : "24ncclDevKernelArgsStorageILm4096EE";
    ASSERT_TRUE(parse_nccl_kernel(mangle(c.name, params), &mangled)) << c.name;
    expect_case(c, mangled, "mangled");
    ASSERT_TRUE(
        parse_nccl_kernel(std::string("void ") + c.name + "(ncclDevKernelArgsStorage<4096ul>)", &demangled));
    expect_case(c, demangled, "demangled");
  }
}

TEST(KernelNames, RejectsKernelsThatAreNotNcclCollectives) {
  KernelInfo k;
  for (const char* name :
       {"", "_Z", "_Z0", "_Z10myKernelPf", "_Z999ncclDevKernel_AllReduce", "vectorAdd(float*)",
        "ncclDevKernel_", "ncclDevKernel_Frobnicate_f32", "ncclDevFunc_AllReduce_Sum_f32_RING_LL",
        "ncclDevKernelAllReduce", "_Z22ncclDevKernel_Generic"}) {
    // The last one: the mangled length (22) runs past the end of the string.
    EXPECT_FALSE(parse_nccl_kernel(name, &k)) << name;
  }
}

TEST(KernelNames, LeavesOutputUntouchedOnRejection) {
  KernelInfo k;
  k.op = 77;
  EXPECT_FALSE(parse_nccl_kernel("_Z10myKernelPf", &k));
  EXPECT_EQ(k.op, 77);
}

TEST(KernelNames, LongNamesAreTruncatedNotOverrun) {
  std::string name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  for (int i = 0; i < 40; ++i) name += "_COLLNET";
  KernelInfo k;
  ASSERT_TRUE(parse_nccl_kernel(name, &k));
  EXPECT_EQ(k.op, LST_OP_ALLREDUCE);
  EXPECT_LT(std::string(k.base).size(), sizeof k.base);
  EXPECT_LT(std::string(k.algo).size(), sizeof k.algo);
}

TEST(PluginStrings, FunctionNames) {
  EXPECT_EQ(op_from_nccl_func("AllReduce"), LST_OP_ALLREDUCE);
  EXPECT_EQ(op_from_nccl_func("Broadcast"), LST_OP_BCAST);
  EXPECT_EQ(op_from_nccl_func("Reduce"), LST_OP_REDUCE);
  EXPECT_EQ(op_from_nccl_func("AllGather"), LST_OP_ALLGATHER);
  EXPECT_EQ(op_from_nccl_func("ReduceScatter"), LST_OP_REDUCE_SCATTER);
  EXPECT_EQ(op_from_nccl_func("AlltoAll"), LST_OP_ALLTOALL);
  EXPECT_EQ(op_from_nccl_func("Send"), LST_OP_SEND);
  EXPECT_EQ(op_from_nccl_func("Recv"), LST_OP_RECV);
  EXPECT_EQ(op_from_nccl_func("SendRecv"), LST_OP_UNKNOWN);
  EXPECT_EQ(op_from_nccl_func("allreduce"), LST_OP_UNKNOWN);
  EXPECT_EQ(op_from_nccl_func(nullptr), LST_OP_UNKNOWN);
}

TEST(PluginStrings, DatatypeNames) {
  uint32_t size = 99;
  EXPECT_EQ(dtype_from_nccl_name("ncclFloat32", &size), LST_DT_FLOAT32);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(dtype_from_nccl_name("ncclBfloat16", &size), LST_DT_BFLOAT16);
  EXPECT_EQ(size, 2u);
  EXPECT_EQ(dtype_from_nccl_name("ncclUint64", &size), LST_DT_UINT64);
  EXPECT_EQ(size, 8u);
  EXPECT_EQ(dtype_from_nccl_name("ncclInt8", &size), LST_DT_INT8);
  EXPECT_EQ(size, 1u);
  EXPECT_EQ(dtype_from_nccl_name("ncclFloat8e5m2", &size), LST_DT_FP8_E5M2);
  EXPECT_EQ(dtype_from_nccl_name("float", &size), LST_DT_UNKNOWN);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(dtype_from_nccl_name(nullptr, nullptr), LST_DT_UNKNOWN);
}

}  // namespace
