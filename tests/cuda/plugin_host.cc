// TEST FIXTURE, NOT NCCL: a libnccl stand-in that only does what NCCL does with a profiler plugin when a
// communicator is created: load NCCL_PROFILER_PLUGIN, look up ncclProfiler_v5 and call its init from
// inside ncclCommInitRank. Lets a test see which event mask the plugin asks for, with and without the
// interposer around the call.
#include <dlfcn.h>
#include <stdlib.h>

#include "lockstep/nccl_profiler/profiler_v5.h"

namespace {
int g_mask = -1;
void logger(int, unsigned long, const char*, int, const char*, ...) {}
}  // namespace

extern "C" {

struct plugin_host_unique_id {
  char internal[128];  // ncclUniqueId
};

__attribute__((visibility("default"))) int ncclCommInitRank(void** comm, int nranks, plugin_host_unique_id,
                                                            int rank) {
  const char* path = getenv("NCCL_PROFILER_PLUGIN");
  void* lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  auto* plugin = lib ? static_cast<lst_nccl_profiler_v5*>(dlsym(lib, "ncclProfiler_v5")) : nullptr;
  if (!plugin) return 3;  // ncclInternalError
  void* ctx = nullptr;
  int mask = 0;
  if (plugin->init(&ctx, 0x1234abcdull, &mask, "host", 1, nranks, rank, logger) != LST_NCCL_SUCCESS) return 3;
  g_mask = mask;
  static int token;
  *comm = &token;
  return 0;
}

__attribute__((visibility("default"))) int plugin_host_mask() { return g_mask; }
}
