// Creates one communicator through the plugin-host NCCL fixture and checks the event mask the profiler
// plugin asked for: `plugin_dup_program MASK`. Exit 0 when it matches, 1 otherwise.
#include <cstdio>
#include <cstdlib>

extern "C" {
struct plugin_host_unique_id {
  char internal[128];
};
int ncclCommInitRank(void** comm, int nranks, plugin_host_unique_id id, int rank);
int plugin_host_mask();
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* comm = nullptr;
  plugin_host_unique_id id{};
  int rc = ncclCommInitRank(&comm, 1, id, 0);
  int want = std::atoi(argv[1]);
  std::printf("ncclCommInitRank=%d mask=%d want=%d\n", rc, plugin_host_mask(), want);
  return rc == 0 && plugin_host_mask() == want ? 0 : 1;
}
