// Builds the drawable timeline of a job from the checker's model: call order from the sequences, the
// rest (times, arguments, call site, device times) from the records themselves.
#include "lockstep/report/timeline.h"

#include <fmt/format.h>

#include <algorithm>
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
  // Call sites: each distinct address once per rank, shared across ranks by module and offset.
  std::unordered_map<uint64_t, uint32_t> site_of;
  auto site = [&](uint64_t caller) -> uint32_t {
    auto it = site_of.find(caller);
    if (it != site_of.end()) return it->second;
    check::Site s;
    s.address = caller;
    int m = r.module_of(caller);
    if (m >= 0) {
      s.module = r.modules[size_t(m)].path;
      s.offset = caller - r.modules[size_t(m)].base;
    }
    std::pair<std::string, uint64_t> key =
        m >= 0 ? std::pair(s.module, s.offset) : std::pair(std::string(), caller);
    auto [kit, fresh] = site_index_.try_emplace(key, uint32_t(sites.size()));
    if (fresh) {
      if (opt_.symbolize && caller) opt_.symbolize(r, s);
      sites.push_back(std::move(s));
    }
    site_of[caller] = kit->second;
    return kit->second;
  };
  // Runtime spans name the tensor of the MPI/NCCL calls they enclose; they are few, sorted by start.
  auto tensor_at = [&](const lst_record& rec) -> std::string {
    if (rec.api == LST_API_RT) return rec.aux ? std::string(r.source->string(rec.aux)) : "";
    const check::RtSpan* best = nullptr;
    for (auto& s : r.rt)
      if (s.t0 <= rec.t_ns && rec.t_ns <= s.t1 && (!best || s.t0 > best->t0)) best = &s;
    return best ? std::string(r.source->string(best->name)) : "";
  };
  // Device times, by the id of the collective record they belong to.
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> device;
  if (opt_.device) {
    const check::RecordSource& src = *r.source;
    for (uint64_t id = src.first_id(); id < src.end_id(); ++id) {
      const lst_record* rec = src.record(id);
      if (rec && LST_WORD_KIND(rec->word) == LST_KIND_DEVICE)
        device[rec->u.device.ref] = {rec->u.device.start_ns, rec->u.device.end_ns};
    }
  }
  std::vector<Lane> out;
  std::unordered_map<uint64_t, uint32_t> kind_of;
  r.materialize();  // a streamed rank: its calls in order, read again from its trace
  for (auto& s : r.seqs) {
    Lane lane;
    lane.rank = r.world_rank;
    lane.comm = uint32_t(comm_index(s.comm));
    lane.calls.reserve(s.ref.size());
    for (size_t i = 0; i < s.ref.size(); ++i) {
      const check::RecordRef ref = s.ref[i];
      const lst_record* rec = r.record(ref);
      if (!rec) continue;
      // The alignment signature already folds the arguments, the name and the call site together:
      // it keys a per-rank cache so that the full description is built once per distinct call.
      uint64_t fast = s.sig[i] ^ (uint64_t(rec->word >> 24) << 56) ^ rec->caller;
      auto cached = kind_of.find(fast);
      uint32_t kind_id;
      if (cached != kind_of.end()) {
        kind_id = cached->second;
      } else {
        CallKind k;
        k.api = rec->api;
        k.op = rec->op;
        k.dtype = rec->dtype;
        k.redop = rec->redop;
        k.flags = uint8_t(LST_WORD_FLAGS(rec->word));
        k.count = rec->u.coll.count;
        k.dtype_size = rec->u.coll.dtype_size;
        if (check::is_rooted(rec->op)) k.root = rec->u.coll.root_or_peer;
        if (rec->op == LST_OP_SEND || rec->op == LST_OP_RECV) k.peer = rec->u.coll.root_or_peer;
        k.tensor = r.rt.empty() && rec->api != LST_API_RT ? std::string() : tensor_at(*rec);
        k.site = site(rec->caller);
        k.operation = format::op_name(*rec);
        std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|", k.api, k.op, k.dtype, k.redop,
                                      k.flags, k.count, k.dtype_size, k.root, k.peer, k.site, k.operation);
        key += k.tensor;
        auto [it, fresh] = kind_index_.try_emplace(key, uint32_t(kinds.size()));
        if (fresh) kinds.push_back(std::move(k));
        kind_id = it->second;
        kind_of.emplace(fast, kind_id);
      }
      Call c;
      c.kind = kind_id;
      c.state = uint8_t(LST_WORD_STATE(rec->word));
      c.t0_ns = time_of(r, rec->t_ns);
      if (c.state >= LST_STATE_RETURNED) {  // FAILED calls returned too, with an error
        c.returned = true;
        c.t1_ns = c.t0_ns + int64_t(rec->t_return_us) * 1000;
      }
      if (!device.empty()) {
        auto d = device.find(r.source->first_id() + ref);
        if (d != device.end() && d->second.second) {
          c.device = true;
          c.dev0_ns = time_of(r, d->second.first);
          c.dev1_ns = time_of(r, d->second.second);
        }
      }
      lane.calls.push_back(c);
    }
    out.push_back(std::move(lane));
  }
  // The lanes hold what the page and the export need: let the rank's mapped records go, so that a
  // 1,024-rank job is read once rank by rank rather than kept resident (a hint; reading again works).
  r.release();
  r.source->release(r.source->first_id(), r.source->end_id());
  return out;
}

}  // namespace lockstep::report
