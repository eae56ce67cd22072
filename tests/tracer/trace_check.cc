// Reads the traces written by the tracer test programs back with the trace reader and the symbolizer
// and checks them against what the programs say they did:
//   trace_check sequence TRACES EXPECTED_DIR NRANKS    mpi_sequence: every collective in order, with its
//                                                      arguments, state, communicator identity and file:line;
//                                                      a Sendrecv's two records with one id apart and the
//                                                      same times
//   trace_check threads TRACES NRANKS NTHREADS CALLS   mpi_threads: per thread communicator, every call once,
//                                                      each thread's times in order across CPUs
//   trace_check errors TRACES NRANKS                   mpi_safety errors: failed calls FAILED, each with
//                                                      its one MPI_ERROR marker
//   trace_check fork TRACES NRANKS                     mpi_safety fork: the child left the parent's trace
//   alone trace_check hang TRACES                            mpi_hang: rank 0 still ENTERED in MPI_Barrier
//   trace_check stack TRACES NRANKS                    LOCKSTEP_TRACE_STACK=3: extra frames per collective
//   trace_check comms TRACES EXPECTED_DIR NRANKS       mpi_comms: communicator ids across ranks
//   trace_check requests TRACES NRANKS PAIRS MANY REUSE mpi_requests: every request's record completed
//                                                      by the call that completed it, none by a freed one
//   trace_check named TRACES EXPECTED_DIR NRANKS SOURCE mpi_fortran: every call in order by its API name,
//                                                      arguments, communicator identity and SOURCE:line
// Exit 0 when everything matches, 1 with the first mismatches listed, 2 for bad usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/format/layout.h"
#include "lockstep/format/reader.h"
#include "symbolize/symbolize.h"
#include "trace_check.h"

namespace fs = std::filesystem;

namespace {

using lockstep::test::flags;
using lockstep::test::g_errors;
using lockstep::test::kind;
using lockstep::test::load_traces;
using lockstep::test::state;
using lockstep::test::Trace;

// The lifecycle every cleanly finished MPI process records.
void check_lifecycle(int rank, const Trace& t) {
  auto marks = t.of_kind(LST_KIND_MARKER);
  if (marks.empty() || marks.front()->op != LST_MARK_PROCESS_START)
    FAILF("rank %d: first marker is not PROCESS_START", rank);
  bool init = false, fin = false;
  int ends = 0;
  for (const lst_record* m : marks) {
    init = init || m->op == LST_MARK_MPI_INIT;
    if (m->op == LST_MARK_MPI_FINALIZE) fin = state(m) == LST_STATE_RETURNED;
    if (m->op == LST_MARK_PROCESS_END) ++ends;
  }
  if (!init) FAILF("rank %d: no MPI_INIT marker", rank);
  if (!fin) FAILF("rank %d: no returned MPI_FINALIZE marker", rank);
  if (ends != 1) FAILF("rank %d: %d PROCESS_END markers, want 1", rank, ends);
  if (t.file.header().end_state != LST_END_EXIT)
    FAILF("rank %d: end_state %u, want EXIT", rank, t.file.header().end_state);
}

// Record timestamps (TSC-derived where the kernel uses the TSC, else clock_gettime) are on the
// CLOCK_MONOTONIC time line: after the library was loaded, not in the future, and in record order
// for a single-threaded rank.
void check_timestamps(int rank, const Trace& t) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t now_ns = uint64_t(now.tv_sec) * 1000000000ull + uint64_t(now.tv_nsec);
  auto marks = t.of_kind(LST_KIND_MARKER);
  if (marks.empty()) return;
  const uint64_t loaded = marks.front()->t_ns;
  uint64_t prev = 0;
  size_t i = 0;
  for (const lst_record* r : t.of_kind(LST_KIND_COLLECTIVE)) {
    if (r->t_ns < loaded || r->t_ns > now_ns)
      FAILF("rank %d collective #%zu: t_ns %llu outside [load %llu, now %llu]", rank, i,
            (unsigned long long)r->t_ns, (unsigned long long)loaded, (unsigned long long)now_ns);
    if (r->t_ns < prev)
      FAILF("rank %d collective #%zu: t_ns goes back by %llu ns", rank, i,
            (unsigned long long)(prev - r->t_ns));
    prev = r->t_ns;
    ++i;
  }
}

// ---- sequence ------------------------------------------------------------------------------------

struct Expected {
  int op, flags;
  char comm;
  long long count;
  int dtype, dtype_size, root, redop, line;
  int tag = 0;        // point-to-point only
  bool pair = false;  // this and the record before it are one call's (MPI_Sendrecv)
};

int sequence(const std::string& traces, const std::string& expected_dir, int nranks) {
  auto all = load_traces(traces, static_cast<size_t>(nranks));
  lockstep::symbolize::Symbolizer sym;
  std::map<char, std::map<int, uint64_t>> comm_of;  // tag -> rank -> id
  std::map<int, int> colour;
  size_t total = 0;
  for (auto& [rank, t] : all) {
    check_lifecycle(rank, t);
    check_timestamps(rank, t);
    std::ifstream in(expected_dir + "/rank-" + std::to_string(rank) + ".txt");
    if (!in) {
      FAILF("rank %d: no expected file", rank);
      continue;
    }
    std::vector<Expected> want;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string tag;
      ls >> tag;
      if (tag == "split_color") {
        ls >> colour[rank];
        continue;
      }
      if (tag == "pair") {
        if (want.empty())
          FAILF("rank %d: a pair with no record before it in the expected file", rank);
        else
          want.back().pair = true;
        continue;
      }
      Expected e{};
      if (tag == "P") {  // point-to-point: peer in place of the root, tag in place of the reduction op
        ls >> e.op >> e.flags >> e.comm >> e.count >> e.dtype >> e.dtype_size >> e.root >> e.tag >> e.line;
        e.redop = LST_RED_NONE;
      } else {
        ls >> e.op >> e.flags >> e.comm >> e.count >> e.dtype >> e.dtype_size >> e.root >> e.redop >> e.line;
      }
      want.push_back(e);
    }
    auto got = t.of_kind(LST_KIND_COLLECTIVE);
    if (got.size() != want.size())
      FAILF("rank %d: %zu collectives in the trace, %zu called", rank, got.size(), want.size());
    std::vector<uint64_t> callers;
    for (const lst_record* r : got) callers.push_back(r->caller);
    auto sites = sym.call_sites(t.file.modules(), callers);
    std::map<uint64_t, uint32_t> next_seq;
    size_t n = std::min(got.size(), want.size());
    total += n;
    for (size_t i = 0; i < n; ++i) {
      const lst_record* r = got[i];
      const Expected& e = want[i];
      auto bad = [&](const char* what, long long g, long long w) {
        FAILF("rank %d collective #%zu (line %d): %s %lld, want %lld", rank, i, e.line, what, g, w);
      };
      if (r->api != LST_API_MPI) bad("api", r->api, LST_API_MPI);
      if (r->op != e.op) bad("op", r->op, e.op);
      unsigned want_flags = static_cast<unsigned>(e.flags);
      if (flags(r) != want_flags) bad("flags", flags(r), want_flags);
      if (static_cast<long long>(r->u.coll.count) != e.count)
        bad("count", (long long)r->u.coll.count, e.count);
      if (r->dtype != e.dtype) bad("dtype", r->dtype, e.dtype);
      if (static_cast<int>(r->u.coll.dtype_size) != e.dtype_size)
        bad("dtype_size", r->u.coll.dtype_size, e.dtype_size);
      if (r->u.coll.root_or_peer != e.root) bad("root", r->u.coll.root_or_peer, e.root);
      if (r->redop != e.redop) bad("redop", r->redop, e.redop);
      // A polling loop's PROBE record returns when a poll finds the message; nothing completes it.
      const bool nb = (e.flags & LST_F_NONBLOCKING) && e.op != LST_OP_PROBE;
      unsigned want_state = nb ? LST_STATE_COMPLETED : LST_STATE_RETURNED;
      if (state(r) != want_state) bad("state", state(r), want_state);
      if (e.flags & LST_F_P2P) {
        // Point-to-point takes no collective sequence number: coll.seq holds the tag.
        if (static_cast<int32_t>(r->u.coll.seq) != e.tag)
          bad("tag", static_cast<int32_t>(r->u.coll.seq), e.tag);
      } else {
        uint32_t seq = next_seq[r->comm]++;
        if (r->u.coll.seq != seq) bad("seq", r->u.coll.seq, seq);
      }
      if (e.pair && i > 0) {
        // One call's two records: reserved together and stamped once at each end of the call.
        const lst_record* q = got[i - 1];
        if (r->u.coll.id_lo != q->u.coll.id_lo + 1)
          bad("id after its pair's", r->u.coll.id_lo, q->u.coll.id_lo + 1);
        if (r->t_ns != q->t_ns) bad("t_ns minus its pair's", (long long)(r->t_ns - q->t_ns), 0);
        if (r->t_return_us != q->t_return_us) bad("t_return_us", r->t_return_us, q->t_return_us);
        if (state(r) != state(q)) bad("state", state(r), state(q));
        if (r->caller != q->caller) bad("caller differs from its pair's", 1, 0);
      }
      auto [it, fresh] = comm_of[e.comm].emplace(rank, r->comm);
      if (!fresh && it->second != r->comm)
        FAILF("rank %d collective #%zu: comm %c has two ids on one rank", rank, i, e.comm);
      const auto& site = sites[i];
      if (fs::path(site.file).filename() != "mpi_sequence.cc" || static_cast<int>(site.line) != e.line)
        FAILF("rank %d collective #%zu: call site %s, want mpi_sequence.cc:%d", rank, i,
              site.site(true).c_str(), e.line);
    }
    // Every wait record points at a nonblocking collective of this trace.
    for (const lst_record* w : t.of_kind(LST_KIND_WAIT)) {
      const lst_record* c = t.file.record(w->u.wait.first_ref);
      if (!c || LST_WORD_KIND(c->word) != LST_KIND_COLLECTIVE || !(flags(c) & LST_F_NONBLOCKING))
        FAILF("rank %d: wait record %llu does not reference a nonblocking collective", rank,
              (unsigned long long)w->u.wait.id);
      if (state(w) != LST_STATE_RETURNED) FAILF("rank %d: wait record in state %u", rank, state(w));
    }
    // The communicators' own records: world, split (with its colour) and dup, created from world.
    std::map<uint64_t, const lst_record*> comm_recs;
    for (const lst_record* c : t.of_kind(LST_KIND_COMM))
      if (c->op != LST_COMM_FREE) comm_recs[c->comm] = c;
    uint64_t w = comm_of['W'][rank], s = comm_of['S'][rank], d = comm_of['D'][rank];
    if (!comm_recs.count(w) || comm_recs[w]->op != LST_COMM_WORLD || comm_recs[w]->u.comm.size != nranks)
      FAILF("rank %d: no MPI_COMM_WORLD record of size %d for the world id", rank, nranks);
    if (!comm_recs.count(s) || comm_recs[s]->op != LST_COMM_SPLIT || comm_recs[s]->u.comm.parent != w ||
        comm_recs[s]->u.comm.color != colour[rank])
      FAILF("rank %d: no split record (parent world, colour %d) for the split's id", rank, colour[rank]);
    if (!comm_recs.count(d) || comm_recs[d]->op != LST_COMM_DUP || comm_recs[d]->u.comm.parent != w)
      FAILF("rank %d: no dup record (parent world) for the dup's id", rank);
    if (w == s || w == d || s == d) FAILF("rank %d: world, split and dup share an id", rank);
  }
  // Cross-rank identity: world and dup agree everywhere; the split agrees within a colour only.
  for (char tag : {'W', 'D'}) {
    std::set<uint64_t> ids;
    for (auto& [rank, id] : comm_of[tag]) ids.insert(id);
    if (ids.size() != 1) FAILF("communicator %c has %zu different ids across ranks", tag, ids.size());
  }
  for (auto& [a, ida] : comm_of['S'])
    for (auto& [b, idb] : comm_of['S'])
      if ((colour[a] == colour[b]) != (ida == idb))
        FAILF("split ids of ranks %d and %d disagree with their colours", a, b);
  if (g_errors == 0)
    std::printf("trace_check: %zu collectives on %d ranks match, call sites included\n", total, nranks);
  return g_errors ? 1 : 0;
}

// ---- threads -------------------------------------------------------------------------------------

// One thread's calls, in its call order, on the CLOCK_MONOTONIC time line whatever CPU each was made
// on (mpi_threads moves its threads from CPU to CPU): after the library was loaded, not in the future,
// each entered no earlier than the one before returned. Slack: two TSC-derived timestamps may each be a
// few us off the clock (docs/tracer.md).
void check_thread_times(int rank, int thread, uint64_t loaded, const std::vector<const lst_record*>& recs) {
  constexpr uint64_t kSlackNs = 20000;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t now_ns = uint64_t(now.tv_sec) * 1000000000ull + uint64_t(now.tv_nsec);
  for (size_t i = 0; i < recs.size(); ++i) {
    const lst_record* r = recs[i];
    if (r->t_ns < loaded || r->t_ns > now_ns)
      FAILF("rank %d thread %d: call %zu at %llu, outside [load %llu, now %llu]", rank, thread, i,
            (unsigned long long)r->t_ns, (unsigned long long)loaded, (unsigned long long)now_ns);
    if (i == 0) continue;
    const lst_record* p = recs[i - 1];
    const uint64_t returned = p->t_ns + uint64_t(p->t_return_us) * 1000;
    if (r->t_ns < p->t_ns)
      FAILF("rank %d thread %d: call %zu entered %llu ns before call %zu", rank, thread, i,
            (unsigned long long)(p->t_ns - r->t_ns), i - 1);
    else if (r->t_ns + kSlackNs < returned)
      FAILF("rank %d thread %d: call %zu entered %llu ns before call %zu returned (%u us after its entry)",
            rank, thread, i, (unsigned long long)(returned - r->t_ns), i - 1, p->t_return_us);
  }
}

// ---- named ---------------------------------------------------------------------------------------

// The records of a program that says what it called by name (mpi_fortran, which has no access to the
// format's numbers): "NAME COMM COUNT DTYPE ROOT_OR_PEER REDOP LINE" per record, "-" for no datatype or
// op, -1 for no root; "split_color C" once. Communicator letters as in `sequence`.
int named(const std::string& traces, const std::string& expected_dir, int nranks, const std::string& source) {
  auto all = load_traces(traces, static_cast<size_t>(nranks));
  lockstep::symbolize::Symbolizer sym;
  std::map<std::string, std::map<int, uint64_t>> comm_of;  // letter -> rank -> id
  std::map<int, int> colour;
  size_t total = 0;
  for (auto& [rank, t] : all) {
    check_lifecycle(rank, t);
    std::ifstream in(expected_dir + "/rank-" + std::to_string(rank) + ".txt");
    if (!in) {
      FAILF("rank %d: no expected file", rank);
      continue;
    }
    struct Want {
      std::string name, comm;
      long long count;
      std::string dtype;
      int root;
      std::string redop;
      int line;
    };
    std::vector<Want> want;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      Want w{};
      ls >> w.name;
      if (w.name == "split_color") {
        ls >> colour[rank];
        continue;
      }
      ls >> w.comm >> w.count >> w.dtype >> w.root >> w.redop >> w.line;
      if (!ls) FAILF("rank %d: bad expected line '%s'", rank, line.c_str());
      want.push_back(w);
    }
    auto got = t.of_kind(LST_KIND_COLLECTIVE);
    if (got.size() != want.size())
      FAILF("rank %d: %zu records in the trace, %zu called", rank, got.size(), want.size());
    std::vector<uint64_t> callers;
    for (const lst_record* r : got) callers.push_back(r->caller);
    auto sites = sym.call_sites(t.file.modules(), callers);
    const size_t n = std::min(got.size(), want.size());
    total += n;
    for (size_t i = 0; i < n; ++i) {
      const lst_record& r = *got[i];
      const Want& w = want[i];
      auto bad = [&](const char* what, const std::string& g, const std::string& e) {
        FAILF("rank %d record #%zu (line %d): %s %s, want %s", rank, i, w.line, what, g.c_str(), e.c_str());
      };
      const std::string op = lockstep::format::op_name(r);
      if (op != w.name) bad("operation", op, w.name);
      if (static_cast<long long>(r.u.coll.count) != w.count)
        bad("count", std::to_string(r.u.coll.count), std::to_string(w.count));
      const std::string dt = r.dtype == LST_DT_NONE ? "-" : lockstep::format::dtype_name(r.dtype);
      if (dt != w.dtype) bad("datatype", dt, w.dtype);
      if (r.u.coll.root_or_peer != w.root)
        bad("root or peer", std::to_string(r.u.coll.root_or_peer), std::to_string(w.root));
      const std::string red = r.redop == LST_RED_NONE ? "-" : lockstep::format::redop_name(r.redop);
      if (red != w.redop) bad("reduction", red, w.redop);
      const bool nonblocking = flags(&r) & LST_F_NONBLOCKING;
      if (state(&r) != (nonblocking ? LST_STATE_COMPLETED : LST_STATE_RETURNED))
        bad("state", lockstep::format::state_name(state(&r)), nonblocking ? "completed" : "returned");
      auto [it, fresh] = comm_of[w.comm].emplace(rank, r.comm);
      if (!fresh && it->second != r.comm)
        FAILF("rank %d record #%zu: comm %s has two ids on one rank", rank, i, w.comm.c_str());
      const auto& site = sites[i];
      if (fs::path(site.file).filename() != source || static_cast<int>(site.line) != w.line)
        bad("call site", site.site(true), source + ":" + std::to_string(w.line));
    }
  }
  for (const char* letter : {"W", "D"}) {
    std::set<uint64_t> ids;
    for (auto& [rank, id] : comm_of[letter]) ids.insert(id);
    if (ids.size() != 1) FAILF("communicator %s has %zu different ids across ranks", letter, ids.size());
  }
  for (auto& [a, ida] : comm_of["S"])
    for (auto& [b, idb] : comm_of["S"])
      if ((colour[a] == colour[b]) != (ida == idb))
        FAILF("split ids of ranks %d and %d disagree with their colours", a, b);
  if (comm_of["W"].size() != static_cast<size_t>(nranks))
    FAILF("world seen on %zu ranks, want %d", comm_of["W"].size(), nranks);
  if (g_errors == 0)
    std::printf("trace_check: %zu records on %d ranks match their calls, call sites in %s included\n", total,
                nranks, source.c_str());
  return g_errors ? 1 : 0;
}

// mpi_threads: thread k makes CALLS collectives on its own dup; call i has count k * 1000 + i.
int threads(const std::string& traces, int nranks, int nthreads, int calls) {
  auto all = load_traces(traces, static_cast<size_t>(nranks));
  std::map<int, std::set<uint64_t>> ids_by_thread;
  for (auto& [rank, t] : all) {
    check_lifecycle(rank, t);
    std::map<uint64_t, std::vector<const lst_record*>> by_comm;
    for (const lst_record* r : t.of_kind(LST_KIND_COLLECTIVE)) by_comm[r->comm].push_back(r);
    if (static_cast<int>(by_comm.size()) != nthreads)
      FAILF("rank %d: %zu communicators used, want %d", rank, by_comm.size(), nthreads);
    for (auto& [comm, recs] : by_comm) {
      if (static_cast<int>(recs.size()) != calls)
        FAILF("rank %d comm %llx: %zu collectives, want %d", rank, (unsigned long long)comm, recs.size(),
              calls);
      int thread = recs.empty() ? -1 : static_cast<int>(recs[0]->u.coll.count / 1000);
      ids_by_thread[thread].insert(comm);
      std::set<uint32_t> seqs;
      for (size_t i = 0; i < recs.size(); ++i) {
        const lst_record* r = recs[i];
        if (!seqs.insert(r->u.coll.seq).second)
          FAILF("rank %d thread %d: seq %u twice", rank, thread, r->u.coll.seq);
        if (r->u.coll.seq != i)
          FAILF("rank %d thread %d: record %zu has seq %u", rank, thread, i, r->u.coll.seq);
        if (r->u.coll.count != static_cast<uint64_t>(thread) * 1000 + i)
          FAILF("rank %d thread %d: call %zu has count %llu", rank, thread, i,
                (unsigned long long)r->u.coll.count);
        unsigned want = (flags(r) & LST_F_NONBLOCKING) ? LST_STATE_COMPLETED : LST_STATE_RETURNED;
        if (state(r) != want) FAILF("rank %d thread %d: call %zu in state %u", rank, thread, i, state(r));
      }
      auto marks = t.of_kind(LST_KIND_MARKER);
      if (!marks.empty()) check_thread_times(rank, thread, marks.front()->t_ns, recs);
    }
  }
  for (auto& [thread, ids] : ids_by_thread)
    if (ids.size() != 1) FAILF("thread %d's communicator has %zu ids across ranks", thread, ids.size());
  if (static_cast<int>(ids_by_thread.size()) != nthreads)
    FAILF("%zu thread communicators, want %d", ids_by_thread.size(), nthreads);
  if (g_errors == 0)
    std::printf("trace_check: %d ranks x %d threads x %d calls, none lost or duplicated\n", nranks, nthreads,
                calls);
  return g_errors ? 1 : 0;
}

// ---- requests ------------------------------------------------------------------------------------

// mpi_requests: per tag, how many nonblocking SEND and RECV records each rank has and in which state.
// Tags 1 and 2: every one COMPLETED (tag 1 by another thread than its start); tag 3: the receives
// COMPLETED, the sends RETURNED (released by MPI_Request_free, never completed through a Wait). The WAIT
// records' completion counts add up to the COMPLETED records, and each WAIT's first_ref names a
// nonblocking record.
int requests(const std::string& traces, int nranks, int pairs, int many, int reuse) {
  auto all = load_traces(traces, static_cast<size_t>(nranks));
  for (auto& [rank, t] : all) {
    check_lifecycle(rank, t);
    std::map<std::pair<uint32_t, uint8_t>, std::map<unsigned, int>> states;  // (tag, op) -> state -> n
    std::set<uint32_t> nonblocking;  // low 32 bits of the record ids (coll.id_lo)
    uint64_t completed = 0;
    for (const lst_record* r : t.of_kind(LST_KIND_COLLECTIVE)) {
      if (!(flags(r) & LST_F_P2P) || !(flags(r) & LST_F_NONBLOCKING)) continue;
      ++states[{r->u.coll.seq, r->op}][state(r)];
      nonblocking.insert(r->u.coll.id_lo);
      completed += state(r) == LST_STATE_COMPLETED;
    }
    auto expect = [&](uint32_t tag, uint8_t op, unsigned st, int n) {
      const auto& by_state = states[{tag, op}];
      int total = 0;
      for (auto& [s, k] : by_state) total += k;
      const auto it = by_state.find(st);
      if (total != n || it == by_state.end() || it->second != n)
        FAILF("rank %d tag %u op %u: %d records, %d in state %u, want %d", rank, tag, op, total,
              it == by_state.end() ? 0 : it->second, st, n);
    };
    expect(1, LST_OP_SEND, LST_STATE_COMPLETED, pairs);
    expect(1, LST_OP_RECV, LST_STATE_COMPLETED, pairs);
    expect(2, LST_OP_SEND, LST_STATE_COMPLETED, many);
    expect(2, LST_OP_RECV, LST_STATE_COMPLETED, many);
    expect(3, LST_OP_SEND, LST_STATE_RETURNED, reuse);
    expect(3, LST_OP_RECV, LST_STATE_COMPLETED, reuse);
    uint64_t counted = 0;
    for (const lst_record* w : t.of_kind(LST_KIND_WAIT)) {
      counted += w->u.wait.ncompleted;
      if (!nonblocking.count(static_cast<uint32_t>(w->u.wait.first_ref)))
        FAILF("rank %d: WAIT record names %llu, not a nonblocking record", rank,
              (unsigned long long)w->u.wait.first_ref);
    }
    if (counted != completed)
      FAILF("rank %d: WAIT records completed %llu, %llu records COMPLETED", rank, (unsigned long long)counted,
            (unsigned long long)completed);
  }
  if (g_errors == 0)
    std::printf("trace_check: %d ranks: %d handed-over pairs, %d pending at once, %d reused, all as made\n",
                nranks, pairs, many, reuse);
  return g_errors ? 1 : 0;
}

// ---- safety ----------------------------------------------------------------------------------------

// mpi_safety errors: Allreduce ok, Bcast with a bad root, Allreduce with a negative count, Barrier ok,
// then Sendrecv, Sendrecv_replace, Iprobe and Send naming no rank. Every call MPI failed is FAILED and
// followed by exactly one MPI_ERROR marker naming it (one code path for every kind of call); a call
// that returned has none.
int errors(const std::string& traces, int nranks) {
  auto all = load_traces(traces, static_cast<size_t>(nranks));
  struct Want {
    unsigned op;
    bool p2p;
    unsigned state;
  };
  const Want want[] = {
      {LST_OP_ALLREDUCE, false, LST_STATE_RETURNED}, {LST_OP_BCAST, false, LST_STATE_FAILED},
      {LST_OP_ALLREDUCE, false, LST_STATE_FAILED},   {LST_OP_BARRIER, false, LST_STATE_RETURNED},
      {LST_OP_SEND, true, LST_STATE_FAILED},         {LST_OP_RECV, true, LST_STATE_FAILED},  // Sendrecv
      {LST_OP_SEND, true, LST_STATE_FAILED},         {LST_OP_RECV, true, LST_STATE_FAILED},  // _replace
      {LST_OP_PROBE, true, LST_STATE_FAILED},        {LST_OP_SEND, true, LST_STATE_FAILED},
  };
  const size_t n = sizeof want / sizeof want[0];
  for (auto& [rank, t] : all) {
    std::vector<std::pair<uint64_t, const lst_record*>> calls;
    std::map<uint64_t, int> markers;  // record id -> MPI_ERROR markers naming it
    for (uint64_t id = t.file.first_id(); id < t.file.end_id(); ++id) {
      const lst_record* r = t.file.record(id);
      if (!r) continue;
      if (kind(r) == LST_KIND_COLLECTIVE) calls.push_back({id, r});
      if (kind(r) == LST_KIND_MARKER && r->op == LST_MARK_MPI_ERROR) {
        ++markers[r->u.marker.ref];
        if (r->u.marker.value == 0 || r->aux == 0)
          FAILF("rank %d: MPI_ERROR marker %llu without a class or its text", rank,
                static_cast<unsigned long long>(id));
      }
    }
    if (calls.size() != n) {
      FAILF("rank %d: %zu calls recorded, want %zu", rank, calls.size(), n);
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      const auto& [id, r] = calls[i];
      const bool p2p = (flags(r) & LST_F_P2P) != 0;
      if (r->op != want[i].op || p2p != want[i].p2p)
        FAILF("rank %d call %zu: op %u%s, want %u%s", rank, i, r->op, p2p ? " p2p" : "", want[i].op,
              want[i].p2p ? " p2p" : "");
      if (state(r) != want[i].state)
        FAILF("rank %d call %zu: state %u, want %u", rank, i, state(r), want[i].state);
      const int want_markers = want[i].state == LST_STATE_FAILED ? 1 : 0;
      if (markers[id] != want_markers)
        FAILF("rank %d call %zu (op %u): %d MPI_ERROR markers, want %d", rank, i, r->op, markers[id],
              want_markers);
    }
  }
  if (g_errors == 0)
    std::printf("trace_check: failed calls recorded as FAILED, each with its MPI_ERROR marker\n");
  return g_errors ? 1 : 0;
}

// mpi_safety fork: the parent forks after its collectives; the child exits without MPI. One trace per
// rank, and the parent's holds only the parent's records.
int fork_check(const std::string& traces, int nranks) {
  auto all = load_traces(traces, static_cast<size_t>(nranks));
  for (auto& [rank, t] : all) {
    check_lifecycle(rank, t);
    uint32_t pid = t.file.header().pid;
    for (const lst_record* m : t.of_kind(LST_KIND_MARKER))
      if (m->op == LST_MARK_PROCESS_START && m->u.marker.value != pid)
        FAILF("rank %d: a PROCESS_START of pid %llu in the trace of pid %u", rank,
              (unsigned long long)m->u.marker.value, pid);
    if (t.of_kind(LST_KIND_COLLECTIVE).size() != 2)
      FAILF("rank %d: %zu collectives, want 2", rank, t.of_kind(LST_KIND_COLLECTIVE).size());
  }
  if (g_errors == 0) std::printf("trace_check: forked children left the traces alone\n");
  return g_errors ? 1 : 0;
}

// mpi_comms: per rank, "label seq" lines in the order of its collectives. One id per label across
// ranks, different labels different ids, sequence numbers as the program counted them, and a creation
// record for every communicator used.
int comms(const std::string& traces, const std::string& expected_dir, int nranks) {
  auto all = load_traces(traces, static_cast<size_t>(nranks));
  std::map<std::string, std::set<uint64_t>> ids;
  for (auto& [rank, t] : all) {
    check_lifecycle(rank, t);
    check_timestamps(rank, t);
    std::ifstream in(expected_dir + "/rank-" + std::to_string(rank) + ".txt");
    std::vector<std::pair<std::string, uint32_t>> want;
    std::string label;
    uint32_t seq;
    while (in >> label >> seq) want.emplace_back(label, seq);
    auto got = t.of_kind(LST_KIND_COLLECTIVE);
    if (got.size() != want.size())
      FAILF("rank %d: %zu collectives, %zu called", rank, got.size(), want.size());
    std::set<uint64_t> created;
    for (const lst_record* c : t.of_kind(LST_KIND_COMM))
      if (c->op != LST_COMM_FREE) created.insert(c->comm);
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      ids[want[i].first].insert(got[i]->comm);
      if (got[i]->u.coll.seq != want[i].second)
        FAILF("rank %d: %s collective has seq %u, want %u", rank, want[i].first.c_str(), got[i]->u.coll.seq,
              want[i].second);
      if (!created.count(got[i]->comm))
        FAILF("rank %d: no creation record for %s", rank, want[i].first.c_str());
    }
  }
  std::map<uint64_t, std::string> owner;
  for (auto& [label, set] : ids) {
    if (set.size() != 1) FAILF("%s has %zu different ids across ranks", label.c_str(), set.size());
    for (uint64_t id : set) {
      auto [it, fresh] = owner.emplace(id, label);
      if (!fresh) FAILF("%s and %s share id %llx", it->second.c_str(), label.c_str(), (unsigned long long)id);
    }
  }
  if (g_errors == 0)
    std::printf("trace_check: %zu communicators, one id each across ranks, all different\n", ids.size());
  return g_errors ? 1 : 0;
}

// LOCKSTEP_TRACE_STACK=3: every collective is followed by one STACK record holding two frames above
// the call site.
int stack(const std::string& traces, int nranks) {
  auto all = load_traces(traces, static_cast<size_t>(nranks));
  size_t n = 0;
  for (auto& [rank, t] : all) {
    for (size_t i = 0; i < t.records.size(); ++i) {
      const lst_record* r = t.records[i];
      if (LST_WORD_KIND(r->word) != LST_KIND_COLLECTIVE) continue;
      ++n;
      const lst_record* s = i + 1 < t.records.size() ? t.records[i + 1] : nullptr;
      if (!s || LST_WORD_KIND(s->word) != LST_KIND_STACK) {
        FAILF("rank %d: collective seq %u has no STACK record after it", rank, r->u.coll.seq);
        continue;
      }
      if (s->u.stack.ref != r->u.coll.id_lo)
        FAILF("rank %d: STACK record refers to %llu, want %u", rank, (unsigned long long)s->u.stack.ref,
              r->u.coll.id_lo);
      if (s->u.stack.frames[0] == 0 || s->u.stack.frames[0] == r->caller)
        FAILF("rank %d: STACK frame 0 is %llx (caller %llx)", rank, (unsigned long long)s->u.stack.frames[0],
              (unsigned long long)r->caller);
      bool in_module = false;
      for (const auto& m : t.file.modules())
        in_module = in_module || (s->u.stack.frames[0] >= m.lo && s->u.stack.frames[0] < m.hi);
      if (!in_module)
        FAILF("rank %d: STACK frame %llx is in no module of the table", rank,
              (unsigned long long)s->u.stack.frames[0]);
    }
  }
  if (n == 0) FAILF("no collectives");
  if (g_errors == 0) std::printf("trace_check: %zu collectives, each with its extra frames\n", n);
  return g_errors ? 1 : 0;
}

// mpi_hang: rank 0 blocks in MPI_Barrier on world that rank 1 never calls.
int hang(const std::string& traces) {
  auto all = load_traces(traces, 2);
  for (auto& [rank, t] : all) {
    auto got = t.of_kind(LST_KIND_COLLECTIVE);
    if (got.empty()) {
      FAILF("rank %d: no collectives", rank);
      continue;
    }
    const lst_record* last = got.back();
    if (rank == 0 && (last->op != LST_OP_BARRIER || state(last) != LST_STATE_ENTERED))
      FAILF("rank 0: last collective op %u state %u, want MPI_Barrier ENTERED", last->op, state(last));
    if (rank == 1)
      for (const lst_record* r : got)
        if (state(r) == LST_STATE_ENTERED) FAILF("rank 1: a collective left ENTERED");
  }
  if (g_errors == 0) std::printf("trace_check: the blocked rank's MPI_Barrier is ENTERED\n");
  return g_errors ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "sequence" && argc == 5) return sequence(argv[2], argv[3], std::atoi(argv[4]));
    if (mode == "threads" && argc == 6)
      return threads(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]));
    if (mode == "errors" && argc == 4) return errors(argv[2], std::atoi(argv[3]));
    if (mode == "fork" && argc == 4) return fork_check(argv[2], std::atoi(argv[3]));
    if (mode == "hang" && argc == 3) return hang(argv[2]);
    if (mode == "stack" && argc == 4) return stack(argv[2], std::atoi(argv[3]));
    if (mode == "comms" && argc == 5) return comms(argv[2], argv[3], std::atoi(argv[4]));
    if (mode == "named" && argc == 6) return named(argv[2], argv[3], std::atoi(argv[4]), argv[5]);
    if (mode == "requests" && argc == 7)
      return requests(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]),
                      std::atoi(argv[6]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_check: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: trace_check sequence|threads|errors|fork|hang|stack|comms|requests ...\n");
  return 2;
}
