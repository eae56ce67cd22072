// The NCCL profiler-plugin mode of liblockstep_trace.so, driven the way NCCL drives a plugin: dlopen the
// library, dlsym ncclProfiler_v5 / ncclProfiler_v4, then init, startEvent (group, collective and
// point-to-point tasks, kernel channels), recordEventState, stopEvent, finalize. The trace is read back
// with the reader and every record checked.
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "lockstep/format/layout.h"
#include "lockstep/format/reader.h"
#include "lockstep/nccl_profiler/profiler_v4.h"
#include "lockstep/nccl_profiler/profiler_v5.h"

namespace fs = std::filesystem;
using lockstep::format::TraceFile;

namespace {

std::string g_dir;
lst_nccl_profiler_v5* g_v5 = nullptr;
lst_nccl_profiler_v4* g_v4 = nullptr;

class Plugin : public ::testing::Test {
 protected:
  // Loaded once per process, checked in every test: a failure in SetUpTestSuite would only skip them.
  void SetUp() override {
    static bool loaded = [] {
      load();
      return true;
    }();
    (void)loaded;
    ASSERT_NE(g_v5, nullptr) << "liblockstep_trace.so could not be loaded as a profiler plugin";
    ASSERT_NE(g_v4, nullptr);
  }
  static void load() {
    char tmpl[] = "/tmp/lockstep-plugin-XXXXXX";
    if (!mkdtemp(tmpl)) return;
    g_dir = tmpl;
    // Gone when the process ends (each test runs in a process of its own): the library's trace file
    // in it is a few megabytes. Unlinking it while mapped is harmless to the library's last writes.
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(g_dir, ec);
    });
    // The library reads its environment when it is loaded; a launcher's rank must not leak in.
    setenv("LOCKSTEP_TRACE_DIR", g_dir.c_str(), 1);
    for (const char* v :
         {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "LOCKSTEP_TRACE_CUPTI"})
      unsetenv(v);
    // As NCCL loads a plugin named by NCCL_PROFILER_PLUGIN.
    void* lib = dlopen(LOCKSTEP_TRACE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      ADD_FAILURE() << dlerror();
      return;
    }
    g_v5 = static_cast<lst_nccl_profiler_v5*>(dlsym(lib, "ncclProfiler_v5"));
    g_v4 = static_cast<lst_nccl_profiler_v4*>(dlsym(lib, "ncclProfiler_v4"));
  }

  // Every record of the process's one trace, re-read from the file.
  struct Trace {
    TraceFile file;
    std::vector<const lst_record*> records;
    std::vector<uint64_t> ids;
  };
  static Trace read_trace() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(g_dir))
      if (e.path().extension() == ".lstrace") files.push_back(e.path());
    EXPECT_EQ(files.size(), 1u);
    Trace t{TraceFile::open(files.at(0).string()), {}, {}};
    t.file.validate();
    for (uint64_t id = t.file.first_id(); id < t.file.end_id(); ++id)
      if (const lst_record* r = t.file.record(id)) {
        t.records.push_back(r);
        t.ids.push_back(id);
      }
    return t;
  }
  static std::vector<size_t> collectives_on(const Trace& t, uint64_t comm) {
    std::vector<size_t> out;
    for (size_t i = 0; i < t.records.size(); ++i)
      if (LST_WORD_KIND(t.records[i]->word) == LST_KIND_COLLECTIVE && t.records[i]->comm == comm)
        out.push_back(i);
    return out;
  }
  static const lst_record* device_of(const Trace& t, uint64_t id) {
    for (const lst_record* r : t.records)
      if (LST_WORD_KIND(r->word) == LST_KIND_DEVICE && r->u.device.ref == id) return r;
    return nullptr;
  }
};

void logger(int, unsigned long, const char*, int, const char*, ...) {}

lst_nccl_event_descr_v5 coll_v5(uint64_t seq, const char* func, const char* dtype, size_t count, int root,
                                uint8_t nchannels) {
  lst_nccl_event_descr_v5 d{};
  d.type = LST_NCCL_PROFILE_COLL;
  d.rank = 2;
  d.coll.seqNumber = seq;
  d.coll.func = func;
  d.coll.datatype = dtype;
  d.coll.count = count;
  d.coll.root = root;
  d.coll.nChannels = nchannels;
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  return d;
}

// Runs a task's kernel channels to the end, the way NCCL's proxy thread reports them.
void run_channels_v5(void* ctx, void* task, int n, uint64_t gpu_t0) {
  for (int ch = 0; ch < n; ++ch) {
    lst_nccl_event_descr_v5 d{};
    d.type = LST_NCCL_PROFILE_KERNEL_CH;
    d.parentObj = task;
    d.kernelCh.channelId = static_cast<uint8_t>(ch);
    d.kernelCh.pTimer = gpu_t0 + 10 * ch;
    void* h = nullptr;
    ASSERT_EQ(g_v5->startEvent(ctx, &h, &d), LST_NCCL_SUCCESS);
    ASSERT_NE(h, nullptr);
    lst_nccl_state_args_v5 a{};
    a.kernelCh.pTimer = gpu_t0 + 5000 + ch;
    ASSERT_EQ(g_v5->recordEventState(h, LST_NCCL_STATE_KERNEL_CH_STOP, &a), LST_NCCL_SUCCESS);
    ASSERT_EQ(g_v5->stopEvent(h), LST_NCCL_SUCCESS);
  }
}

TEST_F(Plugin, V5RecordsTasksWithNcclIdentityAndDeviceCompletion) {
  constexpr uint64_t kComm = 0x5a5a000000000001ull;
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(g_v5->init(&ctx, kComm, &mask, "world", 1, 4, 2, logger), LST_NCCL_SUCCESS);
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(mask & LST_NCCL_PROFILE_COLL);
  EXPECT_TRUE(mask & LST_NCCL_PROFILE_P2P);
  EXPECT_TRUE(mask & LST_NCCL_PROFILE_KERNEL_CH);

  // A group event, which the plugin does not track, as NCCL starts one around every launch.
  lst_nccl_event_descr_v5 group{};
  group.type = LST_NCCL_PROFILE_GROUP;
  void* group_h = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(g_v5->startEvent(ctx, &group_h, &group), LST_NCCL_SUCCESS);
  EXPECT_EQ(group_h, nullptr);

  // 0: AllReduce, finished on the device; 1: Broadcast, finished; 2: AllReduce, enqueued but never run
  // (a hung device); 3: Send inside a group, finished; 4: AllGather started but never stopped.
  struct Want {
    uint8_t op, dtype;
    uint32_t dtype_size;
    uint64_t count;
    int32_t root_or_peer;
    uint8_t state;
  };
  std::vector<Want> want;
  void* h = nullptr;
  auto d0 = coll_v5(0, "AllReduce", "ncclFloat32", 1024, 0, 2);
  d0.coll.parentGroup = group_h;
  ASSERT_EQ(g_v5->startEvent(ctx, &h, &d0), LST_NCCL_SUCCESS);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(g_v5->stopEvent(h), LST_NCCL_SUCCESS);  // NCCL stops a task once it is enqueued
  run_channels_v5(ctx, h, 2, 1'000'000);
  want.push_back({LST_OP_ALLREDUCE, LST_DT_FLOAT32, 4, 1024, LST_NONE, LST_STATE_COMPLETED});

  auto d1 = coll_v5(0, "Broadcast", "ncclBfloat16", 77, 3, 1);
  ASSERT_EQ(g_v5->startEvent(ctx, &h, &d1), LST_NCCL_SUCCESS);
  ASSERT_EQ(g_v5->stopEvent(h), LST_NCCL_SUCCESS);
  run_channels_v5(ctx, h, 1, 2'000'000);
  want.push_back({LST_OP_BCAST, LST_DT_BFLOAT16, 2, 77, 3, LST_STATE_COMPLETED});

  auto d2 = coll_v5(1, "AllReduce", "ncclInt64", 5, 0, 2);
  ASSERT_EQ(g_v5->startEvent(ctx, &h, &d2), LST_NCCL_SUCCESS);
  ASSERT_EQ(g_v5->stopEvent(h), LST_NCCL_SUCCESS);
  want.push_back({LST_OP_ALLREDUCE, LST_DT_INT64, 8, 5, LST_NONE, LST_STATE_RETURNED});

  lst_nccl_event_descr_v5 p{};
  p.type = LST_NCCL_PROFILE_P2P;
  p.rank = 2;
  p.p2p.func = "Send";
  p.p2p.datatype = "ncclUint8";
  p.p2p.count = 4096;
  p.p2p.peer = 1;
  p.p2p.nChannels = 1;
  ASSERT_EQ(g_v5->startEvent(ctx, &h, &p), LST_NCCL_SUCCESS);
  // Kernel channels may start before NCCL stops the task.
  void* send_task = h;
  lst_nccl_event_descr_v5 ch{};
  ch.type = LST_NCCL_PROFILE_KERNEL_CH;
  ch.parentObj = send_task;
  void* ch_h = nullptr;
  ASSERT_EQ(g_v5->startEvent(ctx, &ch_h, &ch), LST_NCCL_SUCCESS);
  ASSERT_EQ(g_v5->stopEvent(ch_h), LST_NCCL_SUCCESS);
  ASSERT_EQ(g_v5->stopEvent(send_task), LST_NCCL_SUCCESS);
  want.push_back({LST_OP_SEND, LST_DT_UINT8, 1, 4096, 1, LST_STATE_COMPLETED});

  auto d4 = coll_v5(0, "AllGather", "ncclFloat16", 8, 0, 2);
  ASSERT_EQ(g_v5->startEvent(ctx, &h, &d4), LST_NCCL_SUCCESS);
  want.push_back({LST_OP_ALLGATHER, LST_DT_FLOAT16, 2, 8, LST_NONE, LST_STATE_ENTERED});

  Trace t = read_trace();
  EXPECT_EQ(t.file.header().world_rank, 2);
  EXPECT_EQ(t.file.header().world_size, 4);
  bool comm_seen = false;
  for (const lst_record* r : t.records) {
    if (LST_WORD_KIND(r->word) != LST_KIND_COMM || r->comm != kComm) continue;
    comm_seen = true;
    EXPECT_EQ(r->u.comm.size, 4);
    EXPECT_EQ(r->u.comm.rank, 2);
    EXPECT_TRUE(LST_WORD_FLAGS(r->word) & LST_F_INFERRED);
    EXPECT_EQ(t.file.string(r->aux), "world");
  }
  EXPECT_TRUE(comm_seen);
  std::vector<size_t> colls = collectives_on(t, kComm);
  ASSERT_EQ(colls.size(), want.size());
  for (size_t i = 0; i < colls.size(); ++i) {
    SCOPED_TRACE("task " + std::to_string(i));
    const lst_record* r = t.records[colls[i]];
    EXPECT_EQ(r->api, LST_API_NCCL);
    EXPECT_EQ(r->op, want[i].op);
    EXPECT_EQ(r->u.coll.seq, i) << "tasks are numbered in order per communicator";
    EXPECT_EQ(r->dtype, want[i].dtype);
    EXPECT_EQ(r->u.coll.dtype_size, want[i].dtype_size);
    EXPECT_EQ(r->u.coll.count, want[i].count);
    EXPECT_EQ(r->u.coll.root_or_peer, want[i].root_or_peer);
    EXPECT_EQ(LST_WORD_STATE(r->word), want[i].state);
    EXPECT_TRUE(LST_WORD_FLAGS(r->word) & LST_F_INFERRED);
    const lst_record* dev = device_of(t, t.ids[colls[i]]);
    if (want[i].state == LST_STATE_COMPLETED) {
      ASSERT_NE(dev, nullptr);
      EXPECT_GT(dev->u.device.end_ns, 0u);
      EXPECT_LE(dev->u.device.start_ns, dev->u.device.end_ns);
    } else {
      EXPECT_EQ(dev, nullptr) << "no device times for a task that did not finish";
    }
  }
  // The GPU timer span (first channel start to last stop) is the kernel's duration on the trace's clock.
  const lst_record* dev0 = device_of(t, t.ids[colls[0]]);
  ASSERT_NE(dev0, nullptr);
  EXPECT_EQ(dev0->u.device.end_ns - dev0->u.device.start_ns, 5001u);
  EXPECT_EQ(g_v5->finalize(ctx), LST_NCCL_SUCCESS);
}

TEST_F(Plugin, V4ArgumentOrderAndEightBitType) {
  constexpr uint64_t kComm = 0x4444000000000002ull;
  void* ctx = nullptr;
  int mask = 0;
  // v4: name before hash.
  ASSERT_EQ(g_v4->init(&ctx, &mask, "tp", kComm, 1, 2, 1, logger), LST_NCCL_SUCCESS);
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(mask & LST_NCCL_PROFILE_KERNEL_CH);
  lst_nccl_event_descr_v4 d{};
  d.type = LST_NCCL_PROFILE_COLL;
  d.rank = 1;
  d.coll.seqNumber = 0;
  d.coll.func = "ReduceScatter";
  d.coll.datatype = "ncclFloat64";
  d.coll.count = 33;
  d.coll.nChannels = 1;
  void* h = nullptr;
  ASSERT_EQ(g_v4->startEvent(ctx, &h, &d), LST_NCCL_SUCCESS);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(g_v4->stopEvent(h), LST_NCCL_SUCCESS);
  lst_nccl_event_descr_v4 ch{};
  ch.type = LST_NCCL_PROFILE_KERNEL_CH;
  ch.parentObj = h;
  ch.kernelCh.pTimer = 100;
  void* ch_h = nullptr;
  ASSERT_EQ(g_v4->startEvent(ctx, &ch_h, &ch), LST_NCCL_SUCCESS);
  lst_nccl_state_args_v4 a{};
  a.kernelCh.pTimer = 350;
  ASSERT_EQ(g_v4->recordEventState(ch_h, LST_NCCL_STATE_KERNEL_CH_STOP, &a), LST_NCCL_SUCCESS);
  ASSERT_EQ(g_v4->stopEvent(ch_h), LST_NCCL_SUCCESS);

  Trace t = read_trace();
  std::vector<size_t> colls = collectives_on(t, kComm);
  ASSERT_EQ(colls.size(), 1u);
  const lst_record* r = t.records[colls[0]];
  EXPECT_EQ(r->op, LST_OP_REDUCE_SCATTER);
  EXPECT_EQ(r->dtype, LST_DT_FLOAT64);
  EXPECT_EQ(r->u.coll.count, 33u);
  EXPECT_EQ(r->redop, LST_RED_UNKNOWN) << "the plugin interface does not pass the reduction operator";
  EXPECT_EQ(LST_WORD_STATE(r->word), LST_STATE_COMPLETED);
  const lst_record* dev = device_of(t, t.ids[colls[0]]);
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->u.device.end_ns - dev->u.device.start_ns, 250u);
  EXPECT_EQ(g_v4->finalize(ctx), LST_NCCL_SUCCESS);
}

TEST_F(Plugin, MissedTasksInNcclNumberingAreWarnedOnce) {
  constexpr uint64_t kComm = 0x6666000000000003ull;
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(g_v5->init(&ctx, kComm, &mask, "gap", 1, 2, 0, logger), LST_NCCL_SUCCESS);
  for (uint64_t seq : {0u, 1u, 5u, 9u}) {
    auto d = coll_v5(seq, "AllReduce", "ncclFloat32", 1, 0, 1);
    void* h = nullptr;
    ASSERT_EQ(g_v5->startEvent(ctx, &h, &d), LST_NCCL_SUCCESS);
    ASSERT_EQ(g_v5->stopEvent(h), LST_NCCL_SUCCESS);
  }
  Trace t = read_trace();
  int warnings = 0;
  for (const lst_record* r : t.records)
    if (LST_WORD_KIND(r->word) == LST_KIND_MARKER && r->op == LST_MARK_TRACER_WARNING &&
        t.file.string(r->aux).find("sequence number of AllReduce") != std::string_view::npos)
      ++warnings;
  EXPECT_EQ(warnings, 1);
  EXPECT_EQ(collectives_on(t, kComm).size(), 4u);
  EXPECT_EQ(g_v5->finalize(ctx), LST_NCCL_SUCCESS);
}

TEST_F(Plugin, BadHandlesAndUnknownEventsAreHarmless) {
  constexpr uint64_t kComm = 0x7777000000000004ull;
  EXPECT_EQ(g_v5->stopEvent(nullptr), LST_NCCL_SUCCESS);
  EXPECT_EQ(g_v5->recordEventState(nullptr, LST_NCCL_STATE_KERNEL_CH_STOP, nullptr), LST_NCCL_SUCCESS);
  EXPECT_EQ(g_v5->finalize(nullptr), LST_NCCL_SUCCESS);
  uint64_t not_ours[8] = {};
  EXPECT_EQ(g_v5->stopEvent(not_ours), LST_NCCL_SUCCESS);
  void* h = reinterpret_cast<void*>(0x1);
  lst_nccl_event_descr_v5 d{};
  d.type = LST_NCCL_PROFILE_PROXY_STEP;
  EXPECT_EQ(g_v5->startEvent(nullptr, &h, &d), LST_NCCL_SUCCESS);
  EXPECT_EQ(h, nullptr);
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(g_v5->init(&ctx, kComm, &mask, nullptr, 1, 1, 0, logger), LST_NCCL_SUCCESS);
  h = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(g_v5->startEvent(ctx, &h, &d), LST_NCCL_SUCCESS);
  EXPECT_EQ(h, nullptr);
  // A kernel channel whose parent is not a task of ours is dropped.
  lst_nccl_event_descr_v5 ch{};
  ch.type = LST_NCCL_PROFILE_KERNEL_CH;
  ch.parentObj = not_ours;
  h = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(g_v5->startEvent(ctx, &h, &ch), LST_NCCL_SUCCESS);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(g_v5->startEvent(ctx, &h, nullptr), LST_NCCL_SUCCESS);
  EXPECT_EQ(g_v5->finalize(ctx), LST_NCCL_SUCCESS);
  Trace t = read_trace();
  EXPECT_TRUE(collectives_on(t, kComm).empty());
}

}  // namespace
