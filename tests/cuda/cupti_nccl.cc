// TEST FIXTURE, NOT NCCL: an NCCL that "launches" its kernels through the CUPTI stand-in
// (fake_cupti.cc), the way NCCL launches them: one kernel per collective outside a group, one for a
// whole group at ncclGroupEnd; an AllGather on one rank is a copy, made at once also inside a group;
// creating a communicator copies too. Only what cupti_program calls.
#include <cstddef>
#include <cstdint>

extern "C" uint32_t fake_cupti_launch(const char* name);

namespace {
int g_group_depth = 0;
int g_group_members = 0;
int g_token = 0;
// NCCL's own kernel symbols, mangled as CUPTI reports them.
constexpr const char* kAllReduce =
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
constexpr const char* kBroadcast = "_Z31ncclDevKernel_Broadcast_RING_LL24ncclDevKernelArgsStorageILm4096EE";
constexpr const char* kGroup = "_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE";

int launch(const char* kernel) {
  if (g_group_depth > 0) {
    ++g_group_members;
    return 0;
  }
  fake_cupti_launch(kernel);
  return 0;
}
}  // namespace

extern "C" {
struct cupti_nccl_unique_id {
  char internal[128];
};
__attribute__((visibility("default"))) int ncclCommInitRank(void** comm, int, cupti_nccl_unique_id, int) {
  fake_cupti_launch(nullptr);  // NCCL sets its device-side state up with copies
  fake_cupti_launch(nullptr);
  *comm = &g_token;
  return 0;
}
__attribute__((visibility("default"))) int ncclCommDestroy(void*) { return 0; }
__attribute__((visibility("default"))) int ncclAllReduce(const void*, void*, size_t, int, int, void*, void*) {
  return launch(kAllReduce);
}
__attribute__((visibility("default"))) int ncclBroadcast(const void*, void*, size_t, int, int, void*, void*) {
  return launch(kBroadcast);
}
// A collective one rank runs as a copy, at once.
__attribute__((visibility("default"))) int ncclAllGather(const void*, void*, size_t, int, void*, void*) {
  fake_cupti_launch(nullptr);
  return 0;
}
__attribute__((visibility("default"))) int ncclGroupStart() {
  ++g_group_depth;
  return 0;
}
__attribute__((visibility("default"))) int ncclGroupEnd() {
  if (g_group_depth > 0 && --g_group_depth == 0 && g_group_members > 0) {
    g_group_members = 0;
    fake_cupti_launch(kGroup);
  }
  return 0;
}
}
