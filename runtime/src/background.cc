// The background thread's execution side: running what a plan (or, under matching by order, the
// submission order) says, and completing the requests' handles.
#include "background.h"

#include <algorithm>

namespace lockstep::rt::internal {

Background::Background(const Config& cfg, int world_rank, int world_size, Backend& backend, MPI_Comm control,
                       Inbox& inbox, Watchdog& watchdog)
    : cfg_(cfg),
      world_rank_(world_rank),
      world_size_(world_size),
      backend_(backend),
      inbox_(inbox),
      watchdog_(watchdog),
      channel_(control, world_size),
      fusion_(backend, cfg.fusion_bytes) {
  backend.set_waiter(this);
  if (world_rank == 0) {
    coordinator_ = std::make_unique<Coordinator>(cfg.fusion_bytes, cfg.stall_warn_s, cfg.stall_abort_s);
    coordinator_->add_set(0, inbox.set(0)->members);
  }
}

void Background::run() {
  if (cfg_.matching == Matching::order) {
    loop_ordered();
  } else {
    loop_negotiated();
  }
}

void Background::finish() {
  // Requests that never ran fail instead of leaving their waiters blocked.
  for (auto& [key, st] : pending_) complete(*st, {"the runtime was finalized before this request ran"});
  pending_.clear();
  fusion_.release();
}

// Matching by order: no negotiation and no fusion; each request runs as soon as it is this rank's
// next one, exactly like a raw MPI or NCCL program. Only the watchdog stands between a mismatch and a
// hang here.
void Background::loop_ordered() {
  for (;;) {
    Inbox::Taken t = inbox_.wait_for_work();
    if (t.fresh.empty() && t.finalizing) return;
    for (auto& st : t.fresh) {
      std::vector<std::shared_ptr<RequestState>> one{st};
      Response r;
      r.set = st->sub.set;
      r.op = st->sub.op;
      r.names = {st->sub.name};
      run_response(r, one);
    }
  }
}

void Background::execute(const Plan& plan) {
  for (const Response& r : plan.responses) {
    std::vector<std::shared_ptr<RequestState>> states;
    for (const auto& name : r.names) {
      auto it = pending_.find({r.set, name});
      if (it == pending_.end()) {
        // Responses for sets this rank is not in carry names it never submitted.
        continue;
      }
      LOCKSTEP_RT_EVENT(LST_RT_NEGOTIATED, name.c_str(), it->second->sub.count, r.set);
      states.push_back(std::move(it->second));
      pending_.erase(it);
    }
    if (states.empty()) continue;
    if (states.size() != r.names.size()) {
      fatal("negotiation out of step: a plan names tensors this rank never submitted");
    }
    run_response(r, states);
  }
}

void Background::run_response(const Response& r, std::vector<std::shared_ptr<RequestState>>& states) {
  if (r.kind == Response::kError) {
    complete_all(states, {r.error});
    return;
  }
  if (r.op == Op::create_set) {
    create_set(*states.front());
    return;
  }
  complete_all(states, run_collective(*inbox_.set(r.set), r.op, states));
}

Status Background::run_collective(SetComm& set, Op op, std::vector<std::shared_ptr<RequestState>>& states) {
  const Submission& first = states.front()->sub;
  watchdog_.begin(std::string(op_name(op)) + " '" + first.name + "'" +
                  (states.size() > 1 ? " (fused with " + std::to_string(states.size() - 1) + " more)" : "") +
                  " on process set " + std::to_string(set.id));
  for (auto& st : states)
    LOCKSTEP_RT_EVENT(LST_RT_EXECUTED, st->sub.name.c_str(), st->sub.count, st->sub.set);
  Status s;
  switch (op) {
    case Op::allreduce:
      if (states.size() == 1) {
        s = backend_.allreduce(set, first.in, first.out, first.count, first.dtype, first.reduce);
      } else {
        s = fusion_.allreduce(set, states);
      }
      break;
    case Op::allgather:
      s = backend_.allgather(set, first.in, first.out, first.count, first.dtype);
      break;
    case Op::broadcast:
      s = backend_.broadcast(set, first.out, first.count, first.dtype, first.root);
      break;
    case Op::barrier: {
      MPI_Request rq;
      const int rc = MPI_Ibarrier(set.data, &rq);
      s = rc == MPI_SUCCESS ? mpi_wait(rq, "MPI_Ibarrier", this)
                            : Status{"MPI_Ibarrier failed: " + mpi_error_text(rc)};
      break;
    }
    case Op::create_set:
      break;
  }
  watchdog_.end();
  collectives_run_.fetch_add(1);
  tensors_run_.fetch_add(states.size());
  return s;
}

void Background::create_set(RequestState& st) {
  const std::vector<int>& members = st.members;
  auto it = std::find(members.begin(), members.end(), world_rank_);
  const bool member = it != members.end();
  auto sc = std::make_unique<SetComm>();
  sc->id = next_set_id_++;
  sc->members = members;
  sc->rank = member ? static_cast<int>(it - members.begin()) : -1;
  Status s;
  {
    ControlPlane cp;
    const int rc = MPI_Comm_split(inbox_.set(0)->data, member ? 0 : MPI_UNDEFINED, sc->rank, &sc->data);
    if (rc != MPI_SUCCESS) s.message = "MPI_Comm_split failed: " + mpi_error_text(rc);
    if (s.ok() && member) {
      MPI_Comm_set_errhandler(sc->data, MPI_ERRORS_RETURN);
      s = backend_.add_set(*sc);
    }
  }
  if (s.ok()) {
    if (member && lockstep_rt_process_set) {
      const std::string name = "process_set." + std::to_string(sc->id);
      std::vector<int32_t> m(members.begin(), members.end());
      lockstep_rt_process_set(sc->id, name.c_str(), m.data(), static_cast<int32_t>(m.size()), sc->rank);
    }
    if (coordinator_) coordinator_->add_set(sc->id, members);
    st.new_set = sc->id;
    inbox_.add_set(std::move(sc));
  }
  complete(st, s);
}

void Background::complete(RequestState& st, const Status& status) {
  RequestState* one = &st;
  complete_all(&one, 1, status);
}

void Background::complete_all(std::vector<std::shared_ptr<RequestState>>& states, const Status& status) {
  std::vector<RequestState*> raw;
  raw.reserve(states.size());
  for (auto& st : states) raw.push_back(st.get());
  complete_all(raw.data(), raw.size(), status);
}

// Completes a response's requests together: every one is marked done before any waiter is woken, so
// an application waiting on them in turn wakes once instead of once per request.
void Background::complete_all(RequestState* const* states, size_t n, const Status& status) {
  inbox_.release_names(states, n);
  for (size_t i = 0; i < n; ++i) {
    RequestState& st = *states[i];
    if (lockstep_rt_collective_end && st.sub.trace_token)
      lockstep_rt_collective_end(st.sub.trace_token, status.ok());
    LOCKSTEP_RT_EVENT(status.ok() ? LST_RT_COMPLETED : LST_RT_ERROR, st.sub.name.c_str(), st.sub.count,
                      st.sub.set);
    std::lock_guard<std::mutex> lock(st.mu);
    st.status = status;
    st.done = true;
  }
  for (size_t i = 0; i < n; ++i) states[i]->cv.notify_all();
}

}  // namespace lockstep::rt::internal
