// Writer → reader round trips and the reader's defences: every record kind, strings, members and
// modules, concurrent growth, ring wrap, unpublished slots, truncation, corruption (file safety and
// growth on disk: file_safety_test.cc).
// long file: the record check's tests (2.0) damage the same sample files the reader's defences use.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../../tracer/format/src/checks.h"
#include "lockstep/format/reader.h"
#include "lockstep/format/record_check.h"
#include "lockstep/format/writer.h"
#include "sample_trace.h"
#include "temp_dir.h"

namespace lockstep::format {
namespace {

using test::read_all;
using test::TempDir;
using test::write_all;

using test::open_error;
using test::small_config;

__attribute__((noinline)) void call_site_anchor() { asm volatile(""); }
uint64_t anchor() { return reinterpret_cast<uint64_t>(&call_site_anchor) + 4; }

// Writes the sample trace and returns its path.
std::string sample_file(const std::string& dir, uint64_t ring = 0) {
  Writer w;
  WriterConfig c = small_config(dir);
  c.rank_hint = 2;
  c.ring_records = ring;
  EXPECT_EQ(open_error(w, c), "");
  w.set_world(2, 4);
  test::write_sample(w, anchor());
  w.set_end_state(LST_END_EXIT);
  std::string p = w.path();
  w.close();
  return p;
}

// The parts of a name that must parse (a failure of the test where it does not).
TraceFileName parsed(const std::string& name) {
  const std::optional<TraceFileName> t = parse_trace_file_name(name);
  EXPECT_TRUE(t.has_value()) << name;
  return t.value_or(TraceFileName{});
}

// The names the writer gives parse back to its rank, host and pid (lockstep run finds the writers of a
// job from them, the reader sorts by them); no other name parses.
TEST(FileName, TheWritersNamesParseAndNoOthers) {
  TempDir d;
  for (int32_t rank : {-1, 7}) {
    Writer w;
    WriterConfig c = small_config(d.path());
    c.rank_hint = rank;
    ASSERT_EQ(open_error(w, c), "");
    const std::string name = std::string(w.path()).substr(d.path().size() + 1);
    const TraceFileName t = parsed(name);
    EXPECT_EQ(t.rank, rank) << name;
    EXPECT_EQ(t.pid, int32_t(getpid())) << name;
    EXPECT_FALSE(t.host.empty());
    EXPECT_FALSE(t.creating);
    const TraceFileName creating = parsed("." + name + ".creating");
    EXPECT_TRUE(creating.creating);
    EXPECT_EQ(creating.rank, rank);
    EXPECT_EQ(creating.pid, t.pid);
    EXPECT_EQ(creating.host, t.host);
    w.close();
  }
  const TraceFileName dotted = parsed("rank-3.node1.cluster.42.lstrace");
  EXPECT_EQ(dotted.host, "node1.cluster");
  EXPECT_EQ(dotted.rank, 3);
  EXPECT_EQ(dotted.pid, 42);
  for (const char* bad :
       {"rank-3.host.42.lstrace.tmp", "rank-3.42.lstrace", "rank-x.host.42.lstrace",
        "rank-3.host.4x2.lstrace", "rank-3.host.0.lstrace", "rank-3.host.99999999999.lstrace",
        "rank-3.host.2147483648.lstrace", "rank-.host.42.lstrace", "rank-3..42.lstrace",
        "rank-3.host..lstrace", "trace.lstrace", ".creating", "rank-3.host.42.lstrace.creating",
        ".rank-3.host.42.creating", "", "rank-3.host.-4.lstrace"})
    EXPECT_FALSE(parse_trace_file_name(bad).has_value()) << bad;
}

TEST(RoundTrip, EveryKindAndField) {
  TempDir d;
  const std::string p = sample_file(d.path());
  TraceFile t = TraceFile::open(p);
  t.validate();
  EXPECT_EQ(t.header().world_rank, 2);
  EXPECT_EQ(t.header().world_size, 4);
  EXPECT_EQ(t.header().end_state, uint32_t(LST_END_EXIT));
  EXPECT_EQ(t.header().pid, uint32_t(getpid()));
  EXPECT_EQ(t.job_id(), "job-42");
  EXPECT_EQ(t.cmdline(), "./app --steps 3");
  EXPECT_FALSE(t.host().empty());
  EXPECT_EQ(t.unpublished(), 0u);

  const size_t n = std::size(test::kSample);
  ASSERT_EQ(t.first_id(), 0u);
  ASSERT_EQ(t.end_id(), n);
  uint32_t world_seq = 0, nccl_seq = 0;
  std::set<uint8_t> kinds;
  for (uint64_t id = 0; id < n; ++id) {
    SCOPED_TRACE(id);
    const test::SampleCall& c = test::kSample[id];
    const lst_record* r = t.record(id);
    ASSERT_NE(r, nullptr);
    kinds.insert(LST_WORD_KIND(r->word));
    EXPECT_EQ(LST_WORD_KIND(r->word), c.kind);
    EXPECT_EQ(LST_WORD_STATE(r->word), c.state);
    EXPECT_EQ(LST_WORD_FLAGS(r->word), c.flags);
    EXPECT_EQ(r->op, c.op);
    EXPECT_EQ(r->api, c.api);
    EXPECT_EQ(r->caller, anchor());
    EXPECT_EQ(r->t_ns, t.header().start_mono_ns + 1000 + id * 10);
    EXPECT_EQ(t.string(r->aux), c.name ? c.name : "");
    if (c.kind == LST_KIND_COLLECTIVE) {
      EXPECT_EQ(r->comm, c.comm);
      EXPECT_EQ(r->u.coll.count, c.count);
      EXPECT_EQ(r->dtype, c.dtype);
      EXPECT_EQ(r->u.coll.dtype_size, c.dtype_size);
      EXPECT_EQ(r->redop, c.redop);
      EXPECT_EQ(r->u.coll.root_or_peer, c.root_or_peer);
      EXPECT_EQ(r->u.coll.seq, c.comm == test::kWorld ? world_seq++ : nccl_seq++);
      EXPECT_EQ(r->u.coll.id_lo, uint32_t(id));
      if (c.state >= LST_STATE_RETURNED) {
        EXPECT_EQ(r->t_return_us, 7u);
      }
    }
    if (c.kind == LST_KIND_COMM) {
      EXPECT_EQ(r->u.comm.size, 4);
      EXPECT_EQ(r->u.comm.rank, 2);
      EXPECT_EQ(t.members(r->members), std::vector<int32_t>({0, 1, 2, 3}));
    }
    if (c.kind == LST_KIND_WAIT) {
      EXPECT_EQ(r->u.wait.first_ref, id - 1);
      EXPECT_EQ(r->u.wait.id, id);
    }
    if (c.kind == LST_KIND_DEVICE) {
      EXPECT_EQ(r->u.device.start_ns, 5000u);
      EXPECT_EQ(r->u.device.end_ns, 6000u);
    }
    if (c.kind == LST_KIND_STACK) {
      EXPECT_EQ(r->u.stack.frames[0], anchor());
    }
  }
  EXPECT_EQ(kinds.size(), 6u) << "the sample covers every record kind";
  EXPECT_EQ(t.record(n), nullptr);
}

TEST(RoundTrip, OpNamesUseTheApisSpelling) {
  TempDir d;
  TraceFile t = TraceFile::open(sample_file(d.path()));
  std::vector<std::string> names;
  for (uint64_t id = t.first_id(); id < t.end_id(); ++id) names.push_back(op_name(*t.record(id)));
  EXPECT_EQ(names[1], "MPI_COMM_WORLD");
  EXPECT_EQ(names[2], "MPI_Allreduce");
  EXPECT_EQ(names[3], "MPI_Iallreduce");
  EXPECT_EQ(names[4], "MPI_Wait");
  EXPECT_EQ(names[5], "MPI_Bcast");
  EXPECT_EQ(names[6], "ncclCommInitRank");
  EXPECT_EQ(names[7], "ncclGroupStart");
  EXPECT_EQ(names[8], "ncclSend");
  EXPECT_EQ(names[10], "ncclAllReduce");
  EXPECT_EQ(names[14], "MPI_Finalize");
  EXPECT_STREQ(dtype_name(LST_DT_BFLOAT16), "bfloat16");
  EXPECT_STREQ(redop_name(LST_RED_AVG), "avg");
  EXPECT_STREQ(state_name(LST_STATE_COMPLETED), "completed");
}

TEST(Metadata, StringsAreInternedAndBounded) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  ASSERT_EQ(open_error(w, c), "");
  const uint32_t a = w.intern("alpha", 5);
  EXPECT_EQ(w.intern("alpha", 5), a);
  EXPECT_NE(w.intern("alpha", 5, LST_STR_BUILD_ID), a);
  const std::string long_text(300, 'x');
  const uint32_t l = w.intern(long_text.data(), long_text.size());
  const uint32_t b = w.intern("beta", 4);
  EXPECT_EQ(b - l, (8u + 300u + 63u) / 64u) << "a string takes ceil((8+len)/64) slots";
  EXPECT_EQ(w.intern("", 0), 0u);
  const int32_t ranks[] = {5, 3, 1};
  const uint32_t m = w.intern(ranks, sizeof ranks, LST_STR_MEMBERS);
  // Fill the region: further strings are dropped and counted, not written past its end.
  uint32_t last = 1;
  for (int i = 0; i < 200 && last != 0; ++i) last = w.intern(long_text.data() + i % 50, 100 + i);
  EXPECT_EQ(last, 0u);
  EXPECT_GT(w.header()->dropped_meta, 0u);
  const std::string p = w.path();
  w.close();

  TraceFile t = TraceFile::open(p);
  EXPECT_EQ(t.string(a), "alpha");
  EXPECT_EQ(t.string(l), long_text);
  EXPECT_EQ(t.string(b), "beta");
  EXPECT_EQ(t.members(m), std::vector<int32_t>({5, 3, 1}));
  EXPECT_THROW(t.members(a), FormatError);
  EXPECT_THROW(t.string(l + 1), FormatError) << "an id inside a string is not a string";
  EXPECT_THROW(t.string(100000), FormatError);
}

// Strings are hashed by 16-byte parts up to 128 bytes (the last part overlapping the ones before) and
// in four lanes of eight bytes beyond: strings of every length up to 160 that differ in one byte at
// the start, middle or end, or by a prefix, are strings of their own, and each is found again (and not
// written again) when interned a second time.
TEST(Metadata, StringsOfEveryLengthAreTheirOwnAndFoundAgain) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  c.meta_slots = 16384;
  ASSERT_EQ(open_error(w, c), "");
  std::map<std::string, uint32_t> ids;
  for (size_t len = 1; len <= 160; ++len) {
    std::string base(len, 'a');
    for (size_t i = 0; i < len; ++i) base[i] = char('a' + (i * 7) % 26);
    std::vector<std::string> texts = {base};
    for (size_t at : {size_t(0), len / 2, len - 1}) {
      std::string t = base;
      t[at] = char(t[at] == 'Z' ? 'Y' : 'Z');
      texts.push_back(t);
    }
    for (const std::string& t : texts) {
      const uint32_t id = w.intern(t.data(), t.size());
      ASSERT_NE(id, 0u) << t;
      auto [it, fresh] = ids.try_emplace(t, id);
      EXPECT_EQ(it->second, id) << "'" << t << "' interned twice as two strings";
      if (!fresh) continue;
      for (const auto& [other, other_id] : ids) {
        if (other != t) {
          EXPECT_NE(other_id, id) << "'" << t << "' and '" << other << "' share an id";
        }
      }
    }
  }
  const uint64_t written = w.header()->meta_next;
  for (const auto& [t, id] : ids) EXPECT_EQ(w.intern(t.data(), t.size()), id) << t;
  EXPECT_NE(w.intern("aZ", 2, LST_STR_BUILD_ID), ids.at("aZ")) << "another subkind, another string";
  EXPECT_EQ(w.header()->meta_next, written + 1) << "strings met before are not written again";
  const std::string p = w.path();
  w.close();
  TraceFile t = TraceFile::open(p);
  for (const auto& [text, id] : ids) EXPECT_EQ(t.string(id), text);
}

// Tensor names that differ only in a few digits, at one of several places (in different 16-byte parts
// of the hash, or in its overlapping last part): every name is remembered where the lookup finds it, so
// a second round writes nothing. A hash that ignored a place would give a family one value, a probe
// sequence too long to remember every name, and that family's names written again.
TEST(Metadata, SimilarNamesAreFoundAgainWithoutBeingWrittenAgain) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  c.meta_slots = 32768;
  ASSERT_EQ(open_error(w, c), "");
  std::vector<std::string> names;
  const std::string body = "DistributedAdam_Allreduce/cond/HorovodAllreduce_gradients_dense_BiasAdd_grad";
  for (size_t at : {size_t(0), size_t(10), size_t(20), size_t(28), size_t(45), body.size()})
    for (int k = 0; k < 700; ++k) {
      char digits[8];
      snprintf(digits, sizeof digits, "%04d", k);
      names.push_back(body.substr(0, at) + digits + body.substr(at));
    }
  std::vector<uint32_t> ids;
  for (const std::string& n : names) {
    ids.push_back(w.intern(n.data(), n.size()));
    ASSERT_NE(ids.back(), 0u) << n;
  }
  const uint64_t written = w.header()->meta_next;
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(w.intern(names[i].data(), names[i].size()), ids[i]) << names[i];
  EXPECT_EQ(w.header()->meta_next, written) << "names met before are not written again";
}

// Four threads interning items 0..n-1 at once (half of them backwards), three rounds each; intern(j)
// gives item j's id, 0 while the lock is busy (retried, as a later call would). Expects every thread
// to find one id per item, the same in every round and thread, distinct ids for distinct items, and
// each item written once (`meta_next` counts one slot per item).
template <class Intern>
void expect_one_id_per_item_from_threads(Writer& w, int n, Intern intern) {
  constexpr int kThreads = 4;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(size_t(n)));
  std::atomic<int> go{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k)
    threads.emplace_back([&, k] {
      go.fetch_add(1);
      while (go.load() < kThreads) sched_yield();
      for (int round = 0; round < 3; ++round)
        for (int i = 0; i < n; ++i) {
          const int j = (k % 2) ? n - 1 - i : i;
          uint32_t id = 0;
          for (int tries = 0; id == 0 && tries < 1000; ++tries) id = intern(j);
          if (round > 0) {
            EXPECT_EQ(id, ids[k][j]) << "item " << j << " changed id";
          }
          ids[k][j] = id;
        }
    });
  for (auto& th : threads) th.join();
  std::set<uint32_t> distinct;
  for (int j = 0; j < n; ++j) {
    ASSERT_NE(ids[0][j], 0u);
    for (int k = 1; k < kThreads; ++k) EXPECT_EQ(ids[k][j], ids[0][j]) << "item " << j;
    distinct.insert(ids[0][j]);
  }
  EXPECT_EQ(distinct.size(), size_t(n));
  EXPECT_EQ(w.header()->meta_next, uint64_t(n)) << "each item written once";
}

// Many threads interning the same names at once, as every thread of a runtime names its tensors: one id
// per name, and each name written once (found without the lock once another thread wrote it).
TEST(Metadata, StringsInternedByManyThreadsAtOnceKeepOneIdPerString) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  c.meta_slots = 8192;
  ASSERT_EQ(open_error(w, c), "");
  std::vector<std::string> names;
  for (int j = 0; j < 300; ++j) names.push_back("HorovodAllreduce_grads_" + std::to_string(j) + "_0");
  expect_one_id_per_item_from_threads(w, 300,
                                      [&](int j) { return w.intern(names[j].data(), names[j].size()); });
  w.close();
}

// (2.1) Copies of communicator creations, kept in the metadata region for rings: read back whole and
// in order; a copy of another length is damage, named at its length field.
TEST(Metadata, CommunicatorCopiesReadBackAndAreChecked) {
  TempDir d1, d2;
  auto write = [&](const TempDir& d, size_t second_len) {
    Writer w;
    WriterConfig c = small_config(d.path());
    EXPECT_EQ(open_error(w, c), "");
    lst_record a{}, b{};
    a.word = b.word = LST_WORD(LST_KIND_COMM, LST_STATE_RETURNED, 0);
    a.comm = 0x1111;
    b.comm = 0x2222;
    b.u.comm.color = 7;
    w.intern(&a, sizeof a, LST_STR_COMM);
    w.intern(&b, second_len, LST_STR_COMM);
    const std::string p = w.path();
    w.close();
    return p;
  };
  {
    TraceFile t = TraceFile::open(write(d1, sizeof(lst_record)));
    std::vector<lst_record> copies = t.comm_copies();
    ASSERT_EQ(copies.size(), 2u);
    EXPECT_EQ(copies[0].comm, 0x1111u);
    EXPECT_EQ(copies[1].comm, 0x2222u);
    EXPECT_EQ(copies[1].u.comm.color, 7);
  }
  try {
    TraceFile::open(write(d2, 40));
    ADD_FAILURE() << "a 40-byte communicator copy was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("has length 40, not 64"), std::string::npos) << e.what();
  }
}

// Publishes a STACK record for `ref` with its own two frames and frame list `list` (0: none).
void write_stack_record(Writer& w, uint64_t ref, uint64_t f0, uint64_t f1, uint32_t list) {
  uint64_t id = 0;
  lst_record* r = w.reserve(&id);
  ASSERT_NE(r, nullptr);
  r->u.stack.ref = ref;
  r->u.stack.frames[0] = f0;
  r->u.stack.frames[1] = f1;
  r->aux = list;
  Writer::publish(r, LST_WORD(LST_KIND_STACK, 0, 0));
}

// (2.2) A frame list is written once per distinct list, found again by content (never by its hash
// alone), and read back behind the STACK record that names it.
TEST(Metadata, FrameListsAreWrittenOncePerListAndReadBehindTheirStackRecord) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  c.meta_slots = 4096;
  ASSERT_EQ(open_error(w, c), "");
  const uint64_t a[] = {0x401000, 0x402000, 0x403000, 0x404000, 0x405000, 0x406000};
  const uint64_t b[] = {0x401000, 0x402000, 0x403000, 0x404000, 0x405000, 0x406008};
  bool added = false;
  const uint32_t la = w.intern_frames(a, 6, &added);
  ASSERT_NE(la, 0u);
  EXPECT_TRUE(added);
  EXPECT_EQ(w.intern_frames(a, 6, &added), la);
  EXPECT_FALSE(added) << "the same list again is found, not written again";
  const uint64_t next = w.header()->meta_next;
  const uint32_t lb = w.intern_frames(b, 6, &added);
  EXPECT_TRUE(added);
  const uint32_t prefix = w.intern_frames(a, 5, &added);
  EXPECT_TRUE(added) << "a prefix is another list";
  EXPECT_EQ(w.header()->meta_next, next + 2) << "a list of 6 or 5 frames takes one slot";
  EXPECT_EQ(std::set<uint32_t>({la, lb, prefix}).size(), 3u);
  EXPECT_EQ(w.intern_frames(a, 0, &added), 0u);
  // A text of the same bytes is another string: lists and texts never share an id.
  EXPECT_NE(w.intern(a, sizeof a), la);
  write_stack_record(w, 0, 0x40a000, 0x40b000, la);
  write_stack_record(w, 0, 0x40a000, 0x40b000, lb);
  write_stack_record(w, 0, 0x40a000, 0, 0);
  const std::string p = w.path();
  w.close();

  TraceFile t = TraceFile::open(p);
  t.validate();
  ASSERT_EQ(t.end_id(), 3u);
  std::vector<uint64_t> want = {0x40a000, 0x40b000};
  want.insert(want.end(), std::begin(a), std::end(a));
  EXPECT_EQ(t.stack_frames(*t.record(0)), want);
  want.back() = 0x406008;
  EXPECT_EQ(t.stack_frames(*t.record(1)), want);
  EXPECT_EQ(t.stack_frames(*t.record(2)), std::vector<uint64_t>({0x40a000})) << "zeros are no frames";
}

// Threads interning the same lists at once get one id per list, and distinct lists distinct ids.
TEST(Metadata, FrameListsInternedByManyThreadsAtOnceKeepOneIdPerList) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  c.meta_slots = 8192;
  ASSERT_EQ(open_error(w, c), "");
  // A busy lock gives 0, and the caller writes records instead: the helper retries.
  expect_one_id_per_item_from_threads(w, 400, [&](int j) {
    const uint64_t f[4] = {0x500000, uint64_t(0x600000 + j * 16), 0x700000, uint64_t(j % 7)};
    bool added;
    return w.intern_frames(f, 4, &added);
  });
  w.close();
}

// Frame lists stop at half the metadata region, without counting a drop: names and modules keep the
// rest, and the caller writes its frames into records.
TEST(Metadata, FrameListsLeaveHalfTheRegionToNamesAndModules) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());  // 128 metadata slots
  ASSERT_EQ(open_error(w, c), "");
  int kept = 0;
  bool added;
  for (uint64_t i = 1; i <= 200; ++i) {
    const uint64_t f[3] = {i, i + 1, i + 2};
    if (w.intern_frames(f, 3, &added) != 0) ++kept;
  }
  EXPECT_EQ(kept, 64);
  EXPECT_EQ(w.header()->dropped_meta, 0u);
  EXPECT_NE(w.intern("a name", 6), 0u);
  const uint64_t first[3] = {1, 2, 3};
  EXPECT_NE(w.intern_frames(first, 3, &added), 0u) << "lists already written are still found";
  w.close();
}

// A STACK record's list must be a frame list, and a frame list whole frames.
TEST(Reader, StackFrameListIsAFrameListOfWholeFrames) {
  auto make = [](const TempDir& d, bool text_list, size_t len) {
    Writer w;
    WriterConfig c = small_config(d.path());
    EXPECT_EQ(open_error(w, c), "");
    const uint64_t f[2] = {0x401000, 0x402000};
    bool added;
    const uint32_t list = text_list         ? w.intern("main", 4)
                          : len == sizeof f ? w.intern_frames(f, 2, &added)
                                            : w.intern(f, len, LST_STR_FRAMES);
    write_stack_record(w, 0, 0x40a000, 0x40b000, list);
    const std::string p = w.path();
    w.close();
    return p;
  };
  TempDir d1, d2, d3;
  try {
    TraceFile t = TraceFile::open(make(d1, true, 0));
    t.validate();
    ADD_FAILURE() << "a STACK record naming a text was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a frame list"), std::string::npos) << e.what();
  }
  try {
    TraceFile::open(make(d2, false, 12));
    ADD_FAILURE() << "a 12-byte frame list was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("has length 12, not a multiple of 8"), std::string::npos)
        << e.what();
  }
  TraceFile t = TraceFile::open(make(d3, false, 16));
  t.validate();
  EXPECT_EQ(t.stack_frames(*t.record(0)), std::vector<uint64_t>({0x40a000, 0x40b000, 0x401000, 0x402000}));
}

TEST(Metadata, EmptyMemberBlobReadsAsNoMembers) {
  // Found by the fuzzer: a zero-length blob is legal on disk even though the writer never makes one.
  TempDir d;
  const std::string p = sample_file(d.path());
  uint64_t at;
  {
    TraceFile t = TraceFile::open(p);
    const uint32_t m = t.record(1)->members;
    ASSERT_NE(m, 0u);
    at = t.header().meta_offset + (m - 1) * 64 + offsetof(lst_meta_string, len);
  }
  std::string b = read_all(p);
  std::memset(&b[at], 0, 4);
  // With its check byte, as a writer would have stored it.
  b[at - offsetof(lst_meta_string, len) + 2] = char(lockstep::format::string_check(0, nullptr));
  write_all(p, b);
  TraceFile t = TraceFile::open(p);
  t.validate();
  EXPECT_TRUE(t.members(t.record(1)->members).empty());
}

TEST(Metadata, ModuleTableCoversTheCallSite) {
  TempDir d;
  const std::string p = sample_file(d.path());
  TraceFile t = TraceFile::open(p);
  ASSERT_EQ(t.modules().size(), 1u) << "one module noted once despite many calls";
  const Module& m = t.modules()[0];
  EXPECT_LE(m.lo, anchor());
  EXPECT_GT(m.hi, anchor());
  char exe[PATH_MAX] = {};
  ASSERT_GT(readlink("/proc/self/exe", exe, sizeof exe - 1), 0);
  EXPECT_EQ(m.path, exe);
  EXPECT_FALSE(m.build_id.empty());
  EXPECT_EQ(m.build_id.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Growth, EightThreadsAcrossManyChunksLoseNothing) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  ASSERT_EQ(open_error(w, c), "");
  constexpr int kThreads = 8, kPer = 4000;
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) {
      }
      uint64_t first_id = 0;
      lst_record* first = nullptr;
      for (int i = 0; i < kPer; ++i) {
        uint64_t id;
        lst_record* r = w.reserve(&id);
        ASSERT_NE(r, nullptr);
        r->op = LST_OP_ALLREDUCE;
        r->api = LST_API_MPI;
        r->u.coll.seq = uint32_t(i);
        r->u.coll.count = uint64_t(t) << 32 | uint64_t(i);
        Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
        if (!first) {
          first = r;
          first_id = id;
        }
      }
      // A pointer taken before the file grew still points at the same record.
      ASSERT_EQ(w.at(first_id), first);
      Writer::publish(first, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_RETURNED, 0));
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  const std::string p = w.path();
  EXPECT_EQ(w.header()->dropped_records, 0u);
  w.close();

  TraceFile t = TraceFile::open(p);
  t.validate();
  ASSERT_EQ(t.end_id(), uint64_t(kThreads * kPer));
  EXPECT_GE(t.header().record_capacity / 64, uint64_t(kThreads * kPer / 64)) << "grew over many chunks";
  std::vector<std::vector<bool>> seen(kThreads, std::vector<bool>(kPer));
  std::vector<int> returned(kThreads), last(kThreads, -1);
  for (uint64_t id = 0; id < t.end_id(); ++id) {
    const lst_record* r = t.record(id);
    ASSERT_NE(r, nullptr) << id;
    const int th = int(r->u.coll.count >> 32), i = int(r->u.coll.count & 0xFFFFFFFF);
    ASSERT_LT(th, kThreads);
    ASSERT_LT(i, kPer);
    EXPECT_FALSE(seen[th][i]) << "duplicate " << th << ":" << i;
    seen[th][i] = true;
    EXPECT_GT(i, last[th]) << "a thread's records keep its order";
    last[th] = i;
    if (LST_WORD_STATE(r->word) == LST_STATE_RETURNED) ++returned[th];
  }
  for (int th = 0; th < kThreads; ++th) {
    EXPECT_EQ(std::count(seen[th].begin(), seen[th].end(), true), kPer);
    EXPECT_EQ(returned[th], 1);
  }
}

// A call's STACK records are reserved together (Writer::reserve_n): each batch gets consecutive ids,
// whatever other threads reserve at the same time, across chunk boundaries in a growing file and in a
// ring, and nothing is lost or duplicated.
TEST(Growth, BatchesOfRecordsGetConsecutiveIdsUnderEightThreads) {
  for (const uint64_t ring : {uint64_t(0), uint64_t(1) << 16}) {
    SCOPED_TRACE(ring ? "ring" : "growing file");
    TempDir d;
    Writer w;
    WriterConfig c = small_config(d.path());
    c.ring_records = ring;
    ASSERT_EQ(open_error(w, c), "");
    constexpr int kThreads = 8, kBatches = 600;
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) {
        }
        for (int b = 0; b < kBatches; ++b) {
          const int n = 1 + (b + t) % 4;  // 1 to 4 records, as 1 to 8 frames take
          lst_record* recs[4];
          uint64_t first = ~0ull;
          w.reserve_n(recs, n, &first);
          for (int k = 0; k < n; ++k) {
            ASSERT_NE(recs[k], nullptr);
            ASSERT_EQ(w.at(first + uint64_t(k)), recs[k]) << "batch records are not consecutive";
            recs[k]->op = LST_OP_ALLREDUCE;
            recs[k]->u.coll.count = uint64_t(t) << 48 | uint64_t(b) << 8 | uint64_t(k) << 4 | uint64_t(n);
            Writer::publish(recs[k], LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
          }
          // A single reservation in between, as the call's own record is.
          uint64_t id;
          lst_record* r = w.reserve(&id);
          ASSERT_NE(r, nullptr);
          r->op = LST_OP_BARRIER;
          Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
        }
      });
    }
    go = true;
    for (auto& th : threads) th.join();
    const std::string p = w.path();
    EXPECT_EQ(w.header()->dropped_records, 0u);
    w.close();
    TraceFile t = TraceFile::open(p);
    t.validate();
    uint64_t batch_records = 0, singles = 0;
    for (uint64_t id = 0; id < t.end_id();) {
      const lst_record* r = t.record(id);
      ASSERT_NE(r, nullptr) << id;
      if (r->op == LST_OP_BARRIER) {
        ++singles;
        ++id;
        continue;
      }
      const uint64_t v = r->u.coll.count;
      const int n = int(v & 15);
      ASSERT_EQ((v >> 4) & 15, 0u) << "record " << id << " is not the first of its batch";
      for (int k = 0; k < n; ++k) {
        const lst_record* q = t.record(id + uint64_t(k));
        ASSERT_NE(q, nullptr);
        EXPECT_EQ(q->u.coll.count, (v & ~uint64_t(0xFF)) | uint64_t(k) << 4 | uint64_t(n))
            << id + uint64_t(k);
      }
      batch_records += uint64_t(n);
      id += uint64_t(n);
    }
    EXPECT_EQ(singles, uint64_t(kThreads * kBatches));
    EXPECT_EQ(batch_records, uint64_t(kThreads) * (kBatches / 4) * (1 + 2 + 3 + 4));
  }
}

TEST(Growth, LimitDropsAndCounts) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  c.max_records = 128;
  ASSERT_EQ(open_error(w, c), "");
  int written = 0;
  for (int i = 0; i < 200; ++i) {
    uint64_t id;
    if (lst_record* r = w.reserve(&id)) {
      r->op = LST_MARK_ANNOTATION;
      Writer::publish(r, LST_WORD(LST_KIND_MARKER, 0, 0));
      ++written;
    }
  }
  EXPECT_EQ(written, 128);
  EXPECT_EQ(w.header()->dropped_records, 72u);
  const std::string p = w.path();
  w.close();
  TraceFile t = TraceFile::open(p);
  EXPECT_EQ(t.end_id(), 128u) << "ids reserved past the end are not read";
}

// A ring whose size is a power of two takes the writer's inline path (slot = id & mask), any other
// size the general one: both keep the same records.
TEST(Ring, KeepsTheLastRecordsAndForgetsOlderOnes) {
  for (const uint64_t ring : {uint64_t{100}, uint64_t{128}}) {
    SCOPED_TRACE(ring);
    const uint64_t n = ring * 5 / 2;
    TempDir d;
    Writer w;
    WriterConfig c = small_config(d.path());
    c.ring_records = ring;
    ASSERT_EQ(open_error(w, c), "");
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t id;
      lst_record* r = w.reserve(&id);
      ASSERT_NE(r, nullptr);
      EXPECT_EQ(id, i);
      r->op = LST_OP_BARRIER;
      r->api = LST_API_MPI;
      r->u.coll.count = id;
      Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_RETURNED, 0));
    }
    EXPECT_EQ(w.at(10), nullptr) << "slot reused";
    EXPECT_EQ(w.at(n - ring - 1), nullptr);
    ASSERT_NE(w.at(n - ring), nullptr);
    EXPECT_EQ(w.at(n - ring)->u.coll.count, n - ring);
    EXPECT_EQ(w.at(n), nullptr) << "not reserved yet";
    // With a cursor value read earlier (a thread updating many records reads it once): the same
    // answers, a reused slot still told by its word where the old value would have kept it.
    EXPECT_EQ(w.at(n - ring, n), w.at(n - ring));
    EXPECT_EQ(w.at(10, 11), nullptr) << "slot reused since the cursor value was read";
    EXPECT_EQ(w.at(n - 1, n - 1), nullptr) << "not reserved when the cursor value was read";
    // A slot reserved but not yet refilled still holds an older record: the reader must not take it.
    uint64_t pending;
    lst_record* r = w.reserve(&pending);
    EXPECT_EQ(pending, n);
    r->u.coll.id_lo = uint32_t(pending - ring);  // as if the reserving thread had not reached the slot
    Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_RETURNED, 0));
    const std::string p = w.path();
    w.close();

    TraceFile t = TraceFile::open(p);
    EXPECT_TRUE(t.header().flags & LST_HDR_RING);
    EXPECT_EQ(t.first_id(), n - ring + 1);
    EXPECT_EQ(t.end_id(), n + 1);
    t.validate();
    EXPECT_EQ(t.overwritten(), 1u);
    EXPECT_EQ(t.record(n), nullptr);
    EXPECT_EQ(t.record(n - ring), nullptr);
    for (uint64_t id = n - ring + 1; id < n; ++id) {
      ASSERT_NE(t.record(id), nullptr) << id;
      EXPECT_EQ(t.record(id)->u.coll.count, id);
    }
  }
}

Writer* g_signal_writer = nullptr;
std::atomic<int> g_signals{0};
void on_signal(int sig) {
  uint64_t id;
  if (lst_record* r = g_signal_writer->reserve(&id)) {
    r->op = LST_MARK_SIGNAL;
    r->u.marker.value = uint64_t(sig);
    Writer::publish(r, LST_WORD(LST_KIND_MARKER, 0, 0));
  }
  g_signals.fetch_add(1);
}

TEST(CommitProtocol, SignalHandlerWritesBetweenRecordsOfItsOwnThread) {
  // The record path has no lock, so a handler that interrupts a thread mid-record can still write.
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  c.chunk_records = 4096;
  ASSERT_EQ(open_error(w, c), "");
  g_signal_writer = &w;
  g_signals = 0;
  struct sigaction sa{}, old{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  constexpr int kRecords = 50000, kSignals = 100;
  std::atomic<bool> done{false};
  std::atomic<int> written{0};
  std::thread worker([&] {
    for (int i = 0; i < kRecords || g_signals.load() < kSignals; ++i, ++written) {
      uint64_t id;
      lst_record* r = w.reserve(&id);
      r->op = LST_OP_ALLREDUCE;
      r->u.coll.count = 7;
      Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
      if (i >= kRecords) sched_yield();  // waiting for the last signals: no need to fill the disk
    }
    done = true;
  });
  int sent = 0;
  while (!done.load()) {
    pthread_kill(worker.native_handle(), SIGUSR1);
    ++sent;
    while (g_signals.load() < sent && !done.load()) std::this_thread::yield();
  }
  worker.join();
  sigaction(SIGUSR1, &old, nullptr);
  const std::string p = w.path();
  // A handler that interrupted its own thread while that thread was growing the file drops its
  // record (counted) rather than wait for itself; the dropped id is then an unpublished slot.
  const uint32_t dropped = w.header()->dropped_records;
  w.close();
  TraceFile t = TraceFile::open(p);
  t.validate();
  EXPECT_EQ(t.unpublished(), dropped);
  int markers = 0, colls = 0;
  for (uint64_t id = t.first_id(); id < t.end_id(); ++id) {
    const lst_record* r = t.record(id);
    if (!r) continue;
    if (LST_WORD_KIND(r->word) == LST_KIND_MARKER) {
      EXPECT_EQ(r->u.marker.value, uint64_t(SIGUSR1));
      ++markers;
    } else {
      EXPECT_EQ(r->u.coll.count, 7u);
      ++colls;
    }
  }
  EXPECT_EQ(markers + int(dropped), g_signals.load());
  EXPECT_GT(markers, 0);
  EXPECT_GE(g_signals.load(), kSignals);
  EXPECT_EQ(colls, written.load());
}

TEST(CommitProtocol, ReservedButUnpublishedSlotIsCountedAndSkipped) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  ASSERT_EQ(open_error(w, c), "");
  for (int i = 0; i < 3; ++i) {
    uint64_t id;
    lst_record* r = w.reserve(&id);
    r->op = LST_OP_BCAST;
    r->u.coll.count = 99;  // fields written, word not: a thread killed before publishing
    if (i != 1) Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
  }
  const std::string p = w.path();
  w.close();
  TraceFile t = TraceFile::open(p);
  t.validate();
  EXPECT_EQ(t.end_id(), 3u);
  EXPECT_EQ(t.unpublished(), 1u);
  EXPECT_NE(t.record(0), nullptr);
  EXPECT_EQ(t.record(1), nullptr);
  EXPECT_NE(t.record(2), nullptr);
}

// Opens and fully reads a file: what every tool does.
void load(const std::string& p) {
  TraceFile t = TraceFile::open(p);
  t.validate();
  for (uint64_t id = t.first_id(); id < t.end_id(); ++id)
    if (const lst_record* r = t.record(id)) {
      (void)op_name(*r);
      (void)t.string(r->aux);
      if (LST_WORD_KIND(r->word) == LST_KIND_COMM) (void)t.members(r->members);
    }
}

TEST(Reader, TruncationAnywhereIsAnErrorAtTheCut) {
  TempDir d;
  const std::string p = sample_file(d.path());
  const std::string bytes = read_all(p);
  const std::string cut = d.path() + "/cut.lstrace";
  std::vector<size_t> offsets = {0, 1, 7, 8, 100, 4095, 4096, 4097, bytes.size() - 1, bytes.size() - 64};
  for (size_t o = 64; o < bytes.size(); o += 997) offsets.push_back(o);
  for (size_t o : offsets) {
    SCOPED_TRACE(o);
    write_all(cut, bytes.substr(0, o));
    try {
      load(cut);
      ADD_FAILURE() << "truncated file accepted";
    } catch (const FormatError& e) {
      EXPECT_EQ(e.file(), cut);
      EXPECT_EQ(e.offset(), o);
      EXPECT_NE(std::string(e.what()).find(cut + ": byte " + std::to_string(o) + ": "), std::string::npos)
          << e.what();
    }
  }
}

TEST(Reader, TargetedCorruptionNamesTheByte) {
  TempDir d;
  const std::string p = sample_file(d.path());
  const std::string good = read_all(p);
  TraceFile t0 = TraceFile::open(p);
  const uint64_t rec = t0.header().records_offset;
  const std::string bad = d.path() + "/bad.lstrace";
  // Loading `bad` fails at `offset`, saying `text`.
  auto expect_rejected = [&](const std::string& what, uint64_t offset, const std::string& text) {
    try {
      load(bad);
      ADD_FAILURE() << "accepted " << what;
    } catch (const FormatError& e) {
      EXPECT_EQ(e.offset(), offset) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  auto expect_error = [&](size_t at, uint8_t value, uint64_t offset, const std::string& text) {
    std::string b = good;
    b[at] = char(value);
    write_all(bad, b);
    expect_rejected("corruption at " + std::to_string(at), offset, text);
  };
  expect_error(0, 'X', 0, "bad magic");
  expect_error(8, 3, 8, "format version 3." + std::to_string(LST_VERSION_MINOR));
  // A changed byte anywhere in a record (2.0): the record's check, at the record's first byte.
  for (size_t byte : {0, 1, 2, 3, 4, 6, 9, 17, 30, 33, 41, 50, 57, 63})
    expect_error(rec + 2 * 64 + byte, uint8_t(good[rec + 2 * 64 + byte] ^ 0x10), rec + 2 * 64,
                 "record 2 does not match its check");
  // Values out of range in an intact record (one a newer writer could make): named by the field.
  auto expect_sealed_error = [&](uint64_t id, auto edit, uint64_t offset, const std::string& text) {
    std::string b = good;
    auto* r = reinterpret_cast<lst_record*>(&b[rec + id * 64]);
    edit(*r);
    r->word = seal_record_word(r, r->word);
    write_all(bad, b);
    expect_rejected(text, offset, text);
  };
  expect_sealed_error(
      1, [](lst_record& r) { r.word = (r.word & ~0x1F00u) | (29u << 8); }, rec + 64,
      "record 1 has unknown kind 29");
  expect_sealed_error(
      2, [](lst_record& r) { r.dtype = 99; }, rec + 2 * 64 + 6, "record 2 has unknown datatype 99");
  expect_sealed_error(
      2, [](lst_record& r) { r.redop = 99; }, rec + 2 * 64 + 7, "record 2 has unknown reduction op 99");
  expect_sealed_error(
      2, [](lst_record& r) { r.word = (r.word & ~0x70000u) | (7u << 16); }, rec + 2 * 64,
      "record 2 has invalid state 7");
  expect_sealed_error(
      1, [](lst_record& r) { r.aux = 0xEE; }, rec + 64 + 60, "record 1 name refers to string");
  expect_error(offsetof(lst_header, records_offset) + 7, 0x40, offsetof(lst_header, records_offset),
               "records offset");
  // Integrity checks (LST_HDR_CHECKED): a fixed header field, a string's payload, a module's range.
  expect_error(offsetof(lst_header, cmdline) + 3, 0x7f, offsetof(lst_header, header_check),
               "header does not match");
  // The pid differs from run to run: flip bits of it, never set a byte it may already hold.
  expect_error(offsetof(lst_header, pid), uint8_t(good[offsetof(lst_header, pid)] ^ 0x55),
               offsetof(lst_header, header_check), "header does not match");
  {
    const uint64_t meta = t0.header().meta_offset;
    const uint32_t w = *reinterpret_cast<const uint32_t*>(good.data() + meta);
    ASSERT_EQ(LST_WORD_KIND(w), LST_KIND_STRING) << "the sample's first metadata entry is a string";
    expect_error(meta + 8, uint8_t(good[meta + 8] ^ 0x20), meta, "does not match its check byte");
  }
  for (uint64_t i = 0; i < t0.header().meta_next; ++i) {
    const uint64_t at = t0.header().meta_offset + i * 64;
    if (LST_WORD_KIND(*reinterpret_cast<const uint32_t*>(good.data() + at)) != LST_KIND_MODULE) continue;
    expect_error(at + offsetof(lst_meta_module, lo) + 1,
                 uint8_t(good[at + offsetof(lst_meta_module, lo) + 1] ^ 1), at,
                 "module entry at metadata slot");
    break;
  }

  // A higher minor version is read; an unknown kind it may add is skipped, not an error.
  std::string newer = good;
  newer[10] = 9;
  auto* added = reinterpret_cast<lst_record*>(&newer[rec + 64]);
  added->word = seal_record_word(added, (added->word & ~0x1F00u) | (20u << 8));
  const uint32_t check = lockstep::format::header_check(reinterpret_cast<const lst_header*>(newer.data()));
  std::memcpy(&newer[offsetof(lst_header, header_check)], &check, 4);
  write_all(bad, newer);
  EXPECT_NO_THROW(load(bad));
}

// ---- the record check (2.0) ---------------------------------------------------------------------

// One record of each stateful kind left as a process killed between the two stores of its return
// leaves it: the new duration (and a wait's count) written, the ENTERED word not yet replaced.
std::string torn_file(const std::string& dir, uint64_t* coll, uint64_t* wait, uint64_t* fin) {
  Writer w;
  WriterConfig c = small_config(dir);
  EXPECT_EQ(open_error(w, c), "");
  auto entered = [&](uint8_t kind, uint8_t op) {
    uint64_t id;
    lst_record* r = w.reserve(&id);
    r->op = op;
    r->api = LST_API_MPI;
    r->t_ns = 1000 + id;
    if (kind == LST_KIND_WAIT) {
      r->u.wait.nrequests = 3;
      r->u.wait.ncompleted = 0;  // reserve() stored the id's low half here; the tracer clears the slot
      r->u.wait.id = id;
    }
    if (kind == LST_KIND_COLLECTIVE) r->u.coll.count = 64;
    Writer::publish(r, LST_WORD(kind, LST_STATE_ENTERED, 0));
    r->t_return_us = 77;                                  // the return's first store ...
    if (kind == LST_KIND_WAIT) r->u.wait.ncompleted = 2;  // ... and, for a wait, its second
    return id;
  };
  *coll = entered(LST_KIND_COLLECTIVE, LST_OP_ALLREDUCE);
  *wait = entered(LST_KIND_WAIT, LST_WAIT_WAITALL);
  *fin = entered(LST_KIND_MARKER, LST_MARK_MPI_FINALIZE);
  std::string p = w.path();
  w.close();
  return p;
}

TEST(RecordCheck, TornReturnReadsAsEnteredNotDamage) {
  TempDir d;
  uint64_t coll, wait, fin;
  const std::string p = torn_file(d.path(), &coll, &wait, &fin);
  TraceFile t = TraceFile::open(p);
  ASSERT_NO_THROW(t.validate());
  EXPECT_EQ(t.unpublished(), 0u);
  for (uint64_t id : {coll, wait, fin}) {
    const lst_record* r = t.record(id);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(LST_WORD_STATE(r->word), LST_STATE_ENTERED) << id;
    EXPECT_EQ(verify_record(r, r->word, LST_VERSION_MAJOR), RecordVerdict::kIntact) << id;
  }
  // The exception is for exactly those fields: any other byte of a torn record is still damage.
  const std::string good = read_all(p);
  const std::string bad = d.path() + "/bad.lstrace";
  const uint64_t rec = t.header().records_offset;
  for (uint64_t id : {coll, wait, fin})
    for (size_t byte : {4, 8, 20, 44, 50, 61}) {
      std::string b = good;
      b[rec + id * 64 + byte] ^= 0x01;
      write_all(bad, b);
      try {
        TraceFile::open(bad).validate();
        ADD_FAILURE() << "record " << id << " byte " << byte << " accepted";
      } catch (const FormatError& e) {
        EXPECT_EQ(e.offset(), rec + id * 64);
        EXPECT_NE(std::string(e.what()).find("does not match its check"), std::string::npos) << e.what();
      }
    }
}

TEST(RecordCheck, UpdatesRacingOnOneRecordEachCountOnce) {
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  ASSERT_EQ(open_error(w, c), "");
  uint64_t id;
  lst_record* r = w.reserve(&id);
  r->op = LST_OP_ALLREDUCE;
  r->api = LST_API_NCCL;
  Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
  Writer::advance(r, LST_STATE_COMPLETED);                  // the device completion came first
  Writer::finish(r, LST_STATE_RETURNED, 5);                 // then the call's own return: its duration,
  EXPECT_EQ(LST_WORD_STATE(r->word), LST_STATE_COMPLETED);  // never the state back
  EXPECT_EQ(r->t_return_us, 5u);
  EXPECT_EQ(verify_record(r, r->word, LST_VERSION_MAJOR), RecordVerdict::kIntact);
  EXPECT_EQ(r->word, seal_record_word(r, r->word)) << "the updated check is the check of the fields";
  // Two threads racing updates on one record: every combination ends with the fields' own check.
  uint64_t wid;
  lst_record* wr = w.reserve(&wid);
  wr->op = LST_WAIT_WAITALL;
  wr->u.wait.ncompleted = 0;
  Writer::publish(wr, LST_WORD(LST_KIND_WAIT, LST_STATE_ENTERED, 0));
  std::thread a([&] { Writer::finish_wait(wr, LST_STATE_RETURNED, 9, 3); });
  std::thread b([&] { Writer::advance(wr, LST_STATE_COMPLETED); });
  a.join();
  b.join();
  EXPECT_EQ(LST_WORD_STATE(wr->word), LST_STATE_COMPLETED);
  EXPECT_EQ(wr->word, seal_record_word(wr, wr->word));
  const std::string p = w.path();
  w.close();
  EXPECT_NO_THROW(TraceFile::open(p).validate());
}

// The return a call makes of its own record (finish_own, finish_wait_own: one store) leaves exactly the
// bytes of the compare-and-swap return (finish, finish_wait), from ENTERED and from a state already
// further on, so that the single store changes nothing in the file.
TEST(RecordCheck, OwnReturnWritesWhatTheGeneralReturnWrites) {
  TempDir d;
  Writer w;
  char err[256];
  WriterConfig c = small_config(d.path());
  ASSERT_TRUE(w.open(c, err, sizeof err)) << err;
  struct Case {
    uint8_t kind, before, state;
    uint32_t us, done;
  };
  const Case cases[] = {
      {LST_KIND_COLLECTIVE, LST_STATE_ENTERED, LST_STATE_RETURNED, 7, 0},
      {LST_KIND_COLLECTIVE, LST_STATE_ENTERED, LST_STATE_FAILED, 0xFFFFFFFFu, 0},
      {LST_KIND_COLLECTIVE, LST_STATE_COMPLETED, LST_STATE_RETURNED, 12, 0},
      {LST_KIND_WAIT, LST_STATE_ENTERED, LST_STATE_RETURNED, 3, 2},
      {LST_KIND_WAIT, LST_STATE_ENTERED, LST_STATE_FAILED, 0, 5},
  };
  for (const Case& k : cases) {
    lst_record* r[2];
    for (lst_record*& x : r) {
      uint64_t id;
      x = w.reserve(&id);
      ASSERT_NE(x, nullptr);
      std::memset(reinterpret_cast<char*>(x) + 4, 0, sizeof(lst_record) - 4);
      x->op = k.kind == LST_KIND_WAIT ? uint8_t{LST_WAIT_WAITALL} : uint8_t{LST_OP_ALLREDUCE};
      x->api = LST_API_MPI;
      x->comm = 0x1234567890abcdefull;
      x->u.wait.first_ref = 0x0000000500000003ull;  // a collective's seq and root in the same bytes
      x->u.wait.nrequests = 4;
      x->caller = 0x401000;
      x->t_ns = 1000000;
      x->aux = 9;
      Writer::publish(x, LST_WORD(k.kind, LST_STATE_ENTERED, LST_F_NONBLOCKING));
      if (k.before != LST_STATE_ENTERED) Writer::advance(x, k.before);
    }
    if (k.kind == LST_KIND_WAIT) {
      Writer::finish_wait(r[0], k.state, k.us, k.done);
      Writer::finish_wait_own(r[1], r[1]->word, k.state, k.us, k.done);
    } else {
      Writer::finish(r[0], k.state, k.us);
      Writer::finish_own(r[1], r[1]->word, k.state, k.us);
    }
    EXPECT_EQ(std::memcmp(r[0], r[1], sizeof(lst_record)), 0);
    for (lst_record* x : r) {
      EXPECT_EQ(verify_record(x, x->word, LST_VERSION_MAJOR), RecordVerdict::kIntact);
      EXPECT_EQ(x->word, seal_record_word(x, x->word));
      EXPECT_EQ(LST_WORD_STATE(x->word), k.before == LST_STATE_ENTERED ? k.state : k.before);
      EXPECT_EQ(LST_WORD_FLAGS(x->word), LST_F_NONBLOCKING);
      EXPECT_EQ(x->t_return_us, k.us);
      if (k.kind == LST_KIND_WAIT) {
        EXPECT_EQ(x->u.wait.ncompleted, k.done);
      }
    }
  }
}

TEST(RecordCheck, DamagedRingIdIsDamageNotAnOldRecord) {
  TempDir d;
  const std::string p = sample_file(d.path(), 1024);
  const std::string good = read_all(p);
  TraceFile t0 = TraceFile::open(p);
  const uint64_t at = t0.header().records_offset + 2 * 64 + offsetof(lst_record, u.coll.id_lo);
  std::string b = good;
  b[at] ^= 0x04;
  const std::string bad = d.path() + "/bad.lstrace";
  write_all(bad, b);
  TraceFile t = TraceFile::open(bad);
  EXPECT_NE(t.record(2), nullptr) << "handed to the caller's verification, not skipped as overwritten";
  try {
    t.validate();
    ADD_FAILURE() << "a damaged id_lo read as a ring slot not refilled yet";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("record 2 does not match its check"), std::string::npos) << e.what();
  }
}

// The 1.x form of a 2.x file: version 1.2, every record word with the slot magic and no check.
std::string as_v1(std::string bytes) {
  auto* h = reinterpret_cast<lst_header*>(bytes.data());
  h->version_major = 1;
  h->version_minor = LST_V1_LAST_MINOR;
  h->header_check = header_check(h);
  for (uint64_t id = 0; id < std::min(h->record_next, h->record_capacity); ++id) {
    auto* r = reinterpret_cast<lst_record*>(bytes.data() + h->records_offset + id * 64);
    if (r->word) r->word = (r->word & ~LST_REC_CHECK_MASK) | LST_SLOT_MAGIC;
  }
  return bytes;
}

TEST(RecordCheck, Version1FilesAreStillRead) {
  TempDir d;
  const std::string p = sample_file(d.path());
  TraceFile t2 = TraceFile::open(p);
  const std::string v1 = d.path() + "/v1.lstrace";
  write_all(v1, as_v1(read_all(p)));
  TraceFile t1 = TraceFile::open(v1);
  ASSERT_NO_THROW(t1.validate());
  EXPECT_EQ(t1.header().version_major, 1);
  ASSERT_EQ(t1.end_id(), t2.end_id());
  for (uint64_t id = 0; id < t1.end_id(); ++id) {
    EXPECT_EQ(LST_WORD_KIND(t1.record(id)->word), LST_WORD_KIND(t2.record(id)->word)) << id;
    EXPECT_EQ(LST_WORD_STATE(t1.record(id)->word), LST_WORD_STATE(t2.record(id)->word)) << id;
    EXPECT_EQ(std::memcmp(reinterpret_cast<const char*>(t1.record(id)) + 4,
                          reinterpret_cast<const char*>(t2.record(id)) + 4, 60),
              0)
        << id;
  }
  // 1.x records have no check: a changed field is read as it is; a bad word is still refused.
  std::string b = read_all(v1);
  const uint64_t rec = t1.header().records_offset;
  b[rec + 2 * 64 + 32] ^= 0x01;
  write_all(v1, b);
  EXPECT_NO_THROW(TraceFile::open(v1).validate());
  b[rec + 2 * 64] = 0x11;
  write_all(v1, b);
  try {
    TraceFile::open(v1).validate();
    ADD_FAILURE() << "a 1.x record without its slot magic accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.offset(), rec + 2 * 64);
    EXPECT_NE(std::string(e.what()).find("record 2 has a bad slot word"), std::string::npos) << e.what();
  }
}

TEST(RecordCheck, EverySingleByteChangeOfEveryRecordIsCaught) {
  // Exhaustive over the sample: each byte of each record, every other value. The check catches every
  // single-byte change by construction (record_check.h); the one documented exception is the
  // duration of a record that is ENTERED, which reads as a return torn by a kill, not as damage.
  TempDir d;
  const std::string p = sample_file(d.path());
  std::string b = read_all(p);
  TraceFile t = TraceFile::open(p);
  int caught = 0, total = 0, torn = 0;
  for (uint64_t id = t.first_id(); id < t.end_id(); ++id) {
    auto* r = reinterpret_cast<lst_record*>(&b[t.header().records_offset + id * 64]);
    const uint32_t word = r->word;
    const bool entered = LST_WORD_STATE(word) == LST_STATE_ENTERED;
    for (size_t byte = 0; byte < 64; ++byte)
      for (int delta = 1; delta < 256; ++delta) {
        auto* at = reinterpret_cast<uint8_t*>(r) + byte;
        *at ^= delta;
        // As a reader sees it: the (possibly damaged) word loaded first, then the fields.
        const RecordVerdict v = verify_record(r, r->word, LST_VERSION_MAJOR);
        if (entered && byte >= offsetof(lst_record, t_return_us) && byte < offsetof(lst_record, aux)) {
          EXPECT_EQ(v, RecordVerdict::kIntact) << "record " << id << " byte " << byte;
          ++torn;
        } else {
          ++total;
          caught += v == RecordVerdict::kDamaged;
        }
        *at ^= delta;
      }
    EXPECT_EQ(r->word, word);
  }
  EXPECT_EQ(caught, total);
  EXPECT_EQ(torn, 4 * 255) << "the sample has one ENTERED record (its 4 duration bytes)";
}

TEST(Reader, RandomCorruptionNeverCrashes) {
  TempDir d;
  const std::string p = sample_file(d.path());
  const std::string good = read_all(p);
  TraceFile t0 = TraceFile::open(p);
  const size_t meta_end = t0.header().meta_offset + t0.header().meta_next * 64;
  const size_t rec_end = t0.header().records_offset + t0.end_id() * 64;
  const std::string bad = d.path() + "/bad.lstrace";
  std::mt19937_64 rng(12345);
  int errors = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string b = good;
    const int flips = 1 + int(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t region = rng() % 3;
      size_t at = region == 0   ? rng() % 256
                  : region == 1 ? 4096 + rng() % (meta_end - 4096)
                                : t0.header().records_offset + rng() % (rec_end - t0.header().records_offset);
      b[at] = char(rng());
    }
    write_all(bad, b);
    try {
      load(bad);
    } catch (const FormatError& e) {
      ++errors;
      EXPECT_EQ(e.file(), bad);
      EXPECT_LE(e.offset(), b.size()) << "a cut file is reported at its end";
    }
  }
  EXPECT_GT(errors, 50);
}

TEST(Reader, FileBeingWrittenAlwaysLoads) {
  // What `lockstep run --stall` does: read traces while their processes keep appending and growing.
  TempDir d;
  Writer w;
  WriterConfig c = small_config(d.path());
  ASSERT_EQ(open_error(w, c), "");
  const std::string p = w.path();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (uint64_t i = 0; i < 30000; ++i) {
      uint64_t id;
      lst_record* r = w.reserve(&id);
      r->op = LST_OP_ALLREDUCE;
      r->api = LST_API_MPI;
      r->u.coll.count = id;
      Writer::publish(r, LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_ENTERED, 0));
    }
    done = true;
  });
  int loads = 0;
  uint64_t last_end = 0;
  std::string problem;  // the first one; the writer thread is joined before anything is asserted
  while ((!done.load() || loads == 0) && problem.empty()) {
    try {
      TraceFile t = TraceFile::open(p);
      t.validate();
      if (t.end_id() < last_end) problem = "end id went back from " + std::to_string(last_end);
      last_end = t.end_id();
      for (uint64_t id = t.first_id(); id < t.end_id() && problem.empty(); ++id)
        if (const lst_record* r = t.record(id); r && r->u.coll.count != id)
          problem = "record " + std::to_string(id) + " holds count " + std::to_string(r->u.coll.count);
    } catch (const FormatError& e) {
      problem = e.what();
    }
    ++loads;
  }
  writer.join();
  ASSERT_EQ(problem, "") << "after " << loads << " loads";
  w.close();
  EXPECT_EQ(TraceFile::open(p).end_id(), 30000u);
}

TEST(Reader, RejectsWhatIsNotATrace) {
  TempDir d;
  const std::string p = d.path() + "/text.lstrace";
  write_all(p, std::string(5000, 'a'));
  EXPECT_THROW(TraceFile::open(p), FormatError);
  write_all(p, "");
  EXPECT_THROW(TraceFile::open(p), FormatError);
  EXPECT_THROW(TraceFile::open(d.path()), FormatError);
  EXPECT_THROW(TraceFile::open(d.path() + "/missing"), FormatError);
}

}  // namespace
}  // namespace lockstep::format
