// Text report: the verdict in one line, then each finding with what every rank did and where, then
// the hang picture. Meant to be read in ten seconds: the first line is the answer.
#include <fmt/format.h>

#include <algorithm>

#include "lockstep/format/reader.h"
#include "lockstep/report/report.h"

namespace lockstep::report {

using check::Finding;
using check::Kind;

std::optional<Format> parse_format(std::string_view name) {
  if (name == "text") return Format::kText;
  if (name == "json") return Format::kJson;
  if (name == "sarif") return Format::kSarif;
  if (name == "junit") return Format::kJunit;
  return std::nullopt;
}

std::string thousands(uint64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

namespace {

std::string plural(uint64_t n, const char* one, const char* many) {
  return thousands(n) + " " + (n == 1 ? one : many);
}

std::string ranks_text(const std::vector<int32_t>& v) {
  std::string s = v.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > 8) s += ",...";
  return s;
}

const check::RankDetail* culprit_detail(const Finding& f) {
  for (auto& d : f.detail)
    for (int32_t c : f.culprits)
      if (d.rank == c) return &d;
  return nullptr;
}

const check::RankDetail* other_detail(const Finding& f) {
  for (auto& d : f.detail) {
    bool culprit = false;
    for (int32_t c : f.culprits) culprit |= d.rank == c;
    if (!culprit && d.present) return &d;
  }
  return nullptr;
}

std::string where(const check::RankDetail* d) {
  if (!d) return "";
  std::string s = d->site.text();
  return s.empty() ? "" : " (" + s + ")";
}

// The C library's frames below `main` and a thread's start function, which every stack ends in: left
// out of the text (the JSON keeps every frame).
bool startup_frame(const check::Site& s) {
  static const char* const kNames[] = {"_start",
                                       "__libc_start_main",
                                       "__libc_start_main_impl",
                                       "__libc_start_call_main",
                                       "start_thread",
                                       "clone",
                                       "clone3",
                                       "__clone3"};
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* n) { return s.function == n; });
}

// where(), with the frames above the call site: for the post-mortem, which says where each rank is.
std::string where_stack(const check::RankDetail* d) {
  if (!d || d->callers.empty()) return where(d);
  return " (" + site_chain(*d) + ")";
}

std::string state_text(const check::RankDetail& d) { return d.present ? format::state_name(d.state) : "-"; }

}  // namespace

std::string site_chain(const check::RankDetail& d) {
  constexpr size_t kShown = 8;
  std::string s = d.site.text().empty() ? "?" : d.site.text();
  size_t n = d.callers.size();
  while (n > 0 && startup_frame(d.callers[n - 1])) --n;
  for (size_t i = 0; i < n && i < kShown; ++i)
    s += " < " + (d.callers[i].text().empty() ? std::string("?") : d.callers[i].text());
  if (n > kShown) s += fmt::format(" < ({} more)", n - kShown);
  return s;
}

std::string headline(const Finding& f) {
  const check::RankDetail* c = culprit_detail(f);
  const check::RankDetail* o = other_detail(f);
  const check::RankDetail* any = o ? o : (c ? c : (f.detail.empty() ? nullptr : &f.detail.front()));
  std::string op = any && any->present ? any->operation : "collective";
  std::string who =
      f.culprits.empty() ? (f.tie ? "ranks disagree (tie)" : ranks_text(f.ranks)) : ranks_text(f.culprits);
  std::string at = fmt::format("{} #{} on {}", op, f.seq, f.comm.name);
  switch (f.kind) {
    case Kind::kMissingCollective:
      if (f.tie)
        return fmt::format("{} disagree at {}{}: only some of them made the call (tie: no majority)",
                           ranks_text(f.ranks), at, where(o ? o : any));
      if (c && c->present)
        return fmt::format("{} called an extra {} at #{} on {}{}", who, c->operation, f.seq, f.comm.name,
                           where(c));
      if (!f.skipped_tensors.empty())
        return fmt::format(
            "{} skipped {} '{}'{} at #{} on {}{}{}", who, o ? o->operation : op, f.skipped_tensors.front(),
            f.skipped_tensors.size() > 1 ? fmt::format(" and {} more", f.skipped_tensors.size() - 1) : "",
            f.seq, f.comm.name, where(o), o && !o->context.empty() ? " in " + o->context : "");
      return fmt::format("{} {} {}{}", who, f.mispaired > 0 ? "skipped" : "never called", at, where(o));
    case Kind::kOpMismatch:
      return fmt::format("{} called {}{} where the others called {}", who,
                         c ? c->operation : "another operation", where(c), at);
    case Kind::kCountMismatch:
      return fmt::format("{}: different count at {}{}", who, at, where(c ? c : o));
    case Kind::kDtypeMismatch:
      return fmt::format("{}: different datatype at {}{}", who, at, where(c ? c : o));
    case Kind::kRootMismatch:
      return fmt::format("{}: different root at {}{}", who, at, where(c ? c : o));
    case Kind::kRedopMismatch:
      return fmt::format("{}: different reduction op at {}{}", who, at, where(c ? c : o));
    case Kind::kPeerMismatch:
      return fmt::format("{}: wrong peer at {} on {}{}", who, c ? c->operation : op, f.comm.name, where(c));
    case Kind::kNameMismatch:
      return fmt::format("{}: different tensor name at {}{}", who, at, where(c ? c : o));
    case Kind::kMembershipMismatch:
      return fmt::format("ranks disagree on the members of {}", f.comm.name);
    case Kind::kDeadlockCycle:
      // A cycle whose first rank waits in a message: a message has no position on its communicator.
      return fmt::format("deadlock: {} wait for each other ({})", ranks_text(f.ranks),
                         f.seq < 0 ? fmt::format("{} on {}", op, f.comm.name) : at);
    case Kind::kUnfinished:
      return fmt::format("{} never finished on {}{}", at,
                         f.culprits.empty() ? ranks_text(f.ranks) : ranks_text(f.culprits), where(any));
    case Kind::kInvalidArgument:
      // The explanation says which argument and whether a rank died inside the call: the verdict itself.
      if (f.explanation.size() <= 160) return f.explanation;
      return fmt::format("an argument MPI rejects at {}{}", f.seq >= 0 ? at : f.comm.name, where(any));
    case Kind::kCallsiteMismatch:
      return fmt::format("{} made {} from another line{}", who, at, where(c));
    case Kind::kHang:
      return f.culprits.empty() ? std::string("the job hung")
                                : fmt::format("the job hung; look at {}", ranks_text(f.culprits));
    case Kind::kRankDied:
      // The explanation says how and where the process ended: the verdict itself.
      if (f.explanation.size() <= 160) return f.explanation;
      return fmt::format("{} ended early; look at {} first", ranks_text(f.ranks), ranks_text(f.culprits));
  }
  return "";
}

std::string verdict(const check::Result& r) {
  std::string head = fmt::format("lockstep: {}, {}, {}", plural(uint64_t(r.summary.ranks), "rank", "ranks"),
                                 plural(uint64_t(r.summary.communicators), "communicator", "communicators"),
                                 plural(r.summary.collectives, "collective", "collectives"));
  if (r.in_lockstep()) return head + (r.hung ? ": IN LOCKSTEP, but the job hung" : ": IN LOCKSTEP");
  std::string s = head + ": ";
  if (!r.findings.empty()) {
    s += plural(r.findings.size(), "finding", "findings") + ": " + headline(r.findings.front());
    if (r.findings.size() > 1) s += fmt::format(" (+{} more)", r.findings.size() - 1);
  }
  if (!r.missing_processes.empty()) {
    if (!r.findings.empty()) s += "; ";
    s += fmt::format("missing process{}: {} (no trace file)", r.missing_processes.size() == 1 ? "" : "es",
                     ranks_text(r.missing_processes));
  }
  return s;
}

std::string hang_text(const check::Result& r) {
  std::string s;
  for (auto& st : r.states) {
    s += fmt::format("  rank {:<4} ", st.rank);
    if (st.blocked) {
      if (st.in.peer == LST_ANY_SOURCE)
        s += fmt::format("blocked in {} from any rank on {}{}", st.in.operation, st.comm.name,
                         where_stack(&st.in));
      else if (st.in.peer != LST_NONE && st.in.seq < 0)  // an MPI message: no position on the communicator
        s += fmt::format("blocked in {} {} rank {} on {}{}", st.in.operation,
                         st.in.op == LST_OP_SEND ? "to" : "from", st.in.peer, st.comm.name,
                         where_stack(&st.in));
      else
        s += fmt::format("blocked in {} #{} on {}{}", st.in.operation, st.in.seq, st.comm.name,
                         where_stack(&st.in));
      if (!st.waits_for.empty()) s += ", waiting for " + ranks_text(st.waits_for);
      s += fmt::format("; process: {}", check::end_state_name(st.end));
      if (!st.at_stop.empty())
        s += "; at the stop: " + check::at_stop_text(st.at_stop, st.at_stop_cpu, st.at_stop_wchan);
    } else {
      s += fmt::format("in no collective: {}", check::end_state_name(st.end));
      if (st.end == check::EndState::kCrashed) s += fmt::format(" (signal {})", st.signal);
      if (!st.at_stop.empty())
        s += "; at the stop: " + check::at_stop_text(st.at_stop, st.at_stop_cpu, st.at_stop_wchan);
    }
    s += "\n";
  }
  for (int32_t w : r.look_here) {
    const check::RankState* st = nullptr;
    for (auto& x : r.states)
      if (x.rank == w) st = &x;
    std::string why = "unknown";
    if (st) {
      why = check::end_state_name(st->end);
      if (!st->at_stop.empty())
        why += "; at the stop: " + check::at_stop_text(st->at_stop, st->at_stop_cpu, st->at_stop_wchan);
    }
    const bool died = std::any_of(r.findings.begin(), r.findings.end(), [&](const check::Finding& f) {
      return f.kind == Kind::kRankDied &&
             std::find(f.culprits.begin(), f.culprits.end(), w) != f.culprits.end();
    });
    if (died)  // killed while the others waited for it (the rank_died finding says how)
      s += fmt::format(
          "  look at rank {}: it ended before the job finished, and others wait for it ({}; see the "
          "rank_died finding)\n",
          w, why);
    else if (st && !st->waits_for.empty())  // a rank in a wait-for cycle that the evidence says diverged
      s += fmt::format(
          "  look at rank {}: it left the order the others follow (see the deadlock_cycle finding)\n", w);
    else if (st && st->blocked && st->under_way_with != LST_NONE)
      // Its partner call is recorded: a transfer under way when the trace ended. In a job stopped while
      // it ran that is no fault (the hang finding's notes say so); in a stuck one it points below MPI.
      s += fmt::format(
          "  look at rank {}: others wait for it; it is in {} {} rank {}, who made the matching call: the "
          "message was under way ({})\n",
          w, st->in.operation, st->in.op == LST_OP_SEND ? "to" : "from", st->under_way_with, why);
    else if (st && st->blocked)
      s += fmt::format(
          "  look at rank {}: others wait for it; it is in {}, waiting for no other rank by the "
          "records ({})\n",
          w, st->in.operation, why);
    else
      s += fmt::format("  look at rank {}: others wait for it, and it is in no traced call ({})\n", w,
                       st ? why : "no trace file");
  }
  return s;
}

std::string text(const check::Result& r, const Context& ctx) {
  std::string s = verdict(r) + "\n";
  for (auto& w : r.warnings) s += "warning: " + w + "\n";
  int n = 0;
  for (auto& f : r.findings) {
    const bool whole = f.kind == Kind::kHang || f.kind == Kind::kRankDied;
    const bool message =
        f.kind == Kind::kDeadlockCycle && f.seq < 0 && !f.detail.empty() && f.detail.front().present;
    std::string at =
        whole       ? "the whole job"
        : message   ? f.detail.front().operation
        : f.seq < 0 ? "at creation"
                    : fmt::format("{} #{}",
                                  f.detail.empty() || !f.detail.front().present ? "collective"
                                                                                : f.detail.front().operation,
                                  f.seq);
    std::string on = whole ? "" : fmt::format(" on {} (size {})", f.comm.name, f.comm.size);
    s += fmt::format("\n{}. [{}] {}: {}{}{}{}\n", ++n, check::severity_name(f.severity),
                     check::kind_name(f.kind), at, on, f.control ? " [control plane]" : "",
                     f.tie ? " [tie]" : "");
    s += "   " + f.explanation + "\n";
    for (auto& note : f.notes) s += "   note: " + note + "\n";
    if (ctx.reasons && ctx.reasons->count(size_t(n - 1))) {
      const StaticReason& why = ctx.reasons->at(size_t(n - 1));
      s += fmt::format("   static: {} [{}]\n", why.summary, why.rule);
    }
    if (!f.tensor.empty()) s += "   tensor: " + f.tensor + "\n";
    for (auto& e : f.edges)
      s += e.message ? fmt::format("   rank {} -> rank {} (waits in {} on {})\n", e.from, e.to, e.operation,
                                   e.comm_name)
                     : fmt::format("   rank {} -> rank {} (waits at #{} on {})\n", e.from, e.to, e.seq,
                                   e.comm_name);
    for (auto& d : f.detail) {
      bool culprit = false;
      for (int32_t c : f.culprits) culprit |= c == d.rank;
      if (!d.present) {
        s += fmt::format("   {} rank {:<4} no call here{}{}\n", culprit ? "*" : " ", d.rank,
                         d.note.empty() ? "" : ": " + d.note,
                         d.context.empty() ? "" : " (in " + d.context + ")");
        continue;
      }
      const std::string type = d.datatype.empty() ? format::dtype_name(d.dtype) : d.datatype;
      std::string args = d.dtype == LST_DT_NONE && d.count == 0 && type.empty()
                             ? std::string("-")
                             : fmt::format("{} x {} ({} B)", d.count, type, d.bytes);
      if (d.rooted)
        args += " root " + format::root_text(d.root);
      else if (d.root != LST_NONE)
        args += fmt::format(" root {}", d.root);
      if (d.peer != LST_NONE) args += fmt::format(" peer {}", d.peer);
      if (d.redop) args += fmt::format(" {}", format::redop_name(d.redop));
      if (!d.tensor.empty()) args += " '" + d.tensor + "'";
      // A message has no position on the communicator: say where it stands among the rank's calls.
      const std::string call = d.seq < 0 && !d.position.empty()
                                   ? fmt::format("{:<24}", d.position)
                                   : fmt::format("#{:<6} {:<16}", d.seq, d.operation);
      s += fmt::format("   {} rank {:<4} {} {:<36} {:<9} {} t={:.3f}s{}{}\n", culprit ? "*" : " ", d.rank,
                       call, args, state_text(d), site_chain(d), d.time_s,
                       d.note.empty() ? "" : "  (" + d.note + ")",
                       d.context.empty() ? "" : " (in " + d.context + ")");
    }
  }
  if (r.hung) s += "\nhang post-mortem (per rank):\n" + hang_text(r);
  return s;
}

std::string render(const check::Result& r, Format format, const Context& ctx) {
  switch (format) {
    case Format::kText:
      return text(r, ctx);
    case Format::kJson:
      return json(r, ctx);
    case Format::kSarif:
      return sarif(r, ctx);
    case Format::kJunit:
      return junit(r, ctx);
  }
  return "";
}

}  // namespace lockstep::report
