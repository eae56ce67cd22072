// The basic live report of `lockstep run --stall` and the hooks through which the checker replaces it
// (stall_report.h).
#include "run/stall_report.h"

#include <filesystem>
#include <map>

#include "lockstep/format/reader.h"

namespace lockstep::run {
namespace {
StallReporter g_reporter = nullptr;
FinishHook g_finish = nullptr;
FinishHook g_report = nullptr;

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// module+offset: stable across runs of the same binary, and what a symbolizer takes.
std::string call_site(const format::TraceFile& f, uint64_t addr) {
  if (addr == 0) return "unknown";
  for (const format::Module& m : f.modules())
    if (addr >= m.lo && addr < m.hi)
      return std::filesystem::path(m.path).filename().string() + "+" + hex(addr - m.base);
  return hex(addr);
}

std::string comm_label(const std::map<uint64_t, std::string>& names, uint64_t id) {
  auto it = names.find(id);
  if (it != names.end() && !it->second.empty()) return it->second + " (" + hex(id) + ")";
  return "communicator " + hex(id);
}

std::string describe(const format::TraceFile& f, const std::map<uint64_t, std::string>& names,
                     const lst_record& r) {
  std::string s =
      format::op_name(r) + " on " + comm_label(names, r.comm) + " seq " + std::to_string(r.u.coll.seq);
  if (r.op != LST_OP_BARRIER) {
    s += ", count " + std::to_string(r.u.coll.count) + " " + format::dtype_name(r.dtype);
    if (r.u.coll.root_or_peer != LST_NONE) s += ", root " + std::to_string(r.u.coll.root_or_peer);
  }
  s += ", called from " + call_site(f, r.caller);
  return s;
}

void report_file(const std::string& path, std::FILE* out, std::map<int32_t, bool>& seen_ranks,
                 int32_t& world_size, int& inside) {
  try {
    format::TraceFile f = format::TraceFile::open(path);
    const lst_header& h = f.header();
    if (h.world_size > world_size) world_size = h.world_size;
    seen_ranks[h.world_rank] = true;
    std::string who =
        (h.world_rank == LST_NONE ? std::string("rank ?") : "rank " + std::to_string(h.world_rank)) +
        " (host " + f.host() + ", pid " + std::to_string(h.pid) + ")";
    std::map<uint64_t, std::string> names;
    std::vector<const lst_record*> open;
    const lst_record* last = nullptr;
    for (uint64_t id = f.first_id(); id < f.end_id(); ++id) {
      const lst_record* r = f.record(id);
      if (!r) continue;
      uint8_t kind = LST_WORD_KIND(r->word), state = LST_WORD_STATE(r->word);
      if (kind == LST_KIND_COMM && r->aux) {
        try {
          names[r->comm] = std::string(f.string(r->aux));
        } catch (const format::FormatError&) {  // NOLINT(bugprone-empty-catch)
          // A damaged name: the communicator is reported by its id.
        }
      } else if (kind == LST_KIND_COLLECTIVE) {
        last = r;
        if (state == LST_STATE_ENTERED) open.push_back(r);
      } else if (kind == LST_KIND_WAIT && state == LST_STATE_ENTERED) {
        open.push_back(r);
      }
    }
    if (!open.empty()) {
      ++inside;
      for (const lst_record* r : open) {
        if (LST_WORD_KIND(r->word) == LST_KIND_COLLECTIVE) {
          std::fprintf(out, "  %s: blocked in %s\n", who.c_str(), describe(f, names, *r).c_str());
        } else {
          const lst_record* c = f.record(r->u.wait.first_ref);
          std::string what =
              c && LST_WORD_KIND(c->word) == LST_KIND_COLLECTIVE ? describe(f, names, *c) : "a request";
          std::fprintf(out, "  %s: blocked in %s (called from %s) waiting for %s\n", who.c_str(),
                       format::wait_op_name(r->op), call_site(f, r->caller).c_str(), what.c_str());
        }
      }
    } else if (h.end_state != LST_END_RUNNING) {
      std::fprintf(out, "  %s: process ended (%s)\n", who.c_str(), format::end_state_name(h.end_state));
    } else if (last) {
      std::fprintf(out, "  %s: not in any collective; last: %s (%s)\n", who.c_str(),
                   describe(f, names, *last).c_str(), format::state_name(LST_WORD_STATE(last->word)));
    } else {
      std::fprintf(out, "  %s: not in any collective; none called yet\n", who.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(out, "  %s: trace not readable: %s\n", path.c_str(), e.what());
  }
}
}  // namespace

void set_stall_reporter(StallReporter reporter) { g_reporter = reporter; }
StallReporter stall_reporter() { return g_reporter ? g_reporter : &basic_stall_report; }
void set_finish_hook(FinishHook hook) { g_finish = hook; }
FinishHook finish_hook() { return g_finish; }
void set_report_hook(FinishHook hook) { g_report = hook; }
FinishHook report_hook() { return g_report; }

void basic_stall_report(const std::vector<std::string>& files, double stalled_s, std::FILE* out) {
  std::fprintf(out, "lockstep run: no rank has progressed for %.1f s\n", stalled_s);
  std::map<int32_t, bool> seen;
  int32_t world_size = 0;
  int inside = 0;
  for (const std::string& path : files) report_file(path, out, seen, world_size, inside);
  for (int32_t r = 0; r < world_size; ++r)
    if (!seen.count(r)) std::fprintf(out, "  rank %d: no trace file\n", r);
  std::fprintf(out, "lockstep run: %d of %zu traced processes inside a collective\n", inside, files.size());
  std::fflush(out);
}

}  // namespace lockstep::run
