// What `check --mpi`'s processes send each other about calls: the variable-length numbers of the wire
// encoding, and a rank's calls as an owner sends them back to process 0 (encode_calls, decode_calls).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/check/distributed.h"
#include "lockstep/check/load.h"
#include "temp_dir.h"
#include "trace_writer.h"
#include "wire.h"  // analyzer/check

namespace lockstep::check {
namespace {

using test::TempDir;

TEST(Wire, NumbersOfEveryWidthComeBack) {
  const std::vector<uint64_t> values = {0,
                                        1,
                                        127,
                                        128,
                                        300,
                                        16383,
                                        16384,
                                        uint64_t(1) << 35,
                                        (uint64_t(1) << 63) - 1,
                                        uint64_t(1) << 63,
                                        UINT64_MAX};
  mpi::wire::Out o;
  for (uint64_t v : values) o.var(v);
  EXPECT_EQ(o.bytes().size(), 1 + 1 + 1 + 2 + 2 + 2 + 3 + 6 + 9 + 10 + 10);
  mpi::wire::In in(o.bytes());
  for (uint64_t v : values) EXPECT_EQ(in.var(), v);
  EXPECT_TRUE(in.done());
  // Cut short: an error, never a read past the end.
  mpi::wire::In cut(std::string_view(o.bytes()).substr(0, o.bytes().size() - 1));
  for (size_t i = 0; i + 1 < values.size(); ++i) cut.var();
  EXPECT_THROW(cut.var(), std::runtime_error);
  // Eleven continuation bytes: no 64-bit number.
  const std::string eleven = std::string(11, '\x80') + '\x01';
  mpi::wire::In wide(eleven);
  EXPECT_THROW(wide.var(), std::runtime_error);
}

// Every rank of a job with three communicators, a ring's trimmed windows and two call sites a step:
// materialized, encoded, let go and decoded again, its calls are the same, at a few bytes a call.
TEST(Calls, EncodedAndDecodedAreTheSame) {
  TempDir d;
  for (int r = 0; r < 4; ++r) {
    gen::Spec s;
    s.dir = d.path();
    s.rank = r;
    s.size = 4;
    s.collectives = 3000;
    s.comms = 3;
    s.two_sites = true;
    s.ring_records = 2048;
    s.trailing_markers = uint32_t(r) * 7;
    s.messages = r == 1 ? 1 : 0;
    if (r == 2) s.skip_at = 2500;
    gen::write_rank(s);
  }
  LoadOptions lo;
  lo.this_host = "another-host";
  Job job = load_dir(d.path(), lo);
  ASSERT_EQ(job.ranks.size(), 4u);
  for (Rank& r : job.ranks) {
    ASSERT_TRUE(r.streamed);
    r.materialize();
    std::vector<std::vector<uint64_t>> sig;
    std::vector<std::vector<RecordRef>> ref;
    uint64_t calls = 0;
    for (const Sequence& s : r.seqs) {
      sig.push_back(s.sig);
      ref.push_back(s.ref);
      calls += s.sig.size();
    }
    ASSERT_GT(calls, 500u);
    const std::string bytes = mpi::encode_calls(r);
    EXPECT_LT(bytes.size(), 4 * calls) << r.file;  // the vectors take 12 bytes a call
    r.release();
    mpi::decode_calls(bytes, r);
    for (size_t i = 0; i < r.seqs.size(); ++i) {
      EXPECT_EQ(r.seqs[i].sig, sig[i]) << r.file << " sequence " << i;
      EXPECT_EQ(r.seqs[i].ref, ref[i]) << r.file << " sequence " << i;
    }
    // Garbled or cut short: an error naming what is wrong, never a crash or calls made up.
    for (size_t cut : {size_t(0), size_t(1), bytes.size() / 2, bytes.size() - 1}) {
      r.release();
      EXPECT_THROW(mpi::decode_calls(std::string_view(bytes).substr(0, cut), r), std::runtime_error) << cut;
    }
    EXPECT_THROW(mpi::decode_calls(bytes + "x", r), std::runtime_error);
    r.seqs.front().count += 1;
    EXPECT_THROW(mpi::decode_calls(bytes, r), std::runtime_error);
    r.seqs.front().count -= 1;
  }
}

std::string text(const std::vector<P2P>& calls) {
  std::string t;
  for (const P2P& p : calls)
    t += std::to_string(p.comm) + "/" + std::to_string(p.ref) + "/" + std::to_string(p.peer) + "/" +
         std::to_string(p.tag) + "/" + std::to_string(p.op) + "/" + std::to_string(p.state) + "/" +
         std::to_string(p.flags) + " ";
  return t;
}

// A rank's message calls as an owner sends them to process 0: the same calls back, wildcards and all,
// at a few bytes each; cut short or garbled, an error.
TEST(Messages, EncodedAndDecodedAreTheSame) {
  TempDir d;
  gen::Spec s;
  s.dir = d.path();
  s.rank = 1;
  s.size = 4;
  s.collectives = 500;
  s.messages = 3;
  gen::write_rank(s);
  LoadOptions lo;
  lo.this_host = "another-host";
  const Rank r = load_file(
      d.path() + "/" + std::filesystem::directory_iterator(d.path())->path().filename().string(), lo);
  std::vector<P2P> calls;
  r.for_each_message([&](const P2P& p) {
    calls.push_back(p);
    return true;
  });
  ASSERT_EQ(calls.size(), 2u * 3 * 500);
  // Wildcards and a second communicator, as MPI calls can carry them.
  calls[7].peer = LST_ANY_SOURCE;
  calls[8].tag = LST_ANY_TAG;
  calls[9].comm = 0x77;
  calls[10].peer = LST_PROC_NULL;
  const std::string bytes = mpi::encode_messages(calls);
  EXPECT_LT(bytes.size(), 8 * calls.size());  // 24 bytes each in memory, 64 as records
  EXPECT_EQ(text(mpi::decode_messages(bytes)), text(calls));
  EXPECT_TRUE(mpi::decode_messages(mpi::encode_messages({})).empty());
  for (size_t cut : {size_t(0), size_t(1), bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(mpi::decode_messages(std::string_view(bytes).substr(0, cut)), std::runtime_error) << cut;
  EXPECT_THROW(mpi::decode_messages(bytes + "x"), std::runtime_error);
}

}  // namespace
}  // namespace lockstep::check
