// `lockstep diff BASE_DIR DIR`: compares two runs' collective schedules per communicator. Communicators
// are matched by how they were created (parent, operation, order, colour), not by id, since ids hash
// the job id; collectives are aligned with the same minimal-edit diff `check` uses, on what MPI
// requires to agree. Exit 0 same schedule, 1 differences, 2 bad input.
#include <fmt/format.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "lockstep/check/analyze_dir.h"
#include "lockstep/check/myers.h"
#include "lockstep/format/reader.h"
#include "lockstep/version.h"

namespace lockstep::diff {
namespace {

using check::Job;
using check::Rank;

struct Schedule {
  std::string path;  // creation path: "world", "world/split#0(color 1)", ...
  std::string name;
  const Rank* rank = nullptr;  // representative: the most common sequence, lowest rank among them
  const check::Sequence* seq = nullptr;
};

std::string creation_path(const Rank& r, uint64_t id, int depth = 0) {
  const check::CommView* v = r.comm(id);
  if (!v || depth > 8) return fmt::format("unknown-{:x}", id);
  if (v->create_op == LST_COMM_WORLD) return v->size == 1 && r.world_size != 1 ? "self" : "world";
  int index = 0;
  for (auto& c : r.comms) {
    if (&c == v) break;
    if (c.parent == v->parent) ++index;
  }
  std::string p = v->parent ? creation_path(r, v->parent, depth + 1) : "";
  std::string s = fmt::format("{}/{}#{}", p, format::comm_op_name(v->create_op), index);
  if (v->color != LST_NONE) s += fmt::format("(color {})", v->color);
  return s;
}

std::map<std::string, Schedule> schedules(const Job& job) {
  std::map<std::string, std::map<uint64_t, std::vector<const Rank*>>> groups;  // path -> hash -> ranks
  std::map<std::string, std::pair<const Rank*, const check::Sequence*>> any;
  for (auto& r : job.ranks)
    for (auto& s : r.seqs) {
      std::string p = creation_path(r, s.comm);
      if (p == "self") continue;
      groups[p][s.hash].push_back(&r);
    }
  std::map<std::string, Schedule> out;
  for (auto& [p, g] : groups) {
    const std::vector<const Rank*>* best = nullptr;
    for (auto& [h, rs] : g)
      if (!best || rs.size() > best->size() ||
          (rs.size() == best->size() && rs.front()->world_rank < best->front()->world_rank))
        best = &rs;
    Schedule s;
    s.path = p;
    s.rank = best->front();
    for (auto& q : s.rank->seqs)
      if (creation_path(*s.rank, q.comm) == p) s.seq = &q;
    const check::CommView* v = s.rank->comm(s.seq->comm);
    s.name = v && !v->name.empty() ? v->name : p;
    out[p] = s;
  }
  return out;
}

struct Call {
  int64_t seq = -1;
  std::string op, args, site;
};

struct Change {
  std::string kind;  // added, removed, changed, communicator_added, communicator_removed
  std::string comm;
  Call base, now;
};

class Differ {
 public:
  Differ(bool accept_counts, check::Symbolizer sym) : accept_counts_(accept_counts), sym_(std::move(sym)) {}

  std::vector<Change> run(const Job& base, const Job& now) {
    auto a = schedules(base), b = schedules(now);
    std::vector<Change> out;
    for (auto& [p, s] : a)
      if (!b.count(p)) out.push_back({"communicator_removed", s.name, call(s, 0), {}});
    for (auto& [p, s] : b)
      if (!a.count(p)) out.push_back({"communicator_added", s.name, {}, call(s, 0)});
    for (auto& [p, sa] : a) {
      auto it = b.find(p);
      if (it == b.end()) continue;
      const Schedule& sb = it->second;
      std::vector<uint64_t> x = sigs(sa), y = sigs(sb);
      auto hunks = check::diff(x, y, 1 << 16);
      if (!hunks) {  // far apart: report the first position where they differ
        size_t i = 0;
        while (i < x.size() && i < y.size() && x[i] == y[i]) ++i;
        hunks = std::vector<check::Hunk>{{uint32_t(i), uint32_t(x.size()), uint32_t(i), uint32_t(y.size())}};
      }
      for (auto& h : *hunks) {
        size_t n = h.a1 - h.a0, m = h.b1 - h.b0, k = std::min(n, m);
        for (size_t i = 0; i < k; ++i)
          out.push_back({"changed", sa.name, call(sa, h.a0 + i), call(sb, h.b0 + i)});
        for (size_t i = k; i < n; ++i) out.push_back({"removed", sa.name, call(sa, h.a0 + i), {}});
        for (size_t i = k; i < m; ++i) out.push_back({"added", sa.name, {}, call(sb, h.b0 + i)});
      }
    }
    return out;
  }

 private:
  bool accept_counts_;
  check::Symbolizer sym_;

  std::vector<uint64_t> sigs(const Schedule& s) const {
    std::vector<uint64_t> v;
    v.reserve(s.seq->ref.size());
    for (auto ref : s.seq->ref) {
      lst_record r = *s.rank->record(ref);
      if (accept_counts_) r.u.coll.count = 0;
      std::string_view name =
          r.api == LST_API_RT && r.aux ? s.rank->source->string(r.aux) : std::string_view();
      v.push_back(check::semantic_signature(r, name));
    }
    return v;
  }

  Call call(const Schedule& s, size_t i) const {
    Call c;
    if (i >= s.seq->ref.size()) return c;
    const lst_record* r = s.rank->record(s.seq->ref[i]);
    c.seq = int64_t(i);
    c.op = format::op_name(*r);
    c.args = fmt::format("{} x {}", r->u.coll.count, format::dtype_name(r->dtype));
    if (r->redop) c.args += fmt::format(" {}", format::redop_name(r->redop));
    if (r->u.coll.root_or_peer != LST_NONE) c.args += fmt::format(" root/peer {}", r->u.coll.root_or_peer);
    if (r->api == LST_API_RT && r->aux) c.args += fmt::format(" '{}'", s.rank->source->string(r->aux));
    check::Site site;
    site.address = r->caller;
    int m = s.rank->module_of(r->caller);
    if (m >= 0) {
      site.module = s.rank->modules[size_t(m)].path;
      site.offset = r->caller - s.rank->modules[size_t(m)].base;
    }
    if (sym_) sym_(*s.rank, site);
    c.site = site.text();
    return c;
  }
};

std::string call_text(const Call& c) {
  return fmt::format("{} #{} ({}){}", c.op, c.seq, c.args, c.site.empty() ? "" : " at " + c.site);
}

std::string render_text(const std::vector<Change>& ch, const std::string& base, const std::string& dir) {
  std::map<std::string, int> n;
  for (auto& c : ch) ++n[c.kind];
  std::string s;
  if (ch.empty()) {
    s = fmt::format("lockstep diff: {} and {} have the same collective schedule\n", base, dir);
    return s;
  }
  s = fmt::format(
      "lockstep diff: {} difference{} ({} added, {} removed, {} changed, {} communicators added/removed)\n",
      ch.size(), ch.size() == 1 ? "" : "s", n["added"], n["removed"], n["changed"],
      n["communicator_added"] + n["communicator_removed"]);
  for (auto& c : ch) {
    if (c.kind == "added")
      s += fmt::format("  added    on {}: {}\n", c.comm, call_text(c.now));
    else if (c.kind == "removed")
      s += fmt::format("  removed  on {}: {}\n", c.comm, call_text(c.base));
    else if (c.kind == "changed")
      s += fmt::format("  changed  on {}: {}\n           now: {}\n", c.comm, call_text(c.base),
                       call_text(c.now));
    else
      s += fmt::format("  {} {}\n",
                       c.kind == "communicator_added" ? "new communicator" : "communicator gone:", c.comm);
  }
  return s;
}

std::string render_json(const std::vector<Change>& ch, const std::string& base, const std::string& dir) {
  using J = nlohmann::json;
  auto cj = [](const Call& c) -> J {
    if (c.seq < 0) return nullptr;
    return {{"seq", c.seq}, {"operation", c.op}, {"arguments", c.args}, {"call_site", c.site}};
  };
  J j = {{"schema_version", "1.0"},
         {"base", base},
         {"directory", dir},
         {"same", ch.empty()},
         {"differences", J::array()}};
  for (auto& c : ch)
    j["differences"].push_back(
        {{"change", c.kind}, {"communicator", c.comm}, {"base", cj(c.base)}, {"new", cj(c.now)}});
  // Paths, argv and names from a trace may hold any bytes: invalid UTF-8 is written as U+FFFD.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

struct DiffOptions {
  std::string base, dir, format, output;
  bool accept_counts = false, no_symbolize = false;
};

// One side of the comparison: a directory, or several (or a glob) separated by commas.
std::vector<std::string> inputs_of(const std::string& arg) {
  std::vector<std::string> v;
  size_t from = 0;
  for (size_t at; (at = arg.find(',', from)) != std::string::npos; from = at + 1)
    if (at > from) v.push_back(arg.substr(from, at - from));
  if (from < arg.size()) v.push_back(arg.substr(from));
  return v;
}

int run_diff(const DiffOptions& o) {
  check::DirOptions d;
  d.symbolize = !o.no_symbolize;
  d.analyze = false;
  check::Analysis a, b;
  try {
    a = check::analyze_dir(inputs_of(o.base), d);
    b = check::analyze_dir(inputs_of(o.dir), d);
  } catch (const check::LoadError& e) {
    throw cli::BadInput(std::string("diff: ") + e.what());
  }
  Differ differ(o.accept_counts, b.symbolize);
  auto changes = differ.run(a.job, b.job);
  cli::write_output(
      o.format == "json" ? render_json(changes, o.base, o.dir) : render_text(changes, o.base, o.dir),
      o.output);
  return changes.empty() ? cli::kClean : cli::kFindings;
}

}  // namespace
}  // namespace lockstep::diff

LOCKSTEP_COMMAND(diff, [](CLI::App& app) {
  auto o = std::make_shared<lockstep::diff::DiffOptions>();
  CLI::App* sub = app.add_subcommand(
      "diff",
      "Compare two runs' collective schedules per communicator: exit 0 same, 1 differences, 2 bad input");
  sub->add_option("BASE_DIR", o->base,
                  "trace directory of the reference run (several, or globs, joined by commas: node-local "
                  "directories of one run)")
      ->required();
  sub->add_option("DIR", o->dir, "trace directory of the run to compare (same forms as BASE_DIR)")
      ->required();
  sub->add_flag("--accept-count-changes", o->accept_counts,
                "do not report collectives whose only change is the count");
  lockstep::cli::add_output_options(sub, o->format, o->output, {"text", "json"});
  sub->add_flag("--no-symbolize", o->no_symbolize, "report call sites as module+offset");
  sub->callback([o] { lockstep::cli::set_exit_code(lockstep::diff::run_diff(*o)); });
});
