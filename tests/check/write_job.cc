// Writes a small 4-rank job with the real Writer for the report validation test: `clean`, `bad`
// (rank 2 skips one collective on the duplicate communicator, rank 3 reduces twice the data once), or
// `hang` (rank 1 skips the last allreduce and blocks in a receive: a cycle through a message); `long N`:
// two ranks of N collectives each, in lockstep.
#include <cstdio>
#include <exception>
#include <string>

#include "trace_writer.h"

int main(int argc, char** argv) try {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: check_write_job DIR clean|bad|hang [JOB_ID] | DIR long COLLECTIVES\n");
    return 2;
  }
  const std::string mode = argv[2];
  const bool long_job = mode == "long" && argc == 4;
  for (int r = 0; r < (long_job ? 2 : 4); ++r) {
    lockstep::check::gen::Spec s;
    s.dir = argv[1];
    if (argc == 4 && !long_job) s.job = argv[3];
    s.rank = r;
    s.collectives = long_job ? std::stoull(argv[3]) : 90;
    s.comms = 3;
    if (mode == "bad" && r == 2) s.skip_at = 40;
    if (mode == "bad" && r == 3) s.count_change_at = 30;
    if (mode == "hang") {  // rank 1 skips the last allreduce and waits in a receive from rank 0 instead
      s.collectives = 91;  // the last one on the world communicator
      s.finalize = false;
      s.last_entered = r != 1;
      if (r == 1) {
        s.skip_at = int64_t(s.collectives) - 1;
        s.blocked_recv_from = 0;
      }
    }
    lockstep::check::gen::write_rank(s);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "check_write_job: %s\n", e.what());
  return 2;
}
