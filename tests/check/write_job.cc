// Writes a small 4-rank job with the real Writer for the report validation test: `clean`, or `bad`
// (rank 2 skips one collective on the duplicate communicator, rank 3 reduces twice the data once).
#include <cstdio>
#include <string>

#include "trace_writer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: check_write_job DIR clean|bad\n");
    return 2;
  }
  const std::string mode = argv[2];
  for (int r = 0; r < 4; ++r) {
    lockstep::check::gen::Spec s;
    s.dir = argv[1];
    s.rank = r;
    s.collectives = 90;
    s.comms = 3;
    if (mode == "bad" && r == 2) s.skip_at = 40;
    if (mode == "bad" && r == 3) s.count_change_at = 30;
    lockstep::check::gen::write_rank(s);
  }
  return 0;
}
