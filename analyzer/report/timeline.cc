// Builds the drawable timeline of a job from the checker's model: call order from the sequences, the
// rest (times, arguments, call site, device times) from the records themselves.
#include "lockstep/report/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "lockstep/check/op_semantics.h"
#include "lockstep/format/reader.h"

namespace lockstep::report {

using check::Job;
using check::Rank;

std::string comm_label(const check::CommRef& c) {
  if (!c.name.empty()) return c.name;
  return fmt::format("comm {:#x}", c.id);
}

Timeline::Timeline(const Job& job, TimelineOptions options) : job_(job), opt_(std::move(options)) {
  std::map<uint64_t, TimelineComm> by_id;
  std::vector<uint64_t> order;
  for (auto& r : job.ranks) {
    for (auto& s : r.seqs) {
      auto [it, fresh] = by_id.try_emplace(s.comm);
      TimelineComm& c = it->second;
      if (fresh) {
        order.push_back(s.comm);
        c.ref.id = s.comm;
        c.min_length = SIZE_MAX;
      }
      if (const check::CommView* v = r.comm(s.comm)) {
        if (c.ref.name.empty()) c.ref.name = v->name;
        if (c.ref.size == LST_NONE) c.ref.size = v->size;
        if (c.ref.api == LST_API_NONE) c.ref.api = v->api;
      }
      c.ranks.push_back(r.world_rank);
      c.lengths.push_back(s.size());
      c.min_length = std::min(c.min_length, s.size());
    }
    end_ns = std::max(end_ns, time_of(r, r.last_t_ns));
  }
  if (opt_.names)
    for (const check::CommRef& c : *opt_.names)
      if (by_id.count(c.id)) by_id[c.id].ref = c;
  for (uint64_t id : order) {
    comm_index_[id] = int(comms.size());
    comms.push_back(std::move(by_id[id]));
    if (comms.back().ref.name.empty()) comms.back().ref.name = comm_label(comms.back().ref);
  }
}

int Timeline::comm_index(uint64_t id) const {
  auto it = comm_index_.find(id);
  return it == comm_index_.end() ? -1 : it->second;
}

int64_t Timeline::time_of(const Rank& r, uint64_t t_ns) const {
  if (!r.start_wall_ns || !job_.min_wall_ns) return int64_t(t_ns);
  return int64_t(r.start_wall_ns) + (int64_t(t_ns) - int64_t(r.start_mono_ns)) - int64_t(job_.min_wall_ns);
}

std::vector<Lane> Timeline::lanes(const Rank& r) {
  std::vector<Lane> out;
  lanes(r, out);
  return out;
}

void Timeline::lanes(const Rank& r, std::vector<Lane>& out) {
  out.resize(r.seqs.size());
  for (size_t si = 0; si < r.seqs.size(); ++si) {
    out[si].rank = r.world_rank;
    out[si].comm = uint32_t(comm_index(r.seqs[si].comm));
    out[si].calls.clear();
    out[si].calls.reserve(r.seqs[si].size());
  }
  // Each batch's calls staged in one array, then appended lane by lane: the kind loop then carries no
  // vector growth of its own. Copied field by field: the call is built in registers or on the stack,
  // and copying it whole reads it back in 16-byte pieces that its narrower stores cannot forward to
  // (the loop took twice the time that way).
  struct Staged {
    uint32_t lane;
    Call call;
  };
  std::vector<Staged> staged(Rank::kCallBatch);
  struct Append {
    Lane* lanes;
    Staged* staged;
    size_t n = 0;
    void operator()(uint32_t lane, uint32_t /*pos*/, const Call& c) {
      Staged& s = staged[n++];
      s.lane = lane;
      s.call.kind = c.kind;
      s.call.state = c.state;
      s.call.t0_ns = c.t0_ns;
      s.call.t1_ns = c.t1_ns;
      s.call.returned = c.returned;
      s.call.device = c.device;
      s.call.dev0_ns = c.dev0_ns;
      s.call.dev1_ns = c.dev1_ns;
    }
    void end_batch() {
      for (size_t i = 0; i < n; ++i) lanes[staged[i].lane].calls.push_back(staged[i].call);
      n = 0;
    }
  } append{out.data(), staged.data()};
  each_call(r, append);
}

Timeline::RankCalls::RankCalls(Timeline& tl, const Rank& r) : cache(256), tl_(tl), r_(r) {
  // Runtime spans name the tensor of the MPI/NCCL calls they enclose.
  names_tensors = !r.rt.empty();
  shift = tl.time_of(r, 0);
  // Device times, by the id of the collective record they belong to. Only the GPU capture of NCCL calls
  // writes them: a rank without an NCCL communicator (or with calls on one it has no record of) is
  // spared that pass over its whole trace.
  bool maybe_device = false;
  for (auto& s : r.seqs) {
    const check::CommView* v = r.comm(s.comm);
    maybe_device |= !v || v->api == LST_API_NCCL;
  }
  if (tl.opt_.device && maybe_device) {
    const check::RecordSource& src = *r.source;
    const lst_record* slots = src.contiguous();
    for (uint64_t id = src.first_id(); id < src.end_id(); ++id) {
      const lst_record* rec = slots ? slots + (id - src.first_id()) : src.record(id);
      if (!rec) continue;
      const uint32_t word = __atomic_load_n(&rec->word, __ATOMIC_ACQUIRE);
      if (word && LST_WORD_KIND(word) == LST_KIND_DEVICE)
        device_[rec->u.device.ref] = {rec->u.device.start_ns, rec->u.device.end_ns};
    }
  }
  with_device = !device_.empty();
}

// The lanes hold what the page and the export need: the rank's mapped records go, so that a 1,024-rank
// job is read once rank by rank rather than kept resident (a hint; reading again works).
Timeline::RankCalls::~RankCalls() { r_.source->release(r_.source->first_id(), r_.source->end_id()); }

// Call sites: each distinct address once per rank, shared across ranks by module and offset.
uint32_t Timeline::RankCalls::site(uint64_t caller) {
  auto it = site_of_.find(caller);
  if (it != site_of_.end()) return it->second;
  check::Site s;
  s.address = caller;
  int m = r_.module_of(caller);
  if (m >= 0) {
    s.module = r_.modules[size_t(m)].path;
    s.offset = caller - r_.modules[size_t(m)].base;
  }
  std::pair<std::string, uint64_t> key =
      m >= 0 ? std::pair(s.module, s.offset) : std::pair(std::string(), caller);
  // Ranks may be read on several threads at once: the shared tables, and the symbolizer, one at a time.
  std::lock_guard<std::mutex> lock(tl_.tables_mutex);
  auto [kit, fresh] = tl_.site_index_.try_emplace(key, uint32_t(tl_.sites.size()));
  if (fresh) {
    if (tl_.opt_.symbolize && caller) tl_.opt_.symbolize(r_, s);
    tl_.sites.push_back(std::move(s));
  }
  site_of_[caller] = kit->second;
  return kit->second;
}

// The runtime span enclosing the call names its tensor (the latest-starting one that encloses it); they
// are sorted by start, and only the few before the call are looked at.
uint32_t Timeline::RankCalls::tensor(const lst_record& rec) const {
  if (rec.api == LST_API_RT) return rec.aux;
  auto it = std::upper_bound(r_.rt.begin(), r_.rt.end(), rec.t_ns,
                             [](uint64_t t, const check::RtSpan& s) { return t < s.t0; });
  for (int n = 0; n < 64 && it != r_.rt.begin(); ++n) {
    --it;
    if (it->t0 <= rec.t_ns && rec.t_ns <= it->t1) return it->name;
  }
  return 0;
}

void Timeline::RankCalls::device_times(Call& c, uint64_t id) const {
  auto d = device_.find(id);
  if (d == device_.end() || !d->second.second) return;
  c.device = true;
  c.dev0_ns = int64_t(d->second.first) + shift;
  c.dev1_ns = int64_t(d->second.second) + shift;
}

uint32_t Timeline::RankCalls::learn(const lst_record& rec, const KindKey& key) {
  const bool with_root = check::is_rooted(rec.op), with_peer = rec.op == LST_OP_SEND || rec.op == LST_OP_RECV;
  CallKind k;
  k.api = rec.api;
  k.op = rec.op;
  k.dtype = rec.dtype;
  k.redop = rec.redop;
  k.flags = uint8_t(LST_WORD_FLAGS(rec.word));
  k.count = rec.u.coll.count;
  k.dtype_size = rec.u.coll.dtype_size;
  if (with_root) k.root = rec.u.coll.root_or_peer;
  if (with_peer) k.peer = rec.u.coll.root_or_peer;
  k.tensor = key.tensor ? std::string(r_.source->string(key.tensor)) : std::string();
  k.site = site(rec.caller);
  k.operation = format::op_name(rec);
  std::string full = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|", k.api, k.op, k.dtype, k.redop, k.flags,
                                 k.count, k.dtype_size, k.root, k.peer, k.site, k.operation);
  full += k.tensor;
  std::lock_guard<std::mutex> lock(tl_.tables_mutex);
  auto [it, fresh] = tl_.kind_index_.try_emplace(full, uint32_t(tl_.kinds.size()));
  if (fresh) tl_.kinds.push_back(std::move(k));
  return it->second;
}

}  // namespace lockstep::report
