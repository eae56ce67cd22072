// The checker's analysis: communicators reconciled across ranks, per-communicator alignment against
// the majority (Myers' diff), classification of each difference, point-to-point pairing, and the hang
// post-mortem with its wait-for graph. Blame is by majority; with no majority both views are reported.
// long file: one Analyzer class whose passes read and write the same per-communicator state; split
// across files it would need that state in a private header shared by all of them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "lockstep/check/check.h"
#include "lockstep/check/myers.h"
#include "lockstep/format/reader.h"
#include "lockstep/format/record_check.h"
#include "semantics.h"

namespace lockstep::check {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kMissingCollective:
      return "missing_collective";
    case Kind::kOpMismatch:
      return "op_mismatch";
    case Kind::kCountMismatch:
      return "count_mismatch";
    case Kind::kDtypeMismatch:
      return "dtype_mismatch";
    case Kind::kRootMismatch:
      return "root_mismatch";
    case Kind::kRedopMismatch:
      return "redop_mismatch";
    case Kind::kPeerMismatch:
      return "peer_mismatch";
    case Kind::kNameMismatch:
      return "name_mismatch";
    case Kind::kMembershipMismatch:
      return "membership_mismatch";
    case Kind::kDeadlockCycle:
      return "deadlock_cycle";
    case Kind::kUnfinished:
      return "unfinished";
    case Kind::kHang:
      return "hang";
    case Kind::kCallsiteMismatch:
      return "callsite_mismatch";
    case Kind::kInvalidArgument:
      return "invalid_argument";
    case Kind::kRankDied:
      return "rank_died";
  }
  return "unknown";
}

const char* severity_name(Severity s) { return s == Severity::kError ? "error" : "warning"; }

Classification classify(const lst_record& a, std::string_view name_a, const lst_record& b,
                        std::string_view name_b) {
  Classification k;
  const uint8_t fa = uint8_t(LST_WORD_FLAGS(a.word)), fb = uint8_t(LST_WORD_FLAGS(b.word));
  const uint64_t ba = a.u.coll.count * a.u.coll.dtype_size, bb = b.u.coll.count * b.u.coll.dtype_size;
  // Per-rank counts (v-variants) and derived types cannot be compared across ranks from one record each.
  const bool v = is_v_variant(a.op, fa) || is_v_variant(b.op, fb);
  const bool derived = (fa | fb) & LST_F_DERIVED || a.dtype == LST_DT_DERIVED || b.dtype == LST_DT_DERIVED;
  k.op = a.api != b.api || a.op != b.op || ((fa ^ fb) & (LST_F_NONBLOCKING | LST_F_CONTROL));
  k.root = is_rooted(a.op) && a.u.coll.root_or_peer != b.u.coll.root_or_peer;
  k.redop = is_reducing(a.op) && a.redop != b.redop;
  k.bytes = !v && ba != bb;
  k.dtype = !derived && a.dtype != b.dtype;
  k.name = name_a != name_b;
  if (k.op)
    k.kind = Kind::kOpMismatch;
  else if (k.name)
    k.kind = Kind::kNameMismatch;
  else if (k.root)
    k.kind = Kind::kRootMismatch;
  else if (k.redop)
    k.kind = Kind::kRedopMismatch;
  else if (k.dtype) {
    k.kind = Kind::kDtypeMismatch;
    // The same bytes read as another type: a warning, since MPI only requires the type signatures to match.
    if (!k.bytes) k.severity = Severity::kWarning;
  } else if (k.bytes)
    k.kind = Kind::kCountMismatch;
  return k;
}

std::string Site::text() const {
  if (!file.empty()) {
    std::string base = file.substr(file.rfind('/') + 1);
    return line > 0 ? fmt::format("{}:{}", base, line) : base;
  }
  if (!function.empty()) return function;
  if (!module.empty()) return fmt::format("{}+{:#x}", module.substr(module.rfind('/') + 1), offset);
  if (address) return fmt::format("{:#x}", address);
  return "";
}

namespace {

std::string rank_list(const std::vector<int32_t>& ranks, size_t cap = 8) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < cap; ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > cap) s += fmt::format(",... ({} in all)", ranks.size());
  return s;
}

std::string ranks_phrase(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
}

bool behind(const Rank& r) {
  // A rank that has not finished may simply not have reached a collective yet.
  return r.end == EndState::kRunning || r.end == EndState::kKilled || r.end == EndState::kUnknown;
}

// Says only what the trace shows: an exit hook cannot see the exit status, so "normally" needs a
// recorded status of 0 after MPI_Finalize returned.
std::string ending(const Rank& r) {
  if (!r.stopped_by_runtime.empty() && r.end != EndState::kCrashed)
    return "it was stopped by the runtime: " + r.stopped_by_runtime;
  switch (r.end) {
    case EndState::kExited:
      if (r.exit_status != UINT64_MAX && r.exit_status != 0)
        return fmt::format("it exited with status {}", r.exit_status);
      if (!r.finalize_returned) return "it exited without calling MPI_Finalize";
      return r.exit_status == 0 ? "it exited normally (MPI_Finalize)" : "it exited after MPI_Finalize";
    case EndState::kFinalizing:
      return "it went on to MPI_Finalize";
    case EndState::kCrashed:
      if (r.signal == 0) return "it crashed (of a signal its trace does not name)";
      return fmt::format("it crashed (signal {})", r.signal);
    case EndState::kAborted:
      return "it called MPI_Abort";
    default:
      return "";
  }
}

// A rank the kernel held as lockstep run stopped the job, in words for a note.
std::string held_at_stop(const Rank& r) {
  std::string s =
      at_stop_text(r.at_stop, r.at_stop_cpu, r.at_stop_wchan) + " when lockstep run stopped the job";
  if (r.at_stop == "uninterruptible") s += " (most often a file system, a device or its driver)";
  return s;
}

struct Comm {
  CommRef ref;
  std::vector<int32_t> members;    // world ranks, in communicator-rank order
  std::vector<const Rank*> ranks;  // members that have a trace file, in member order
  uint8_t create_op = 0;           // lst_comm_op of a creation record, 0 when none was seen
  uint64_t parent = 0;             // the communicator it was made from, 0 for none
  bool inter = false;              // an intercommunicator (Analyzer::intercomm)
};

class Analyzer {
 public:
  Analyzer(const Job& job, const Options& opt, Result& res) : job_(job), opt_(opt), res_(res) {}

  void run() {
    summary();
    reconcile();
    std::vector<std::string> inter;  // distinct names
    for (auto& [id, c] : comms_) {
      // The two sides of an intercommunicator call its rooted collectives with different arguments by
      // design (MPI_ROOT and MPI_PROC_NULL on the root's side, the root's rank on the other; each side
      // its own counts), which the comparison of one group's calls would read as mismatches.
      if (c.members.size() > 1 && intercomm(id)) {
        if (std::find(inter.begin(), inter.end(), c.ref.name) == inter.end()) inter.push_back(c.ref.name);
        continue;
      }
      align(c);
    }
    if (!inter.empty())
      res_.warnings.push_back(fmt::format(
          "{} intercommunicator{} not compared: {} (the two sides of one pass different roots and counts by "
          "design, and the check compares the calls of one group)",
          inter.size(), inter.size() == 1 ? "" : "s",
          inter.size() <= 3 ? fmt::format("{}", fmt::join(inter, ", "))
                            : fmt::format("{}, {} and {} more", inter[0], inter[1], inter.size() - 2)));
    point_to_point();
    creations();
    hang();
    unfinished();
    hang_finding();
    death_finding();
    finish();
  }

 private:
  const Job& job_;
  const Options& opt_;
  Result& res_;
  std::map<uint64_t, Comm> comms_;
  std::vector<Finding> findings_;
  std::set<std::pair<uint64_t, int64_t>> flagged_;  // (comm, seq) with a finding already

  // ----- details -----
  double time_of(const Rank& r, uint64_t t_ns) const {
    if (!r.start_wall_ns || !job_.min_wall_ns) return double(t_ns) * 1e-9;
    int64_t wall = int64_t(r.start_wall_ns) + (int64_t(t_ns) - int64_t(r.start_mono_ns));
    return double(wall - int64_t(job_.min_wall_ns)) * 1e-9;
  }

  Site site_of(const Rank& r, uint64_t caller) const {
    Site s;
    s.address = caller;
    int m = r.module_of(caller);
    if (m >= 0) {
      s.module = r.modules[size_t(m)].path;
      s.offset = caller - r.modules[size_t(m)].base;
    }
    if (opt_.symbolize && caller) opt_.symbolize(r, s);
    return s;
  }

  // The extra frames of the record at `ref` (LOCKSTEP_TRACE_STACK): its STACK records' frames, in
  // order. A call's STACK records follow it, though another thread's records may come in between,
  // so a short window after it is searched for those that name it (format 2.2: one record, whose
  // outer frames are a frame list).
  std::vector<uint64_t> frames_of(const Rank& r, RecordRef ref) const {
    constexpr uint64_t kWindow = 64;
    std::vector<uint64_t> out;
    const uint64_t id = r.source->first_id() + ref, end = std::min(r.source->end_id(), id + 1 + kWindow);
    for (uint64_t k = id + 1; k < end; ++k) {
      const lst_record* s = r.source->record(k);
      if (!s || LST_WORD_KIND(s->word) != LST_KIND_STACK || s->u.stack.ref != id ||
          format::verify_record(s, s->word, r.source->format_major()) != format::RecordVerdict::kIntact)
        continue;
      for (uint64_t f : format::stack_frames_of(*s, s->aux ? r.source->string(s->aux) : std::string_view()))
        out.push_back(f);
    }
    return out;
  }

  std::string tensor_at(const Rank& r, const lst_record& rec) const {
    if (rec.api == LST_API_RT) return rec.aux ? std::string(r.source->string(rec.aux)) : "";
    const RtSpan* best = nullptr;
    for (auto& s : r.rt)
      if (s.t0 <= rec.t_ns && rec.t_ns <= s.t1 && (!best || s.t0 > best->t0)) best = &s;
    return best ? std::string(r.source->string(best->name)) : "";
  }

  // `ref` is rec's index in the rank's file (for the annotation context).
  RankDetail detail(const Rank& r, const lst_record* rec, int64_t own_seq, RecordRef ref) const {
    RankDetail d;
    d.rank = r.world_rank;
    d.seq = own_seq;
    if (!rec) {
      d.note = ending(r);
      d.context = std::string(r.context(UINT32_MAX));
      return d;
    }
    d.present = true;
    d.api = rec->api;
    d.op = rec->op;
    d.dtype = rec->dtype;
    d.redop = rec->redop;
    d.state = uint8_t(LST_WORD_STATE(rec->word));
    d.flags = uint8_t(LST_WORD_FLAGS(rec->word));
    d.operation = format::op_name(*rec);
    d.count = rec->u.coll.count;
    d.dtype_size = rec->u.coll.dtype_size;
    d.bytes = rec->u.coll.count * rec->u.coll.dtype_size;
    if (is_rooted(rec->op)) d.root = rec->u.coll.root_or_peer;
    d.rooted = rec->api == LST_API_MPI && is_rooted(rec->op) && !(LST_WORD_FLAGS(rec->word) & LST_F_P2P);
    d.datatype = format::dtype_text(*rec);
    if (rec->op == LST_OP_SEND || rec->op == LST_OP_RECV || rec->op == LST_OP_PROBE)
      d.peer = rec->u.coll.root_or_peer;
    d.tensor = tensor_at(r, *rec);
    d.site = site_of(r, rec->caller);
    for (uint64_t f : frames_of(r, ref)) d.callers.push_back(site_of(r, f));
    d.time_s = time_of(r, rec->t_ns);
    d.context = std::string(r.context(ref));
    if (d.state == LST_STATE_FAILED)
      if (const Rank::MpiError* e = error_of(r, ref)) d.note = "failed: " + e->text;
    if (died_inside(r, ref)) d.note = "died inside it: " + death_in(r, ref);
    return d;
  }

  RankDetail detail_at(const Rank& r, const Sequence* s, int64_t pos) const {
    if (!s || pos < 0 || size_t(pos) >= s->size()) return detail(r, nullptr, -1, UINT32_MAX);
    r.materialize();
    return detail(r, r.record(s->ref[size_t(pos)]), pos, s->ref[size_t(pos)]);
  }

  // ----- summary and communicators -----
  void summary() {
    Summary& s = res_.summary;
    s.ranks = int32_t(job_.ranks.size());
    s.world_size = job_.world_size;
    s.job_id = job_.job_id;
    for (auto& r : job_.ranks) {
      s.records += r.records;
      s.unpublished += r.unpublished;
    }
    res_.missing_processes = job_.missing;
    res_.warnings = job_.warnings;
  }

  void reconcile() {
    std::map<uint64_t, std::vector<std::pair<const Rank*, const CommView*>>> views;
    std::map<uint64_t, std::vector<const Rank*>> users;
    for (auto& r : job_.ranks) {
      for (auto& v : r.comms) views[v.id].push_back({&r, &v});
      for (auto& s : r.seqs) users[s.comm].push_back(&r);
      for (auto& [k, n] : r.messages.counts()) users[k.comm];
    }
    std::set<uint64_t> ids;
    for (auto& [id, v] : views) ids.insert(id);
    for (auto& [id, u] : users) ids.insert(id);
    for (uint64_t id : ids) {
      Comm c;
      c.ref.id = id;
      auto& vs = views[id];
      // Majority view of the member list.
      std::map<std::vector<int32_t>, std::vector<int32_t>> by_members;
      for (auto& [r, v] : vs) {
        std::vector<int32_t> world;
        if ((!v->members || v->members->empty()) && v->create_op == LST_COMM_WORLD && v->size > 0)
          for (int32_t i = 0; i < v->size; ++i) world.push_back(i);
        const std::vector<int32_t>& m = v->members && !v->members->empty() ? *v->members : world;
        if (!m.empty()) by_members[m].push_back(r->world_rank);
        if (c.ref.name.empty() && !v->name.empty()) c.ref.name = v->name;
        if (c.ref.api == LST_API_NONE) c.ref.api = v->api;
        if (c.create_op == 0) {
          c.create_op = v->create_op;
          c.parent = v->parent;
        }
      }
      // No creation record (a ring overwrote it): the api of the calls on it says what it is.
      if (c.ref.api == LST_API_NONE)
        for (const Rank* r : users[id])
          if (const Sequence* s = r->sequence(id); s && s->api != LST_API_NONE) {
            c.ref.api = s->api;
            break;
          }
      if (c.ref.name.empty() && vs.empty() && c.ref.api == LST_API_RT)
        c.ref.name = fmt::format("process set {}", id);
      if (c.ref.name.empty())
        c.ref.name = id == 0 ? "MPI_COMM_NULL" : derived_comm_name(id, [&](uint64_t x) -> const CommView* {
          auto it = views.find(x);
          return it == views.end() || it->second.empty() ? nullptr : it->second.front().second;
        });
      if (by_members.size() > 1 && c.ref.api == LST_API_MPI && local_groups(by_members)) {
        // An MPI intercommunicator: each side records its own group. Its members are both.
        for (auto& [m, rs] : by_members) c.members.insert(c.members.end(), m.begin(), m.end());
        c.inter = true;
      } else if (!by_members.empty()) {
        auto best = by_members.begin();
        for (auto it = by_members.begin(); it != by_members.end(); ++it)
          if (it->second.size() > best->second.size()) best = it;
        c.members = best->first;
        if (by_members.size() > 1) membership(c, by_members, best->first);
      } else {
        // No member lists: reconstruct from each holder's rank in the communicator.
        std::map<int32_t, int32_t> at;
        for (auto& [r, v] : vs)
          if (v->rank >= 0) at[v->rank] = r->world_rank;
        for (auto& [cr, w] : at) c.members.push_back(w);
        if (c.members.empty()) {
          for (auto* r : users[id]) c.members.push_back(r->world_rank);
          std::sort(c.members.begin(), c.members.end());
          c.members.erase(std::unique(c.members.begin(), c.members.end()), c.members.end());
        }
      }
      c.ref.size = int32_t(c.members.size());
      for (int32_t w : c.members)
        if (const Rank* r = job_.rank(w)) c.ranks.push_back(r);
      if (c.members.size() > 1) res_.comms.push_back(c.ref);
      comms_.emplace(id, std::move(c));
    }
    // MPI_COMM_SELF and other one-rank communicators cannot go out of lockstep: not counted.
    for (auto& [id, c] : comms_) res_.summary.communicators += c.members.size() > 1 ? 1 : 0;
    lost_history();
  }

  // A verdict on ring-mode traces covers only the window the ranks kept: the communicators whose earlier
  // calls some ring overwrote are named in a warning, so that "in lockstep" is not read as covering the
  // whole job (a divergence may have happened, and even been made up for, before the window).
  void lost_history() {
    std::map<std::string, uint32_t> lost;
    for (auto& [id, first] : job_.ring_start) {
      auto it = comms_.find(id);
      lost[it == comms_.end() ? fmt::format("comm {:#x}", id) : it->second.ref.name] = first;
    }
    if (lost.empty()) return;
    std::string list;
    size_t n = 0;
    for (auto& [name, first] : lost)
      if (++n <= 4) list += fmt::format("{}#{} on {}", list.empty() ? "" : ", ", first, name);
    if (n > 4) list += fmt::format(" and on {} more communicator(s)", n - 4);
    res_.warnings.push_back(fmt::format(
        "ring-mode traces (LOCKSTEP_TRACE_RING) keep each rank's last records: the calls before {} were "
        "overwritten on some rank and not checked",
        list));
  }

  // Member lists that are the groups of an intercommunicator as its two sides record them (MPI_Comm_group
  // gives the local group): disjoint, and each reported only by ranks in it. A communicator whose ranks
  // disagree on its members reports overlapping lists, or lists without the reporting rank.
  static bool local_groups(const std::map<std::vector<int32_t>, std::vector<int32_t>>& by_members) {
    std::set<int32_t> seen;
    for (auto& [m, rs] : by_members) {
      for (int32_t w : m)
        if (!seen.insert(w).second) return false;
      for (int32_t w : rs)
        if (std::find(m.begin(), m.end(), w) == m.end()) return false;
    }
    return true;
  }

  void membership(const Comm& c, const std::map<std::vector<int32_t>, std::vector<int32_t>>& by_members,
                  const std::vector<int32_t>& majority) {
    Finding f;
    f.kind = Kind::kMembershipMismatch;
    f.comm = c.ref;
    f.comm.size = int32_t(majority.size());
    f.seq = -1;
    size_t top = by_members.at(majority).size();
    bool tie = false;
    for (auto& [m, rs] : by_members)
      if (m != majority && rs.size() == top) tie = true;
    std::string views;
    for (auto& [m, rs] : by_members) {
      for (int32_t w : rs) {
        f.ranks.push_back(w);
        if (!tie && m != majority) f.culprits.push_back(w);
      }
      views += fmt::format("{}{} see [{}]", views.empty() ? "" : "; ", ranks_phrase(rs), rank_list(m, 16));
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    f.tie = tie;
    f.explanation = fmt::format("the ranks disagree on who is in {}: {}", c.ref.name, views);
    if (tie) f.notes.push_back("tie: no majority view, so no rank is blamed");
    for (int32_t w : f.ranks) {
      RankDetail d;
      d.rank = w;
      f.detail.push_back(d);
    }
    findings_.push_back(std::move(f));
  }

  // ----- alignment -----
  struct Group {
    const Sequence* seq = nullptr;  // representative (nullptr: no collectives)
    std::vector<const Rank*> ranks;
    size_t support = 0;
    bool behind = false;  // its ranks have not finished (they may not have got further yet)
  };

  static size_t len(const Sequence* s) { return s ? s->size() : 0; }

  static bool same(const Sequence* a, const Sequence* b) {
    return len(a) == len(b) && (len(a) == 0 || a->hash == b->hash);
  }

  // Both ranks' sequences must be materialized (align does it once views differ).
  static bool is_prefix(const Sequence* a, const Sequence* b) {  // a strictly shorter prefix of b
    if (len(a) >= len(b)) return false;
    for (size_t i = 0; i < len(a); ++i)
      if (a->sig[i] != b->sig[i]) return false;
    return true;
  }

  void align(Comm& c) {
    if (c.ranks.empty()) return;
    std::vector<Group> groups;
    // Ranks that have not finished form groups of their own: a rank blocked after n calls agrees with
    // a rank that ended after the same n calls and with one that went further, so it supports both.
    for (const Rank* r : c.ranks) {
      const Sequence* s = r->sequence(c.ref.id);
      const bool b = behind(*r);
      Group* g = nullptr;
      for (auto& x : groups)
        if (x.behind == b && len(x.seq) == len(s) && (len(s) == 0 || x.seq->hash == s->hash)) g = &x;
      if (!g) {
        groups.push_back({s, {}, 0, b});
        g = &groups.back();
      }
      g->ranks.push_back(r);
      if (s && s->has_control) control_comms_.insert(c.ref.id);
    }
    for (auto& g : groups) g.support = g.ranks.size();
    // Views differ: from here on the calls themselves are compared, so the ranks that hold each view
    // are read again (a streamed rank holds only its sequences' lengths and hashes until then).
    if (groups.size() > 1) {
      std::vector<const Rank*> holders;
      for (auto& g : groups) holders.push_back(g.ranks.front());
      materialize_all(holders, true, opt_.jobs);
    }
    if (groups.size() > 1) {
      // Ranks that have not finished and are a prefix of a longer view are behind, not different.
      for (auto& h : groups) {
        if (!h.behind) continue;
        for (auto& g : groups)
          if (&g != &h && (is_prefix(h.seq, g.seq) || (!g.behind && same(h.seq, g.seq))))
            g.support += h.ranks.size();
      }
    }
    size_t best = 0;
    for (size_t i = 1; i < groups.size(); ++i)
      if (groups[i].support > groups[best].support) best = i;
    bool tie = false;
    for (size_t i = 0; i < groups.size(); ++i)
      if (i != best && groups[i].support == groups[best].support) tie = true;
    if (tie) {
      // Number positions as the view of the lowest rank among the tied ones; blame nobody.
      for (size_t i = 0; i < groups.size(); ++i)
        if (groups[i].support == groups[best].support) {
          best = i;
          break;
        }
    }
    evidence_.clear();
    if (tie) {
      // Two views of equal weight (two ranks, typically): let the evidence pick the one that diverged.
      std::vector<size_t> top;
      for (size_t i = 0; i < groups.size(); ++i)
        if (groups[i].support == groups[best].support) top.push_back(i);
      if (top.size() == 2) {
        const Group& g0 = groups[top[0]];
        const Group& g1 = groups[top[1]];
        static const std::vector<uint64_t> kEmpty;
        const std::vector<uint64_t>& x = g0.seq ? g0.seq->sig : kEmpty;
        const std::vector<uint64_t>& y = g1.seq ? g1.seq->sig : kEmpty;
        size_t qa = 0, qb = 0;
        if (auto h = diff(x, y, opt_.max_edits); h && !h->empty()) {
          qa = h->front().a0;
          qb = h->front().b0;
        } else {
          while (qa < x.size() && qa < y.size() && x[qa] == y[qa]) ++qa;
          qb = qa;
        }
        Blame bl = two_way(c, g0.ranks, qa, g1.ranks, qb);
        if (!bl.culprits.empty()) {
          bool in0 = std::any_of(g0.ranks.begin(), g0.ranks.end(),
                                 [&](const Rank* r) { return r->world_rank == bl.culprits.front(); });
          best = in0 ? top[1] : top[0];
          tie = false;
          evidence_ = bl.evidence;
        }
      }
    }
    const Group& ref = groups[best];
    res_.summary.collectives += len(ref.seq);
    std::vector<int32_t> majority;
    for (auto* r : ref.ranks) majority.push_back(r->world_rank);

    invalid_arguments(c, ref);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      if (gi == best) continue;
      each_read_ahead(groups[gi].ranks, [&](const Rank* r) {
        compare(c, ref, *r, tie, majority);
        // Findings keep copies, never the vectors: a streamed rank that is no view's holder goes back
        // to its lengths and hashes, so that many differing ranks are not all held at once.
        if (r != groups[gi].ranks.front()) r->release();
      });
    }
    for (auto& g : groups) g.ranks.front()->release();
  }

  std::set<uint64_t> control_comms_;

  // fn(rank) for each of `ranks` in turn, fn reading the rank's calls and releasing it. The ranks are
  // read a batch at a time before their turn: those whose calls lie with another process (`check
  // --mpi`) with every owner reading at once, the others on Options::jobs threads (with one thread,
  // each by fn itself). A batch holds up to kBatchCalls calls (12 bytes each), so that many differing
  // ranks are still not all held at once.
  template <class Fn>
  void each_read_ahead(const std::vector<const Rank*>& ranks, Fn&& fn) const {
    constexpr uint64_t kBatchCalls = uint64_t(1) << 22;
    for (size_t at = 0; at < ranks.size();) {
      std::vector<const Rank*> batch;
      uint64_t calls = 0;
      for (; at + batch.size() < ranks.size() && (batch.empty() || calls < kBatchCalls);) {
        const Rank* r = ranks[at + batch.size()];
        batch.push_back(r);
        for (const Sequence& q : r->seqs) calls += q.count;
      }
      materialize_all(batch, opt_.jobs != 1, opt_.jobs);
      for (const Rank* r : batch) fn(r);
      at += batch.size();
    }
  }

  // An argument MPI rejects whatever the other ranks pass (MPI_ERR_ROOT, MPI_ERR_COMM, MPI_ERR_TYPE): a
  // root that is no rank of the communicator, a null communicator or datatype. Not a mismatch when
  // every rank passes it, still an error, usually ending the job inside that call. First one per
  // communicator; the culprits are the ranks that passed it.
  std::string invalid_why(const Comm& c, const lst_record& rec) const {
    if (rec.api != LST_API_MPI || (LST_WORD_FLAGS(rec.word) & LST_F_P2P)) return "";
    if (c.ref.id == 0) return "MPI_COMM_NULL is no communicator";
    if (std::string_view(format::dtype_text(rec)) == "MPI_DATATYPE_NULL")
      return "MPI_DATATYPE_NULL is no datatype";
    if (!is_rooted(rec.op) || c.members.empty()) return "";
    const int32_t root = rec.u.coll.root_or_peer, size = int32_t(c.members.size());
    if (root >= 0 && root < size) return "";
    // MPI_ROOT and MPI_PROC_NULL name the roles of an intercommunicator's two groups.
    if ((root == LST_ROOT || root == LST_PROC_NULL) && intercomm(c.ref.id)) return "";
    if (root == LST_ROOT || root == LST_PROC_NULL)
      return fmt::format("root {} is only valid on an intercommunicator, and {} is none",
                         format::root_text(root), c.ref.name);
    return fmt::format("root {} is not a rank of {} (size {})", root, c.ref.name, size);
  }

  // An intercommunicator: made by MPI_Intercomm_create, derived from one (a duplicate, a split, a
  // subset of one is one too), or one whose sides recorded two local groups (MPI_Comm_spawn's,
  // MPI_Comm_accept's and MPI_Comm_connect's, which the tracer sees only when they are used).
  bool intercomm(uint64_t id) const {
    for (int depth = 0; id != 0 && depth < 64; ++depth) {
      auto it = comms_.find(id);
      if (it == comms_.end()) return false;
      const Comm& c = it->second;
      if (c.inter || c.create_op == LST_COMM_INTERCOMM_CREATE) return true;
      switch (c.create_op) {
        case LST_COMM_DUP:
        case LST_COMM_IDUP:
        case LST_COMM_SPLIT:
        case LST_COMM_CREATE:
        case LST_COMM_CREATE_GROUP:
          id = c.parent;
          break;
        default:
          return false;
      }
    }
    return false;
  }

  void invalid_arguments(const Comm& c, const Group& ref) {
    if (!ref.seq) return;
    const Rank& mr = *ref.ranks.front();
    const int32_t size = int32_t(c.members.size());
    // A streamed rank knows the range of its roots and whether it passed a null datatype: with roots
    // inside the communicator, no null handle, there is nothing to find.
    if (mr.streamed && c.ref.id != 0 && !ref.seq->null_dtype && ref.seq->root_min >= 0 &&
        ref.seq->root_max < size)
      return;
    mr.materialize();
    for (size_t i = 0; i < ref.seq->ref.size(); ++i) {
      const lst_record* rec = mr.record(ref.seq->ref[i]);
      const std::string why = invalid_why(c, *rec);
      if (why.empty()) continue;
      Finding f;
      f.kind = Kind::kInvalidArgument;
      f.comm = c.ref;
      f.seq = int64_t(i);
      std::string died_text;
      bool headline_died = false;
      std::set<std::string> errors;
      // Each rank is read for its call #i and given back before the next: a large communicator is
      // never held in memory all at once. The views' holders stay (the comparisons read them).
      std::set<const Rank*> holders;
      for (const Rank* r : c.ranks)
        if (r->materialized) holders.insert(r);
      each_read_ahead(c.ranks, [&](const Rank* r) {
        f.ranks.push_back(r->world_rank);
        const Sequence* s = r->sequence(c.ref.id);
        const bool held = holders.count(r) > 0;
        r->materialize();
        RankDetail d = detail_at(*r, s, int64_t(i));
        const RecordRef own_ref = s && i < s->ref.size() ? s->ref[i] : 0;
        const lst_record* own = s && i < s->ref.size() ? r->record(own_ref) : nullptr;
        if (!held) r->release();
        // A code the call returned, or one MPI's fatal error handler ended the process on (the call
        // never returned: its record is still entered).
        if (own)
          if (const Rank::MpiError* e = error_of(*r, own_ref))
            errors.insert(LST_WORD_STATE(own->word) == LST_STATE_FAILED
                              ? fmt::format("MPI returned {}", e->text)
                              : fmt::format("MPI's error handler ended the process on {}", e->text));
        if (own && invalid_why(c, *own) == why) f.culprits.push_back(r->world_rank);
        // Ended inside it: the end marker names the call (format 2.0); older traces: its last call,
        // still open, of a rank that did not merely stop.
        bool inside =
            own && (died_inside(*r, own_ref) ||
                    (!r->died_in && std::binary_search(s->open.begin(), s->open.end(), uint32_t(i)) &&
                     s->size() == i + 1 && !behind(*r)));
        if (inside) {
          d.note = "died inside it: " + death_in(*r, own_ref);
          // The headline names a rank MPI ended (exit status, abort, crash) before one the launcher stopped.
          if (died_text.empty() || (died(*r) && !headline_died)) {
            died_text = fmt::format("rank {} died inside {}", r->world_rank, d.operation);
            headline_died = died(*r);
          }
        }
        if (c.ranks.size() <= 16) f.detail.push_back(d);
      });
      std::string op = format::op_name(*rec);
      const bool every = f.culprits.size() == c.ranks.size();
      std::string who = every ? "every rank" : ranks_phrase(f.culprits);
      f.explanation = died_text.empty()
                          ? fmt::format("{} called {} #{} on {} with an argument MPI rejects: {}", who, op,
                                        at(c.ref.id, int64_t(i)), c.ref.name, why)
                          : fmt::format("{} ({}); {} passed it", died_text, why, every ? "every rank" : who);
      for (auto& e : errors) f.notes.push_back(e);
      findings_.push_back(std::move(f));
      flagged_.insert({c.ref.id, int64_t(i)});
      rejected_.insert({c.ref.id, int64_t(i)});
      return;
    }
  }
  std::set<std::pair<uint64_t, int64_t>> rejected_;  // (comm, seq) of calls with an argument MPI rejects

  // ----- MPI's own errors (format 2.0) -----
  static bool died_inside(const Rank& r, RecordRef ref) {
    return r.died_in && r.died_in == r.source->first_id() + ref;
  }

  // How the process ended, for a rank that died inside a call: a stop signal (the launcher tearing
  // the job down) is said too.
  static std::string death(const Rank& r) {
    std::string e = ending(r);
    if (e.empty() && r.saw_signal) e = fmt::format("it was killed (signal {})", r.signal);
    // The process is gone and recorded no end of its own: the one signal no handler sees.
    if (e.empty() && r.end == EndState::kKilled)
      e = "it was killed, leaving no end in its trace as SIGKILL does";
    return e.empty() ? "its trace ends there" : e;
  }

  // The same for the call `ref`, with the error code MPI's fatal error handler ended the process on,
  // when the tracer saw it (format 2.0: an MPI_ERROR marker on a call that never returned).
  static std::string death_in(const Rank& r, RecordRef ref) {
    if (const Rank::MpiError* e = error_of(r, ref))
      return fmt::format("MPI's error handler ended it on {} ({})", e->text, death(r));
    return death(r);
  }

  static const Rank::MpiError* error_of(const Rank& r, RecordRef ref) {
    const uint64_t id = r.source->first_id() + ref;
    for (auto& e : r.mpi_errors)
      if (e.record == id) return &e;
    return nullptr;
  }

  // Communicator creations: a colour MPI rejects (negative other than MPI_UNDEFINED), or a creation
  // that MPI failed or that a rank died inside. One finding per parent communicator, at its first
  // such creation.
  void creations() {
    struct Bad {
      std::vector<int32_t> colour, failed, died;
      std::map<int32_t, int64_t> colours;
      std::set<std::string> errors;
      std::string op, site;
      std::string death;
    };
    std::map<uint64_t, std::map<size_t, Bad>> by_parent;  // parent -> creation index -> what went wrong
    for (auto& r : job_.ranks) {
      std::map<uint64_t, size_t> index;
      for (auto& cc : r.creations) {
        size_t k = index[cc.parent]++;
        const bool split = cc.comm_op == LST_COMM_SPLIT || cc.comm_op == LST_COMM_SPLIT_TYPE;
        const bool bad_colour = split && cc.color < 0 && cc.color != LST_UNDEFINED;
        const bool failed = cc.state == LST_STATE_FAILED;
        // Ended by MPI inside it (not a rank the launcher stopped there afterwards).
        const bool dead = cc.state == LST_STATE_ENTERED && died_inside(r, cc.ref) && died(r);
        if (!bad_colour && !failed && !dead) continue;
        Bad& b = by_parent[cc.parent][k];
        b.op = format::op_name(*r.record(cc.ref));  // the call: "MPI_Comm_split"
        if (b.site.empty()) b.site = site_of(r, cc.caller).text();
        if (bad_colour) {
          b.colour.push_back(r.world_rank);
          b.colours[r.world_rank] = cc.color;
        }
        if (failed) b.failed.push_back(r.world_rank);
        if (dead) {
          b.died.push_back(r.world_rank);
          if (b.death.empty())
            b.death = fmt::format("rank {} died inside it: {}", r.world_rank, death_in(r, cc.ref));
        }
        if (const Rank::MpiError* e = error_of(r, cc.ref)) b.errors.insert(e->text);
      }
    }
    for (auto& [parent, list] : by_parent) {
      const auto& [k, b] = *list.begin();
      Finding f;
      f.kind = Kind::kInvalidArgument;
      auto it = comms_.find(parent);
      if (it != comms_.end())
        f.comm = it->second.ref;
      else
        f.comm.id = parent;
      if (parent == 0) f.comm.name = "MPI_COMM_NULL";
      f.seq = -1;
      std::set<int32_t> involved;
      for (auto* v : {&b.colour, &b.failed, &b.died}) involved.insert(v->begin(), v->end());
      f.ranks.assign(involved.begin(), involved.end());
      f.culprits = !b.colour.empty() ? b.colour : f.ranks;
      std::string where =
          fmt::format("{} on {}{}", b.op, f.comm.name, b.site.empty() ? "" : " (" + b.site + ")");
      if (!b.colour.empty()) {
        std::string cs;
        for (auto& [w, col] : b.colours)
          cs += fmt::format("{}rank {} color {}", cs.empty() ? "" : ", ", w, col);
        f.explanation =
            fmt::format("{} passed a colour MPI rejects to {} ({}): a colour must be >= 0 or MPI_UNDEFINED",
                        ranks_phrase(b.colour), where, cs);
      } else {
        f.explanation = fmt::format("{} did not create a communicator: MPI failed it on {}", where,
                                    ranks_phrase(f.ranks));
      }
      if (!b.failed.empty())
        f.notes.push_back(fmt::format("the call failed on {}{}", ranks_phrase(b.failed),
                                      b.errors.empty() ? "" : " with " + *b.errors.begin()));
      if (!b.died.empty()) f.notes.push_back(b.death);
      if (k > 0) f.notes.push_back(fmt::format("this is creation #{} on {}", k, f.comm.name));
      for (int32_t w : f.ranks) {
        RankDetail d;
        d.rank = w;
        d.operation = b.op;
        if (std::find(b.died.begin(), b.died.end(), w) != b.died.end())
          d.note = "died inside it";
        else if (std::find(b.failed.begin(), b.failed.end(), w) != b.failed.end())
          d.note = "the call failed";
        if (auto c = b.colours.find(w); c != b.colours.end())
          d.note += fmt::format("{}color {}", d.note.empty() ? "" : "; ", c->second);
        f.detail.push_back(d);
      }
      findings_.push_back(std::move(f));
    }
  }

  std::string
      evidence_;  // why the reference view of the communicator being aligned was chosen without a majority

  void compare(const Comm& c, const Group& ref, const Rank& r, bool tie,
               const std::vector<int32_t>& majority) {
    const Sequence* rs = r.sequence(c.ref.id);
    const Sequence* ms = ref.seq;
    r.materialize();
    ref.ranks.front()->materialize();
    if (behind(r) && is_prefix(rs, ms)) return;
    static const std::vector<uint64_t> kEmpty;
    const std::vector<uint64_t>& a = ms ? ms->sig : kEmpty;
    const std::vector<uint64_t>& b = rs ? rs->sig : kEmpty;
    auto hunks = diff(a, b, opt_.max_edits);
    if (!hunks) {
      positional(c, ref, r, tie, majority);
      return;
    }
    if (only_lines_differ(c, ref, r, *hunks)) {
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) callsite(c, ref, r, uint32_t(i), uint32_t(i), tie, majority);
      return;
    }
    const Rank& mr = *ref.ranks.front();
    int64_t offset = 0;  // b position - a position after the hunks seen so far
    for (size_t hi = 0; hi < hunks->size(); ++hi) {
      const Hunk& h = (*hunks)[hi];
      size_t n = h.a1 - h.a0, m = h.b1 - h.b0, k = std::min(n, m);
      if (n >= m && m > 0 && named_run(mr, *ms, r, *rs, h)) {
        skipped_run(c, ref, r, h, tie, majority);
        offset += int64_t(m) - int64_t(n);
        continue;
      }
      for (size_t i = 0; i < k; ++i) mismatch(c, ref, r, h.a0 + i, h.b0 + i, tie, majority);
      if (n > k) {
        uint32_t a0 = uint32_t(h.a0 + k), b0 = uint32_t(h.b0 + k);
        bool tail = h.a1 == a.size() && b0 == b.size();
        if (tail && behind(r)) continue;
        Finding f = base(c, Kind::kMissingCollective, a0, ref, r, tie, majority);
        f.detail.push_back(detail_at(r, rs, -1));
        f.detail.back().note = tail ? ending(r) : "skipped this call and went on";
        // A rank that went on was, when it skipped, where its next call on this communicator is.
        if (!tail && rs && b0 < rs->size()) f.detail.back().context = std::string(r.context(rs->ref[b0]));
        RankDetail md = detail_at(mr, ms, a0);
        std::string what = fmt::format("{} #{} on {}{}", md.operation, at(c.ref.id, a0), c.ref.name,
                                       md.site.text().empty() ? "" : " (" + md.site.text() + ")");
        if (!tail) {
          // Skip and continue: MPI pairs calls by position, so everything after the skip pairs wrong
          // until the rank's count catches up again (a later extra call) or its calls run out.
          int64_t restore = -1;
          int64_t cum = offset + int64_t(m) - int64_t(n);
          size_t comp = hunks->size();
          for (size_t hj = hi + 1; hj < hunks->size(); ++hj) {
            cum += int64_t((*hunks)[hj].b1 - (*hunks)[hj].b0) - int64_t((*hunks)[hj].a1 - (*hunks)[hj].a0);
            if (cum == offset) {
              restore = (*hunks)[hj].a1;
              comp = hj;
              break;
            }
          }
          int64_t end = restore >= 0 ? std::min<int64_t>(restore, int64_t(a.size()))
                                     : int64_t(std::min(a.size(), b.size()));
          f.mispaired = std::max<int64_t>(0, end - a0);
          f.silently_wrong = f.mispaired > 0 && completed_range(c, a0, a0 + f.mispaired);
          f.explanation = fmt::format("rank {} skipped {} that {} called, and went on", r.world_rank, what,
                                      ranks_phrase(majority));
          f.notes.push_back(fmt::format(
              "the {} later collective{} on {} {} paired with the wrong ones (MPI matches calls by order)",
              f.mispaired, f.mispaired == 1 ? "" : "s", c.ref.name, f.mispaired == 1 ? "was" : "were"));
          if (f.silently_wrong)
            f.notes.push_back("those collectives completed on every rank: their results are silently wrong");
          if (comp < hunks->size()) {
            const Hunk& ch = (*hunks)[comp];
            if (ch.a0 == ch.a1 && ch.b1 - ch.b0 == n - k) {
              RankDetail extra = detail_at(r, rs, ch.b0);
              f.notes.push_back(fmt::format(
                  "rank {} later made an extra {} call at its #{}{}, which let the counts agree again",
                  r.world_rank, extra.operation, at(c.ref.id, ch.b0),
                  extra.site.text().empty() ? "" : " (" + extra.site.text() + ")"));
              absorbed_.insert({r.world_rank, c.ref.id, ch.b0});
            }
          }
        } else {
          std::string why = ending(r);
          f.explanation = fmt::format("rank {} never called {} that {} called{}", r.world_rank, what,
                                      ranks_phrase(majority), why.empty() ? "" : ": " + why);
        }
        if (n - k > 1)
          f.notes.push_back(
              fmt::format("{} consecutive collectives are missing from #{}", n - k, at(c.ref.id, a0)));
        // Identical calls before it cannot be told apart: the one left out may be any of them.
        uint32_t run = a0;
        while (run > 0 && a[run - 1] == a[a0]) --run;
        if (run < a0)
          f.notes.push_back(
              fmt::format("#{}..#{} are identical calls (same operation, arguments and line), so the one "
                          "left out may be any of them; #{} is the first place the ranks can be told apart",
                          at(c.ref.id, run), at(c.ref.id, a0), at(c.ref.id, a0)));
        push(std::move(f));
      }
      if (m > k) {
        uint32_t a0 = uint32_t(h.a0 + k), b0 = uint32_t(h.b0 + k);
        if (absorbed_.count({r.world_rank, c.ref.id, b0})) {
          offset += int64_t(m) - int64_t(n);
          continue;
        }
        Finding f = base(c, Kind::kMissingCollective, a0, ref, r, tie, majority);
        RankDetail d = detail_at(r, rs, b0);
        f.detail.push_back(d);
        f.explanation =
            fmt::format("rank {} called {} (its #{} on {}{}) that {} never called there", r.world_rank,
                        d.operation, at(c.ref.id, b0), c.ref.name,
                        d.site.text().empty() ? "" : ", " + d.site.text(), ranks_phrase(majority));
        if (m - k > 1) f.notes.push_back(fmt::format("{} extra collectives in a row", m - k));
        push(std::move(f));
      }
      offset += int64_t(m) - int64_t(n);
    }
  }
  std::set<std::tuple<int32_t, uint64_t, uint32_t>> absorbed_;

  // MPI pairs calls by position. Where the rank made as many calls as the reference and only lines
  // differ (each pair the same operation and arguments), at no more positions than the minimal edit
  // script has edits, that pairing explains the difference better than a call skipped here and made up
  // there: each differing position is then a call from another line (callsite). A skipped call made up
  // later shifts every call in between, so it differs at more positions than its two edits.
  bool only_lines_differ(const Comm& c, const Group& ref, const Rank& r,
                         const std::vector<Hunk>& hunks) const {
    const Sequence* rs = r.sequence(c.ref.id);
    const Sequence* ms = ref.seq;
    if (!rs || !ms || rs->sig.size() != ms->sig.size()) return false;
    size_t edits = 0;
    for (const Hunk& h : hunks) edits += (h.a1 - h.a0) + (h.b1 - h.b0);
    const Rank& mr = *ref.ranks.front();
    std::vector<uint64_t> la, lb;  // the differing positions' signatures, lines included
    for (size_t i = 0; i < ms->sig.size(); ++i) {
      if (ms->sig[i] == rs->sig[i]) continue;
      if (la.size() >= edits) return false;
      const lst_record* a = mr.record(ms->ref[i]);
      const lst_record* b = r.record(rs->ref[i]);
      if (semantic_signature(*a, name_of(mr, *a)) != semantic_signature(*b, name_of(r, *b))) return false;
      la.push_back(ms->sig[i]);
      lb.push_back(rs->sig[i]);
    }
    if (la.size() < edits) return true;
    // As many positions as edits: positions win only where neither side called from a line the other
    // did not use there (two rounds taken in the other order); a line of the rank's own is the make-up
    // call of a skip, which the edit script names.
    std::sort(la.begin(), la.end());
    std::sort(lb.begin(), lb.end());
    return la == lb;
  }

  // Name-matched calls (runtime tensors) where the rank calls none of the names the others call here, but
  // names the program calls elsewhere (earlier in the others' history: a later step's tensors): it
  // skipped that run of tensors and went on. Pairing its later names with the skipped ones position by
  // position would only report the consequence (a name mismatch). A name nobody else uses stays a
  // name mismatch.
  bool named_run(const Rank& mr, const Sequence& ms, const Rank& r, const Sequence& rs, const Hunk& h) const {
    std::set<std::string_view> skipped;
    for (uint32_t i = h.a0; i < h.a1; ++i) {
      std::string_view n = name_of(mr, *mr.record(ms.ref[i]));
      if (n.empty()) return false;
      skipped.insert(n);
    }
    std::set<std::string_view> before;
    for (uint32_t i = h.a0 > 4096 ? h.a0 - 4096 : 0; i < h.a0; ++i)
      before.insert(name_of(mr, *mr.record(ms.ref[i])));
    for (uint32_t i = h.b0; i < h.b1; ++i) {
      std::string_view n = name_of(r, *r.record(rs.ref[i]));
      if (n.empty() || skipped.count(n) || !before.count(n)) return false;
    }
    return true;
  }

  void skipped_run(const Comm& c, const Group& ref, const Rank& r, const Hunk& h, bool tie,
                   const std::vector<int32_t>& majority) {
    const Rank& mr = *ref.ranks.front();
    const Sequence* rs = r.sequence(c.ref.id);
    Finding f = base(c, Kind::kMissingCollective, h.a0, ref, r, tie, majority);
    RankDetail first = detail_at(mr, ref.seq, h.a0);
    RankDetail next = detail_at(r, rs, h.b0);
    for (uint32_t i = h.a0; i < h.a1; ++i)
      f.skipped_tensors.emplace_back(name_of(mr, *mr.record(ref.seq->ref[i])));
    const size_t n = f.skipped_tensors.size();
    std::string what = fmt::format("'{}'{}", f.skipped_tensors.front(),
                                   n > 1 ? fmt::format(" and {} more", n - 1) : std::string());
    std::string line = first.site.text().empty() ? "" : fmt::format(", {}", first.site.text());
    std::string step = first.context.empty() ? "" : fmt::format(" of {}", first.context);
    std::string then = next.context.empty() ? "" : fmt::format(" in {}", next.context);
    f.explanation = fmt::format(
        "rank {} skipped the {} {} {}{} (#{}..#{} on {}{}) that {} called, and went on to '{}'{}{}",
        r.world_rank, first.operation, n == 1 ? "call" : "calls", what, step, at(c.ref.id, h.a0),
        at(c.ref.id, h.a1 - 1), c.ref.name, line, ranks_phrase(majority), next.tensor,
        next.site.text().empty() ? "" : " (" + next.site.text() + ")", then);
    RankDetail d = detail(r, nullptr, -1, UINT32_MAX);
    const std::string skip = fmt::format("skipped {} and went on to '{}'", what, next.tensor);
    const std::string why =
        ending(r);  // how its trace ends, when it does: "it was stopped by the runtime: ..."
    d.note = why.empty() ? skip : why + ", after it " + skip;
    d.context = next.context;
    f.detail.push_back(d);
    f.notes.push_back(
        fmt::format("consequence: at #{} rank {} named tensor '{}' where {} named '{}' (a name mismatch)",
                    at(c.ref.id, h.a0), r.world_rank, next.tensor, ranks_phrase(majority), first.tensor));
    if (n > 1) {
      std::string all;
      for (auto& t : f.skipped_tensors) all += (all.empty() ? "'" : ", '") + t + "'";
      f.notes.push_back(fmt::format("skipped tensors: {}", all));
    }
    push(std::move(f));
  }

  // Far-apart sequences: compare position by position on the MPI semantics only.
  void positional(const Comm& c, const Group& ref, const Rank& r, bool tie,
                  const std::vector<int32_t>& majority) {
    const Sequence* rs = r.sequence(c.ref.id);
    const Sequence* ms = ref.seq;
    const Rank& mr = *ref.ranks.front();
    size_t n = std::min(len(rs), len(ms));
    for (size_t i = 0; i < n; ++i) {
      const lst_record* a = mr.record(ms->ref[i]);
      const lst_record* b = r.record(rs->ref[i]);
      if (semantic_signature(*a, name_of(mr, *a)) != semantic_signature(*b, name_of(r, *b))) {
        mismatch(c, ref, r, uint32_t(i), uint32_t(i), tie, majority);
        return;
      }
    }
    if (len(rs) != len(ms) && !(behind(r) && len(rs) < len(ms))) {
      Finding f = base(c, Kind::kMissingCollective, int64_t(n), ref, r, tie, majority);
      f.detail.push_back(detail_at(r, rs, int64_t(n)));
      f.explanation = fmt::format(
          "rank {} made {} collectives on {} where {} made {}; they first differ in number at #{}",
          r.world_rank, len(rs), c.ref.name, ranks_phrase(majority), len(ms), at(c.ref.id, int64_t(n)));
      push(std::move(f));
    }
  }

  std::string_view name_of(const Rank& r, const lst_record& rec) const {
    return rec.api == LST_API_RT && rec.aux ? r.source->string(rec.aux) : std::string_view();
  }

  Finding base(const Comm& c, Kind kind, int64_t seq, const Group& ref, const Rank& r, bool tie,
               const std::vector<int32_t>& majority) {
    Finding f;
    f.kind = kind;
    f.comm = c.ref;
    f.seq = seq;
    f.tie = tie;
    f.control = control_comms_.count(c.ref.id) > 0;
    f.ranks = {r.world_rank};
    if (!tie) f.culprits = {r.world_rank};
    // What the majority did here: every member for small communicators, else one representative.
    size_t shown = 0;
    for (const Rank* mr : ref.ranks) {
      if (c.ranks.size() > 16 && shown >= 1) break;
      // Equal sequences, not equal files: each rank's own records (its file may hold other calls between).
      f.detail.push_back(detail_at(*mr, mr->sequence(c.ref.id), seq));
      f.ranks.push_back(mr->world_rank);
      ++shown;
    }
    if (!evidence_.empty()) f.notes.push_back("no majority; decided by evidence: " + evidence_);
    if (tie)
      f.notes.push_back(
          fmt::format("tie: {} and rank {} disagree with no majority either way; both views are shown "
                      "and no rank is blamed",
                      ranks_phrase(majority), r.world_rank));
    return f;
  }

  bool completed_range(const Comm& c, int64_t lo, int64_t hi) const {
    for (const Rank* r : c.ranks) {
      const Sequence* s = r->sequence(c.ref.id);
      if (!s) continue;
      for (uint32_t o : s->open)
        if (o >= lo && o < hi) return false;
    }
    return true;
  }

  void mismatch(const Comm& c, const Group& ref, const Rank& r, uint32_t ai, uint32_t bi, bool tie,
                const std::vector<int32_t>& majority) {
    const Rank& mr = *ref.ranks.front();
    const lst_record* a = mr.record(ref.seq->ref[ai]);
    const lst_record* b = r.record(r.sequence(c.ref.id)->ref[bi]);
    std::string na(name_of(mr, *a)), nb(name_of(r, *b));
    const Classification k = classify(*a, na, *b, nb);
    if (!k.kind) {  // same collective from another call site: MPI does not mind, the program may
      callsite(c, ref, r, ai, bi, tie, majority);
      return;
    }
    const Kind kind = *k.kind;
    const Severity sev = k.severity;
    const uint64_t ba = a->u.coll.count * a->u.coll.dtype_size, bb = b->u.coll.count * b->u.coll.dtype_size;
    std::vector<std::string> diffs;
    RankDetail da = detail(mr, a, ai, ref.seq->ref[ai]), db = detail(r, b, bi, r.sequence(c.ref.id)->ref[bi]);
    if (k.op) {
      diffs.push_back(fmt::format("rank {} called {}{} where {} called {}{}", r.world_rank, db.operation,
                                  db.site.text().empty() ? "" : " (" + db.site.text() + ")",
                                  ranks_phrase(majority), da.operation,
                                  da.site.text().empty() ? "" : " (" + da.site.text() + ")"));
    } else {
      if (k.name)
        diffs.push_back(fmt::format("rank {} named tensor '{}' where {} named '{}'", r.world_rank, nb,
                                    ranks_phrase(majority), na));
      if (k.root)
        diffs.push_back(fmt::format("rank {} named root {} where {} named root {}", r.world_rank,
                                    format::root_text(b->u.coll.root_or_peer), ranks_phrase(majority),
                                    format::root_text(a->u.coll.root_or_peer)));
      if (k.redop)
        diffs.push_back(fmt::format("rank {} reduced with {} where {} used {}", r.world_rank,
                                    format::redop_name(b->redop), ranks_phrase(majority),
                                    format::redop_name(a->redop)));
      if (k.bytes || k.dtype)
        diffs.push_back(fmt::format("rank {} passed {} x {} ({} bytes) where {} passed {} x {} ({} bytes)",
                                    r.world_rank, b->u.coll.count, format::dtype_text(*b), bb,
                                    ranks_phrase(majority), a->u.coll.count, format::dtype_text(*a), ba));
    }
    Finding f = base(c, kind, ai, ref, r, tie, majority);
    f.severity = sev;
    f.detail.push_back(db);
    f.explanation =
        fmt::format("at {} #{} on {}, {}", da.operation, at(c.ref.id, ai), c.ref.name, diffs.front());
    if (kind == Kind::kDtypeMismatch && sev == Severity::kWarning)
      f.explanation += ": the same bytes, read as different types";
    for (size_t i = 1; i < diffs.size(); ++i) f.notes.push_back("also: " + diffs[i]);
    if (ai != bi)
      f.notes.push_back(fmt::format("rank {} numbers this call #{}", r.world_rank, at(c.ref.id, bi)));
    push(std::move(f));
  }

  // The same collective from another line: fine when that is how this rank always reaches it (helpers
  // that differ per rank), suspect when the rank's own calls break their pattern there and the
  // majority's do not (a skipped call made up from a flush or retry path later).
  std::set<std::pair<int32_t, uint64_t>> callsite_flagged_;
  void callsite(const Comm& c, const Group& ref, const Rank& r, uint32_t ai, uint32_t bi, bool tie,
                const std::vector<int32_t>& majority) {
    const Sequence* ms = ref.seq;
    const Sequence* rs = r.sequence(c.ref.id);
    if (!ms || !rs || callsite_flagged_.count({r.world_rank, c.ref.id})) return;
    r.materialize();
    ref.ranks.front()->materialize();
    size_t p = departs(rs->sig, bi);
    if (!p || departs(ms->sig, ai)) return;
    const Rank& mr = *ref.ranks.front();
    if (calls_from(*ms, rs->sig[bi])) {
      // A line the reference makes this very call from too, at another position: a branch that each rank
      // takes at a step of its own (a loop's last round), or a compiler's copy of one call in a binary
      // without line information. A call made up from a flush or retry path comes from a line of its own.
      other_step_lines(c, mr, *ms, r, *rs, ai, bi);
      return;
    }
    callsite_flagged_.insert({r.world_rank, c.ref.id});
    RankDetail da = detail(mr, mr.record(ms->ref[ai]), ai, ms->ref[ai]);
    RankDetail db = detail(r, r.record(rs->ref[bi]), bi, rs->ref[bi]);
    RankDetail was = detail(r, r.record(rs->ref[bi - p]), int64_t(bi - p), rs->ref[bi - p]);
    auto site = [](const RankDetail& d) {
      return d.site.text().empty() ? std::string("an unknown line") : d.site.text();
    };
    Finding f = base(c, Kind::kCallsiteMismatch, ai, ref, r, tie, majority);
    f.severity = Severity::kWarning;
    f.detail.push_back(db);
    f.explanation = fmt::format(
        "at {} #{} on {}, rank {} made the call from {} where {} made it from {}; the arguments agree, but "
        "rank {} "
        "made this call from {} one step earlier (#{}), so its calls part from the others' here",
        da.operation, at(c.ref.id, ai), c.ref.name, r.world_rank, site(db), ranks_phrase(majority), site(da),
        r.world_rank, site(was), at(c.ref.id, int64_t(bi - p)));
    f.notes.push_back(
        "a call skipped and made up from another line (a flush, a retry path) pairs every later "
        "collective with the wrong partner while every count and type still agrees");
    f.notes.push_back(
        "if the ranks reach this collective through different code on purpose, pass "
        "--allow-callsite-differences");
    if (opt_.allow_callsite_differences) {
      res_.warnings.push_back(fmt::format("callsite_mismatch allowed: {}", f.explanation));
      return;
    }
    push(std::move(f));
  }

  // Whether `seq` has a call of signature `sig` (line included): a set of the sequence's signatures,
  // made at its first question, since callsite() may ask at every position that differs.
  std::pair<const Sequence*, uint64_t> lines_of_{nullptr, 0};  // the sequence and its communicator
  std::unordered_set<uint64_t> lines_;
  bool calls_from(const Sequence& seq, uint64_t sig) {
    if (lines_of_ != std::make_pair(&seq, seq.comm)) {
      lines_.clear();
      lines_.insert(seq.sig.begin(), seq.sig.end());
      lines_of_ = {&seq, seq.comm};
    }
    return lines_.count(sig) > 0;
  }

  // One report warning per communicator for the calls callsite() let pass because the reference calls
  // from that line too.
  std::set<uint64_t> other_step_warned_;
  void other_step_lines(const Comm& c, const Rank& mr, const Sequence& ms, const Rank& r, const Sequence& rs,
                        uint32_t ai, uint32_t bi) {
    if (!other_step_warned_.insert(c.ref.id).second) return;
    const RankDetail da = detail(mr, mr.record(ms.ref[ai]), ai, ms.ref[ai]);
    const RankDetail db = detail(r, r.record(rs.ref[bi]), bi, rs.ref[bi]);
    auto line = [](const RankDetail& d) {
      return d.site.text().empty() ? std::string("an unknown line") : d.site.text();
    };
    res_.warnings.push_back(
        fmt::format("{}: at {} #{} rank {} made the call from {} where rank {} made it from {}; rank {} "
                    "makes this same call "
                    "from {} too, at another position (a branch taken at a step of each rank's own, or a "
                    "compiler's copy of "
                    "one call): the arguments agree, so this is not a callsite_mismatch",
                    c.ref.name, da.operation, at(c.ref.id, ai), r.world_rank, line(db), mr.world_rank,
                    line(da), mr.world_rank, line(db)));
  }

  void push(Finding f) {
    // One finding per (communicator, position, kind): several culprits doing the same thing merge.
    for (auto& g : findings_) {
      if (g.kind == f.kind && g.comm.id == f.comm.id && g.seq == f.seq && g.kind != Kind::kDeadlockCycle) {
        for (int32_t w : f.culprits)
          if (std::find(g.culprits.begin(), g.culprits.end(), w) == g.culprits.end()) g.culprits.push_back(w);
        for (int32_t w : f.ranks)
          if (std::find(g.ranks.begin(), g.ranks.end(), w) == g.ranks.end()) g.ranks.push_back(w);
        for (auto& d : f.detail) {
          bool have = false;
          for (auto& e : g.detail) have |= e.rank == d.rank;
          if (!have) g.detail.push_back(d);
        }
        if (g.culprits.size() > 1 && g.explanation.find("(and ") == std::string::npos)
          g.explanation += " (and the same on other ranks: see culprits)";
        return;
      }
    }
    flagged_.insert({f.comm.id, f.seq});
    findings_.push_back(std::move(f));
  }

  // ----- point to point -----
  void point_to_point() {
    for (auto& [id, c] : comms_) {
      auto world = [&](int32_t cr) {
        return cr >= 0 && size_t(cr) < c.members.size() ? c.members[size_t(cr)] : -1;
      };
      // Unmatched sends/receives after pairing in order per (source, destination). The ranks' tallies
      // give each (source, destination)'s sends and receives (and each rank's receives from any
      // source); only where some pair does not balance are the calls read again from the traces, and
      // then only those after the first min(sends, receives) are kept, so a job of millions of
      // messages needs memory for its unmatched ones only.
      using Key = std::pair<int32_t, int32_t>;
      using Call = std::pair<const Rank*, P2P>;
      enum class Side { kNone, kInvalid, kSend, kRecv, kAny };
      auto side = [&](const MessageKey& p) {
        if (p.comm != id) return Side::kNone;
        if (p.mpi && p.peer != LST_NONE && p.peer != LST_ANY_SOURCE && p.peer != LST_PROC_NULL &&
            (p.peer < 0 || size_t(p.peer) >= c.members.size()))
          return Side::kInvalid;
        // A probe receives nothing, MPI_PROC_NULL is no peer, and a call MPI failed moved nothing:
        // none of them pairs.
        if (p.op == LST_OP_PROBE || p.peer == LST_PROC_NULL || p.failed) return Side::kNone;
        const bool any = p.peer == LST_ANY_SOURCE || (p.peer == LST_NONE && p.op != LST_OP_SEND);
        return p.op == LST_OP_SEND ? Side::kSend : any ? Side::kAny : Side::kRecv;
      };
      auto key_of = [&](const Rank& r, const MessageKey& k) {
        return k.op == LST_OP_SEND ? Key{r.world_rank, world(k.peer)} : Key{world(k.peer), r.world_rank};
      };
      std::map<Key, size_t> nsends, nrecvs;
      std::map<int32_t, size_t> nany;
      bool have = false;
      std::vector<const Rank*> invalid_on;  // ranks that named a peer that is no rank of the comm
      for (const Rank* r : c.ranks) {
        bool invalid = false;
        for (auto& [k, n] : r->messages.counts()) switch (side(k)) {
            case Side::kNone:
              break;
            case Side::kInvalid:
              invalid = true;
              break;
            case Side::kSend:
              have = true;
              nsends[key_of(*r, k)] += n;
              break;
            case Side::kRecv:
              have = true;
              nrecvs[key_of(*r, k)] += n;
              break;
            case Side::kAny:
              have = true;
              nany[r->world_rank] += n;
              break;
          }
        if (invalid) invalid_on.push_back(r);
      }
      if (!invalid_on.empty()) {
        std::vector<Call> invalid;
        for (const Rank* r : invalid_on)
          r->for_each_message([&](const P2P& p) {
            if (side(MessageKey::of(p)) != Side::kInvalid) return true;
            invalid.push_back({r, p});
            return false;  // a finding names each rank's first such call
          });
        invalid_peer(c, invalid);
      }
      if (!have) continue;
      std::map<Key, size_t> matched;  // (source, destination) -> messages paired
      std::set<Key> keys, unbalanced;
      for (auto& [k, n] : nsends) keys.insert(k);
      for (auto& [k, n] : nrecvs) keys.insert(k);
      for (auto& k : keys) {
        matched[k] = std::min(nsends[k], nrecvs[k]);
        if (nsends[k] != nrecvs[k]) unbalanced.insert(k);
      }
      std::map<Key, std::vector<Call>> sends, recvs;  // the calls after the paired ones
      std::map<Key, size_t> seen_sends, seen_recvs;
      // Balanced everywhere: nothing lies past the pairs, and no trace is read again. Otherwise only
      // the ranks at either end of an unbalanced pair are.
      std::set<int32_t> involved;
      for (auto& [from, to] : unbalanced) involved.insert({from, to});
      for (const Rank* r : c.ranks) {
        if (!involved.count(r->world_rank)) continue;
        r->for_each_message([&](const P2P& p) {
          const MessageKey mk = MessageKey::of(p);
          const Side sd = side(mk);
          if (sd != Side::kSend && sd != Side::kRecv) return true;
          const Key k = key_of(*r, mk);
          if ((sd == Side::kSend ? seen_sends : seen_recvs)[k]++ >= matched[k])
            (sd == Side::kSend ? sends : recvs)[k].push_back({r, p});
          return true;
        });
      }
      std::vector<Call> us, ur;  // unmatched
      std::map<int32_t, size_t> any_used;
      for (auto& k : keys) {
        for (const Call& s : sends[k]) {
          size_t& used = any_used[k.second];
          if (used < nany[k.second])
            ++used;
          else
            us.push_back(s);
        }
        for (const Call& rv : recvs[k]) ur.push_back(rv);
      }
      // A receive from a rank that did send to this one before (and a send to a rank that did receive
      // from this one) names the right peer: that peer stopped or has not got there yet, which the
      // alignment and the hang analysis say. Only a peer never paired with is a wrong one.
      // The same test both ways: `mine` are receives (or sends) never paired, `theirs` the other side's.
      auto wrong_peers = [&](const std::vector<Call>& mine, const std::vector<Call>& theirs, bool receiver) {
        for (auto& [who, p] : mine) {
          int32_t self = who->world_rank, peer = world(p.peer);
          if (matched[receiver ? std::pair{peer, self} : std::pair{self, peer}] > 0) continue;
          const Call* other = nullptr;
          for (auto& o : theirs)
            if (world(o.second.peer) == self && o.first->world_rank != peer) other = &o;
          if (other) peer_finding(c, *who, p, self, *other->first, other->second, receiver);
        }
      };
      wrong_peers(ur, us, true);
      wrong_peers(us, ur, false);
    }
  }

  // An MPI destination or source that is no rank of the communicator (MPI_ERR_RANK): an argument MPI
  // rejects whatever the peer does, so an invalid_argument, not a wrong peer. One finding per
  // communicator, at each rank's first such call.
  void invalid_peer(const Comm& c, const std::vector<std::pair<const Rank*, P2P>>& calls) {
    Finding f;
    f.kind = Kind::kInvalidArgument;
    f.comm = c.ref;
    f.seq = -1;
    std::set<std::string> errors;
    std::string first;
    for (auto& [r, p] : calls) {
      if (std::find(f.culprits.begin(), f.culprits.end(), r->world_rank) != f.culprits.end()) continue;
      f.culprits.push_back(r->world_rank);
      r->materialize();
      const lst_record* rec = r->record(p.ref);
      RankDetail d = detail(*r, rec, p.tag, p.ref);
      if (const Rank::MpiError* e = error_of(*r, p.ref)) errors.insert(e->text);
      if (first.empty()) {
        f.seq = p.tag;  // as for peer_mismatch: a message's place is its tag
        first =
            fmt::format("{} {} is not a rank of {} (size {})", p.op == LST_OP_SEND ? "destination" : "source",
                        p.peer, c.ref.name, c.members.size());
      }
      if (c.ranks.size() <= 16) f.detail.push_back(std::move(d));
    }
    f.ranks = f.culprits;
    const std::string op = f.detail.empty() ? "a point-to-point call" : f.detail.front().operation;
    const bool every = f.culprits.size() == c.ranks.size();
    f.explanation = fmt::format("{} called {} on {} with an argument MPI rejects: {}",
                                every ? "every rank" : ranks_phrase(f.culprits), op, c.ref.name, first);
    for (auto& e : errors) f.notes.push_back(fmt::format("MPI returned {}", e));
    findings_.push_back(std::move(f));
  }

  void peer_finding(const Comm& c, const Rank& culprit, const P2P& p, int32_t w, const Rank& other,
                    const P2P& op, bool receiver) {
    const lst_record* rec = culprit.record(p.ref);
    const lst_record* orec = other.record(op.ref);
    Finding f;
    f.kind = Kind::kPeerMismatch;
    f.comm = c.ref;
    f.seq = rec->u.coll.seq;
    f.ranks = {w, other.world_rank};
    f.culprits = {w};
    f.detail.push_back(detail(culprit, rec, rec->u.coll.seq, p.ref));
    f.detail.push_back(detail(other, orec, orec->u.coll.seq, op.ref));
    auto world = [&](int32_t cr) {
      return cr >= 0 && size_t(cr) < c.members.size() ? c.members[size_t(cr)] : cr;
    };
    if (receiver)
      f.explanation = fmt::format(
          "rank {} waits to receive from rank {} on {}, which sends it nothing; the message "
          "rank {} sends to rank {} is never received",
          w, world(p.peer), c.ref.name, other.world_rank, w);
    else
      f.explanation = fmt::format(
          "rank {} sends to rank {} on {}, which expects nothing from it; rank {} waits to "
          "receive from rank {} instead",
          w, world(p.peer), c.ref.name, other.world_rank, w);
    push(std::move(f));
  }

  // ----- hang post-mortem -----
  struct Blocked {
    bool yes = false;
    uint64_t comm = 0;
    int64_t pos = -1;  // own position in the comm's sequence
    const lst_record* rec = nullptr;
    const P2P* p2p = nullptr;
    RecordRef ref = 0;
  };
  std::map<int32_t, Blocked> blocked_;

  // Whether the peer already did its part for a blocked MPI send or receive: posted the receive (for a
  // send) or made the send (for a receive) that this call pairs with, messages pairing in order per
  // (communicator, source, destination, tag) as MPI's do. Such a call waits for the transfer under way
  // (a job stopped while ranks exchanged halos: each in MPI_Send to the other, each with its MPI_Irecv
  // posted), not for the peer. False wherever a wildcard (MPI_ANY_SOURCE, MPI_ANY_TAG) on the receiving
  // side could take the message, and for NCCL's calls, which carry no tag.
  bool matched_by_peer(const Comm& c, const Rank& r, const Blocked& b, const Rank& m) const {
    const P2P& p = *b.p2p;
    if (!(p.flags & LST_F_P2P) || p.tag == LST_ANY_TAG || (p.op != LST_OP_SEND && p.op != LST_OP_RECV))
      return false;
    const auto at = std::find(c.members.begin(), c.members.end(), r.world_rank);
    if (at == c.members.end()) return false;
    const int32_t self = int32_t(at - c.members.begin());
    const bool send = p.op == LST_OP_SEND;
    bool wild = false;
    uint64_t mine = 0;  // this rank's calls of the blocked one's kind to the peer with its tag, it included
    r.for_each_message([&](const P2P& q) {
      if (q.ref > b.ref) return false;
      if (q.comm != p.comm || q.state == LST_STATE_FAILED || q.op != p.op) return true;
      if (!send && (q.any_source() || (q.peer == p.peer && q.tag == LST_ANY_TAG))) wild = true;
      if (q.peer == p.peer && q.tag == p.tag) ++mine;
      return !wild;
    });
    if (wild || mine == 0) return false;
    uint64_t theirs = 0;  // the peer's calls of the other kind to this rank with that tag
    m.for_each_message([&](const P2P& q) {
      if (q.comm != p.comm || q.state == LST_STATE_FAILED || q.op == p.op || q.op == LST_OP_PROBE)
        return true;
      if (send && (q.any_source() || (q.peer == self && q.tag == LST_ANY_TAG))) wild = true;
      if (q.peer == self && q.tag == p.tag) ++theirs;
      return !wild;
    });
    return !wild && theirs >= mine;
  }

  Blocked find_blocked(const Rank& r) const { return behind(r) ? open_call(r) : Blocked{}; }

  // The call a rank was last inside, by its records (blocked in it while the rank runs; for a rank that
  // ended, the call its thread was in when the process ended).
  Blocked open_call(const Rank& r) const {
    Blocked b;
    uint64_t best_t = 0;
    const uint64_t first = r.source->first_id();
    for (auto& s : r.seqs)
      for (size_t i = 0; i < s.open.size(); ++i) {
        const uint32_t o = s.open[i];
        const RecordRef ref = s.open_ref[i];
        const lst_record* rec = r.record(ref);
        uint8_t st = uint8_t(LST_WORD_STATE(rec->word));
        bool nb = LST_WORD_FLAGS(rec->word) & LST_F_NONBLOCKING;
        bool in = st == LST_STATE_ENTERED || (nb && st == LST_STATE_RETURNED && r.in_wait &&
                                              (r.wait_first_ref == first + ref || r.wait_first_ref == 0));
        if (in && rec->t_ns >= best_t) {
          best_t = rec->t_ns;
          b = {true, s.comm, int64_t(o), rec, nullptr, ref};
        }
      }
    for (auto& p : r.p2p_open) {
      if (p.peer == LST_PROC_NULL) continue;
      // A blocking call still entered, or a nonblocking one the rank waits for (its MPI_Wait names it).
      bool nb = p.flags & LST_F_NONBLOCKING;
      bool in = p.state == LST_STATE_ENTERED ||
                (nb && p.state == LST_STATE_RETURNED && r.in_wait && r.wait_first_ref == first + p.ref);
      if (!in) continue;
      const lst_record* rec = r.record(p.ref);
      if (rec->t_ns >= best_t) {
        best_t = rec->t_ns;
        // MPI messages have no position on the communicator (their seq field is the tag).
        b = {true, p.comm, (p.flags & LST_F_P2P) ? -1 : int64_t(rec->u.coll.seq), rec, &p, p.ref};
      }
    }
    if (r.in_wait && !b.yes)  // waiting on a request whose record is not the first: take the oldest open one
      for (auto& s : r.seqs)
        if (!s.open.empty()) {
          b = {true,
               s.comm,
               int64_t(s.open.front()),
               r.record(s.open_ref.front()),
               nullptr,
               s.open_ref.front()};
          break;
        }
    return b;
  }

  // ----- blame without a majority: the evidence a person would use -----
  struct Blame {
    std::vector<int32_t> culprits;  // empty: no evidence
    std::string evidence;           // which evidence decided, in words
  };
  std::set<int32_t> cycle_culprits_;

  std::string waits_in(const WaitEdge& e) const {
    if (e.message) return fmt::format("{} on {}", e.operation, e.comm_name);
    return fmt::format("{} #{} on {}", e.operation, at(e.comm, e.seq), e.comm_name);
  }

  // The rank's calls (collectives on every communicator and messages) in call order, up to and with
  // record `upto`, as tokens equal for the same call from the same line; at most the last 4096.
  std::vector<uint64_t> stream(const Rank& r, RecordRef upto) const {
    constexpr size_t kWindow = 4096;
    r.materialize();
    std::vector<std::pair<RecordRef, uint64_t>> ev;
    for (auto& s : r.seqs) {
      size_t end = size_t(std::upper_bound(s.ref.begin(), s.ref.end(), upto) - s.ref.begin());
      for (size_t i = end > kWindow ? end - kWindow : 0; i < end; ++i) ev.push_back({s.ref[i], s.sig[i]});
    }
    // The messages are read again from the trace: only the last kWindow up to `upto` can be among the
    // last kWindow calls.
    std::deque<P2P> messages;
    r.for_each_message([&](const P2P& p) {
      if (p.ref > upto) return false;
      messages.push_back(p);
      if (messages.size() > kWindow) messages.pop_front();
      return true;
    });
    for (auto& p : messages)
      ev.push_back(
          {p.ref, (uint64_t(p.op) << 56) ^ site_hash(r, r.record(p.ref)->caller) ^ (uint64_t(p.comm) * 31)});
    std::sort(ev.begin(), ev.end());
    std::vector<uint64_t> t;
    for (size_t i = ev.size() > kWindow ? ev.size() - kWindow : 0; i < ev.size(); ++i)
      t.push_back(ev[i].second);
    return t;
  }

  // Does t[q] break the repeating pattern of the calls before it? The pattern is the shortest period p
  // that the 2p calls before q follow (two whole steps at least); t[q] departs when it differs from the
  // call one period earlier. Returns the period when it departs, 0 when it follows or there is none.
  static size_t departs(const std::vector<uint64_t>& t, size_t q) {
    if (q >= t.size()) return 0;
    for (size_t p = 1; 2 * p <= q; ++p) {
      bool periodic = true;
      for (size_t i = q - p; i < q && periodic; ++i) periodic = t[i] == t[i - p];
      if (periodic) return t[q] != t[q - p] ? p : 0;
    }
    return 0;
  }

  // Does t[q] continue the repeating pattern of the calls before it (the shortest period p that the 2p
  // calls before q follow)? Returns the period when it does, 0 when it departs or there is no pattern.
  static size_t follows(const std::vector<uint64_t>& t, size_t q) {
    if (q >= t.size()) return 0;
    for (size_t p = 1; 2 * p <= q; ++p) {
      bool periodic = true;
      for (size_t i = q - p; i < q && periodic; ++i) periodic = t[i] == t[i - p];
      if (periodic) return t[q] == t[q - p] ? p : 0;
    }
    return 0;
  }

  // Ranks named by a runtime stall report ("... was never submitted by rank 1" / "ranks 1,2").
  static std::vector<int32_t> runtime_named(const Rank& r) {
    std::vector<int32_t> out;
    const std::string& t = r.stopped_by_runtime;
    size_t at = t.find("never submitted by rank");
    if (at == std::string::npos) return out;
    at += std::string_view("never submitted by rank").size();
    if (at < t.size() && t[at] == 's') ++at;
    int32_t v = -1;
    for (; at < t.size(); ++at) {
      char ch = t[at];
      if (ch >= '0' && ch <= '9')
        v = (v < 0 ? 0 : v * 10) + (ch - '0');
      else if (ch == ',' || ch == ' ') {
        if (v >= 0) out.push_back(v);
        v = -1;
        if (ch == ' ' && !out.empty()) break;
      } else
        break;
    }
    if (v >= 0) out.push_back(v);
    return out;
  }

  // A rank that the signal of `lockstep run`'s stop at --timeout ended (on its host, at or after it): the
  // job's hang ended it, not a fault of its own.
  bool ended_by_the_stop(const Rank& r) const {
    return job_.stopped_at_ns > 0 && r.end == EndState::kKilled && r.host == job_.stopped_on_host &&
           r.saw_signal && r.signal_t_ns >= job_.stopped_at_ns;
  }

  // A rank on the host of `lockstep run` that recorded no end and whose process run no longer found
  // when it stopped the job (it lists every one it found): killed before the stop, by SIGKILL.
  bool gone_before_the_stop(const Rank& r) const {
    return job_.stopped_at_ns > 0 && r.end == EndState::kKilled && !r.saw_signal && r.at_stop.empty() &&
           r.host == job_.stopped_on_host &&
           std::any_of(job_.ranks.begin(), job_.ranks.end(),
                       [](const Rank& o) { return !o.at_stop.empty(); });
  }

  bool died(const Rank& r) const {
    return r.end == EndState::kCrashed || r.end == EndState::kAborted ||
           (r.end == EndState::kExited && r.exit_status != UINT64_MAX && r.exit_status != 0 &&
            !r.finalize_returned);
  }

  // Two views of equal weight (`a` and `b`, whose calls first differ at positions qa and qb of their
  // sequences on `comm`): which one diverged, by the rank's own pattern, a call the other never reaches,
  // a runtime stall report, or the first death.
  Blame two_way(const Comm& c, const std::vector<const Rank*>& a, size_t qa,
                const std::vector<const Rank*>& b, size_t qb) const {
    auto names = [](const std::vector<const Rank*>& v) {
      std::vector<int32_t> w;
      for (auto* r : v) w.push_back(r->world_rank);
      return w;
    };
    const Rank& ra = *a.front();
    const Rank& rb = *b.front();
    const Sequence* sa = ra.sequence(c.ref.id);
    const Sequence* sb = rb.sequence(c.ref.id);
    ra.materialize();
    rb.materialize();
    // 1. The rank's own repeating per-step pattern on this communicator.
    static const std::vector<uint64_t> kNone;
    size_t pa = departs(sa ? sa->sig : kNone, qa), pb = departs(sb ? sb->sig : kNone, qb);
    bool enda = !sa || qa >= sa->size(), endb = !sb || qb >= sb->size();
    if ((pa && !pb && !endb) || (pb && !pa && !enda)) {
      const Rank& r = pa ? ra : rb;
      size_t p = pa ? pa : pb;
      return {names(pa ? a : b),
              fmt::format(
                  "rank {}'s own calls on {} repeat every {} call{} before #{} and break that pattern there, "
                  "while the other rank's follow theirs (evidence: the rank's own per-step pattern)",
                  r.world_rank, c.ref.name, p, p == 1 ? "" : "s", at(c.ref.id, int64_t(pa ? qa : qb)))};
    }
    // 2. One rank blocked in a call the other, which has ended, never reaches. When that call breaks
    // the blocked rank's own per-step pattern, the blocked rank made a call too many; when it
    // continues that pattern, the other rank stopped early (finalized or exited while it is waited for).
    // With no pattern to go by (too few calls on the communicator), either is as likely: an extra call
    // on one rank, or the other leaving early (an exception, an early return); the later evidence decides.
    auto blocked_beyond = [&](const Rank& r, const Sequence* s, const Sequence* other) -> int64_t {
      if (!behind(r) || !s) return -1;
      for (uint32_t o : s->open)
        if (size_t(o) >= (other ? other->size() : 0) &&
            LST_WORD_STATE(r.record(s->ref[o])->word) == LST_STATE_ENTERED)
          return int64_t(o);
      return -1;
    };
    const int64_t oa = !behind(rb) ? blocked_beyond(ra, sa, sb) : -1,
                  ob = !behind(ra) ? blocked_beyond(rb, sb, sa) : -1;
    // A rank that crashed or was ended by MPI is left to the first-death evidence below.
    if ((oa >= 0) != (ob >= 0) && !died(oa >= 0 ? rb : ra)) {
      const bool wa = oa >= 0;
      const Rank& waiter = wa ? ra : rb;
      const Rank& gone = wa ? rb : ra;
      const Sequence* ws = wa ? sa : sb;
      const size_t o = size_t(wa ? oa : ob);
      const lst_record* in = waiter.record(ws->ref[o]);
      if (size_t p = follows(ws->sig, o))
        return {
            names(wa ? b : a),
            fmt::format(
                "rank {} waits in {} #{} on {}, which continues its own calls' pattern (every {} call{}), "
                "while rank {} will never get there: {} (evidence: the rank that {} while the other waits "
                "for it)",
                waiter.world_rank, format::op_name(*in), at(c.ref.id, int64_t(o)), c.ref.name, p,
                p == 1 ? "" : "s", gone.world_rank, ending(gone),
                gone.end == EndState::kFinalizing ? "went on to MPI_Finalize" : "exited")};
      if (departs(ws->sig, o))
        return {names(wa ? a : b),
                fmt::format("rank {} is blocked in a call on {} that breaks its own calls' pattern and that "
                            "rank {} never reaches (evidence: the blocked call)",
                            waiter.world_rank, c.ref.name, gone.world_rank)};
    }
    // 3. A runtime stall report that names a rank.
    std::set<int32_t> named;
    for (auto& r : job_.ranks)
      for (int32_t w : runtime_named(r)) named.insert(w);
    auto in_named = [&](const std::vector<const Rank*>& v) {
      return std::any_of(v.begin(), v.end(), [&](const Rank* r) { return named.count(r->world_rank) > 0; });
    };
    if (in_named(a) != in_named(b))
      return {names(in_named(a) ? a : b),
              fmt::format("the runtime's stall report names rank {} (evidence: the runtime stall report)",
                          (in_named(a) ? ra : rb).world_rank)};
    // 4. The rank that died first.
    const Rank* first = nullptr;
    for (auto* v : {&a, &b})
      for (auto* r : *v)
        if (died(*r) && (!first || time_of(*r, r->last_t_ns) < time_of(*first, first->last_t_ns))) first = r;
    if (first)
      return {{first->world_rank},
              fmt::format("rank {} died first ({}) (evidence: the first death)", first->world_rank,
                          ending(*first))};
    return {};
  }

  // Which ranks of a wait-for cycle diverged: those not in the collective that most blocked ranks wait
  // in; else the ranks whose own pattern breaks at the call they are blocked in.
  Blame cycle_blame(const std::vector<int32_t>& comp) const {
    std::map<std::pair<uint64_t, int64_t>, std::vector<int32_t>> in_coll;  // (comm, pos) -> blocked ranks
    for (auto& [w, b] : blocked_)
      if (b.yes && !b.p2p) in_coll[{b.comm, b.pos}].push_back(w);
    const std::vector<int32_t>* top = nullptr;
    bool unique = false;
    for (auto& [k, v] : in_coll) {
      if (!top || v.size() > top->size()) {
        top = &v;
        unique = true;
      } else if (v.size() == top->size()) {
        unique = false;
      }
    }
    if (top && unique && top->size() >= 2) {
      std::vector<int32_t> out;
      for (int32_t w : comp)
        if (std::find(top->begin(), top->end(), w) == top->end()) out.push_back(w);
      if (!out.empty() && out.size() < comp.size()) {
        const Blocked& tb = blocked_.at(top->front());
        const Blocked& ob = blocked_.at(out.front());
        auto it = comms_.find(tb.comm);
        std::string where = it == comms_.end() ? "" : " on " + it->second.ref.name;
        return {out, fmt::format("{} wait in {} #{}{}, which {} never entered: {} blocked in {} instead",
                                 ranks_phrase(*top), format::op_name(*tb.rec), at(tb.comm, tb.pos), where,
                                 ranks_phrase(out), out.size() == 1 ? "it is" : "they are",
                                 format::op_name(*ob.rec))};
      }
    }
    std::vector<int32_t> out;
    std::string how;
    for (int32_t w : comp) {
      const Blocked& b = blocked_.at(w);
      const Rank* r = job_.rank(w);
      if (!r || !b.rec) continue;
      std::vector<uint64_t> t = stream(*r, b.ref);
      if (t.empty()) continue;
      if (size_t p = departs(t, t.size() - 1)) {
        out.push_back(w);
        how = fmt::format("rank {}'s own calls repeat every {} call{} and {} breaks that pattern", w, p,
                          p == 1 ? "" : "s", format::op_name(*b.rec));
      }
    }
    if (!out.empty() && out.size() < comp.size())
      return {out, how + (out.size() > 1 ? " (and likewise for the others named)" : "") +
                       " (evidence: the rank's own per-step pattern)"};
    return {};
  }

  // message_position() of each of the world ranks `ws` whose blocked call is a message (or has no
  // position), the ranks read a batch at a time (each_read_ahead): a hang of many ranks reads them on
  // the -j threads, and under `check --mpi` asks every owner at once.
  std::map<int32_t, std::string> message_positions(const std::vector<int32_t>& ws) const {
    std::vector<const Rank*> need;
    std::set<const Rank*> held;
    for (int32_t w : ws) {
      const Blocked& b = blocked_.at(w);
      if (!b.p2p && b.pos >= 0) continue;
      const Rank* r = job_.rank(w);
      need.push_back(r);
      if (r->materialized) held.insert(r);
    }
    std::map<int32_t, std::string> out;
    each_read_ahead(need, [&](const Rank* r) {
      out[r->world_rank] = message_position(*r, blocked_.at(r->world_rank));
      if (!held.count(r)) r->release();
    });
    return out;
  }

  // The ranks with no end of their own (killed silently, or on another host) that a dead rank waited
  // for inside the call it ended in (a member that never entered that collective, or the peer of that
  // message; every other member for MPI_ANY_SOURCE), and the dead ranks that waited for one. `inside`
  // gets each dead rank's call. Linear in the ranks and in the members of the communicators dead ranks
  // ended in, plus a sort of those dead ranks by position.
  struct DeadWaits {
    std::vector<int32_t> waited, waiting;  // world ranks, ascending
  };
  DeadWaits waits_of_the_dead(const std::vector<const Rank*>& dead,
                              std::map<const Rank*, Blocked>& inside) const {
    DeadWaits out;
    std::vector<const Rank*> silent;
    for (auto& r : job_.ranks)
      if (!died(r) && (killed_silently(r) || (r.end == EndState::kUnknown && !r.saw_signal)))
        silent.push_back(&r);
    if (silent.empty() || dead.empty()) return out;
    std::map<uint64_t, std::vector<std::pair<int64_t, int32_t>>> in_comm;  // comm -> (position, dead rank)
    std::map<int32_t, std::vector<int32_t>> to_peer;                       // peer -> dead ranks
    for (const Rank* d : dead) {
      const Blocked b = open_call(*d);
      if (!b.yes) continue;
      inside[d] = b;
      auto it = comms_.find(b.comm);
      if (it == comms_.end()) continue;
      if (!b.p2p) {
        if (b.pos >= 0) in_comm[b.comm].emplace_back(b.pos, d->world_rank);
      } else if (b.p2p->any_source() && b.p2p->op != LST_OP_SEND) {
        in_comm[b.comm].emplace_back(INT64_MAX, d->world_rank);
      } else if (b.p2p->peer >= 0 && size_t(b.p2p->peer) < it->second.members.size()) {
        to_peer[it->second.members[size_t(b.p2p->peer)]].push_back(d->world_rank);
      }
    }
    std::set<int32_t> waited, waiting;
    for (auto& [comm, waits] : in_comm) {
      const std::vector<int32_t>& members = comms_.at(comm).members;
      const std::set<int32_t> member(members.begin(), members.end());
      // By position: the dead ranks at or past a rank's number of calls there wait for it, a suffix.
      std::sort(waits.begin(), waits.end());
      std::optional<int64_t> least;
      for (const Rank* r : silent) {
        if (!member.count(r->world_rank)) continue;
        const int64_t n = int64_t(len(r->sequence(comm)));
        if (waits.back().first < n) continue;
        waited.insert(r->world_rank);
        least = std::min(least.value_or(n), n);
      }
      if (!least) continue;
      for (auto it = std::lower_bound(waits.begin(), waits.end(), std::make_pair(*least, INT32_MIN));
           it != waits.end(); ++it)
        waiting.insert(it->second);
    }
    for (const Rank* r : silent)
      if (auto it = to_peer.find(r->world_rank); it != to_peer.end()) {
        waited.insert(r->world_rank);
        waiting.insert(it->second.begin(), it->second.end());
      }
    out.waited.assign(waited.begin(), waited.end());
    out.waiting.assign(waiting.begin(), waiting.end());
    return out;
  }

  // "MPI_Send to rank 3", "MPI_Recv from any rank": a message call and its peer.
  static std::string message_call(const lst_record& rec) {
    const std::string peer = rec.u.coll.root_or_peer == LST_ANY_SOURCE
                                 ? "any rank"
                                 : fmt::format("rank {}", rec.u.coll.root_or_peer);
    return fmt::format("{} {} {}", format::op_name(rec), rec.op == LST_OP_SEND ? "to" : "from", peer);
  }

  // Where a blocked message stands among the rank's collectives on its communicator: a message has no
  // position of its own there.
  std::string message_position(const Rank& r, const Blocked& b) const {
    const std::string what = "in " + message_call(*b.rec);
    auto it = comms_.find(b.comm);
    const std::string name = it != comms_.end() ? it->second.ref.name : fmt::format("{:#x}", b.comm);
    const Sequence* s = r.sequence(b.comm);
    if (!s || s->size() == 0) return fmt::format("{}, before any collective on {}", what, name);
    const bool held = r.materialized;
    r.materialize();
    const size_t before = size_t(std::upper_bound(s->ref.begin(), s->ref.end(), b.ref) - s->ref.begin());
    if (!held) r.release();
    if (before == 0) return fmt::format("{}, before its first collective on {}", what, name);
    return fmt::format("{}, after #{} on {}", what, at(b.comm, int64_t(before) - 1), name);
  }

  // The job hung: stopped at --timeout, or every rank still running is blocked with nothing to wait for.
  void hang_finding() {
    std::vector<int32_t> live, blocked;
    for (auto& r : job_.ranks) {
      if (!behind(r)) continue;
      live.push_back(r.world_rank);
      if (blocked_[r.world_rank].yes) blocked.push_back(r.world_rank);
    }
    bool stopped = !job_.stopped_by_run.empty();
    bool stuck = !live.empty() && blocked.size() == live.size();
    // A rank whose MPI library ended it inside a call (an error handler that aborts) takes the job down:
    // the ranks left blocked were stopped by the launcher, not hung.
    for (auto& r : job_.ranks)
      if (r.died_in && died(r)) stuck = false;
    // ... and so does a rank killed with SIGKILL: those in calls were stopped by the teardown.
    if (stuck && !killed_first().empty() &&
        std::none_of(job_.ranks.begin(), job_.ranks.end(), [&](const Rank& r) { return died(r); }))
      stuck = false;
    // ... and so does a call MPI rejected on every rank left in it: they were stopped there.
    if (stuck && std::all_of(blocked.begin(), blocked.end(), [&](int32_t w) {
          const Blocked& b = blocked_[w];
          return !b.p2p && rejected_.count({b.comm, b.pos});
        }))
      stuck = false;
    if (!stopped && !stuck) return;
    Finding f;
    f.kind = Kind::kHang;
    f.seq = -1;
    f.ranks = live.empty() ? std::vector<int32_t>{} : live;
    if (f.ranks.empty())
      for (auto& r : job_.ranks) f.ranks.push_back(r.world_rank);
    // Culprits: the ranks the other findings blame, else those the others wait for.
    std::set<int32_t> blame(cycle_culprits_.begin(), cycle_culprits_.end());
    for (auto& g : findings_)
      if (g.kind != Kind::kDeadlockCycle) blame.insert(g.culprits.begin(), g.culprits.end());
    if (blame.empty()) blame.insert(res_.look_here.begin(), res_.look_here.end());
    f.culprits.assign(blame.begin(), blame.end());
    std::map<int32_t, std::string> positions = message_positions(blocked);
    for (int32_t w : blocked) {
      const Blocked& b = blocked_[w];
      f.detail.push_back(detail(*job_.rank(w), b.rec, b.pos, b.ref));
      RankDetail& d = f.detail.back();
      if (b.p2p || b.pos < 0) {
        d.position = positions[w];
      } else {
        d.seq = at(b.comm, d.seq);  // ring mode, as finish() shifts the other findings
      }
      if (f.comm.id == 0) {
        auto it = comms_.find(b.comm);
        if (it != comms_.end()) f.comm = it->second.ref;
      }
    }
    std::string how = stopped ? job_.stopped_by_run
                              : fmt::format(
                                    "{} {} left blocked in a call that cannot complete, and no other rank "
                                    "is still running",
                                    ranks_phrase(live), live.size() == 1 ? "was" : "were");
    f.explanation = fmt::format("the job hung: {}", how);
    if (stopped && !blocked.empty())
      f.notes.push_back(fmt::format("{} {} blocked in a call when it was stopped", ranks_phrase(blocked),
                                    blocked.size() == 1 ? "was" : "were"));
    if (stopped && blocked.empty())
      f.notes.push_back("no rank was inside a traced call: a loop or an untraced call that never returned");
    for (auto& n : in_flight_) f.notes.push_back(n);
    // Every rank in a call it entered an instant before the stop: the job was running, not stuck.
    if (stopped && !blocked.empty() && blocked.size() == live.size())
      if (const auto gap = began_at_the_stop(
              blocked, [&](const Rank& r) { return began_waiting(r, *blocked_[r.world_rank].rec); }, true))
        f.notes.push_back(fmt::format(
            "every rank was in a call it had entered less than {} s before the stop{}: the job was still "
            "running, and --timeout may be shorter than it needs",
            kStoodFor / 1'000'000'000, *gap ? " (the earliest " + before_the_stop(*gap) + ")" : ""));
    std::vector<int32_t> held;
    for (auto& r : job_.ranks)
      if (stopped && r.frozen_at_stop()) {
        held.push_back(r.world_rank);
        f.notes.push_back(fmt::format("rank {} was {}", r.world_rank, held_at_stop(r)));
      }
    if (f.culprits.empty()) f.culprits = held;
    // A rank already gone at the stop, killed with no end recorded: the others waited for a process that
    // no longer ran, which the hang alone does not say.
    for (auto& r : job_.ranks)
      if (stopped && gone_before_the_stop(r)) {
        CommRef unused;
        const Blocked& b = blocked_[r.world_rank];
        f.notes.push_back(fmt::format(
            "rank {} was gone before the stop, {}: it was killed, leaving no end in its trace as SIGKILL "
            "does "
            "(`kill -9`, the kernel's out-of-memory killer: the kernel log says which)",
            r.world_rank,
            b.yes ? fmt::format("inside {}", format::op_name(*b.rec)) : last_collective(r, unused)));
      }
    if (!findings_.empty())
      f.notes.push_back(fmt::format("see the finding{} above for why", findings_.size() == 1 ? "" : "s"));
    else if (!f.culprits.empty())
      f.notes.push_back(fmt::format("look at {}: the others wait for it", ranks_phrase(f.culprits)));
    res_.hung = true;
    hang_ = std::move(f);
  }
  std::optional<Finding> hang_;

  // A process that died (a fatal signal, MPI_Abort, a non-zero exit before MPI_Finalize returned) in a
  // job whose collectives all agree and that did not hang: no other finding says so, and "in lockstep"
  // with exit code 0 would read as a job that ran to its end. Where another finding or the hang stands,
  // it already names the deaths that matter (a missing call, the rank that died first).
  //
  // Ranks killed with SIGKILL (`kill -9`, the kernel's out-of-memory killer) are such deaths too, when
  // nothing else died (killed_first): without them such a job, which mpirun tears down, read as in
  // lockstep with exit code 0, or as a hang of every rank.
  void death_finding() {
    if (!findings_.empty() || hang_) return;
    std::vector<const Rank*> dead;
    for (auto& r : job_.ranks)
      if (died(r) || left_mpi_unfinished(r)) dead.push_back(&r);
    // Ranks that died inside a call while waiting for a rank with no end of its own (a watchdog that
    // aborts a rank stuck in a collective, as PyTorch's NCCL one does, after another was killed).
    std::vector<const Rank*> killed = dead.empty() ? killed_first() : std::vector<const Rank*>{};
    std::map<const Rank*, Blocked> inside;
    const DeadWaits dw = waits_of_the_dead(dead, inside);
    for (int32_t w : dw.waited) killed.push_back(job_.rank(w));
    const std::set<const Rank*> is_killed(killed.begin(), killed.end());
    dead.insert(dead.end(), killed.begin(), killed.end());
    if (dead.empty()) return;
    std::sort(dead.begin(), dead.end(),
              [](const Rank* a, const Rank* b) { return a->world_rank < b->world_rank; });
    const Rank* first = dead.front();
    for (const Rank* r : dead)
      if (time_of(*r, r->last_t_ns) < time_of(*first, first->last_t_ns)) first = r;
    Finding f;
    f.kind = Kind::kRankDied;
    f.seq = -1;
    f.culprits = {first->world_rank};
    std::string first_where;
    for (const Rank* r : dead) {
      f.ranks.push_back(r->world_rank);
      CommRef elsewhere;  // the finding's communicator is the first death's
      const std::string where = last_collective(*r, r == first ? f.comm : elsewhere);
      const Blocked& b = blocked_.at(r->world_rank);
      const auto in = inside.find(r);
      // A rank killed inside the call it is in, or one that ended inside a call waiting for a rank killed
      // before it: that call.
      const Blocked* call = b.yes && is_killed.count(r)                ? &b
                            : in != inside.end() && !dw.waited.empty() ? &in->second
                                                                       : nullptr;
      if (r->died_in && r->died_in >= r->source->first_id() && r->died_in < r->end_id) {
        const RecordRef ref = RecordRef(r->died_in - r->source->first_id());
        f.detail.push_back(detail(*r, r->record(ref), -1, ref));
      } else if (call) {
        f.detail.push_back(detail(*r, call->rec, call->pos, call->ref));
        f.detail.back().note =
            is_killed.count(r) ? std::string("killed inside it") : death(*r) + " inside it";
        if (call->p2p || call->pos < 0) f.detail.back().position = message_position(*r, *call);
        if (r == first) first_where = "inside " + call_named(*call) + ", " + where;
        continue;
      } else {
        f.detail.push_back(detail(*r, nullptr, -1, UINT32_MAX));
        f.detail.back().note = death(*r) + ", " + where;
      }
      f.detail.back().position = where;
      if (r == first) first_where = where;
    }
    f.explanation =
        dead.size() == 1
            ? fmt::format("rank {} ended before the job finished ({}), {}; no collective differs",
                          first->world_rank, death(*first), first_where)
            : fmt::format("{} ended before the job finished, rank {} first ({}), {}; no collective differs",
                          ranks_phrase(f.ranks), first->world_rank, death(*first), first_where);
    if (dead.size() < job_.ranks.size())
      f.notes.push_back(
          "the other ranks made the same collectives: look at why the process ended (its stderr, a core "
          "file, the launcher's log)");
    if (!killed.empty()) killed_notes(f, killed, dw, inside);
    findings_.push_back(std::move(f));
  }

  // What a rank_died finding adds for the ranks killed with SIGKILL: who waited for them, and where the
  // signal came from. The place to look is those ranks, not one the others also waited for when the
  // teardown came.
  void killed_notes(Finding& f, const std::vector<const Rank*>& killed, const DeadWaits& dw,
                    const std::map<const Rank*, Blocked>& inside) {
    std::vector<int32_t> all, here, elsewhere;
    std::set<std::string> hosts;
    for (const Rank* r : killed) {
      all.push_back(r->world_rank);
      if (r->end == EndState::kUnknown) {
        elsewhere.push_back(r->world_rank);
        hosts.insert(r->host.empty() ? "another host" : r->host);
      } else {
        here.push_back(r->world_rank);
      }
    }
    std::sort(all.begin(), all.end());
    res_.look_here = all;
    const std::set<int32_t> is_killed(all.begin(), all.end());
    const std::set<int32_t> said(dw.waiting.begin(), dw.waiting.end());
    std::vector<int32_t> left;  // ranks still blocked, or stopped by the teardown, waiting for them
    for (const WaitEdge& e : res_.wait_for)
      if (is_killed.count(e.to) && !said.count(e.from)) left.push_back(e.from);
    std::sort(left.begin(), left.end());
    left.erase(std::unique(left.begin(), left.end()), left.end());
    const auto one = [](const std::vector<int32_t>& v) { return v.size() == 1; };
    if (!dw.waiting.empty())
      f.notes.push_back(fmt::format(
          "{} ended inside {}, waiting for {}, which had ended before with no end of {} own recorded",
          ranks_phrase(dw.waiting), call_named(inside.at(job_.rank(dw.waiting.front()))),
          ranks_phrase(dw.waited), one(dw.waited) ? "its" : "their"));
    std::string text;
    if (!left.empty())
      text = fmt::format("{} {} left blocked waiting for {}", ranks_phrase(left), one(left) ? "was" : "were",
                         ranks_phrase(all));
    if (!here.empty())
      text += (text.empty() ? ranks_phrase(here) + ": " : std::string("; ")) +
              "SIGKILL comes from `kill -9` or the kernel's out-of-memory killer: the kernel log says which";
    if (!text.empty()) f.notes.push_back(std::move(text));
    if (!elsewhere.empty())
      f.notes.push_back(fmt::format(
          "{} ran on {}, where this check cannot look for {}: {} no end, as SIGKILL (`kill -9`, the "
          "kernel's out-of-memory killer) or a lost node leaves it",
          ranks_phrase(elsewhere), fmt::join(hosts, ", "), one(elsewhere) ? "its process" : "their processes",
          one(elsewhere) ? "its trace records" : "their traces record"));
  }

  // The call a rank is blocked in: "MPI_Send to rank 3", "MPI_Allreduce #4 on MPI_COMM_WORLD".
  std::string call_named(const Blocked& b) const {
    if (b.p2p || b.pos < 0) return message_call(*b.rec);
    auto it = comms_.find(b.comm);
    return fmt::format("{} #{} on {}", format::op_name(*b.rec), at(b.comm, b.pos),
                       it != comms_.end() ? it->second.ref.name : fmt::format("{:#x}", b.comm));
  }

  // No end recorded and the process gone (on this host), as SIGKILL leaves a rank: no handler sees it.
  static bool killed_silently(const Rank& r) {
    return r.end == EndState::kKilled && !r.saw_signal && r.header_end_state != LST_END_SIGNAL;
  }

  // The ranks killed with SIGKILL before the job ended, in a job where no rank died of its own doing:
  // those killed silently (or, on another host, with no end at all) when the other ranks tell that end
  // from theirs. Either the others recorded the stop signal of a launcher's teardown (mpirun ends every
  // rank when one is killed; a teardown's SIGTERM is recorded, a SIGKILL is not), or one of them is
  // still running, blocked waiting for it. A whole job killed with SIGKILL at once gives neither: a rank
  // in no call may have been computing, and nothing is added. Only a rank inside a call or waited for
  // counts.
  static constexpr double kKilledLongAfter = 10.0;  // seconds inside a call before the teardown
  std::vector<const Rank*> killed_first() const {
    // A job `lockstep run` stopped: its own SIGKILL ends what outlives the SIGTERM (the hang finding
    // names a rank gone before the stop instead, gone_before_the_stop).
    if (!job_.stopped_by_run.empty()) return {};
    const bool torn_down = std::any_of(job_.ranks.begin(), job_.ranks.end(), [&](const Rank& o) {
      return o.end == EndState::kKilled && (o.saw_signal || o.header_end_state == LST_END_SIGNAL) &&
             !ended_by_the_stop(o);
    });
    // When the teardown's first stop signal came, as far as a rank recorded it.
    std::optional<double> teardown;
    for (auto& o : job_.ranks)
      if (o.end == EndState::kKilled && o.saw_signal && !ended_by_the_stop(o))
        teardown = std::min(teardown.value_or(time_of(o, o.signal_t_ns)), time_of(o, o.signal_t_ns));
    std::set<int32_t> awaited_by_running;
    for (const WaitEdge& e : res_.wait_for)
      if (job_.rank(e.from)->end == EndState::kRunning) awaited_by_running.insert(e.to);
    std::set<int32_t> awaited;
    for (const WaitEdge& e : res_.wait_for) awaited.insert(e.to);
    std::vector<const Rank*> out, outside;
    for (auto& r : job_.ranks) {
      const bool unknown = r.end == EndState::kUnknown && !r.saw_signal;
      if (!killed_silently(r) && !unknown) continue;
      if (!torn_down && (unknown || !awaited_by_running.count(r.world_rank))) continue;
      // In no call and waited for by none: computing when a stop of the whole job came, for all it says.
      const Blocked& b = blocked_.at(r.world_rank);
      const bool inside = b.yes, waited_for = awaited.count(r.world_rank) > 0;
      if (!inside && !waited_for) continue;
      // Inside its call long before the teardown: the job was stuck there before the kill (a rank killed
      // to end a hang), which the hang and unfinished findings say.
      if (inside && teardown && *teardown - time_of(r, b.rec->t_ns) > kKilledLongAfter) continue;
      out.push_back(&r);
      if (!inside) outside.push_back(&r);
    }
    // A teardown may end a rank with SIGKILL too (one that outlived its SIGTERM, or got no time to
    // record it on a loaded machine): of several, the ones killed first are those in no call that
    // others wait for; one killed inside a call when it is the one alone, or the one of them others
    // wait for (a rank inside a call that nobody waits for was itself only waiting).
    if (!outside.empty()) return outside;
    if (out.size() == 1) return out;
    std::vector<const Rank*> waited_inside;
    for (const Rank* r : out)
      if (awaited.count(r->world_rank)) waited_inside.push_back(r);
    return waited_inside.size() == 1 ? waited_inside : std::vector<const Rank*>{};
  }

  // An MPI process that exited without MPI_Finalize, whatever its status (which an exit hook cannot
  // see): MPI makes that an error, and launchers report the job failed.
  static bool left_mpi_unfinished(const Rank& r) {
    return r.end == EndState::kExited && r.mpi_initialized && !r.finalize_entered;
  }

  // "after #k on COMM" for the rank's last collective (on any communicator), else "before any
  // collective"; `comm` becomes that communicator when it is still unset.
  std::string last_collective(const Rank& r, CommRef& comm) const {
    const bool held = r.materialized;
    r.materialize();
    const Sequence* last = nullptr;
    for (const Sequence& s : r.seqs)
      if (s.size() > 0 && !s.ref.empty() && (!last || s.ref.back() > last->ref.back())) last = &s;
    std::string out = "before any collective";
    if (last) {
      auto it = comms_.find(last->comm);
      const std::string name = it != comms_.end() ? it->second.ref.name : fmt::format("{:#x}", last->comm);
      out = fmt::format("after {} #{} on {}", format::op_name(*r.record(last->ref.back())),
                        at(last->comm, int64_t(last->size()) - 1), name);
      if (comm.id == 0 && it != comms_.end()) comm = it->second.ref;
    }
    if (!held) r.release();
    return out;
  }

  void hang() {
    std::map<int32_t, std::vector<WaitEdge>> out;
    std::map<int32_t, int> indeg;
    for (auto& r : job_.ranks) {
      RankState st;
      st.rank = r.world_rank;
      st.file = r.file;
      st.host = r.host;
      st.pid = r.pid;
      st.end = r.end;
      st.signal = r.signal;
      st.at_stop = r.at_stop;
      st.at_stop_cpu = r.at_stop_cpu;
      st.at_stop_wchan = r.at_stop_wchan;
      Blocked b = find_blocked(r);
      blocked_[r.world_rank] = b;
      if (b.yes) {
        st.blocked = true;
        st.in = detail(r, b.rec, b.pos, b.ref);
        auto it = comms_.find(b.comm);
        if (it != comms_.end()) {
          const Comm& c = it->second;
          st.comm = c.ref;
          std::vector<int32_t> targets;
          if (b.p2p && b.p2p->any_source() && b.p2p->op != LST_OP_SEND) {
            // MPI_ANY_SOURCE: any other member could send the message, so it waits for each of them.
            for (int32_t w : c.members)
              if (w != r.world_rank) targets.push_back(w);
          } else if (b.p2p) {
            if (b.p2p->peer >= 0 && size_t(b.p2p->peer) < c.members.size()) {
              const int32_t w = c.members[size_t(b.p2p->peer)];
              const Rank* m = job_.rank(w);
              if (!m || !matched_by_peer(c, r, b, *m))
                targets.push_back(w);
              else
                st.under_way_with = w;
            }
          } else {
            for (int32_t w : c.members) {
              if (w == r.world_rank) continue;
              const Rank* m = job_.rank(w);
              if (!m || int64_t(len(m->sequence(c.ref.id))) <= b.pos) targets.push_back(w);
            }
          }
          for (int32_t w : targets) {
            WaitEdge e{r.world_rank,    w, c.ref.id, c.ref.name, b.pos, format::op_name(*b.rec),
                       b.p2p != nullptr};
            out[r.world_rank].push_back(e);
            res_.wait_for.push_back(e);
            st.waits_for.push_back(w);
            ++indeg[w];
          }
        }
        res_.hung = true;
      }
      res_.states.push_back(std::move(st));
    }
    for (auto& [w, n] : indeg)
      if (out[w].empty()) res_.look_here.push_back(w);
    // Of those, the ones the kernel held at the stop: the others among them wait inside the same call
    // (for the held one, by the collective's own algorithm, which the records cannot show).
    if (std::any_of(res_.look_here.begin(), res_.look_here.end(),
                    [&](int32_t w) { return job_.rank(w)->frozen_at_stop(); }))
      std::erase_if(res_.look_here, [&](int32_t w) { return !job_.rank(w)->frozen_at_stop(); });
    // Every rank inside the same call, none waiting for another by the records: the held one.
    if (res_.look_here.empty())
      for (auto& r : job_.ranks)
        if (r.frozen_at_stop() && blocked_[r.world_rank].yes) res_.look_here.push_back(r.world_rank);
    cycles(out);
    // In a cycle nobody waits for nothing: point at the ranks that diverged, when the evidence says.
    for (int32_t w : cycle_culprits_)
      if (std::find(res_.look_here.begin(), res_.look_here.end(), w) == res_.look_here.end())
        res_.look_here.push_back(w);
  }

  // A job that `lockstep run --timeout` stopped while it was still running: ranks inside a collective the
  // others had already left, or each blocked in a receive (or a send) whose partner call was on its way.
  // The records cannot always tell (a rank's earlier MPI_ANY_SOURCE receives took messages from peers
  // nobody recorded), but the clock can: a hang stands until the stop, while a call under way began an
  // instant before it. How long before run's SIGTERM the last of `ranks` began waiting (`began`: on its
  // own monotonic clock), when that is under kStoodFor and every one of them ran on run's host, whose
  // clock the note gives; nothing otherwise.
  static constexpr uint64_t kStoodFor = 1'000'000'000;  // 1 s
  // `every`: the first of them instead of the last.
  std::optional<uint64_t> began_at_the_stop(const std::vector<int32_t>& ranks,
                                            const std::function<uint64_t(const Rank&)>& began,
                                            bool every = false) const {
    if (!job_.stopped_at_ns || ranks.empty()) return std::nullopt;
    uint64_t last = every ? UINT64_MAX : 0;
    for (int32_t v : ranks) {
      const Rank* r = job_.rank(v);
      if (!r || r->host != job_.stopped_on_host) return std::nullopt;
      last = every ? std::min(last, began(*r)) : std::max(last, began(*r));
    }
    if (last + kStoodFor <= job_.stopped_at_ns) return std::nullopt;
    return job_.stopped_at_ns > last ? job_.stopped_at_ns - last : 0;
  }
  static std::string before_the_stop(uint64_t ns) {
    return ns >= 1'000'000 ? fmt::format("{} ms before the stop", ns / 1'000'000)
           : ns >= 1'000   ? fmt::format("{} us before the stop", ns / 1'000)
                           : std::string("as the stop came");
  }
  // When a rank blocked in `b` began waiting: at the call, or at the MPI_Wait* that waits for it.
  static uint64_t began_waiting(const Rank& r, const lst_record& rec) {
    return std::max(rec.t_ns, r.in_wait ? r.wait_t_ns : 0);
  }

  // A cycle through messages that formed an instant before the stop is not reported (the hang finding
  // says so); collectives alone never pass each other, so a cycle of them always stands.
  bool formed_at_the_stop(const std::vector<int32_t>& comp, const std::vector<WaitEdge>& edges) {
    if (std::none_of(edges.begin(), edges.end(), [](auto& e) { return e.message; })) return false;
    const auto gap = began_at_the_stop(comp, [&](const Rank& r) {
      const Blocked& b = blocked_[r.world_rank];
      return b.rec ? began_waiting(r, *b.rec) : UINT64_MAX;
    });
    if (!gap) return false;
    in_flight_.push_back(fmt::format(
        "{} were waiting for each other's messages when the job was stopped, the last of them began waiting "
        "{}: an exchange under way, not reported as a deadlock (a cycle through messages counts when it "
        "stood "
        "for {} s before the stop)",
        ranks_phrase(comp), before_the_stop(*gap), kStoodFor / 1'000'000'000));
    return true;
  }
  std::vector<std::string> in_flight_;  // notes for the hang finding

  void cycles(std::map<int32_t, std::vector<WaitEdge>>& out) {
    // Tarjan's strongly connected components; each component of two or more ranks is a deadlock.
    std::map<int32_t, int> index, low;
    std::map<int32_t, bool> on;
    std::vector<int32_t> stack;
    int next = 0;
    std::vector<std::vector<int32_t>> sccs;
    std::function<void(int32_t)> visit = [&](int32_t v) {
      index[v] = low[v] = next++;
      stack.push_back(v);
      on[v] = true;
      for (auto& e : out[v]) {
        if (!index.count(e.to)) {
          visit(e.to);
          low[v] = std::min(low[v], low[e.to]);
        } else if (on[e.to]) {
          low[v] = std::min(low[v], index[e.to]);
        }
      }
      if (low[v] == index[v]) {
        std::vector<int32_t> comp;
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on[w] = false;
          comp.push_back(w);
        } while (w != v);
        if (comp.size() > 1) sccs.push_back(comp);
      }
    };
    std::vector<int32_t> nodes;
    for (auto& [v, e] : out) nodes.push_back(v);
    for (int32_t v : nodes)
      if (!index.count(v)) visit(v);
    for (auto& comp : sccs) {
      std::sort(comp.begin(), comp.end());
      std::set<int32_t> in(comp.begin(), comp.end());
      // Walk one cycle from the lowest rank for the explanation; keep every edge inside the component.
      Finding f;
      f.kind = Kind::kDeadlockCycle;
      f.ranks = comp;
      f.culprits = comp;
      for (int32_t v : comp)
        for (auto& e : out[v])
          if (in.count(e.to)) f.edges.push_back(e);
      if (formed_at_the_stop(comp, f.edges)) continue;
      std::vector<int32_t> path{comp.front()};
      std::set<int32_t> seen{comp.front()};
      std::vector<std::string> hops;
      while (true) {
        int32_t v = path.back();
        const WaitEdge* next_e = nullptr;
        for (auto& e : out[v])
          if (in.count(e.to) && (!seen.count(e.to) || e.to == comp.front())) {
            next_e = &e;
            if (e.to == comp.front()) break;
          }
        if (!next_e) break;
        hops.push_back(fmt::format("rank {} waits in {} for rank {}", v, waits_in(*next_e), next_e->to));
        if (next_e->to == comp.front() || path.size() > comp.size()) break;
        path.push_back(next_e->to);
        seen.insert(next_e->to);
      }
      const Blocked& b0 = blocked_[comp.front()];
      auto it = comms_.find(b0.comm);
      if (it != comms_.end()) f.comm = it->second.ref;
      f.seq = b0.pos;
      // A cycle through many ranks (a ring exchange, every rank receiving from the one before) reads as
      // its first hops and its last, the rest counted: every edge stays in f.edges.
      constexpr size_t kHopsShown = 6;
      std::string text;
      for (size_t i = 0; i < hops.size(); ++i) {
        if (hops.size() > kHopsShown && i == kHopsShown - 2)
          text += fmt::format("; ... {} more ranks, each waiting for the next in the cycle",
                              hops.size() - kHopsShown);
        if (hops.size() > kHopsShown && i >= kHopsShown - 2 && i < hops.size() - 2) continue;
        text += (text.empty() ? "" : "; ") + hops[i];
      }
      f.explanation = text + ": a wait-for cycle, so none of them can ever proceed";
      if (std::any_of(f.edges.begin(), f.edges.end(), [](const WaitEdge& e) { return e.message; }) &&
          std::any_of(f.edges.begin(), f.edges.end(), [](const WaitEdge& e) { return !e.message; }))
        f.notes.push_back("the cycle mixes collectives and point-to-point messages");
      Blame blame = cycle_blame(comp);
      if (!blame.culprits.empty()) {
        f.culprits = blame.culprits;
        f.notes.push_back(fmt::format("look at {}: {}", ranks_phrase(blame.culprits), blame.evidence));
        cycle_culprits_.insert(blame.culprits.begin(), blame.culprits.end());
      } else {
        f.notes.push_back("no evidence tells which of them diverged: all are shown as culprits");
      }
      std::set<uint64_t> cs;
      for (auto& e : f.edges) cs.insert(e.comm);
      if (cs.size() > 1)
        f.notes.push_back(fmt::format(
            "the cycle spans {} communicators: the ranks use them in different orders", cs.size()));
      std::map<int32_t, std::string> positions = message_positions(comp);
      for (int32_t v : comp) {
        const Rank* r = job_.rank(v);
        const Blocked& b = blocked_[v];
        f.detail.push_back(detail(*r, b.rec, b.pos, b.ref));
        if (b.p2p || b.pos < 0) f.detail.back().position = positions[v];
      }
      findings_.push_back(std::move(f));
    }
  }

  // Every member entered position k, and some never finished it.
  void unfinished() {
    // A rank killed with SIGKILL inside the call, the others ended by the launcher's teardown there:
    // the death is the finding (death_finding), not the communication library.
    const bool killed = !killed_first().empty() && std::none_of(job_.ranks.begin(), job_.ranks.end(),
                                                                [&](const Rank& r) { return died(r); });
    for (auto& [id, c] : comms_) {
      std::set<uint32_t> cand;
      for (const Rank* r : c.ranks)
        if (const Sequence* s = r->sequence(id))
          for (uint32_t o : s->open) cand.insert(o);
      for (uint32_t k : cand) {
        if (flagged_.count({id, int64_t(k)})) continue;
        bool all = c.ranks.size() == c.members.size();
        std::vector<int32_t> open, stuck_free, done, dead;
        std::map<int32_t, const lst_record*> open_rec;
        for (const Rank* r : c.ranks) {
          const Sequence* s = r->sequence(id);
          if (!s || s->size() <= k) {
            all = false;
            break;
          }
          if (auto it = std::lower_bound(s->open.begin(), s->open.end(), k);
              it != s->open.end() && *it == k) {
            open.push_back(r->world_rank);
            open_rec[r->world_rank] = r->record(s->open_ref[size_t(it - s->open.begin())]);
            if (died_inside(*r, s->open_ref[size_t(it - s->open.begin())])) dead.push_back(r->world_rank);
            const Blocked& b = blocked_[r->world_rank];
            if (!(b.yes && b.comm == id && b.pos == int64_t(k))) stuck_free.push_back(r->world_rank);
          } else {
            done.push_back(r->world_rank);
          }
        }
        if (!all || open.empty()) continue;
        // The launcher stopped these ranks inside the call when MPI ended another rank elsewhere (its
        // error handler): that rank's finding says why; this call is no finding of its own. Their end
        // markers may name the call (a stop signal inside it): that is no death of their own either.
        if ((torn_down() || killed) &&
            std::none_of(dead.begin(), dead.end(), [&](int32_t w) { return died(*job_.rank(w)); }) &&
            std::all_of(open.begin(), open.end(),
                        [&](int32_t w) { return job_.rank(w)->end == EndState::kKilled; }))
          continue;
        // A finished job whose nonblocking calls were never waited for is not a hang.
        if (!res_.hung) continue;
        // `lockstep run` stopped the job while these ranks were inside the call, an instant after they
        // entered it (and none of them died of its own): a call under way, not one that never finished.
        // A rank the kernel held at the stop (stopped, under a debugger, in an uninterruptible sleep)
        // went nowhere: where the others wait, not a call under way.
        std::vector<int32_t> frozen;
        for (int32_t w : open)
          if (job_.rank(w)->frozen_at_stop()) frozen.push_back(w);
        if (frozen.empty() &&
            std::none_of(open.begin(), open.end(), [&](int32_t w) { return died(*job_.rank(w)); }))
          if (const auto gap = began_at_the_stop(
                  open, [&](const Rank& r) { return began_waiting(r, *open_rec.at(r.world_rank)); })) {
            in_flight_.push_back(fmt::format(
                "{} {} inside {} #{} on {} when the job was stopped, {} entered it {}: a call under way, not "
                "reported as unfinished (that takes {} s inside it before the stop)",
                ranks_phrase(open), open.size() == 1 ? "was" : "were",
                format::op_name(*open_rec.at(open.front())), at(c.ref.id, int64_t(k)), c.ref.name,
                open.size() == 1 ? "having" : "the last of them", before_the_stop(*gap),
                kStoodFor / 1'000'000'000));
            continue;
          }
        Finding f;
        f.kind = Kind::kUnfinished;
        f.comm = c.ref;
        f.seq = k;
        f.control = control_comms_.count(id) > 0;
        for (const Rank* r : c.ranks) {
          f.ranks.push_back(r->world_rank);
          if (c.ranks.size() <= 16 || std::find(open.begin(), open.end(), r->world_rank) != open.end())
            f.detail.push_back(detail_at(*r, r->sequence(id), k));
        }
        RankDetail d = f.detail.empty() ? RankDetail{} : f.detail.front();
        for (auto& x : f.detail)
          if (std::find(stuck_free.begin(), stuck_free.end(), x.rank) != stuck_free.end()) {
            const Rank* r = job_.rank(x.rank);
            x.note = r->end == EndState::kCrashed    ? ending(*r)
                     : (x.flags & LST_F_NONBLOCKING) ? "returned but never waited for it"
                                                     : std::string(end_state_name(r->end));
          }
        // A process that ended inside the call (its error handler, a signal) is where to look first;
        // not one that lockstep run's own stop ended there.
        std::erase_if(dead, [&](int32_t w) { return ended_by_the_stop(*job_.rank(w)); });
        const Rank* first_dead = nullptr;
        for (int32_t w : dead)
          if (const Rank* r = job_.rank(w);
              r && (!first_dead || (died(*r) && !died(*first_dead)) ||
                    (died(*r) == died(*first_dead) &&
                     time_of(*r, r->last_t_ns) < time_of(*first_dead, first_dead->last_t_ns))))
            first_dead = r;
        if (first_dead)
          f.culprits = {first_dead->world_rank};
        else if (!stuck_free.empty())
          f.culprits = stuck_free;
        else if (!frozen.empty())
          f.culprits = frozen;
        else if (open.size() < done.size())
          f.culprits = open;
        f.explanation = fmt::format("every rank entered {} #{} on {}, but {} never {} it", d.operation,
                                    at(c.ref.id, k), c.ref.name, ranks_phrase(open),
                                    (d.flags & LST_F_NONBLOCKING) ? "completed" : "returned from");
        if (first_dead)
          f.notes.push_back(fmt::format("rank {} died inside it ({}): the others were waiting for it",
                                        first_dead->world_rank, death(*first_dead)));
        else if (!stuck_free.empty())
          f.notes.push_back(fmt::format("{} {} not waiting in it: look there first", ranks_phrase(stuck_free),
                                        stuck_free.size() == 1 ? "is" : "are"));
        else if (!frozen.empty())
          for (int32_t w : frozen)
            f.notes.push_back(fmt::format("rank {} was {}: the others were waiting for it", w,
                                          held_at_stop(*job_.rank(w))));
        else if (f.culprits.empty())
          f.notes.push_back(
              "every rank that did not finish is still inside it: suspect the communication library or the "
              "network");
        findings_.push_back(std::move(f));
        flagged_.insert({id, int64_t(k)});
      }
    }
  }

  // Some rank's MPI library ended it inside a call (format 2.0 end marker, non-zero exit or abort or crash).
  bool torn_down() const {
    return std::any_of(job_.ranks.begin(), job_.ranks.end(),
                       [&](const Rank& r) { return r.died_in && died(r); });
  }

  // A position as the tracer numbers it. Ring mode counts positions from the first collective every rank
  // still had (trim_ring_starts); explanations and the findings' seq fields both name the tracer's number.
  int64_t at(uint64_t comm, int64_t i) const {
    auto it = job_.ring_base.find(comm);
    return it == job_.ring_base.end() ? i : i + int64_t(it->second);
  }

  void finish() {
    std::stable_sort(findings_.begin(), findings_.end(), [](const Finding& a, const Finding& b) {
      if (a.control != b.control) return !a.control;
      if (a.comm.id != b.comm.id) return a.comm.id < b.comm.id;
      return a.seq < b.seq;
    });
    // Ring mode: positions were counted from the first collective every rank still had.
    auto shift = [&](uint64_t comm) { return at(comm, 0); };
    for (auto& st : res_.states)
      if (st.blocked && st.in.seq >= 0 && !(st.in.op == LST_OP_SEND || st.in.op == LST_OP_RECV))
        st.in.seq += shift(st.comm.id);
    for (auto& e : res_.wait_for) e.seq += shift(e.comm);
    for (auto& f : findings_) {
      if (int64_t b = shift(f.comm.id);
          b && f.kind != Kind::kPeerMismatch && f.kind != Kind::kMembershipMismatch) {
        if (f.seq >= 0) f.seq += b;
        for (auto& d : f.detail)
          if (d.present && d.seq >= 0) d.seq += b;
        f.notes.push_back(
            fmt::format("ring-mode traces: the ranks' common history on {} starts at #{}", f.comm.name, b));
      }
      for (auto& e : f.edges) e.seq += shift(e.comm);
      std::sort(f.culprits.begin(), f.culprits.end());
      std::sort(f.ranks.begin(), f.ranks.end());
      std::sort(f.detail.begin(), f.detail.end(),
                [](const RankDetail& a, const RankDetail& b) { return a.rank < b.rank; });
      for (auto& d : f.detail)
        if (!d.tensor.empty()) {
          f.tensor = d.tensor;
          break;
        }
      if (f.control)
        f.notes.push_back(
            "control-plane traffic (the runtime's own negotiation), not the application's data");
    }
    // The hang comes last: the findings above say why the job hung.
    if (hang_) {
      std::sort(hang_->detail.begin(), hang_->detail.end(),
                [](const RankDetail& a, const RankDetail& b) { return a.rank < b.rank; });
      findings_.push_back(std::move(*hang_));
    }
    res_.findings = std::move(findings_);
  }
};

}  // namespace

Result analyze(const Job& job, const Options& options) {
  Result res;
  Analyzer(job, options, res).run();
  return res;
}

}  // namespace lockstep::check
