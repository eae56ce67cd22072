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
  for_each_call(r, [&](const LaneCall* at, size_t n) {
    for (const LaneCall* end = at + n; at != end; ++at) out[at->lane].calls.push_back(at->call);
  });
}

void Timeline::for_each_call(const Rank& r, const std::function<void(const LaneCall*, size_t)>& fn) {
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
    // Ranks may be read on several threads at once: the shared tables, and the symbolizer, one at a time.
    std::lock_guard<std::mutex> lock(tables_mutex);
    auto [kit, fresh] = site_index_.try_emplace(key, uint32_t(sites.size()));
    if (fresh) {
      if (opt_.symbolize && caller) opt_.symbolize(r, s);
      sites.push_back(std::move(s));
    }
    site_of[caller] = kit->second;
    return kit->second;
  };
  // Runtime spans name the tensor of the MPI/NCCL calls they enclose (the latest-starting one that
  // encloses the call); they are sorted by start, and only the few before the call are looked at.
  auto tensor_id = [&](const lst_record& rec) -> uint32_t {
    if (rec.api == LST_API_RT) return rec.aux;
    auto it = std::upper_bound(r.rt.begin(), r.rt.end(), rec.t_ns,
                               [](uint64_t t, const check::RtSpan& s) { return t < s.t0; });
    for (int n = 0; n < 64 && it != r.rt.begin(); ++n) {
      --it;
      if (it->t0 <= rec.t_ns && rec.t_ns <= it->t1) return it->name;
    }
    return 0;
  };
  // Device times, by the id of the collective record they belong to.
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> device;
  // Only the GPU capture of NCCL calls writes them: a rank without an NCCL communicator (or with calls on
  // one it has no record of) is spared that pass over its whole trace.
  bool maybe_device = false;
  for (auto& s : r.seqs) {
    const check::CommView* v = r.comm(s.comm);
    maybe_device |= !v || v->api == LST_API_NCCL;
  }
  if (opt_.device && maybe_device) {
    const check::RecordSource& src = *r.source;
    const lst_record* slots = src.contiguous();
    for (uint64_t id = src.first_id(); id < src.end_id(); ++id) {
      const lst_record* rec = slots ? slots + (id - src.first_id()) : src.record(id);
      if (!rec) continue;
      const uint32_t word = __atomic_load_n(&rec->word, __ATOMIC_ACQUIRE);
      if (word && LST_WORD_KIND(word) == LST_KIND_DEVICE)
        device[rec->u.device.ref] = {rec->u.device.start_ns, rec->u.device.end_ns};
    }
  }
  // What makes two calls the same kind, straight from the record; a small direct-mapped cache of them
  // (a rank repeats a handful of kinds) spares building the full description per call.
  struct KindKey {
    uint64_t a = ~0ull, count = 0, caller = 0;
    uint32_t tensor = 0, kind = 0;
  };
  std::vector<KindKey> cache(256);
  const bool has_rt = !r.rt.empty();
  // time_of(r, t) is t + shift: the rank's clock moved to the job's time origin.
  const int64_t shift = time_of(r, 0);
  // A kind met for the first time: described in full and numbered in the shared table. Out of line, so
  // that the loop below keeps what it uses in registers.
  auto learn = [&](const lst_record& rec, const KindKey& key) __attribute__((noinline)) -> uint32_t {
    const bool with_root = check::is_rooted(rec.op),
               with_peer = rec.op == LST_OP_SEND || rec.op == LST_OP_RECV;
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
    k.tensor = key.tensor ? std::string(r.source->string(key.tensor)) : std::string();
    k.site = site(rec.caller);
    k.operation = format::op_name(rec);
    std::string full = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|", k.api, k.op, k.dtype, k.redop,
                                   k.flags, k.count, k.dtype_size, k.root, k.peer, k.site, k.operation);
    full += k.tensor;
    std::lock_guard<std::mutex> lock(tables_mutex);
    auto [it, fresh] = kind_index_.try_emplace(full, uint32_t(kinds.size()));
    if (fresh) kinds.push_back(std::move(k));
    return it->second;
  };
  // Rank::for_each_call's batches, one for one.
  static_assert(Rank::kCallBatch <= kLaneCallBatch);
  std::vector<LaneCall> batch(kLaneCallBatch);
  r.for_each_call([&](const Rank::CallAt* at, size_t n) {
    // What every call reads, in locals: through the captures, each store into the batch could have
    // changed them, so the compiler would load them again for every call.
    KindKey* const slots = cache.data();
    const bool names_tensors = has_rt;
    const int64_t to_origin = shift;
    const bool with_device = !device.empty();
    LaneCall* lc = batch.data();
    for (const Rank::CallAt* end = at + n; at != end; ++at, ++lc) {
      if (end - at > 8) __builtin_prefetch(at[8].rec);
      const lst_record& rec = *at->rec;
      const bool with_root = check::is_rooted(rec.op),
                 with_peer = rec.op == LST_OP_SEND || rec.op == LST_OP_RECV;
      KindKey key;
      key.a = uint64_t(rec.api) | uint64_t(rec.op) << 8 | uint64_t(rec.dtype) << 16 |
              uint64_t(rec.redop) << 24 | uint64_t(LST_WORD_FLAGS(rec.word)) << 32 |
              uint64_t(with_root || with_peer ? uint16_t(rec.u.coll.root_or_peer) : 0) << 48;
      key.count = rec.u.coll.count ^ uint64_t(rec.u.coll.dtype_size) << 48 ^
                  (with_root || with_peer ? uint64_t(uint32_t(rec.u.coll.root_or_peer)) << 16 : 0);
      key.caller = rec.caller;
      key.tensor = names_tensors || rec.api == LST_API_RT ? tensor_id(rec) : 0;
      KindKey& slot = slots[(key.a ^ key.count * 0x9e3779b97f4a7c15ull ^ key.caller ^ key.tensor) *
                                0x2545f4914f6cdd1dull >>
                            56];
      uint32_t kind_id;
      if (__builtin_expect(slot.a == key.a && slot.count == key.count && slot.caller == key.caller &&
                               slot.tensor == key.tensor,
                           1)) {
        kind_id = slot.kind;
      } else {
        kind_id = learn(rec, key);
        key.kind = kind_id;
        slot = key;
      }
      lc->lane = at->seq;
      lc->pos = at->pos;
      // Filled in place, every field: a Call built on the stack and copied in stalled on store forwarding.
      Call& c = lc->call;
      c.kind = kind_id;
      c.state = uint8_t(LST_WORD_STATE(rec.word));
      c.t0_ns = int64_t(rec.t_ns) + to_origin;
      c.returned = c.state >= LST_STATE_RETURNED;  // FAILED calls returned too, with an error
      c.t1_ns = c.returned ? c.t0_ns + int64_t(rec.t_return_us) * 1000 : 0;
      c.device = false;
      c.dev0_ns = c.dev1_ns = 0;
      if (with_device) {
        auto d = device.find(r.source->first_id() + at->ref);
        if (d != device.end() && d->second.second) {
          c.device = true;
          c.dev0_ns = time_of(r, d->second.first);
          c.dev1_ns = time_of(r, d->second.second);
        }
      }
    }
    fn(batch.data(), n);
  });
  // The lanes hold what the page and the export need: let the rank's mapped records go, so that a
  // 1,024-rank job is read once rank by rank rather than kept resident (a hint; reading again works).
  r.source->release(r.source->first_id(), r.source->end_id());
}

}  // namespace lockstep::report
