// Reads the traces of the NCCL test programs back with the trace reader and the symbolizer and checks
// them against what the programs say they called:
//   trace_check sequence TRACE_DIR EXPECTED_DIR NRANKS   sequence_program: every record, in order, with
//                                                        its file:line, and cross-rank communicator ids
//   trace_check failures TRACE_DIR                        failure_program: failed calls recorded as
//                                                        FAILED, failed creations not registered
//   trace_check threads TRACE_DIR NTHREADS CALLS          threads_program: nothing lost or duplicated
//   trace_check management TRACE_DIR NRANKS               numerics_test: every communicator event (init,
//                                                        split, NOCOLOR, shrink, InitAll, finalize, abort)
// Exit 0 when everything matches, 1 with the first mismatches listed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// ---- sequence ------------------------------------------------------------------------------------

struct Expected {
  std::string what;  // coll, mark, comm, mpi
  char comm = 0;
  long long v[8] = {};
  int line = 0;
  std::string text;  // the expected-file line, for messages
};

std::vector<Expected> read_expected(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    FAILF("%s: cannot read", path.c_str());
    return {};
  }
  std::vector<Expected> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    Expected e;
    e.text = line;
    s >> e.what;
    int n = 0;
    if (e.what == "coll") {
      s >> e.comm;
      n = 7;
    } else if (e.what == "mark") {
      n = 2;
    } else if (e.what == "comm") {
      s >> e.comm;
      n = 4;
    } else if (e.what == "mpi") {
      n = 1;
    }
    for (int i = 0; i < n; ++i) s >> e.v[i];
    s >> e.line;
    if (!s) FAILF("%s: bad line '%s'", path.c_str(), line.c_str());
    out.push_back(e);
  }
  return out;
}

// The records the program's calls produce, in order: NCCL collectives, communicators and group
// markers, and the program's own MPI collectives. Anything the stand-in did with MPI inside an NCCL
// call must not be among them.
std::vector<const lst_record*> relevant(const Trace& t, int rank) {
  std::vector<const lst_record*> out;
  for (const lst_record* r : t.records) {
    switch (kind(r)) {
      case LST_KIND_COLLECTIVE:
        if (r->api == LST_API_NCCL || r->api == LST_API_MPI) out.push_back(r);
        break;
      case LST_KIND_COMM:
        if (r->api == LST_API_NCCL)
          out.push_back(r);
        else if (r->op != LST_COMM_WORLD)
          FAILF("rank %d: MPI communicator event %s recorded: the stand-in's MPI calls leaked into the trace",
                rank, lockstep::format::comm_op_name(r->op));
        break;
      case LST_KIND_MARKER:
        if (r->op == LST_MARK_NCCL_GROUP_START || r->op == LST_MARK_NCCL_GROUP_END) out.push_back(r);
        break;
      default:
        break;
    }
  }
  return out;
}

int check_sequence(const std::string& trace_dir, const std::string& expected_dir, int nranks) {
  std::map<int, Trace> traces = load_traces(trace_dir);
  if (int(traces.size()) != nranks)
    FAILF("%s: %zu traces, want %d", trace_dir.c_str(), traces.size(), nranks);
  lockstep::symbolize::Symbolizer symbolizer;
  std::map<char, std::map<int, uint64_t>> ids;  // label -> rank -> communicator id
  for (auto& [rank, t] : traces) {
    const std::vector<Expected> want = read_expected(expected_dir + "/expected." + std::to_string(rank));
    const std::vector<const lst_record*> got = relevant(t, rank);
    std::vector<uint64_t> callers;
    for (const lst_record* r : got) callers.push_back(r->caller);
    const std::vector<lockstep::symbolize::Location> sites = symbolizer.call_sites(t.file.modules(), callers);

    std::map<char, uint32_t> next_seq;
    size_t nccl_collectives = 0;
    if (got.size() != want.size())
      FAILF("rank %d: %zu records, the program made %zu calls", rank, got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
      const lst_record* r = got[i];
      const Expected& e = want[i];
      const std::string where =
          "rank " + std::to_string(rank) + " call " + std::to_string(i) + " '" + e.text + "'";
      bool ok = true;
      if (e.what == "coll") {
        ok = kind(r) == LST_KIND_COLLECTIVE && r->api == LST_API_NCCL && r->op == e.v[0] &&
             r->u.coll.count == uint64_t(e.v[1]) && r->dtype == e.v[2] && r->u.coll.dtype_size == e.v[3] &&
             r->redop == e.v[4] && r->u.coll.root_or_peer == e.v[5] &&
             bool(flags(r) & LST_F_IN_GROUP) == bool(e.v[6]) && state(r) == LST_STATE_RETURNED;
        if (ok) {
          ++nccl_collectives;
          if (r->u.coll.seq != next_seq[e.comm])
            FAILF("%s: seq %u, want %u", where.c_str(), r->u.coll.seq, next_seq[e.comm]);
          ++next_seq[e.comm];
          auto [it, fresh] = ids[e.comm].emplace(rank, r->comm);
          if (!fresh && it->second != r->comm)
            FAILF("%s: on communicator %016llx, not %c's", where.c_str(), (unsigned long long)r->comm,
                  e.comm);
        }
      } else if (e.what == "mark") {
        ok = kind(r) == LST_KIND_MARKER && r->op == e.v[0] && r->u.marker.value == uint64_t(e.v[1]) &&
             (r->op != LST_MARK_NCCL_GROUP_END || state(r) == LST_STATE_RETURNED);
      } else if (e.what == "comm") {
        ok = kind(r) == LST_KIND_COMM && r->api == LST_API_NCCL && r->op == e.v[0] &&
             r->u.comm.size == e.v[1] && r->u.comm.rank == e.v[2];
        if (ok && e.v[0] == LST_COMM_NCCL_SPLIT) {
          ok = r->u.comm.color == e.v[3] && r->u.comm.parent == ids['A'][rank] && r->u.comm.parent != 0;
        }
        if (ok && e.comm == 'B' && e.v[0] == LST_COMM_NCCL_INIT_RANK && t.file.string(r->aux) != "B")
          FAILF("%s: communicator name '%s', want 'B'", where.c_str(),
                std::string(t.file.string(r->aux)).c_str());
        if (ok) {
          auto [it, fresh] = ids[e.comm].emplace(rank, r->comm);
          if (!fresh && it->second != r->comm)
            FAILF("%s: communicator %016llx changed id", where.c_str(), (unsigned long long)r->comm);
        }
      } else if (e.what == "mpi") {
        ok = kind(r) == LST_KIND_COLLECTIVE && r->api == LST_API_MPI && r->op == e.v[0];
      }
      if (!ok) {
        FAILF(
            "%s: recorded as %s %s (op %u, count %llu, dtype %u/%u, redop %u, root/peer %d, flags %#x, state "
            "%s)",
            where.c_str(), lockstep::format::kind_name(uint8_t(kind(r))),
            lockstep::format::op_name(*r).c_str(), r->op, (unsigned long long)r->u.coll.count, r->dtype,
            r->u.coll.dtype_size, r->redop, r->u.coll.root_or_peer, flags(r),
            lockstep::format::state_name(uint8_t(state(r))));
        continue;
      }
      const auto& site = sites[i];
      const std::string file = fs::path(site.file).filename().string();
      if (file != "sequence_program.cc" || int(site.line) != e.line)
        FAILF("%s: call site %s, want sequence_program.cc:%d%s%s", where.c_str(), site.site(true).c_str(),
              e.line, site.problem.empty() ? "" : ": ", site.problem.c_str());
    }
    if (nccl_collectives < 1000) FAILF("rank %d: only %zu NCCL collectives checked", rank, nccl_collectives);
    std::printf("rank %d: %zu records checked, %zu NCCL collectives, call sites by %s\n", rank, got.size(),
                nccl_collectives, symbolizer.tool().c_str());
  }

  // Cross-rank identity: one id per communicator on all its members, distinct communicators apart.
  auto same = [&](char label, std::vector<int> ranks) {
    for (int r : ranks)
      if (!ids[label].count(r) || ids[label][r] != ids[label][ranks[0]])
        FAILF("communicator %c: rank %d's id differs from rank %d's", label, r, ranks[0]);
  };
  same('A', {0, 1, 2, 3});
  same('B', {1, 2, 3});
  same('S', {0, 2});
  same('S', {1, 3});
  if (ids['B'].count(0)) FAILF("rank 0 recorded communicator B it is not a member of");
  std::set<uint64_t> distinct{ids['A'][0], ids['B'][1], ids['S'][0], ids['S'][1]};
  if (distinct.size() != 4 || distinct.count(0))
    FAILF("communicators A, B, S(even), S(odd) do not have 4 distinct ids");
  return g_errors ? 1 : 0;
}

// ---- failures ------------------------------------------------------------------------------------

int check_failures(const std::string& trace_dir) {
  std::map<int, Trace> traces = load_traces(trace_dir);
  if (traces.empty()) FAILF("%s: no trace", trace_dir.c_str());
  for (auto& [rank, t] : traces) {
    size_t failed = 0, nccl_comms = 0, warnings = 0;
    for (const lst_record* r : t.records) {
      if (kind(r) == LST_KIND_COMM && r->api == LST_API_NCCL) ++nccl_comms;
      if (kind(r) == LST_KIND_COLLECTIVE && r->api == LST_API_NCCL) {
        if (state(r) == LST_STATE_FAILED && r->comm == 0) {
          ++failed;
        } else {
          FAILF("rank %d: NCCL %s in state %s on communicator %016llx, want FAILED on none", rank,
                lockstep::format::op_name(*r).c_str(), lockstep::format::state_name(uint8_t(state(r))),
                (unsigned long long)r->comm);
        }
      }
      if (kind(r) == LST_KIND_MARKER && r->op == LST_MARK_TRACER_WARNING &&
          t.file.string(r->aux).find("NCCL") != std::string_view::npos)
        ++warnings;
    }
    if (nccl_comms)
      FAILF("rank %d: %zu NCCL communicators registered although creation failed", rank, nccl_comms);
    if (failed != 2) FAILF("rank %d: %zu failed NCCL collectives recorded, want 2", rank, failed);
    const char* mode = std::getenv("LOCKSTEP_TEST_EXPECT_WARNINGS");
    if (mode && warnings != size_t(std::atoi(mode)))
      FAILF("rank %d: %zu tracer warnings about NCCL, want %s", rank, warnings, mode);
    std::printf("rank %d: %zu failed collectives, %zu NCCL communicators, %zu warnings\n", rank, failed,
                nccl_comms, warnings);
  }
  return g_errors ? 1 : 0;
}

// ---- management ----------------------------------------------------------------------------------

// numerics_test: the communicator events test_management() and main() cause, in order, per rank.
int check_management(const std::string& trace_dir, int nranks) {
  std::map<int, Trace> traces = load_traces(trace_dir);
  if (int(traces.size()) != nranks)
    FAILF("%s: %zu traces, want %d", trace_dir.c_str(), traces.size(), nranks);
  struct Want {
    const char* label;
    unsigned op;
    int size, rank;  // -2: not checked
    bool parent_is_a;
  };
  std::map<std::string, std::map<int, uint64_t>> ids;  // label -> rank -> id
  for (auto& [rank, t] : traces) {
    relevant(t, rank);  // no MPI communicator from the stand-in's internals
    std::vector<Want> want = {
        {"a", LST_COMM_NCCL_INIT_RANK, nranks, rank, false},
        {"b", LST_COMM_NCCL_INIT_RANK, nranks, nranks - 1 - rank, false},
        {rank % 2 ? "half-odd" : "half-even", LST_COMM_NCCL_SPLIT, (nranks + 1 - rank % 2) / 2, -2, true},
        {rank % 2 ? "half-odd" : "half-even", LST_COMM_NCCL_DESTROY, -2, -2, false}};
    if (rank != 0) {
      want.push_back({"rest", LST_COMM_NCCL_SPLIT, nranks - 1, rank - 1, true});
      want.push_back({"rest", LST_COMM_NCCL_DESTROY, nranks - 1, rank - 1, false});
      want.push_back({"shrunk", LST_COMM_NCCL_SHRINK, nranks - 1, rank - 1, true});
      want.push_back({"shrunk", LST_COMM_NCCL_FINALIZE, nranks - 1, rank - 1, false});
    }
    want.push_back({"self", LST_COMM_NCCL_INIT_ALL, 1, 0, false});
    want.push_back({"self", LST_COMM_NCCL_DESTROY, 1, 0, false});
    want.push_back({"b", LST_COMM_NCCL_DESTROY, nranks, nranks - 1 - rank, false});
    want.push_back({"a", LST_COMM_NCCL_ABORT, nranks, rank, false});
    std::vector<const lst_record*> got;
    for (const lst_record* r : t.records)
      if (kind(r) == LST_KIND_COMM && r->api == LST_API_NCCL) got.push_back(r);
    if (got.size() != want.size())
      FAILF("rank %d: %zu NCCL communicator events, want %zu", rank, got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
      const lst_record* r = got[i];
      const Want& w = want[i];
      auto [it, fresh] = ids[w.label].emplace(rank, r->comm);
      const bool ok = r->op == w.op && (w.size == -2 || r->u.comm.size == w.size) &&
                      (w.rank == -2 || r->u.comm.rank == w.rank) && (fresh || it->second == r->comm) &&
                      (!w.parent_is_a || (r->u.comm.parent == ids["a"][rank] && r->u.comm.parent != 0));
      if (!ok)
        FAILF("rank %d: event %zu: %s of %016llx (size %d rank %d parent %016llx), want %s of '%s'", rank, i,
              lockstep::format::comm_op_name(r->op), (unsigned long long)r->comm, r->u.comm.size,
              r->u.comm.rank, (unsigned long long)r->u.comm.parent,
              lockstep::format::comm_op_name(uint8_t(w.op)), w.label);
      if (ok && w.op == LST_COMM_NCCL_INIT_ALL) {
        const std::vector<int32_t> members = t.file.members(r->members);
        if (members.size() != 1 || members[0] != rank)
          FAILF("rank %d: ncclCommInitAll members not [%d]", rank, rank);
      }
    }
  }
  auto same = [&](const char* label, int from) {
    for (int r = from; r < nranks; r += (std::strncmp(label, "half", 4) == 0 ? 2 : 1))
      if (ids[label][r] != ids[label][from])
        FAILF("communicator '%s': rank %d's id differs from rank %d's", label, r, from);
  };
  same("a", 0);
  same("b", 0);
  same("half-even", 0);
  if (nranks > 1) same("half-odd", 1);
  same("rest", 1);
  same("shrunk", 1);
  std::set<uint64_t> distinct{ids["a"][0], ids["b"][0], ids["half-even"][0], ids["rest"][1],
                              ids["shrunk"][1]};
  if (nranks > 1) distinct.insert(ids["half-odd"][1]);
  for (int r = 0; r < nranks; ++r) distinct.insert(ids["self"][r]);  // a one-process clique is its own
  if (distinct.size() != size_t{5} + (nranks > 1 ? 1 : 0) + size_t(nranks))
    FAILF("communicator ids are not all distinct");
  if (!g_errors) std::printf("%d ranks: communicator events and ids as the program made them\n", nranks);
  return g_errors ? 1 : 0;
}

// ---- threads ---------------------------------------------------------------------------------------

// threads_program: per rank NTHREADS communicators, each with CALLS collectives alternating
// AllReduce/AllGather, all of count t + 1 for thread t.
int check_threads(const std::string& trace_dir, int nthreads, int calls) {
  std::map<int, Trace> traces = load_traces(trace_dir);
  if (traces.size() < 2) FAILF("%s: %zu traces, want at least 2", trace_dir.c_str(), traces.size());
  std::map<uint64_t, std::set<uint64_t>> ids_by_count;  // count -> communicator ids seen on any rank
  for (auto& [rank, t] : traces) {
    std::map<uint64_t, std::vector<const lst_record*>> by_comm;
    size_t created = 0;
    for (const lst_record* r : t.records) {
      if (kind(r) == LST_KIND_COMM && r->api == LST_API_NCCL && r->op == LST_COMM_NCCL_INIT_RANK) ++created;
      if (kind(r) == LST_KIND_COLLECTIVE && r->api == LST_API_NCCL) by_comm[r->comm].push_back(r);
    }
    if (created != size_t(nthreads))
      FAILF("rank %d: %zu communicators created, want %d", rank, created, nthreads);
    if (by_comm.size() != size_t(nthreads))
      FAILF("rank %d: collectives on %zu communicators, want %d", rank, by_comm.size(), nthreads);
    for (auto& [comm, recs] : by_comm) {
      if (comm == 0) FAILF("rank %d: collectives on an unregistered communicator", rank);
      if (recs.size() != size_t(calls))
        FAILF("rank %d: communicator %016llx has %zu collectives, want %d", rank, (unsigned long long)comm,
              recs.size(), calls);
      const uint64_t count = recs.empty() ? 0 : recs[0]->u.coll.count;
      ids_by_count[count].insert(comm);
      for (size_t i = 0; i < recs.size(); ++i) {
        const lst_record* r = recs[i];
        const unsigned want_op = i % 2 == 0 ? LST_OP_ALLREDUCE : LST_OP_ALLGATHER;
        if (r->u.coll.seq != i || r->op != want_op || r->u.coll.count != count ||
            state(r) != LST_STATE_RETURNED)
          FAILF("rank %d: communicator %016llx call %zu: seq %u op %u count %llu state %u", rank,
                (unsigned long long)comm, i, r->u.coll.seq, r->op, (unsigned long long)r->u.coll.count,
                state(r));
      }
    }
    std::printf("rank %d: %zu communicators, %zu collectives each\n", rank, by_comm.size(),
                by_comm.empty() ? size_t(0) : by_comm.begin()->second.size());
  }
  // Thread t's communicator has one id on every rank.
  if (ids_by_count.size() != size_t(nthreads))
    FAILF("%zu distinct per-thread counts, want %d", ids_by_count.size(), nthreads);
  for (auto& [count, ids] : ids_by_count)
    if (ids.size() != 1)
      FAILF("the communicators of count %llu have %zu ids across ranks", (unsigned long long)count,
            ids.size());
  return g_errors ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 5 && std::strcmp(argv[1], "sequence") == 0)
      return check_sequence(argv[2], argv[3], std::atoi(argv[4]));
    if (argc == 3 && std::strcmp(argv[1], "failures") == 0) return check_failures(argv[2]);
    if (argc == 4 && std::strcmp(argv[1], "management") == 0)
      return check_management(argv[2], std::atoi(argv[3]));
    if (argc == 5 && std::strcmp(argv[1], "threads") == 0)
      return check_threads(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_check: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: trace_check sequence TRACE_DIR EXPECTED_DIR NRANKS | failures TRACE_DIR | threads "
               "TRACE_DIR NTHREADS CALLS | management TRACE_DIR NRANKS\n");
  return 2;
}
