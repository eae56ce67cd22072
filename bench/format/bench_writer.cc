// Raw cost of the trace writer's record path (reserve + fill + publish into the MAP_SHARED file),
// against the same stores into an anonymous in-memory array with one atomic counter: the baseline
// for the ratio in docs/benchmarks.md.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <atomic>
#include <string>
#include <vector>

#include "lockstep/format/record_check.h"
#include "lockstep/format/writer.h"

namespace {

using lockstep::format::Writer;
using lockstep::format::WriterConfig;

void fill(lst_record* r, uint64_t id) {
  r->op = LST_OP_ALLREDUCE;
  r->api = LST_API_MPI;
  r->dtype = LST_DT_FLOAT32;
  r->redop = LST_RED_SUM;
  r->comm = 0x1234;
  r->u.coll.seq = uint32_t(id);
  r->u.coll.count = 1024;
  r->u.coll.dtype_size = 4;
  r->u.coll.root_or_peer = LST_NONE;
  r->caller = 0x401000;
  r->t_ns = id;
  r->t_return_us = 0;
  r->aux = 0;
}

// One writer shared by every thread of a run, as in the traced process.
Writer* g_writer = nullptr;
std::string g_dir;

// Opens `w` in a fresh directory `dir` under /tmp (a ring of `ring` records; 0: a growing file); a writer
// that cannot open skips the benchmark.
void open_in_tmp(Writer& w, std::string& dir, uint64_t ring, benchmark::State& state) {
  char tmpl[] = "/tmp/lockstep-bench-XXXXXX";
  dir = mkdtemp(tmpl);
  WriterConfig c;
  c.dir = dir.c_str();
  c.ring_records = ring;
  char err[256];
  if (!w.open(c, err, sizeof err)) state.SkipWithError(err);
}

// The shared writer, opened by thread 0 before the run (range(0): its ring) and removed after it.
void open_shared(benchmark::State& state) {
  g_writer = new Writer;
  open_in_tmp(*g_writer, g_dir, uint64_t(state.range(0)), state);
}

void close_shared() {
  g_writer->close();
  delete g_writer;
  std::system(("rm -rf '" + g_dir + "'").c_str());
}

// The shared writer's next record, filled; nullptr (and the run marked skipped) when it was dropped.
lst_record* reserve_filled(benchmark::State& state, uint64_t* id) {
  lst_record* r = g_writer->reserve(id);
  if (!r) {
    state.SkipWithError("record dropped");
    return nullptr;
  }
  fill(r, *id);
  return r;
}

void BM_WriterReservePublish(benchmark::State& state) {
  if (state.thread_index() == 0) open_shared(state);
  for (auto _ : state) {
    uint64_t id;
    lst_record* r = reserve_filled(state, &id);
    if (!r) break;
    Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) close_shared();
}
// Arg: 0 = growing file (grows in 4 MiB chunks as the benchmark runs), N = ring of N records.
BENCHMARK(BM_WriterReservePublish)->Arg(0)->Arg(64)->Arg(1 << 16)->Threads(1)->Threads(2)->UseRealTime();

// One collective's record as the MPI interposer writes it: fill, publish ENTERED, then the return's
// duration and RETURNED (format 2.0: the ENTERED check from the values stored, the return's by update).
void BM_WriterEnterReturn(benchmark::State& state) {
  if (state.thread_index() == 0) open_shared(state);
  for (auto _ : state) {
    uint64_t id;
    lst_record* r = reserve_filled(state, &id);
    if (!r) break;
    const uint32_t word = LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0);
    Writer::publish_sealed(
        r, lockstep::format::seal_words(
               word,
               uint64_t(LST_OP_ALLREDUCE | LST_API_MPI << 8 | LST_DT_FLOAT32 << 16 | LST_RED_SUM << 24) << 32,
               0x1234, uint64_t(uint32_t(id)) | uint64_t(uint32_t(LST_NONE)) << 32,
               4 | uint64_t(uint32_t(id)) << 32, 1024, 0x401000, id, 0));
    benchmark::DoNotOptimize(r);
    Writer::finish(r, LST_STATE_RETURNED, 3);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) close_shared();
}
BENCHMARK(BM_WriterEnterReturn)->Arg(64)->Arg(1 << 16)->Threads(1)->UseRealTime();

std::vector<lst_record>* g_array = nullptr;
std::atomic<uint64_t> g_next{0};

void BM_BaselineArrayStore(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_array = new std::vector<lst_record>(1 << 16);
    g_next = 0;
  }
  for (auto _ : state) {
    uint64_t id = g_next.fetch_add(1, std::memory_order_relaxed);
    lst_record* r = &(*g_array)[id & ((1 << 16) - 1)];
    fill(r, id);
    __atomic_store_n(&r->word, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0), __ATOMIC_RELEASE);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) delete g_array;
}
BENCHMARK(BM_BaselineArrayStore)->Threads(1)->Threads(2)->UseRealTime();

void BM_InternHit(benchmark::State& state) {
  Writer w;
  std::string dir;
  open_in_tmp(w, dir, 0, state);
  const char name[] = "model/layer_12/attention/dense/kernel:0";
  for (auto _ : state) benchmark::DoNotOptimize(w.intern(name, sizeof name - 1));
  w.close();
  std::system(("rm -rf '" + dir + "'").c_str());
}
BENCHMARK(BM_InternHit);

}  // namespace

BENCHMARK_MAIN();
