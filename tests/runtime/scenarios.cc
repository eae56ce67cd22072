// Runtime behaviours beyond numerics, one scenario per run (argv[1]): negotiation errors that name the
// ranks, fusion, process sets, and the failure paths (stall abort, a rank that dies). Exit 0 when the
// scenario behaved as specified; failure paths are checked from outside (scenario.cmake).
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lockstep/rt.h"

using namespace lockstep::rt;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank(), what.c_str());
    ++failures;
  }
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The same name with a different dtype, shape, reduction or operation on one rank: every rank's
// handle fails with a message naming the odd rank, and the runtime keeps working afterwards.
void mismatch() {
  const int me = rank(), odd = size() - 1;
  std::vector<double> buf(16, 1.0), out(16 * size());
  Status s =
      allreduce("m/dtype", buf.data(), out.data(), 4, me == odd ? DType::f64 : DType::f32, ReduceOp::sum)
          .wait();
  expect(contains(s.message, "mismatched dtype") && contains(s.message, "f64 on rank " + std::to_string(odd)),
         "dtype mismatch reported: '" + s.message + "'");
  s = allreduce("m/shape", buf.data(), out.data(), me == odd ? 8 : 4, DType::f32, ReduceOp::sum).wait();
  expect(contains(s.message, "mismatched shape") &&
             contains(s.message, "8 elements on rank " + std::to_string(odd)),
         "shape mismatch reported: '" + s.message + "'");
  s = allreduce("m/op", buf.data(), out.data(), 4, DType::f32, me == odd ? ReduceOp::max : ReduceOp::sum)
          .wait();
  expect(contains(s.message, "mismatched reduction") &&
             contains(s.message, "max on rank " + std::to_string(odd)),
         "reduction mismatch reported: '" + s.message + "'");
  s = (me == odd ? allgather("m/kind", buf.data(), out.data(), 4, DType::f32)
                 : allreduce("m/kind", buf.data(), out.data(), 4, DType::f32, ReduceOp::sum))
          .wait();
  expect(contains(s.message, "mismatched operation") &&
             contains(s.message, "allgather on rank " + std::to_string(odd)),
         "operation mismatch reported: '" + s.message + "'");
  s = broadcast("m/root", buf.data(), 4, DType::f64, me == odd ? 0 : odd).wait();
  expect(contains(s.message, "mismatched root"), "root mismatch reported: '" + s.message + "'");
  // A name still pending on this rank cannot be submitted again.
  Handle first = allreduce("m/dup", buf.data(), out.data(), 4, DType::f64, ReduceOp::sum);
  Status dup = allreduce("m/dup", buf.data(), out.data(), 4, DType::f64, ReduceOp::sum).wait();
  expect(contains(dup.message, "still pending"), "duplicate name rejected: '" + dup.message + "'");
  expect(first.wait().ok(), "the first request of a duplicated name still runs");
  // Local argument errors.
  expect(!broadcast("m/badroot", buf.data(), 4, DType::f64, size()).wait().ok(),
         "root outside the set rejected");
  expect(!allreduce("", buf.data(), out.data(), 4, DType::f64, ReduceOp::sum).wait().ok(),
         "empty name rejected");
  // Still usable.
  double one = 1, total = 0;
  s = allreduce("m/after", &one, &total, 1, DType::f64, ReduceOp::sum).wait();
  expect(s.ok() && total == size(), "allreduce after the errors");
}

// Many small tensors at once fuse into fewer collectives, with the right results; a tensor at or
// above LOCKSTEP_RT_FUSION_BYTES runs alone. The ctest variant with LOCKSTEP_RT_FUSION_BYTES=0 expects
// no fusion at all (argv[2] == "off").
void fusion(bool off) {
  const int n = 50;
  std::vector<std::vector<float>> in(n, std::vector<float>(256)), out(n, std::vector<float>(256));
  std::vector<Handle> hs;
  const Stats before = stats();
  for (int t = 0; t < n; ++t) {
    for (size_t i = 0; i < 256; ++i) in[t][i] = static_cast<float>(rank() * 1000 + t * 10 + i % 7);
    hs.push_back(
        allreduce("f/" + std::to_string(t), in[t].data(), out[t].data(), 256, DType::f32, ReduceOp::sum));
  }
  for (auto& h : hs) expect(h.wait().ok(), "fused request " + h.name());
  const Stats after = stats();
  for (int t = 0; t < n; ++t) {
    for (size_t i = 0; i < 256; ++i) {
      float want = 0;
      for (int r = 0; r < size(); ++r) want += static_cast<float>(r * 1000 + t * 10 + i % 7);
      if (out[t][i] != want) {
        expect(false, "fused tensor " + std::to_string(t) + " element " + std::to_string(i));
        return;
      }
    }
  }
  const uint64_t collectives = after.collectives - before.collectives,
                 tensors = after.tensors - before.tensors;
  expect(tensors == static_cast<uint64_t>(n), "every tensor ran once");
  if (off) {
    expect(collectives == static_cast<uint64_t>(n), "no fusion with LOCKSTEP_RT_FUSION_BYTES=0");
  } else {
    expect(collectives < static_cast<uint64_t>(n),
           "fusion: " + std::to_string(collectives) + " collectives for " + std::to_string(n) + " tensors");
  }
}

// Run with a batching window far longer than the test's timeout (LOCKSTEP_RT_CYCLE_MS=600000): a
// burst of submissions still runs as soon as every rank waits on it, fused into one collective, and
// a rank that waits while others are still submitting does not hold anything up.
void flush() {
  const int n = 40;
  std::vector<std::vector<float>> in(n, std::vector<float>(64, 1.0f)), out(n, std::vector<float>(64));
  for (int step = 0; step < 3; ++step) {
    // One rank is late to each step: the others are already waiting when its burst arrives.
    if (rank() == step % size()) usleep(20000);
    const Stats before = stats();
    std::vector<Handle> hs;
    for (int t = 0; t < n; ++t) {
      hs.push_back(allreduce("flush/" + std::to_string(t), in[t].data(), out[t].data(), 64, DType::f32,
                             ReduceOp::sum));
    }
    for (auto& h : hs) expect(h.wait().ok(), "flushed request " + h.name());
    const Stats after = stats();
    expect(after.collectives - before.collectives == 1,
           "step " + std::to_string(step) + ": " + std::to_string(after.collectives - before.collectives) +
               " collectives for " + std::to_string(n) + " tensors, want 1");
    expect(out[n - 1][0] == static_cast<float>(size()), "flushed values");
  }
  // A single request waited on at once, then one polled with test() and waited on later.
  float x = 1, y = 0;
  expect(allreduce("flush/single", &x, &y, 1, DType::f32, ReduceOp::sum).wait().ok() &&
             y == static_cast<float>(size()),
         "single request");
  Handle h = allreduce("flush/polled", &x, &y, 1, DType::f32, ReduceOp::sum);
  for (int i = 0; i < 5 && !h.test(); ++i) usleep(1000);
  expect(h.wait().ok() && y == static_cast<float>(size()), "polled request");
}

// Two overlapping process sets used at the same time, plus a non-member's submission.
void process_sets() {
  const int n = size();
  std::vector<int> evens, tail;
  for (int r = 0; r < n; r += 2) evens.push_back(r);
  for (int r = 1; r < n; ++r) tail.push_back(r);
  ProcessSet a = add_process_set(evens);
  ProcessSet b = add_process_set(tail);
  expect(a.id() != 0 && b.id() != 0 && a.id() != b.id(), "distinct set ids");
  expect(a.included() == (rank() % 2 == 0) && b.included() == (rank() >= 1), "membership");
  expect(a.size() == static_cast<int>(evens.size()) && b.size() == n - 1, "set sizes");
  double mine = rank() + 1, sa = 0, sb = 0;
  Handle ha, hb;
  if (a.included()) ha = allreduce("s/x", &mine, &sa, 1, DType::f64, ReduceOp::sum, a);
  if (b.included())
    hb = allreduce("s/x", &mine, &sb, 1, DType::f64, ReduceOp::sum, b);  // same name, other set
  if (a.included()) {
    double want = 0;
    for (int r : evens) want += r + 1;
    expect(ha.wait().ok() && sa == want, "sum over the even ranks");
  }
  if (b.included()) {
    double want = 0;
    for (int r : tail) want += r + 1;
    expect(hb.wait().ok() && sb == want, "sum over ranks 1..n-1");
    std::vector<int32_t> gathered(static_cast<size_t>(b.size()));
    int32_t me = rank();
    expect(allgather("s/g", &me, gathered.data(), 1, DType::i32, b).wait().ok(), "allgather on a set");
    for (int i = 0; i < b.size(); ++i)
      expect(gathered[static_cast<size_t>(i)] == tail[static_cast<size_t>(i)], "gather order");
  } else {
    Status s = allreduce("s/x", &mine, &sb, 1, DType::f64, ReduceOp::sum, b).wait();
    expect(contains(s.message, "is not in process set"), "non-member rejected: '" + s.message + "'");
  }
  // Different member lists on different ranks: an error, not a hang.
  bool threw = false;
  try {
    add_process_set(rank() == 0 ? std::vector<int>{0} : std::vector<int>{0, 1});
  } catch (const std::exception& e) {
    threw = contains(e.what(), "mismatched members");
  }
  expect(threw, "mismatched member lists rejected");
}

// One rank submits a different name: the stall inspector warns, then aborts every rank (checked by the
// caller: exit status 3 and the report).
void stall() {
  float x = 1, y = 0;
  const std::string name = rank() == 1 ? "stall/other" : "stall/grad";
  Status s = allreduce(name, &x, &y, 1, DType::f32, ReduceOp::sum).wait();
  std::fprintf(stderr, "rank %d: unexpectedly returned: %s\n", rank(), s.message.c_str());
}

// The victim rank kills itself mid-run; the others must stop on their own, naming it.
void dead_rank(int victim) {
  float x = 1, y = 0;
  for (int step = 0;; ++step) {
    if (rank() == victim && step == 5) {
      std::fprintf(stderr, "victim rank %d: killing itself (SIGKILL)\n", victim);
      std::fflush(stderr);
      raise(SIGKILL);
    }
    Status s = allreduce("d/step", &x, &y, 1, DType::f32, ReduceOp::sum).wait();
    if (!s.ok()) std::fprintf(stderr, "rank %d: %s\n", rank(), s.message.c_str());
    usleep(50000);
  }
}

// The victim dies inside a data-plane allreduce: its MPI_Iallreduce (interposed below) posts its part
// and kills the process, so every survivor is left in a collective that can never finish.
int g_die_in_allreduce = -1;  // the victim's step, -1: never

void dead_in_collective(int victim) {
  if (rank() == victim) g_die_in_allreduce = 5;
  float x = 1, y = 0;
  for (;;) {
    Status s = allreduce("d/step", &x, &y, 1, DType::f32, ReduceOp::sum).wait();
    if (!s.ok()) std::fprintf(stderr, "rank %d: %s\n", rank(), s.message.c_str());
    usleep(20000);
  }
}

}  // namespace

// The runtime's data-plane allreduce (MPI_Iallreduce, or a blocking MPI_Allreduce) reaches these
// definitions in the program first.
namespace {
void maybe_die() {
  static int calls = 0;
  if (g_die_in_allreduce >= 0 && calls++ == g_die_in_allreduce) {
    std::fprintf(stderr, "victim rank %d: killing itself (SIGKILL) inside an allreduce\n", rank());
    std::fflush(stderr);
    raise(SIGKILL);
  }
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int MPI_Iallreduce(const void* in, void* out, int count,
                                                                     MPI_Datatype dt, MPI_Op op,
                                                                     MPI_Comm comm, MPI_Request* req) {
  const int rc = PMPI_Iallreduce(in, out, count, dt, op, comm, req);
  maybe_die();  // after posting its part: the others' parts are matched, the collective cannot finish
  return rc;
}

extern "C" __attribute__((visibility("default"))) int MPI_Allreduce(const void* in, void* out, int count,
                                                                    MPI_Datatype dt, MPI_Op op,
                                                                    MPI_Comm comm) {
  maybe_die();
  return PMPI_Allreduce(in, out, count, dt, op, comm);
}

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  init(&argc, &argv);
  if (which == "mismatch") {
    mismatch();
  } else if (which == "fusion") {
    fusion(argc > 2 && std::strcmp(argv[2], "off") == 0);
  } else if (which == "flush") {
    flush();
  } else if (which == "sets") {
    process_sets();
  } else if (which == "stall") {
    stall();
  } else if (which == "dead") {
    dead_rank(argc > 2 ? std::atoi(argv[2]) : 1);
  } else if (which == "dead-in-collective") {
    dead_in_collective(argc > 2 ? std::atoi(argv[2]) : 1);
  } else {
    std::fprintf(
        stderr,
        "usage: rt_scenarios mismatch|fusion [off]|flush|sets|stall|dead RANK|dead-in-collective RANK\n");
    return 2;
  }
  const int me = rank();
  finalize();
  if (failures) return 1;
  if (me == 0) std::printf("scenario %s ok\n", which.c_str());
  return 0;
}
