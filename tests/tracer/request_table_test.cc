// RequestTable (tracer/src/request_table.h): the request -> record map behind MPI completion.
#include "request_table.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

using lockstep::trace::RequestTable;

namespace {

std::unique_ptr<RequestTable> make() { return std::make_unique<RequestTable>(); }

TEST(RequestTable, InsertFindErase) {
  auto t = make();
  uint64_t id = 0;
  EXPECT_FALSE(t->find(0x1000, &id));
  EXPECT_TRUE(t->insert(0x1000, 7));
  EXPECT_EQ(t->pending(), 1);
  ASSERT_TRUE(t->find(0x1000, &id));
  EXPECT_EQ(id, 7u);
  EXPECT_TRUE(t->erase(0x1000));
  EXPECT_FALSE(t->find(0x1000, &id));
  EXPECT_FALSE(t->erase(0x1000));
  EXPECT_EQ(t->pending(), 0);
}

TEST(RequestTable, ReusedHandleTakesTheNewerId) {
  auto t = make();
  t->insert(0x2000, 1);
  t->insert(0x2000, 2);
  uint64_t id = 0;
  ASSERT_TRUE(t->find(0x2000, &id));
  EXPECT_EQ(id, 2u);
  EXPECT_EQ(t->pending(), 1);
}

// Random inserts and erases against a std::map: backward-shift deletion must keep every chain whole.
TEST(RequestTable, MatchesAMapUnderRandomOperations) {
  auto t = make();
  std::map<uintptr_t, uint64_t> model;
  std::mt19937_64 rng(12345);
  // Few distinct handles, 16-byte aligned like heap pointers: long probe chains, many collisions.
  auto handle = [&] { return uintptr_t(0x7f0000000000ull + 16 * (rng() % 20000)); };
  for (int step = 0; step < 200000; ++step) {
    uintptr_t h = handle();
    if (rng() % 3 != 0) {
      uint64_t id = rng();
      if (t->insert(h, id)) model[h] = id;
    } else {
      EXPECT_EQ(t->erase(h), model.erase(h) == 1) << "step " << step;
    }
  }
  EXPECT_EQ(t->pending(), int64_t(model.size()));
  for (auto& [h, id] : model) {
    uint64_t got = 0;
    ASSERT_TRUE(t->find(h, &got)) << std::hex << h;
    EXPECT_EQ(got, id);
  }
}

TEST(RequestTable, FullShardRefusesAndForgetsNothing) {
  auto t = make();
  std::vector<uintptr_t> held;
  int refused = 0;
  // More handles than the whole table holds: some shard fills, and refuses, first.
  for (uintptr_t h = 1; h <= RequestTable::kShards * RequestTable::kShardSlots + 1000; ++h) {
    if (t->insert(h * 64, h))
      held.push_back(h * 64);
    else
      ++refused;
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(t->pending(), int64_t(held.size()));
  for (uintptr_t h : held) {
    uint64_t id = 0;
    ASSERT_TRUE(t->find(h, &id));
    EXPECT_EQ(id, h / 64);
  }
}

TEST(RequestTable, ThreadsOnDisjointHandles) {
  auto t = make();
  constexpr int kThreads = 8, kPerThread = 20000;
  std::vector<std::thread> pool;
  for (int k = 0; k < kThreads; ++k)
    pool.emplace_back([&, k] {
      for (int i = 0; i < kPerThread; ++i) {
        uintptr_t h = uintptr_t(k + 1) << 32 | uintptr_t(i % 512) << 4;
        t->insert(h, uint64_t(i));
        uint64_t id = 0;
        if (!t->find(h, &id) || id != uint64_t(i)) std::abort();
        t->erase(h);
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(t->pending(), 0);
}

}  // namespace
