// Fault-suite helper: prints what the header of each trace says about how recording went, one line per
// file, for the driver to match: flags, dropped counts, records and end state. Exit 2 on a file the
// reader rejects (its one-line error on stderr).
#include <cstdio>
#include <exception>

#include "lockstep/format/reader.h"

int main(int argc, char** argv) {
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    try {
      auto t = lockstep::format::TraceFile::open(argv[i]);
      t.validate();
      const lst_header& h = t.header();
      std::printf("%s flags=0x%x nospace=%d dropped_records=%u dropped_meta=%u records=%llu end=%s\n",
                  argv[i], h.flags, (h.flags & LST_HDR_NOSPACE) ? 1 : 0, h.dropped_records, h.dropped_meta,
                  static_cast<unsigned long long>(t.end_id() - t.first_id()),
                  lockstep::format::end_state_name(h.end_state));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      rc = 2;
    }
  }
  return rc;
}
