// Negotiation (Horovod's controller): every rank tells its set's coordinator (set rank 0) which named
// requests it has submitted; the coordinator answers with one plan that every rank executes in the
// same order. The coordinator is the only place that sees all ranks, so it also checks that a name
// means the same request everywhere and feeds the stall inspector.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "request.h"
#include "stall_inspector.h"

namespace lockstep::rt::internal {

struct Response {
  uint64_t set = 0;
  enum Kind : uint8_t { kExecute = 0, kError = 1 };
  Kind kind = kExecute;
  Op op = Op::allreduce;
  std::vector<std::string> names;  // more than one: a fused allreduce, in buffer order
  std::string error;               // kError: why, naming the ranks
};

struct Plan {
  enum Kind : uint8_t { kNormal = 0, kShutdown = 1, kAbort = 2 };
  Kind kind = kNormal;
  std::string message;  // kAbort: the reason every rank prints
  std::vector<Response> responses;
};

// A rank's message for one negotiation round.
struct Readiness {
  bool finalizing = false;
  // The application is waiting on a handle while some of this rank's requests are still unplanned:
  // it will submit nothing more before they run, so the coordinator need not wait for more to fuse.
  bool blocked = false;
  std::vector<RequestInfo> requests;  // submitted since the previous message
};

std::vector<uint8_t> encode(const Readiness& r);
Readiness decode_readiness(const uint8_t* p, size_t n);  // throws std::runtime_error
std::vector<uint8_t> encode(const Plan& p);
Plan decode_plan(const uint8_t* p, size_t n);

// One coordinator (world rank 0) negotiates every process set, so that all plans form one stream in
// one order: ranks in two overlapping sets can then never run those sets' collectives in different
// orders (which would deadlock two blocking collectives).
class Coordinator {
 public:
  Coordinator(size_t fusion_bytes, double warn_s, double abort_s);
  void add_set(uint64_t set_id, std::vector<int> members);
  // Adds one rank's round message.
  void add(int world_rank, const Readiness& r, Clock::time_point now);
  // What the coordinator knows of a rank's application waiting (Readiness::blocked); the coordinator's
  // own rank sets it directly. Every plan that runs something clears it for all ranks: a rank still
  // waiting afterwards says so again.
  void set_blocked(int world_rank, bool blocked);
  // Some ready request's whole process set is blocked: planning now loses no fusion.
  bool ready_set_blocked() const;
  bool all_finalizing() const {
    return std::all_of(finalizing_.begin(), finalizing_.end(), [](bool f) { return f; });
  }
  bool has_ready() const { return !ready_.empty(); }
  bool has_unready() const { return table_.size() > ready_.size(); }
  size_t ready_bytes() const { return ready_bytes_; }
  // Everything that became ready (fused), mismatches as errors, shutdown or a stall abort.
  Plan plan(Clock::time_point now);

 private:
  struct SetInfo {
    std::vector<int> members;
    std::map<int, int> set_rank;  // world rank -> rank in the set
  };
  struct Entry {
    std::vector<std::optional<RequestInfo>> by_rank;  // by set rank
    int arrived = 0;
    Clock::time_point first_seen;
  };
  using Key = std::pair<uint64_t, std::string>;
  std::string mismatch(const Key& key, const Entry& e) const;

  size_t fusion_bytes_;
  StallInspector stall_;
  std::map<uint64_t, SetInfo> sets_;
  std::map<Key, Entry> table_;
  std::vector<Key> ready_;  // in the order they became ready: the execution order
  size_t ready_bytes_ = 0;
  std::vector<bool> finalizing_;  // by world rank
  std::vector<bool> blocked_;     // by world rank
};

}  // namespace lockstep::rt::internal
