// Exercises the NCCL interposer's failure paths in one process (no mpirun):
//   failure_program nolib     linked against liblockstep_trace.so and no NCCL at all: every NCCL call
//                             must return ncclSystemError, with one warning, and nothing may crash
//   failure_program nodevice  on the stand-in with LOCKSTEP_NCCL_STANDIN_NO_DEVICE=1, imitating real
//                             NCCL without a GPU: the creation errors must come back unchanged
//   failure_program real      on the real libnccl.so.2 of the toolkit on a machine without a GPU: the
//                             same calls, their codes printed (run_traced.sh compares them with and
//                             without the tracer); exit 77 (skipped) where a GPU makes them succeed
// trace_check failures then checks what the trace holds.
#include <nccl.h>

#include <cstdio>
#include <cstring>

namespace {
int g_failures = 0;

void expect(ncclResult_t got, ncclResult_t want, const char* what) {
  if (got == want) return;
  ++g_failures;
  std::fprintf(stderr, "%s returned %d, want %d\n", what, int(got), int(want));
}
}  // namespace

int main(int argc, char** argv) {
  const bool nolib = argc == 2 && std::strcmp(argv[1], "nolib") == 0;
  const bool real = argc == 2 && std::strcmp(argv[1], "real") == 0;
  if (!nolib && !real && !(argc == 2 && std::strcmp(argv[1], "nodevice") == 0)) {
    std::fprintf(stderr, "usage: %s nolib|nodevice|real\n", argv[0]);
    return 2;
  }
  if (real) {
#ifdef NCCL_FAILURE_REAL  // the only build linked to a library with ncclGetUniqueId behind it
    ncclUniqueId id;
    const ncclResult_t id_rc = ncclGetUniqueId(&id);
    ncclComm_t comm = nullptr;
    const ncclResult_t init_rc = id_rc == ncclSuccess ? ncclCommInitRank(&comm, 1, id, 0) : id_rc;
    if (init_rc == ncclSuccess) {
      ncclCommDestroy(comm);
      std::printf("a GPU is present: skipped\n");
      return 77;
    }
    ncclComm_t all[1] = {nullptr};
    const ncclResult_t all_rc = ncclCommInitAll(all, 1, nullptr);
    float x = 1;
    const ncclResult_t ar_rc = ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, nullptr);
    const ncclResult_t send_rc = ncclSend(&x, 1, ncclFloat32, 0, comm, nullptr);
    std::printf(
        "ncclGetUniqueId %d\nncclCommInitRank %d %s\nncclCommInitAll %d\nncclAllReduce %d\nncclSend %d\n",
        int(id_rc), int(init_rc), comm ? "comm" : "no comm", int(all_rc), int(ar_rc), int(send_rc));
    return 0;
#else
    std::fprintf(stderr, "%s: built without the real NCCL\n", argv[0]);
    return 2;
#endif
  }
  // Without NCCL every call fails the same way; with a device-less NCCL, creation fails with a CUDA
  // error and operations on the missing communicator are invalid arguments.
  const ncclResult_t create_rc = nolib ? ncclSystemError : ncclUnhandledCudaError;
  const ncclResult_t op_rc = nolib ? ncclSystemError : ncclInvalidArgument;

  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  ncclComm_t comm = nullptr;
  expect(ncclCommInitRank(&comm, 2, id, 0), create_rc, "ncclCommInitRank");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  expect(ncclCommInitRankConfig(&comm, 2, id, 0, &config), create_rc, "ncclCommInitRankConfig");
  ncclComm_t all[1] = {nullptr};
  expect(ncclCommInitAll(all, 1, nullptr), create_rc, "ncclCommInitAll");
  if (comm || all[0]) {
    ++g_failures;
    std::fprintf(stderr, "a failed creation returned a communicator\n");
  }
  float x = 1;
  expect(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, nullptr), op_rc, "ncclAllReduce");
  expect(ncclSend(&x, 1, ncclFloat32, 1, comm, nullptr), op_rc, "ncclSend");
  if (nolib) {
    expect(ncclGroupStart(), ncclSystemError, "ncclGroupStart");
    expect(ncclGroupEnd(), ncclSystemError, "ncclGroupEnd");
    expect(ncclCommDestroy(comm), ncclSystemError, "ncclCommDestroy");
  }
  std::printf("%s: %d failures\n", g_failures ? "FAIL" : "PASS", g_failures);
  return g_failures ? 1 : 0;
}
