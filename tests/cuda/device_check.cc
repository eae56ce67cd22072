// Checks the traces of the device-completion and CUPTI test programs (run_device.sh):
//   device_check DIR NRANKS completed     device_program: 6 of 8 NCCL collectives COMPLETED with DEVICE
//                                         records, the last 2 RETURNED
//   device_check DIR NRANKS none [N]      N (8) NCCL collectives, all RETURNED, no DEVICE record
//   device_check DIR NRANKS all N         N NCCL collectives, all COMPLETED, each with one DEVICE record
//   device_check DIR NRANKS kernels N [C] N NCCL collectives, all COMPLETED with kernel/copy times that
//                                         start after the call was entered; C (comma separated): how many
//                                         DEVICE records each has (default 1)
//   device_check DIR NRANKS inferred OPS  no intercepted collective; inferred ones with these operations
//                                         (lst_op numbers, comma separated), numbered 0, 1, ..., with
//                                         kernel times and NCCL kernel names
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
  if (argc < 4) {
    std::fprintf(stderr, "usage: device_check DIR NRANKS completed|none|all|kernels|inferred [N|OPS]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int nranks = std::atoi(argv[2]);
  const std::string mode = argv[3];
  const bool all = mode == "all";
  const bool completed = mode == "completed" || all;
  const bool kernels = mode == "kernels";
  const bool infer = mode == "inferred";
  size_t want_colls =
      (kernels || all || (mode == "none" && argc > 4)) ? std::strtoul(argv[4], nullptr, 10) : 8;
  auto numbers = [](const std::string& list) {
    std::vector<unsigned> out;
    for (size_t at = 0; at <= list.size();) {
      size_t comma = list.find(',', at);
      if (comma == std::string::npos) comma = list.size();
      out.push_back(static_cast<unsigned>(std::stoul(list.substr(at, comma - at))));
      at = comma + 1;
    }
    return out;
  };
  std::vector<unsigned> want_ops, want_devices;
  if (infer && argc > 4) want_ops = numbers(argv[4]);
  if (kernels && argc > 5) want_devices = numbers(argv[5]);
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
      std::vector<std::pair<uint64_t, const lst_record*>> colls, inferred;
      std::map<uint64_t, const lst_record*> device;        // by collective id: the first
      std::multimap<uint64_t, const lst_record*> devices;  // all of them
      int warnings = 0;
      for (uint64_t id = f.first_id(); id < f.end_id(); ++id) {
        const lst_record* r = f.record(id);
        if (!r) continue;
        unsigned kind = LST_WORD_KIND(r->word);
        if (kind == LST_KIND_COLLECTIVE && r->api == LST_API_NCCL)
          (LST_WORD_FLAGS(r->word) & LST_F_INFERRED ? inferred : colls).emplace_back(id, r);
        if (kind == LST_KIND_DEVICE) {
          if (device.count(r->u.device.ref) && !kernels) fail(name, "two DEVICE records for one collective");
          device.emplace(r->u.device.ref, r);
          devices.emplace(r->u.device.ref, r);
        }
        if (kind == LST_KIND_MARKER && r->op == LST_MARK_TRACER_WARNING &&
            f.string(r->aux).find("CUDA") != std::string_view::npos)
          ++warnings;
      }
      if (warnings != want_warnings)
        fail(name,
             std::to_string(warnings) + " CUDA warnings recorded, want " + std::to_string(want_warnings));
      auto kernel_times = [&](uint64_t id) {
        auto d = device.find(id);
        return d != device.end() && d->second->u.device.start_ns > 0 &&
               d->second->u.device.end_ns >= d->second->u.device.start_ns;
      };
      if (infer) {
        if (!colls.empty()) fail(name, std::to_string(colls.size()) + " intercepted collectives, want none");
        if (inferred.size() != want_ops.size())
          fail(name, std::to_string(inferred.size()) + " inferred collectives, want " +
                         std::to_string(want_ops.size()));
        for (size_t i = 0; i < inferred.size() && i < want_ops.size(); ++i) {
          auto [id, r] = inferred[i];
          const std::string at = "inferred collective " + std::to_string(i);
          if (r->op != want_ops[i])
            fail(name, at + ": op " + std::to_string(r->op) + ", want " + std::to_string(want_ops[i]));
          if (r->u.coll.seq != i) fail(name, at + ": seq " + std::to_string(r->u.coll.seq));
          if (LST_WORD_STATE(r->word) != LST_STATE_COMPLETED) fail(name, at + ": not COMPLETED");
          if (!kernel_times(id)) fail(name, at + ": no kernel times");
          if (f.string(r->aux).substr(0, 14) != "ncclDevKernel_")
            fail(name, at + ": not named after its kernel");
        }
        continue;
      }
      if (!inferred.empty())
        fail(name, std::to_string(inferred.size()) + " inferred collectives next to intercepted ones");
      if (colls.size() != want_colls) {
        fail(name, std::to_string(colls.size()) + " NCCL collectives, want " + std::to_string(want_colls));
        continue;
      }
      for (size_t i = 0; i < colls.size(); ++i) {
        auto [id, r] = colls[i];
        const std::string at = "collective " + std::to_string(i);
        unsigned state = LST_WORD_STATE(r->word);
        if (kernels) {
          if (state != LST_STATE_COMPLETED)
            fail(name, at + ": state " + std::to_string(state) + ", want COMPLETED");
          if (!kernel_times(id)) fail(name, at + ": no kernel/copy times");
          const size_t want = i < want_devices.size() ? want_devices[i] : 1;
          if (devices.count(id) != want)
            fail(name, at + ": " + std::to_string(devices.count(id)) + " DEVICE records, want " +
                           std::to_string(want));
          auto [lo, hi] = devices.equal_range(id);
          for (auto it = lo; it != hi; ++it)
            if (it->second->u.device.start_ns < r->t_ns)
              fail(name, at + ": kernel/copy started " +
                             std::to_string(r->t_ns - it->second->u.device.start_ns) +
                             " ns before the call was entered");
          continue;
        }
        bool want_done = completed && (all || i < 6);
        auto d = device.find(id);
        if (want_done) {
          if (state != LST_STATE_COMPLETED)
            fail(name, at + ": state " + std::to_string(state) + ", want COMPLETED");
          if (d == device.end()) {
            fail(name, at + ": no DEVICE record");
          } else if (d->second->u.device.end_ns < r->t_ns) {
            fail(name, at + ": device completion before the call was entered");
          }
        } else {
          if (state != LST_STATE_RETURNED)
            fail(name, at + ": state " + std::to_string(state) + ", want RETURNED");
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
