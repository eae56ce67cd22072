// Drives the NCCL and CUPTI stand-ins (cupti_nccl.cc, fake_cupti.cc) for the CUPTI tests:
// 3 AllReduce, a group {AllReduce, AllGather (a copy), Broadcast}, 1 Broadcast, 1 AllGather, in that
// order.
//   cupti_program direct   calls NCCL normally: the preloaded tracer intercepts every call
//   cupti_program bypass   calls NCCL through its own dlopen handle, past the interposer, as a program
//                          with a statically linked NCCL does
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

extern "C" {
struct cupti_nccl_unique_id {
  char internal[128];
};
int ncclCommInitRank(void** comm, int nranks, cupti_nccl_unique_id id, int rank);
int ncclCommDestroy(void* comm);
int ncclAllReduce(const void*, void*, size_t, int, int, void*, void*);
int ncclBroadcast(const void*, void*, size_t, int, int, void*, void*);
int ncclAllGather(const void*, void*, size_t, int, void*, void*);
int ncclGroupStart();
int ncclGroupEnd();
}

int main(int argc, char** argv) {
  bool bypass = argc > 1 && std::strcmp(argv[1], "bypass") == 0;
  auto init = &ncclCommInitRank;
  auto destroy = &ncclCommDestroy;
  auto allreduce = &ncclAllReduce;
  auto bcast = &ncclBroadcast;
  auto allgather = &ncclAllGather;
  auto gstart = &ncclGroupStart;
  auto gend = &ncclGroupEnd;
  if (bypass) {
    void* h = dlopen("libcupti_nccl.so", RTLD_NOW | RTLD_NOLOAD);
    if (!h) {
      std::fprintf(stderr, "cupti_program: %s\n", dlerror());
      return 1;
    }
    init = reinterpret_cast<decltype(init)>(dlsym(h, "ncclCommInitRank"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(h, "ncclCommDestroy"));
    allreduce = reinterpret_cast<decltype(allreduce)>(dlsym(h, "ncclAllReduce"));
    bcast = reinterpret_cast<decltype(bcast)>(dlsym(h, "ncclBroadcast"));
    allgather = reinterpret_cast<decltype(allgather)>(dlsym(h, "ncclAllGather"));
    gstart = reinterpret_cast<decltype(gstart)>(dlsym(h, "ncclGroupStart"));
    gend = reinterpret_cast<decltype(gend)>(dlsym(h, "ncclGroupEnd"));
  }
  void* comm = nullptr;
  cupti_nccl_unique_id id{};
  float buf[16] = {};
  int rc = init(&comm, 1, id, 0);
  for (int i = 0; i < 3; ++i) rc |= allreduce(buf, buf, 16, 7, 0, comm, nullptr);  // ncclFloat32, ncclSum
  rc |= gstart();
  rc |= allreduce(buf, buf, 16, 7, 0, comm, nullptr);
  rc |= allgather(buf, buf, 4, 7, comm, nullptr);
  rc |= bcast(buf, buf, 16, 7, 0, comm, nullptr);
  rc |= gend();
  rc |= bcast(buf, buf, 16, 7, 0, comm, nullptr);
  rc |= allgather(buf, buf, 4, 7, comm, nullptr);
  rc |= destroy(comm);
  return rc == 0 ? 0 : 1;
}
