// Writes a clean synthetic job with the real Writer for the report tests: RANKS ranks, COLLECTIVES
// calls each over three communicators (world, a duplicate, a split in halves).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "trace_writer.h"

int main(int argc, char** argv) try {
  if (argc != 4) {
    std::fprintf(stderr, "usage: report_write_job DIR RANKS COLLECTIVES\n");
    return 2;
  }
  const int ranks = std::atoi(argv[2]);
  for (int r = 0; r < ranks; ++r) {
    lockstep::check::gen::Spec s;
    s.dir = argv[1];
    s.rank = r;
    s.size = ranks;
    s.collectives = std::strtoull(argv[3], nullptr, 10);
    s.comms = 3;
    s.chunk_records = 1024;
    lockstep::check::gen::write_rank(s);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "report_write_job: %s\n", e.what());
  return 2;
}
