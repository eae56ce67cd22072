// `lockstep show DIR|FILE`: the header summary and the decoded records of trace files, as a table or
// JSON, with call sites symbolized to file:line. A bad file stops it with exit 2 and one line naming
// the file and the byte.
#include <fmt/format.h>

#include <sys/stat.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/output.h"
#include "lockstep/check/model.h"
#include "lockstep/check/op_semantics.h"
#include "lockstep/format/escape.h"
#include "lockstep/format/reader.h"
#include "symbolize/symbolize.h"

namespace lockstep::show {
namespace {

using format::TraceFile;
using json = nlohmann::ordered_json;

struct Options {
  std::string path;
  std::string format = "table";
  bool no_symbolize = false;
  bool skip_bad = false;
  uint64_t first = 0, last = 0;  // only the first or last N records of each file (0: every record)
};

std::string hex(uint64_t v) { return fmt::format("0x{:x}", v); }

std::string wall_time(uint64_t ns) {
  time_t s = time_t(ns / 1000000000ull);
  tm t{};
  gmtime_r(&s, &t);
  char buf[64];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
  return fmt::format("{}.{:03}Z", buf, (ns / 1000000ull) % 1000);
}

std::string rank_text(int32_t v) { return v < 0 ? "?" : std::to_string(v); }

// One decoded record, the same fields for the table and for JSON.
struct Row {
  uint64_t id = 0;
  const lst_record* r = nullptr;
  std::string time, kind, op, comm, seq, count, dtype, bytes, root, redop, state, us, name;
  std::vector<symbolize::Location> sites;  // caller first, then extra frames (STACK records)
};

std::string comm_text(uint64_t id, const std::map<uint64_t, std::string>& names) {
  if (id == 0) return "";
  auto it = names.find(id);
  return it != names.end() && !it->second.empty() ? it->second : hex(id);
}

// Communicators by the names `lockstep check` gives them (derived_comm_name: their own name, else how
// they were made); where two share one (two dups of a communicator), each keeps its id after the name.
std::map<uint64_t, std::string> comm_names_of(const TraceFile& t) {
  std::map<uint64_t, check::CommView> views;
  for (uint64_t id = t.first_id(); id < t.end_id(); ++id) {
    const lst_record* r = t.record(id);
    if (!r || LST_WORD_KIND(r->word) != LST_KIND_COMM || check::ends_comm(r->op)) continue;
    check::CommView& v = views[r->comm];
    v.id = r->comm;
    v.parent = r->u.comm.parent;
    v.create_op = r->op;
    v.color = r->u.comm.color;
    v.name = r->aux ? std::string(t.string(r->aux)) : std::string();
  }
  std::map<uint64_t, std::string> names;
  std::map<std::string, int> uses;
  for (auto& [id, v] : views) {
    names[id] = check::derived_comm_name(id, [&](uint64_t x) -> const check::CommView* {
      auto it = views.find(x);
      return it == views.end() ? nullptr : &it->second;
    });
    ++uses[names[id]];
  }
  for (auto& [id, name] : names)
    if (uses[name] > 1) name += " " + hex(id);
  return names;
}

// A record's name: aux, except on a STACK record, where it is the frame list (2.2).
std::string_view name_of(const TraceFile& t, const lst_record& r) {
  return LST_WORD_KIND(r.word) == LST_KIND_STACK ? std::string_view() : t.string(r.aux);
}

// Every call site of a file's records (callers and STACK frames), each address symbolized once and all
// of them in one batch, before any record is printed.
class Sites {
 public:
  Sites(const TraceFile& t, uint64_t lo, uint64_t hi, symbolize::Symbolizer* sym) {
    // A program calls from few places: the list is made unique whenever it doubles, so it never holds
    // much more than the distinct addresses.
    size_t unique_at = 1 << 16;
    auto add = [&](uint64_t a) {
      addrs_.push_back(a);
      if (addrs_.size() < unique_at) return;
      std::sort(addrs_.begin(), addrs_.end());
      addrs_.erase(std::unique(addrs_.begin(), addrs_.end()), addrs_.end());
      unique_at = std::max(unique_at, 2 * addrs_.size());
    };
    for (uint64_t id = lo; id < hi; ++id) {
      const lst_record* r = t.record(id);
      if (!r) continue;
      add(r->caller);
      if (LST_WORD_KIND(r->word) == LST_KIND_STACK)
        for (uint64_t f : t.stack_frames(*r)) add(f);
    }
    std::sort(addrs_.begin(), addrs_.end());
    addrs_.erase(std::unique(addrs_.begin(), addrs_.end()), addrs_.end());
    if (sym) {
      locs_ = sym->call_sites(t.modules(), addrs_);
      return;
    }
    // Without symbolization a site is module+offset, which is stable across runs of one build.
    for (uint64_t a : addrs_) {
      symbolize::Location l;
      if (a) {
        l.offset = a;
        for (const auto& m : t.modules())
          if (a - 1 >= m.lo && a - 1 < m.hi) l.module = m.path, l.offset = a - m.base;
      }
      locs_.push_back(l);
    }
  }
  const symbolize::Location& at(uint64_t a) const {
    return locs_[size_t(std::lower_bound(addrs_.begin(), addrs_.end(), a) - addrs_.begin())];
  }

 private:
  std::vector<uint64_t> addrs_;  // sorted, each once
  std::vector<symbolize::Location> locs_;
};

// The ids [lo, hi) of the records shown: every one, or the first or last N (--first, --last).
std::pair<uint64_t, uint64_t> shown_range(const TraceFile& t, const Options& o) {
  uint64_t lo = t.first_id(), hi = t.end_id();
  if (o.first && hi - lo > o.first) hi = lo + o.first;
  if (o.last && hi - lo > o.last) lo = hi - o.last;
  return {lo, hi};
}

// What every record of one file is decoded with, and which of its records are shown. Communicators
// are named from the whole file: a record shown may be on one created before the range.
struct FileView {
  const TraceFile& t;
  uint64_t lo, hi;
  std::map<uint64_t, std::string> comm_names;
  Sites sites;
  FileView(const TraceFile& file, std::pair<uint64_t, uint64_t> range, symbolize::Symbolizer* sym)
      : t(file),
        lo(range.first),
        hi(range.second),
        comm_names(comm_names_of(file)),
        sites(file, lo, hi, sym) {}
  bool limited() const { return lo != t.first_id() || hi != t.end_id(); }
};

// Record `id` of the file, decoded; false where there is none (a hole, or outside a ring's window).
// One record at a time: a file can hold tens of millions.
bool decode(const FileView& v, uint64_t id, Row& row) {
  const TraceFile& t = v.t;
  const lst_header& h = t.header();
  const std::map<uint64_t, std::string>& comm_names = v.comm_names;
  const lst_record* r = t.record(id);
  if (!r) return false;
  row = Row();
  row.id = id;
  row.r = r;
  const uint8_t kind = LST_WORD_KIND(r->word), state = LST_WORD_STATE(r->word),
                flags = LST_WORD_FLAGS(r->word);
  // Seconds since the trace was created; a record stamped just before (the process-start marker)
  // shows as negative rather than as a huge unsigned difference.
  if (r->t_ns) row.time = fmt::format("{:.6f}", (double(r->t_ns) - double(h.start_mono_ns)) / 1e9);
  row.kind = format::kind_name(kind);
  row.op = format::op_name(*r);
  row.state = format::state_name(state);
  row.name = std::string(name_of(t, *r));
  auto add_detail = [&](const std::string& d) { row.name += row.name.empty() ? d : " " + d; };
  switch (kind) {
    case LST_KIND_COLLECTIVE: {
      row.comm = r->comm ? comm_text(r->comm, comm_names) : format::null_comm_name(*r);
      // A point-to-point record's seq is its tag (int32 bits).
      const auto tag = int32_t(r->u.coll.seq);
      row.seq = !(flags & LST_F_P2P) ? std::to_string(r->u.coll.seq)
                : tag == LST_ANY_TAG ? "any"
                                     : std::to_string(tag);
      row.count = std::to_string(r->u.coll.count);
      row.dtype = format::dtype_text(*r);
      row.bytes = std::to_string(r->u.coll.count * r->u.coll.dtype_size);
      // A rooted MPI collective's root as given, -1 included (format 2.0); elsewhere only a real rank.
      if (r->api == LST_API_MPI && check::is_rooted(r->op) && !(flags & LST_F_P2P))
        row.root = format::root_text(r->u.coll.root_or_peer);
      else if ((flags & LST_F_P2P) && r->u.coll.root_or_peer == LST_ANY_SOURCE)
        row.root = "any";
      else if ((flags & LST_F_P2P) && r->u.coll.root_or_peer == LST_PROC_NULL)
        row.root = "null";
      else
        row.root = r->u.coll.root_or_peer < 0 ? "" : std::to_string(r->u.coll.root_or_peer);
      row.redop = format::redop_name(r->redop);
      if (state >= LST_STATE_RETURNED) row.us = std::to_string(r->t_return_us);
      if (flags & LST_F_IN_GROUP) add_detail("[group]");
      if (flags & LST_F_CONTROL) add_detail("[control]");
      if (flags & LST_F_INFERRED) add_detail("[inferred]");
      break;
    }
    case LST_KIND_COMM: {
      row.comm = comm_text(r->comm, comm_names);
      row.count = r->u.comm.size < 0 ? "" : std::to_string(r->u.comm.size);
      std::string d = fmt::format("rank={} size={}", rank_text(r->u.comm.rank), rank_text(r->u.comm.size));
      if (r->u.comm.parent) d += " parent=" + comm_text(r->u.comm.parent, comm_names);
      if (r->u.comm.color != LST_NONE) d += fmt::format(" color={} key={}", r->u.comm.color, r->u.comm.key);
      std::vector<int32_t> m = t.members(r->members);
      if (!m.empty()) {
        d += " members=[";
        for (size_t i = 0; i < m.size() && i < 16; ++i) d += (i ? "," : "") + std::to_string(m[i]);
        d += m.size() > 16 ? fmt::format(",... {} in all]", m.size()) : "]";
      }
      add_detail(d);
      break;
    }
    case LST_KIND_MARKER:
      if (r->op == LST_MARK_SIGNAL || r->op == LST_MARK_PROCESS_START || r->op == LST_MARK_FORK ||
          r->op == LST_MARK_MPI_ABORT || r->op == LST_MARK_PROCESS_END || r->op == LST_MARK_MPI_INIT ||
          r->op == LST_MARK_NCCL_GROUP_START || r->op == LST_MARK_NCCL_GROUP_END ||
          r->op == LST_MARK_RT_EVENT)
        add_detail(fmt::format("value={}", int64_t(r->u.marker.value)));  // -1: not known
      if (r->u.marker.ref) add_detail(fmt::format("ref=#{}", r->u.marker.ref));
      if (r->op == LST_MARK_MPI_ERROR)
        add_detail(fmt::format("class={} code={}", r->u.marker.value, r->u.marker.extra));
      if (r->op == LST_MARK_COMM_CREATE) {
        row.comm = r->comm ? comm_text(r->comm, comm_names) : "MPI_COMM_NULL";
        if (r->u.marker.value == LST_COMM_SPLIT || r->u.marker.value == LST_COMM_SPLIT_TYPE) {
          const int64_t color = int64_t(r->u.marker.extra);
          add_detail(color == LST_UNDEFINED ? std::string("color=MPI_UNDEFINED")
                                            : fmt::format("color={}", color));
        }
        if (state >= LST_STATE_RETURNED) row.us = std::to_string(r->t_return_us);
      }
      break;
    case LST_KIND_WAIT:
      row.count = std::to_string(r->u.wait.nrequests);
      if (state >= LST_STATE_RETURNED) row.us = std::to_string(r->t_return_us);
      add_detail(fmt::format("first=#{} completed={}", r->u.wait.first_ref, r->u.wait.ncompleted));
      break;
    case LST_KIND_DEVICE:
      add_detail(fmt::format("ref=#{} kernel={}us", r->u.device.ref,
                             r->u.device.end_ns >= r->u.device.start_ns
                                 ? (r->u.device.end_ns - r->u.device.start_ns) / 1000
                                 : 0));
      break;
    case LST_KIND_STACK:
      add_detail(fmt::format("ref=#{}", r->u.stack.ref));
      break;
    default:
      break;
  }
  if (r->caller) row.sites.push_back(v.sites.at(r->caller));
  if (kind == LST_KIND_STACK)
    for (uint64_t f : t.stack_frames(*r)) row.sites.push_back(v.sites.at(f));
  return true;
}

std::string summary_line(const TraceFile& t) {
  const lst_header& h = t.header();
  const bool ring = h.flags & LST_HDR_RING;
  return fmt::format(
      "end {}; records {}{}, dropped {}, unpublished {}{}, metadata dropped {}",
      format::end_state_name(h.end_state), t.end_id() - t.first_id(),
      ring ? fmt::format(" (ring of {}, ids {}..{})", h.record_capacity, t.first_id(), t.end_id()) : "",
      h.dropped_records, t.unpublished(),
      t.overwritten() ? fmt::format(", overwritten {}", t.overwritten()) : "", h.dropped_meta);
}

constexpr const char* kHeads[] = {"ID",    "TIME", "KIND",  "OP",    "COMM", "SEQ",  "COUNT", "DTYPE",
                                  "BYTES", "ROOT", "REDOP", "STATE", "US",   "NAME", "SITE"};
constexpr size_t kColumns = std::size(kHeads);
using Cells = std::array<std::string, kColumns>;

// The row's cells; `with_site` false leaves the last column (never padded, so never measured) empty.
Cells cells_of(const Row& r, bool with_site = true) {
  std::string site;
  if (with_site)
    for (const auto& s : r.sites) {
      std::string one = s.site(true);
      if (!s.problem.empty() && !s.has_line()) one += " (" + s.problem + ")";
      site += site.empty() ? one : " < " + one;
    }
  return {std::to_string(r.id),
          r.time,
          r.kind,
          r.op,
          r.comm,
          r.seq,
          r.count,
          r.dtype,
          r.bytes,
          r.root,
          r.redop,
          r.state,
          r.us,
          r.name,
          site};
}

// The table in two passes over the records, the first for the columns' widths: nothing of the rows is
// kept, so a file of any size is shown in the memory of one row.
void print_table(const FileView& v) {
  const TraceFile& t = v.t;
  const lst_header& h = t.header();
  fmt::print("{}\n", t.path());
  fmt::print("  rank {} of {}, host {}, pid {} (parent {}), job {}\n", rank_text(h.world_rank),
             rank_text(h.world_size), t.host(), h.pid, h.ppid, t.job_id().empty() ? "-" : t.job_id());
  fmt::print("  command: {}\n", t.cmdline());
  fmt::print("  started {}, format {}.{}, tracer {}, {} modules\n", wall_time(h.start_wall_ns),
             h.version_major, h.version_minor, t.tracer_version(), t.modules().size());
  fmt::print("  {}\n", summary_line(t));
  if (v.limited())
    fmt::print("  showing records {}..{} of {}..{}\n", v.lo, v.hi - 1, t.first_id(), t.end_id() - 1);

  std::array<size_t, kColumns> width{};
  for (size_t c = 0; c < kColumns; ++c) width[c] = strlen(kHeads[c]);
  Row row;
  for (uint64_t id = v.lo; id < v.hi; ++id) {
    if (!decode(v, id, row)) continue;
    const Cells cells = cells_of(row, false);
    for (size_t c = 0; c + 1 < kColumns; ++c) width[c] = std::max(width[c], cells[c].size());
  }
  std::string out;
  auto line = [&](auto get) {
    out.assign(" ");
    for (size_t c = 0; c < kColumns; ++c) {
      if (c + 1 == kColumns) {
        out += " ";
        out += get(c);
      } else {
        out += " " + fmt::format("{:<{}}", get(c), width[c]);
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  };
  line([&](size_t c) { return std::string(kHeads[c]); });
  for (uint64_t id = v.lo; id < v.hi; ++id) {
    if (!decode(v, id, row)) continue;
    const Cells cells = cells_of(row);
    line([&](size_t c) { return cells[c]; });
  }
}

json record_json(const FileView& v, const Row& row) {
  const TraceFile& t = v.t;
  const lst_record* r = row.r;
  const uint8_t kind = LST_WORD_KIND(r->word);
  json j;
  j["id"] = row.id;
  j["kind"] = row.kind;
  j["op"] = row.op;
  j["api"] = format::api_name(r->api);
  j["state"] = row.state;
  j["flags"] = LST_WORD_FLAGS(r->word);
  j["t_ns"] = r->t_ns;
  j["comm"] = r->comm;
  if (!row.comm.empty()) j["comm_name"] = row.comm;
  if (kind == LST_KIND_COLLECTIVE) {
    j["seq"] = r->u.coll.seq;
    j["count"] = r->u.coll.count;
    j["dtype"] = format::dtype_text(*r);
    j["dtype_size"] = r->u.coll.dtype_size;
    j["bytes"] = r->u.coll.count * r->u.coll.dtype_size;
    j["root_or_peer"] = r->u.coll.root_or_peer;
    j["redop"] = format::redop_name(r->redop);
    j["return_us"] = r->t_return_us;
  } else if (kind == LST_KIND_COMM) {
    j["parent"] = r->u.comm.parent;
    j["color"] = r->u.comm.color;
    j["key"] = r->u.comm.key;
    j["size"] = r->u.comm.size;
    j["rank"] = r->u.comm.rank;
    j["members"] = t.members(r->members);
  } else if (kind == LST_KIND_MARKER) {
    j["value"] = r->u.marker.value;
    j["ref"] = r->u.marker.ref;
    j["extra"] = r->u.marker.extra;
  } else if (kind == LST_KIND_WAIT) {
    j["first_ref"] = r->u.wait.first_ref;
    j["nrequests"] = r->u.wait.nrequests;
    j["ncompleted"] = r->u.wait.ncompleted;
    j["return_us"] = r->t_return_us;
  } else if (kind == LST_KIND_DEVICE) {
    j["ref"] = r->u.device.ref;
    j["start_ns"] = r->u.device.start_ns;
    j["end_ns"] = r->u.device.end_ns;
  } else if (kind == LST_KIND_STACK) {
    j["ref"] = r->u.stack.ref;
  }
  j["name"] = std::string(name_of(t, *r));
  json sites = json::array();
  for (const auto& s : row.sites) {
    json sj = {{"module", s.module}, {"offset", s.offset}};
    if (!s.function.empty()) sj["function"] = s.function;
    if (s.has_line()) sj["file"] = s.file, sj["line"] = s.line;
    if (!s.problem.empty()) sj["problem"] = s.problem;
    sites.push_back(sj);
  }
  j["call_site"] = sites;
  return j;
}

// How nlohmann's dump(2) lays out a value nested `depth` levels down: its first line as is, every other
// line indented by 2 * depth more.
std::string dumped(const json& j, int depth) {
  std::string text = j.dump(2, ' ', false, json::error_handler_t::replace), out;
  const std::string pad(size_t(2 * depth), ' ');
  size_t from = 0;
  for (size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
    out.append(text, from, nl + 1 - from).append(pad);
  return out.append(text, from, std::string::npos);
}

// One file as an element of the "traces" array, written as the records are decoded: the same text as
// dump(2) of the whole document, without ever holding it.
void print_json(const FileView& v) {
  const TraceFile& t = v.t;
  const lst_header& h = t.header();
  json f;
  f["path"] = t.path();
  f["format"] = fmt::format("{}.{}", h.version_major, h.version_minor);
  f["rank"] = h.world_rank;
  f["size"] = h.world_size;
  f["host"] = t.host();
  f["pid"] = h.pid;
  f["ppid"] = h.ppid;
  f["job_id"] = t.job_id();
  f["cmdline"] = t.cmdline();
  f["tracer_version"] = t.tracer_version();
  f["start_wall_ns"] = h.start_wall_ns;
  f["start_mono_ns"] = h.start_mono_ns;
  f["end_state"] = format::end_state_name(h.end_state);
  f["ring"] = bool(h.flags & LST_HDR_RING);
  f["first_id"] = t.first_id();
  f["end_id"] = t.end_id();
  // The ids of the records below: [shown_first_id, shown_end_id), a part of the file with --first/--last.
  f["shown_first_id"] = v.lo;
  f["shown_end_id"] = v.hi;
  f["dropped_records"] = h.dropped_records;
  f["dropped_meta"] = h.dropped_meta;
  f["unpublished"] = t.unpublished();
  f["overwritten"] = t.overwritten();
  json mods = json::array();
  for (const auto& m : t.modules())
    mods.push_back(
        {{"path", m.path}, {"build_id", m.build_id}, {"base", m.base}, {"lo", m.lo}, {"hi", m.hi}});
  f["modules"] = mods;
  f["records"] = json::array();
  // The header's text up to the records' array (the last member), which is streamed in its place.
  const std::string head = dumped(f, 2);
  const std::string empty = "\"records\": []";
  const size_t at = head.rfind(empty);
  std::string out = head.substr(0, at + empty.size() - 1);
  std::fwrite(out.data(), 1, out.size(), stdout);
  bool any = false;
  Row row;
  for (uint64_t id = v.lo; id < v.hi; ++id) {
    if (!decode(v, id, row)) continue;
    out.assign(any ? ",\n" : "\n").append(8, ' ').append(dumped(record_json(v, row), 4));
    std::fwrite(out.data(), 1, out.size(), stdout);
    any = true;
  }
  out.assign(any ? "\n" + std::string(6, ' ') + "]" : "]").append(head, at + empty.size(), std::string::npos);
  std::fwrite(out.data(), 1, out.size(), stdout);
}

int run(const Options& o) {
  size_t bad_files = 0;
  std::vector<std::string> paths;
  struct stat st;
  if (stat(o.path.c_str(), &st) != 0)
    throw cli::BadInput(format::printable(o.path) + ": " + std::strerror(errno));
  try {
    if (S_ISDIR(st.st_mode)) {
      std::vector<std::string> skipped;
      paths = format::find_traces(o.path, &skipped);
      for (const auto& sk : skipped) fmt::print(stderr, "lockstep: warning: {}\n", format::printable(sk));
      if (paths.empty())
        throw cli::BadInput(format::printable(o.path) + ": no .lstrace files in this directory");
    } else {
      paths.push_back(o.path);
    }
    // Validate every file before printing anything, so bad input never leaves half a report.
    std::vector<TraceFile> files;
    size_t skipped = 0;
    for (const auto& p : paths) {
      try {
        TraceFile f = TraceFile::open(p);
        f.validate();
        files.push_back(std::move(f));
      } catch (const format::FormatError& e) {
        if (!o.skip_bad) throw;
        fmt::print(stderr, "lockstep: show: skipped {}\n", e.what());
        ++skipped;
      }
    }
    if (files.empty())
      throw cli::BadInput(fmt::format("{}: no readable trace file", format::printable(o.path)));
    std::unique_ptr<symbolize::Symbolizer> sym;
    if (!o.no_symbolize) sym = std::make_unique<symbolize::Symbolizer>();
    const bool as_json = o.format == "json";
    if (as_json) fmt::print("{{\n  \"traces\": [\n    ");
    for (size_t i = 0; i < files.size(); ++i) {
      const FileView view(files[i], shown_range(files[i], o), sym.get());
      if (as_json) {
        if (i) fmt::print(",\n    ");
        print_json(view);
      } else {
        if (i) fmt::print("\n");
        print_table(view);
      }
    }
    if (as_json) fmt::print("\n  ]\n}}\n");
    bad_files = skipped;
  } catch (const format::FormatError& e) {
    throw cli::BadInput(e.what());
  }
  return bad_files ? cli::kBadInput : cli::kClean;
}

}  // namespace
}  // namespace lockstep::show

LOCKSTEP_COMMAND(show, [](CLI::App& app) {
  auto opts = std::make_shared<lockstep::show::Options>();
  CLI::App* cmd = app.add_subcommand("show", "Print the header and decoded records of trace files");
  cmd->add_option("path", opts->path, "a trace directory or one .lstrace file")->required();
  lockstep::cli::add_format_option(cmd, opts->format, {"table", "json"});
  cmd->add_flag("--no-symbolize", opts->no_symbolize, "print call sites as module+offset");
  cmd->add_flag("--skip-bad", opts->skip_bad,
                "show the readable files, naming each skipped one (then exit 2)");
  auto* first = cmd->add_option("--first", opts->first, "only the first N records of each file")
                    ->check(CLI::PositiveNumber);
  cmd->add_option("--last", opts->last,
                  "only the last N records of each file (where a rank that hung or crashed stopped)")
      ->check(CLI::PositiveNumber)
      ->excludes(first);
  cmd->callback([opts] { lockstep::cli::set_exit_code(lockstep::show::run(*opts)); });
});
