// The coordinator's bookkeeping and the encoding of round messages. The MPI exchange itself lives in
// runtime.cc; this file has no MPI in it so its logic is plain data in, plan out.
#include "controller.h"

#include <algorithm>

#include "wire.h"

namespace lockstep::rt::internal {

const char* op_name(Op op) {
  switch (op) {
    case Op::allreduce:
      return "allreduce";
    case Op::allgather:
      return "allgather";
    case Op::broadcast:
      return "broadcast";
    case Op::barrier:
      return "barrier";
    case Op::create_set:
      return "add_process_set";
  }
  return "?";
}

namespace {

void put(WireWriter& w, const RequestInfo& r) {
  w.str(r.name);
  w.u8(static_cast<uint8_t>(r.op));
  w.u8(static_cast<uint8_t>(r.dtype));
  w.u8(static_cast<uint8_t>(r.reduce));
  w.u64(r.count);
  w.i32(r.root);
  w.u64(r.set);
  w.u32(static_cast<uint32_t>(r.members.size()));
  for (int m : r.members) w.i32(m);
}

RequestInfo get_info(WireReader& rd) {
  RequestInfo r;
  r.name = rd.str();
  const uint8_t op = rd.u8(), dt = rd.u8(), red = rd.u8();
  if (op > static_cast<uint8_t>(Op::create_set) || dt > static_cast<uint8_t>(DType::i64) ||
      red > static_cast<uint8_t>(ReduceOp::max)) {
    throw std::runtime_error("control message has an unknown operation or dtype");
  }
  r.op = static_cast<Op>(op);
  r.dtype = static_cast<DType>(dt);
  r.reduce = static_cast<ReduceOp>(red);
  r.count = rd.u64();
  r.root = rd.i32();
  r.set = rd.u64();
  const uint32_t n = rd.count(4);
  r.members.resize(n);
  for (auto& m : r.members) m = rd.i32();
  return r;
}

}  // namespace

std::vector<uint8_t> encode(const Readiness& r) {
  WireWriter w;
  w.u8((r.finalizing ? 1 : 0) | (r.blocked ? 2 : 0));
  w.u32(static_cast<uint32_t>(r.requests.size()));
  for (const auto& q : r.requests) put(w, q);
  return w.bytes();
}

Readiness decode_readiness(const uint8_t* p, size_t n) {
  WireReader rd(p, n);
  Readiness r;
  const uint8_t flags = rd.u8();
  if (flags > 3) throw std::runtime_error("control message has unknown flags");
  r.finalizing = (flags & 1) != 0;
  r.blocked = (flags & 2) != 0;
  const uint32_t k = rd.count(27);
  r.requests.reserve(k);
  for (uint32_t i = 0; i < k; ++i) r.requests.push_back(get_info(rd));
  return r;
}

std::vector<uint8_t> encode(const Plan& p) {
  WireWriter w;
  w.u8(p.kind);
  w.str(p.message);
  w.u32(static_cast<uint32_t>(p.responses.size()));
  for (const auto& r : p.responses) {
    w.u64(r.set);
    w.u8(r.kind);
    w.u8(static_cast<uint8_t>(r.op));
    w.str(r.error);
    w.u32(static_cast<uint32_t>(r.names.size()));
    for (const auto& n : r.names) w.str(n);
  }
  return w.bytes();
}

Plan decode_plan(const uint8_t* p, size_t n) {
  WireReader rd(p, n);
  Plan plan;
  const uint8_t kind = rd.u8();
  if (kind > Plan::kAbort) throw std::runtime_error("control message has an unknown plan kind");
  plan.kind = static_cast<Plan::Kind>(kind);
  plan.message = rd.str();
  const uint32_t k = rd.count(18);
  plan.responses.resize(k);
  for (auto& r : plan.responses) {
    r.set = rd.u64();
    const uint8_t rk = rd.u8(), op = rd.u8();
    if (rk > Response::kError || op > static_cast<uint8_t>(Op::create_set)) {
      throw std::runtime_error("control message has an unknown response");
    }
    r.kind = static_cast<Response::Kind>(rk);
    r.op = static_cast<Op>(op);
    r.error = rd.str();
    const uint32_t names = rd.count(4);
    r.names.resize(names);
    for (auto& s : r.names) s = rd.str();
  }
  return plan;
}

Coordinator::Coordinator(size_t fusion_bytes, double warn_s, double abort_s)
    : fusion_bytes_(fusion_bytes), stall_(warn_s, abort_s) {}

void Coordinator::add_set(uint64_t set_id, std::vector<int> members) {
  SetInfo& s = sets_[set_id];
  s.members = std::move(members);
  for (size_t i = 0; i < s.members.size(); ++i) s.set_rank[s.members[i]] = static_cast<int>(i);
  if (set_id == 0) {
    finalizing_.assign(s.members.size(), false);
    blocked_.assign(s.members.size(), false);
  }
}

void Coordinator::set_blocked(int world_rank, bool blocked) {
  if (world_rank >= 0 && static_cast<size_t>(world_rank) < blocked_.size())
    blocked_[static_cast<size_t>(world_rank)] = blocked;
}

bool Coordinator::ready_set_blocked() const {
  for (const Key& key : ready_) {
    auto set = sets_.find(key.first);
    if (set == sets_.end()) continue;
    const std::vector<int>& members = set->second.members;
    if (std::all_of(members.begin(), members.end(), [&](int w) { return blocked_[static_cast<size_t>(w)]; }))
      return true;
  }
  return false;
}

void Coordinator::add(int world_rank, const Readiness& r, Clock::time_point now) {
  if (r.finalizing) finalizing_[static_cast<size_t>(world_rank)] = true;
  set_blocked(world_rank, r.blocked);
  for (const auto& q : r.requests) {
    auto set = sets_.find(q.set);
    if (set == sets_.end()) continue;  // submissions check the set locally
    auto member = set->second.set_rank.find(world_rank);
    if (member == set->second.set_rank.end()) continue;
    auto [it, fresh] = table_.try_emplace(Key{q.set, q.name});
    Entry& e = it->second;
    if (fresh) {
      e.by_rank.resize(set->second.members.size());
      e.first_seen = now;
    }
    auto& slot = e.by_rank[static_cast<size_t>(member->second)];
    if (slot) continue;  // submissions check duplicates locally; a repeat here changes nothing
    slot = q;
    if (++e.arrived == static_cast<int>(set->second.members.size())) {
      ready_.push_back(it->first);
      ready_bytes_ += q.count * dtype_size(q.dtype);
    }
  }
}

// Names the ranks on each side of the first field that differs, e.g.
// "mismatched dtype for allreduce 'w': f32 on ranks 0,2-3, f64 on rank 1".
std::string Coordinator::mismatch(const Key& key, const Entry& e) const {
  // Called once every rank's request arrived, so no slot is empty; an empty one would compare unequal.
  const std::optional<RequestInfo>& slot0 = e.by_rank[0];
  if (!slot0) return {};
  const RequestInfo& r0 = *slot0;
  // The common case, every rank agreeing, without building any description.
  const bool same =
      std::all_of(e.by_rank.begin() + 1, e.by_rank.end(), [&](const std::optional<RequestInfo>& r) {
        return r && r->op == r0.op && r->dtype == r0.dtype &&
               (r0.op != Op::allreduce || r->reduce == r0.reduce) && r->count == r0.count &&
               (r0.op != Op::broadcast || r->root == r0.root) &&
               (r0.op != Op::create_set || r->members == r0.members);
      });
  if (same) return {};
  auto describe = [](const RequestInfo& r, int field) -> std::string {
    switch (field) {
      case 0:
        return op_name(r.op);
      case 1:
        return dtype_name(r.dtype);
      case 2:
        return reduce_op_name(r.reduce);
      case 3:
        return std::to_string(r.count) + " elements";
      case 4:
        return "root " + std::to_string(r.root);
      default:
        return "members [" + format_ranks(r.members) + "]";
    }
  };
  static const char* kField[] = {"operation", "dtype", "reduction", "shape", "root", "members"};
  const std::vector<int>& members = sets_.at(key.first).members;
  const RequestInfo& first = r0;
  for (int field = 0; field < 6; ++field) {
    if (field == 2 && first.op != Op::allreduce) continue;
    if (field == 4 && first.op != Op::broadcast) continue;
    if (field == 5 && first.op != Op::create_set) continue;
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    for (size_t r = 0; r < e.by_rank.size(); ++r) {
      const std::optional<RequestInfo>& slot = e.by_rank[r];
      if (!slot) continue;
      const std::string d = describe(*slot, field);
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == d; });
      if (g == groups.end()) {
        groups.push_back({d, {}});
        g = groups.end() - 1;
      }
      g->second.push_back(members[r]);
    }
    if (groups.size() < 2) continue;
    std::string msg =
        std::string("mismatched ") + kField[field] + " for " + op_name(first.op) + " '" + key.second + "':";
    for (size_t i = 0; i < groups.size(); ++i) {
      msg += (i ? ", " : " ") + groups[i].first + " on rank" + (groups[i].second.size() == 1 ? " " : "s ") +
             format_ranks(groups[i].second);
    }
    return msg;
  }
  return {};
}

Plan Coordinator::plan(Clock::time_point now) {
  Plan plan;
  struct Open {
    uint64_t set;
    DType dtype;
    ReduceOp reduce;
    size_t bytes;
    size_t response;
  };
  std::vector<Open> open;  // fused allreduce responses that still have room
  for (const auto& key : ready_) {
    auto it = table_.find(key);
    const Entry& e = it->second;
    const std::optional<RequestInfo>& slot0 = e.by_rank[0];
    if (!slot0) continue;  // never: a key is ready once every member's request has arrived
    const RequestInfo& q = *slot0;
    std::string err = mismatch(key, e);
    if (!err.empty()) {
      plan.responses.push_back({key.first, Response::kError, q.op, {key.second}, err});
    } else if (q.op == Op::allreduce) {
      const size_t bytes = q.count * dtype_size(q.dtype);
      auto o = std::find_if(open.begin(), open.end(), [&](const Open& x) {
        return x.set == key.first && x.dtype == q.dtype && x.reduce == q.reduce &&
               x.bytes + bytes <= fusion_bytes_;
      });
      if (bytes < fusion_bytes_ && o != open.end()) {
        plan.responses[o->response].names.push_back(key.second);
        o->bytes += bytes;
      } else {
        plan.responses.push_back({key.first, Response::kExecute, q.op, {key.second}, {}});
        if (bytes < fusion_bytes_)
          open.push_back({key.first, q.dtype, q.reduce, bytes, plan.responses.size() - 1});
      }
    } else {
      plan.responses.push_back({key.first, Response::kExecute, q.op, {key.second}, {}});
    }
    table_.erase(it);
  }
  ready_.clear();
  ready_bytes_ = 0;
  if (!plan.responses.empty()) blocked_.assign(blocked_.size(), false);

  std::vector<int> finalized;
  for (size_t r = 0; r < finalizing_.size(); ++r) {
    if (finalizing_[r]) finalized.push_back(static_cast<int>(r));
  }
  const bool all_finalizing = finalized.size() == finalizing_.size();

  // A tensor that a finalizing rank never submitted can never run: fail it now rather than stall.
  std::vector<StalledTensor> pending;
  for (auto it = table_.begin(); it != table_.end();) {
    const std::vector<int>& members = sets_.at(it->first.first).members;
    StalledTensor t;
    t.set = it->first.first;
    t.name = it->first.second;
    t.age_s = std::chrono::duration<double>(now - it->second.first_seen).count();
    // Only the ranks that called finalize are to blame: the other missing ones may have submitted
    // the name already, their message still on its way (each then gets this same error on arrival).
    std::vector<int> finalized_missing;
    for (size_t r = 0; r < it->second.by_rank.size(); ++r) {
      const auto& slot = it->second.by_rank[r];
      if (slot) {
        t.op = slot->op;
        t.ready.push_back(members[r]);
      } else {
        t.missing.push_back(members[r]);
        if (finalizing_[static_cast<size_t>(members[r])]) finalized_missing.push_back(members[r]);
      }
    }
    if (!finalized_missing.empty()) {
      plan.responses.push_back({t.set,
                                Response::kError,
                                t.op,
                                {t.name},
                                std::string(op_name(t.op)) + " '" + t.name + "' was never submitted by rank" +
                                    (finalized_missing.size() == 1 ? " " : "s ") +
                                    format_ranks(finalized_missing) + ", which called finalize"});
      it = table_.erase(it);
      continue;
    }
    pending.push_back(std::move(t));
    ++it;
  }
  if (all_finalizing && table_.empty()) {
    plan.kind = Plan::kShutdown;
    return plan;
  }
  if (auto reason = stall_.inspect(std::move(pending), now, finalized)) {
    plan.kind = Plan::kAbort;
    plan.message = *reason;
  }
  return plan;
}

}  // namespace lockstep::rt::internal
