// Checks the traces of device_program (tests/cuda/run_device.sh):
//   device_check DIR NRANKS completed   6 NCCL collectives COMPLETED with DEVICE records, 2 RETURNED
//   device_check DIR NRANKS none        all 8 RETURNED, no DEVICE record
// and, with WARNINGS=<n>, exactly n tracer-warning markers mentioning CUDA per trace.
// Exit 0 when everything holds, 1 with the problems listed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "lockstep/format/layout.h"
#include "lockstep/format/reader.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: device_check DIR NRANKS completed|none\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int nranks = std::atoi(argv[2]);
  const bool completed = std::strcmp(argv[3], "completed") == 0;
  const char* w = std::getenv("WARNINGS");
  const int want_warnings = w ? std::atoi(w) : 0;
  int errors = 0, traces = 0;
  auto fail = [&](const std::string& file, const std::string& what) {
    if (errors++ < 20) std::fprintf(stderr, "device_check: %s: %s\n", file.c_str(), what.c_str());
  };
  try {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".lstrace") continue;
      ++traces;
      auto f = lockstep::format::TraceFile::open(e.path().string());
      f.validate();
      const std::string name = e.path().filename().string();
      std::vector<std::pair<uint64_t, const lst_record*>> colls;
      std::map<uint64_t, const lst_record*> device;  // by collective id
      int warnings = 0;
      for (uint64_t id = f.first_id(); id < f.end_id(); ++id) {
        const lst_record* r = f.record(id);
        if (!r) continue;
        unsigned kind = LST_WORD_KIND(r->word);
        if (kind == LST_KIND_COLLECTIVE && r->api == LST_API_NCCL) colls.emplace_back(id, r);
        if (kind == LST_KIND_DEVICE) {
          if (device.count(r->u.device.ref)) fail(name, "two DEVICE records for one collective");
          device[r->u.device.ref] = r;
        }
        if (kind == LST_KIND_MARKER && r->op == LST_MARK_TRACER_WARNING &&
            f.string(r->aux).find("CUDA") != std::string_view::npos)
          ++warnings;
      }
      if (warnings != want_warnings)
        fail(name, std::to_string(warnings) + " CUDA warnings recorded, want " + std::to_string(want_warnings));
      if (colls.size() != 8) {
        fail(name, std::to_string(colls.size()) + " NCCL collectives, want 8");
        continue;
      }
      for (size_t i = 0; i < colls.size(); ++i) {
        auto [id, r] = colls[i];
        const std::string at = "collective " + std::to_string(i);
        unsigned state = LST_WORD_STATE(r->word);
        if (LST_WORD_FLAGS(r->word) & LST_F_INFERRED) fail(name, at + ": marked inferred");
        bool want_done = completed && i < 6;
        auto d = device.find(id);
        if (want_done) {
          if (state != LST_STATE_COMPLETED) fail(name, at + ": state " + std::to_string(state) + ", want COMPLETED");
          if (d == device.end()) {
            fail(name, at + ": no DEVICE record");
          } else if (d->second->u.device.end_ns < r->t_ns) {
            fail(name, at + ": device completion before the call was entered");
          }
        } else {
          if (state != LST_STATE_RETURNED) fail(name, at + ": state " + std::to_string(state) + ", want RETURNED");
          if (d != device.end()) fail(name, at + ": DEVICE record for a collective that did not finish");
        }
      }
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "device_check: %s\n", ex.what());
    return 1;
  }
  if (traces != nranks) {
    std::fprintf(stderr, "device_check: %d traces in %s, want %d\n", traces, dir.c_str(), nranks);
    return 1;
  }
  return errors ? 1 : 0;
}
