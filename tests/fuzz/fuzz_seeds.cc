// Writes the seed corpus for the reader fuzz target with the real Writer: small growing, grown,
// ring-wrapped and metadata-only traces (small regions keep every seed a few kilobytes).
#include <cstdio>
#include <cstring>
#include <string>

#include "lockstep/format/writer.h"
#include "sample_trace.h"

namespace {

__attribute__((noinline)) uint64_t caller() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

bool write_one(const std::string& dir, const char* tag, uint64_t ring, int repeats, bool records) {
  using namespace lockstep;
  const std::string sub = dir + "/." + tag;
  format::Writer w;
  format::WriterConfig c;
  c.dir = sub.c_str();
  c.chunk_records = 64;
  c.meta_slots = 64;
  c.ring_records = ring;
  c.job_id = tag;
  c.cmdline = "./seed";
  char err[256];
  if (!w.open(c, err, sizeof err)) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", err);
    return false;
  }
  w.set_world(repeats % 4, 4);
  if (records)
    for (int i = 0; i < repeats; ++i) test::write_sample(w, caller());
  else
    w.intern(tag, std::strlen(tag)), w.note_module(caller());
  uint64_t id;
  w.reserve(&id);  // one reserved, never published slot
  std::string from = w.path();
  w.close();
  std::string to = dir + "/" + tag + ".lstrace";
  bool ok = std::rename(from.c_str(), to.c_str()) == 0;
  std::remove(sub.c_str());
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = write_one(dir, "sample", 0, 1, true) && write_one(dir, "grown", 0, 10, true) &&
            write_one(dir, "ring", 20, 3, true) && write_one(dir, "meta_only", 0, 0, false);
  return ok ? 0 : 1;
}
