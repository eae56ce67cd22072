// Test helper: builds ranks record by record, as the tracer would write them, into the checker's
// in-memory model (MemorySource + ingest), and analyzes them, so analysis tests need no files and no MPI.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/check/check.h"
#include "lockstep/check/model.h"

namespace lockstep::check::test {

constexpr uint64_t kWorld = 0x1111;

struct Call {
  uint8_t op = LST_OP_ALLREDUCE;
  uint64_t count = 256;
  uint8_t dtype = LST_DT_FLOAT32;
  uint32_t dtype_size = 4;
  uint8_t redop = LST_RED_SUM;
  int32_t root = LST_NONE;
  uint8_t state = LST_STATE_RETURNED;
  uint8_t flags = 0;
  uint64_t caller = 0x1000;  // call site (the module covers every address)
  uint8_t api = LST_API_MPI;
  std::string name;  // runtime tensor name (api rt)
};

inline Call allreduce(uint64_t count = 256, uint64_t site = 0x1000) {
  Call c;
  c.count = count;
  c.caller = site;
  return c;
}

class RankBuilder {
 public:
  RankBuilder(int32_t world_rank, int32_t world_size) : src_(std::make_shared<MemorySource>()) {
    rank_.world_rank = world_rank;
    rank_.world_size = world_size;
    rank_.file = "rank-" + std::to_string(world_rank) + ".test.lstrace";
    rank_.host = "test-host";
    rank_.pid = 1000 + uint32_t(world_rank);
    rank_.modules.push_back({"/test/app", "", 0, 0, 1ull << 48, 0});
    std::vector<int32_t> all;
    for (int32_t i = 0; i < world_size; ++i) all.push_back(i);
    comm(kWorld, all, "MPI_COMM_WORLD", LST_COMM_WORLD);
  }

  uint32_t str(const std::string& s) {
    src_->strings.push_back(s);
    return uint32_t(src_->strings.size());
  }

  RankBuilder& comm(uint64_t id, const std::vector<int32_t>& members, const std::string& name,
                    uint8_t op = LST_COMM_SPLIT, uint8_t api = LST_API_MPI) {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_COMM, LST_STATE_RETURNED, 0);
    r.op = op;
    r.api = api;
    r.comm = id;
    r.u.comm.size = int32_t(members.size());
    r.u.comm.rank = LST_NONE;
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == rank_.world_rank) r.u.comm.rank = int32_t(i);
    src_->blobs.push_back(members);
    r.members = uint32_t(src_->blobs.size());
    r.aux = str(name);
    push(r);
    return *this;
  }

  RankBuilder& call(uint64_t comm, const Call& c) {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_COLLECTIVE, c.state, c.flags);
    r.op = c.op;
    r.api = c.api;
    r.dtype = c.dtype;
    r.redop = c.redop;
    r.comm = comm;
    r.u.coll.seq = next_seq_[comm]++;
    r.u.coll.root_or_peer = c.root;
    r.u.coll.dtype_size = c.dtype_size;
    r.u.coll.count = c.count;
    r.caller = c.caller;
    if (!c.name.empty()) r.aux = str(c.name);
    push(r);
    return *this;
  }
  // An MPI point-to-point call (format 1.1): flag P2P, the tag in seq, the peer's rank in comm (or
  // LST_ANY_SOURCE / LST_PROC_NULL); not numbered on the communicator.
  RankBuilder& p2p(uint64_t comm, uint8_t op, int32_t peer, int32_t tag = 0,
                   uint8_t state = LST_STATE_RETURNED, uint64_t caller = 0x2000, uint8_t flags = 0) {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_COLLECTIVE, state, LST_F_P2P | flags);
    r.op = op;
    r.api = LST_API_MPI;
    r.dtype = LST_DT_FLOAT64;
    r.comm = comm;
    r.u.coll.seq = uint32_t(tag);
    r.u.coll.root_or_peer = peer;
    r.u.coll.dtype_size = 8;
    r.u.coll.count = 4;
    r.caller = caller;
    push(r);
    return *this;
  }
  RankBuilder& calls(uint64_t comm, const Call& c, int n) {
    for (int i = 0; i < n; ++i) call(comm, c);
    return *this;
  }
  RankBuilder& marker(uint8_t op, uint8_t state = LST_STATE_RETURNED, uint64_t value = 0) {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_MARKER, state, 0);
    r.op = op;
    r.u.marker.value = value;
    push(r);
    return *this;
  }
  RankBuilder& finalize() { return marker(LST_MARK_MPI_FINALIZE); }
  // Records from here on are stamped from `t_ns` on (the clock only moves forward).
  RankBuilder& clock_at(uint64_t t_ns) {
    if (t_ns > t_) t_ = t_ns;
    return *this;
  }
  // (2.0) A marker that names another record (`ref`: its id), such as an end marker naming the call the
  // process ended inside, or an MPI_ERROR marker with its class text.
  RankBuilder& marker_ref(uint8_t op, uint64_t ref, uint64_t value = 0, const std::string& text = "") {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_MARKER, 0, 0);
    r.op = op;
    r.u.marker.value = value;
    r.u.marker.ref = ref;
    if (!text.empty()) r.aux = str(text);
    push(r);
    return *this;
  }
  // (2.0) A communicator creation call on `parent` (LST_MARK_COMM_CREATE) in `state`, with its colour.
  RankBuilder& creation(uint64_t parent, uint8_t comm_op, int64_t color, uint8_t state) {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_MARKER, state, 0);
    r.op = LST_MARK_COMM_CREATE;
    r.comm = parent;
    r.u.marker.value = comm_op;
    r.u.marker.extra = uint64_t(color);
    r.caller = 0x4000;
    push(r);
    return *this;
  }
  // lockstep_annotate(text).
  RankBuilder& annotate(const std::string& text) {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_MARKER, 0, 0);
    r.op = LST_MARK_ANNOTATION;
    r.aux = str(text);
    push(r);
    return *this;
  }
  // The exit hook's PROCESS_END marker: the status is UINT64_MAX, as the hook cannot see it.
  RankBuilder& process_end(uint64_t status = UINT64_MAX) { return marker(LST_MARK_PROCESS_END, 0, status); }
  // A WAIT record still entered, on the request of the record with this id (0: any).
  RankBuilder& wait_entered(uint64_t first_ref = 0) {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_WAIT, LST_STATE_ENTERED, 0);
    r.op = LST_WAIT_WAIT;
    r.u.wait.first_ref = first_ref;
    r.u.wait.nrequests = 1;
    push(r);
    return *this;
  }
  // A STACK record for the record with id `ref` (LOCKSTEP_TRACE_STACK): two frames of its own and, when
  // `list` is not empty, a frame list with the rest (format 2.2). Sealed as a 1.x record (slot magic),
  // which is what the in-memory source's format says.
  RankBuilder& stack(uint64_t ref, uint64_t f0, uint64_t f1, const std::vector<uint64_t>& list = {}) {
    lst_record r{};
    r.word = LST_WORD(LST_KIND_STACK, 0, 0) | LST_SLOT_MAGIC;
    r.u.stack.ref = ref;
    r.u.stack.frames[0] = f0;
    r.u.stack.frames[1] = f1;
    if (!list.empty())
      r.aux = str(std::string(reinterpret_cast<const char*>(list.data()), list.size() * sizeof(uint64_t)));
    push(r);
    return *this;
  }
  uint64_t last_id() const { return src_->records.size() - 1; }
  // Ring mode: the first n collectives on `comm` were overwritten (numbers advance, no records).
  RankBuilder& lost(uint64_t comm, uint32_t n) {
    rank_.ring = true;
    next_seq_[comm] += n;
    return *this;
  }

  // `end` as classify_end would find it (tests do not look at /proc).
  // LOCKSTEP_TEST_INGEST=stream builds through the streaming ingest, so that every analysis test runs
  // on both paths (the check.stream.* copies of these tests).
  Rank build(EndState end) {
    const char* mode = std::getenv("LOCKSTEP_TEST_INGEST");
    if (mode && std::string(mode) == "stream") {
      ingest_stream(rank_, src_);
      resolve_stream(rank_);
    } else {
      ingest(rank_, src_);
    }
    rank_.end = end;
    return std::move(rank_);
  }

 private:
  void push(lst_record r) {
    r.t_ns = ++t_;
    src_->records.push_back(r);
  }
  Rank rank_;
  std::shared_ptr<MemorySource> src_;
  std::map<uint64_t, uint32_t> next_seq_;
  uint64_t t_ = 1000;
};

inline Job make_job(std::vector<Rank> ranks) {
  Job j;
  j.job_id = "test";
  for (auto& r : ranks) j.ranks.push_back(std::move(r));
  finish_job(j);
  return j;
}

// n ranks of an n-rank job, nothing recorded yet.
inline std::vector<RankBuilder> ranks(int n) {
  std::vector<RankBuilder> v;
  for (int i = 0; i < n; ++i) v.emplace_back(i, n);
  return v;
}

// Builds the ranks into one job and analyzes it: rank i ends as ends[i] (exited where ends is shorter);
// `stopped` is what `lockstep run` says it did to the job (empty: nothing).
inline Result run(std::vector<RankBuilder>& b, const std::vector<EndState>& ends = {},
                  const std::string& stopped = "") {
  std::vector<Rank> rs;
  for (size_t i = 0; i < b.size(); ++i)
    rs.push_back(b[i].build(i < ends.size() ? ends[i] : EndState::kExited));
  Job job = make_job(std::move(rs));
  job.stopped_by_run = stopped;
  return analyze(job);
}

// The first finding of kind `k`, or null.
inline const Finding* find(const Result& r, Kind k) {
  for (auto& f : r.findings)
    if (f.kind == k) return &f;
  return nullptr;
}

// Whether the hang finding has a note containing `text`.
inline bool hang_says(const Result& r, const std::string& text) {
  const Finding* h = find(r, Kind::kHang);
  return h && std::any_of(h->notes.begin(), h->notes.end(),
                          [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// The findings in words, for a failed expectation's message.
inline std::string dump(const Result& r) {
  std::string s;
  for (auto& f : r.findings) {
    s += std::string(kind_name(f.kind)) + ": " + f.explanation + "\n";
    for (auto& n : f.notes) s += "  note: " + n + "\n";
    for (auto& d : f.detail) s += "  rank " + std::to_string(d.rank) + ": " + d.note + "\n";
  }
  return s;
}

}  // namespace lockstep::check::test
