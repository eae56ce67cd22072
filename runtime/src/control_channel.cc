// Nonblocking point-to-point messages of negotiation on the control communicator.
#include "control_channel.h"

#include <algorithm>
#include <thread>

namespace lockstep::rt::internal {

void ControlChannel::send_readiness(const Readiness& r) {
  ControlPlane cp;
  bufs_.push_back(encode(r));
  MPI_Request rq;
  MPI_Isend(bufs_.back().data(), static_cast<int>(bufs_.back().size()), MPI_BYTE, 0, kTagReady, comm_, &rq);
  sends_.push_back(rq);
}

void ControlChannel::send_plan(const Plan& p) {
  ControlPlane cp;
  const std::vector<uint8_t> bytes = encode(p);
  for (int w = 1; w < world_size_; ++w) {
    bufs_.push_back(bytes);
    MPI_Request rq;
    MPI_Isend(bufs_.back().data(), static_cast<int>(bytes.size()), MPI_BYTE, w, kTagPlan, comm_, &rq);
    sends_.push_back(rq);
  }
}

std::optional<ControlChannel::Message> ControlChannel::poll(int source, int tag) {
  ControlPlane cp;
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(source, tag, comm_, &flag, &st);
  if (!flag) return std::nullopt;
  int bytes = 0;
  MPI_Get_count(&st, MPI_BYTE, &bytes);
  Message m;
  m.from = st.MPI_SOURCE;
  m.bytes.resize(static_cast<size_t>(std::max(bytes, 0)));
  MPI_Recv(m.bytes.data(), bytes, MPI_BYTE, st.MPI_SOURCE, tag, comm_, MPI_STATUS_IGNORE);
  return m;
}

std::optional<ControlChannel::Message> ControlChannel::poll_readiness() {
  return poll(MPI_ANY_SOURCE, kTagReady);
}
std::optional<ControlChannel::Message> ControlChannel::poll_plan() { return poll(0, kTagPlan); }

void ControlChannel::reap() {
  if (sends_.empty()) return;
  ControlPlane cp;
  int done = 0;
  MPI_Testall(static_cast<int>(sends_.size()), sends_.data(), &done, MPI_STATUSES_IGNORE);
  if (done) {
    sends_.clear();
    bufs_.clear();
  }
}

void ControlChannel::flush() {
  ControlPlane cp;
  MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE);
  sends_.clear();
  bufs_.clear();
}

void ControlChannel::send_abort(const Plan& p, const std::vector<int>& unreachable,
                                std::chrono::milliseconds patience) {
  ControlPlane cp;
  bufs_.push_back(encode(p));
  const std::vector<uint8_t>& bytes = bufs_.back();
  size_t told = 0;
  for (int w = 1; w < world_size_; ++w) {
    if (std::find(unreachable.begin(), unreachable.end(), w) != unreachable.end()) continue;
    MPI_Request rq;
    MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, w, kTagPlan, comm_, &rq);
    sends_.push_back(rq);
    ++told;
  }
  const auto deadline = std::chrono::steady_clock::now() + patience;
  std::set<int> acked;
  while (acked.size() < told && std::chrono::steady_clock::now() < deadline) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagAck, comm_, &flag, &st);
    if (flag) {
      char b;
      MPI_Recv(&b, 1, MPI_BYTE, st.MPI_SOURCE, kTagAck, comm_, MPI_STATUS_IGNORE);
      acked.insert(st.MPI_SOURCE);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

void ControlChannel::ack_abort(std::chrono::milliseconds patience) {
  ControlPlane cp;
  char b = 1;
  MPI_Request rq;
  MPI_Isend(&b, 1, MPI_BYTE, 0, kTagAck, comm_, &rq);
  const auto deadline = std::chrono::steady_clock::now() + patience;
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace lockstep::rt::internal
