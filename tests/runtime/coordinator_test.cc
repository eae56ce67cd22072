// The coordinator alone (no MPI): what it plans from the ranks' readiness messages, in the orders in
// which those messages can arrive.
#include <gtest/gtest.h>

#include "controller.h"

namespace lockstep::rt::internal {
namespace {

RequestInfo grad(const std::string& name = "grad/w") {
  RequestInfo q;
  q.name = name;
  q.count = 256;
  return q;
}

Readiness submits(RequestInfo q) {
  Readiness r;
  r.requests.push_back(std::move(q));
  return r;
}

Readiness finalizing() {
  Readiness r;
  r.finalizing = true;
  return r;
}

class CoordinatorTest : public ::testing::Test {
 protected:
  CoordinatorTest() : coord(64 << 20, 60, 300) { coord.add_set(0, {0, 1, 2, 3}); }
  Coordinator coord;
  Clock::time_point now = Clock::now();
};

TEST_F(CoordinatorTest, EveryRankSubmittedRunsOneFusedResponse) {
  for (int r = 0; r < 4; ++r) {
    Readiness m = submits(grad("a"));
    m.requests.push_back(grad("b"));
    coord.add(r, m, now);
  }
  Plan p = coord.plan(now);
  ASSERT_EQ(p.responses.size(), 1u);
  EXPECT_EQ(p.responses[0].kind, Response::kExecute);
  EXPECT_EQ(p.responses[0].names, (std::vector<std::string>{"a", "b"}));
}

// Rank 0 left its loop and called finalize; rank 1's submission of the next step's tensor has
// arrived, ranks 2 and 3's are still on their way. Only rank 0 is to blame: naming 2 and 3 as
// "which called finalize" was the flaky message of rt.example.early_stopping.buggy.np4.
TEST_F(CoordinatorTest, FinalizeErrorNamesOnlyTheRanksThatFinalized) {
  coord.add(0, finalizing(), now);
  coord.add(1, submits(grad()), now);
  Plan p = coord.plan(now);
  ASSERT_EQ(p.responses.size(), 1u);
  EXPECT_EQ(p.responses[0].kind, Response::kError);
  EXPECT_EQ(p.responses[0].error, "allreduce 'grad/w' was never submitted by rank 0, which called finalize");

  // The late submissions get the same verdict, not one that blames the ranks already answered.
  coord.add(3, submits(grad()), now);
  coord.add(2, submits(grad()), now);
  p = coord.plan(now);
  ASSERT_EQ(p.responses.size(), 1u);
  EXPECT_EQ(p.responses[0].error, "allreduce 'grad/w' was never submitted by rank 0, which called finalize");
}

TEST_F(CoordinatorTest, FinalizeErrorNamesEveryRankThatFinalized) {
  coord.add(0, finalizing(), now);
  coord.add(2, finalizing(), now);
  coord.add(1, submits(grad()), now);
  Plan p = coord.plan(now);
  ASSERT_EQ(p.responses.size(), 1u);
  EXPECT_EQ(p.responses[0].error,
            "allreduce 'grad/w' was never submitted by ranks 0,2, which called finalize");
}

TEST_F(CoordinatorTest, AllFinalizingWithNothingPendingShutsDown) {
  for (int r = 0; r < 4; ++r) coord.add(r, finalizing(), now);
  EXPECT_EQ(coord.plan(now).kind, Plan::kShutdown);
}

}  // namespace
}  // namespace lockstep::rt::internal
