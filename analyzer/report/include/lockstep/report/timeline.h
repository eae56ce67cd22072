// The job's collectives laid out for drawing: per rank and communicator, every call with its times
// on one job-wide clock, its arguments and call site. Shared by the HTML report and the trace export;
// built one rank at a time so that a large job never holds every call in memory at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lockstep/check/check.h"
#include "lockstep/check/model.h"

namespace lockstep::report {

// What a call is, without its times: equal calls share one entry of Timeline::kinds.
struct CallKind {
  uint8_t api = 0, op = 0, dtype = 0, redop = 0, flags = 0;
  uint64_t count = 0;
  uint32_t dtype_size = 0;
  int32_t root = LST_NONE, peer = LST_NONE;
  std::string operation;  // "MPI_Allreduce"
  std::string tensor;     // runtime tensor name, when known
  uint32_t site = 0;      // index into Timeline::sites
};

struct Call {
  uint32_t kind = 0;  // index into Timeline::kinds
  uint8_t state = 0;  // lst_state
  int64_t t0_ns = 0;  // entered, from the job's time origin
  int64_t t1_ns = 0;  // returned (when `returned`)
  bool returned = false;
  bool device = false;  // device execution times recorded:
  int64_t dev0_ns = 0, dev1_ns = 0;
};

// One rank's calls on one communicator, in call order (index = position on the communicator).
struct Lane {
  int32_t rank = 0;   // world rank
  uint32_t comm = 0;  // index into Timeline::comms
  std::vector<Call> calls;
};

// A call as Timeline::for_each_call hands it out: its lane (the index lanes() gives the communicator
// among the rank's) and its position there.
struct LaneCall {
  uint32_t lane = 0;
  uint32_t pos = 0;
  Call call;
};
constexpr size_t kLaneCallBatch = 256;

struct TimelineComm {
  check::CommRef ref;
  std::vector<int32_t> ranks;   // world ranks with calls on it, ascending
  std::vector<size_t> lengths;  // their number of calls, same order
  size_t min_length = 0;        // every rank in `ranks` has positions [0, min_length)
};

struct TimelineOptions {
  check::Symbolizer symbolize;  // call sites to file:line; empty: module+offset
  bool device = true;           // look for device-side times (one more pass over each rank's records)
  const std::vector<check::CommRef>* names = nullptr;  // the check's names (Result::comms), when known
};

class Timeline {
 public:
  Timeline(const check::Job& job, TimelineOptions options = {});
  // The lanes of one rank (one per communicator it called collectives on), kinds and sites added.
  std::vector<Lane> lanes(const check::Rank& rank);
  // The same into `out`, whose call vectors keep their memory: ranks read in turn into one `out` reuse
  // it instead of having the allocator map, fault in and give back a rank's worth of calls each.
  void lanes(const check::Rank& rank, std::vector<Lane>& out);
  // The same calls without keeping them: fn(calls, n) with batches of up to kLaneCallBatch in record
  // order, for a writer that needs each call once (the Perfetto export), so that a rank's calls are
  // never all in memory. Threads may read different ranks at once; a kind's or site's index then
  // depends on which thread met it first.
  void for_each_call(const check::Rank& rank, const std::function<void(const LaneCall*, size_t)>& fn);

  std::vector<TimelineComm> comms;  // every communicator with collectives, by first rank seen
  std::vector<CallKind> kinds;
  std::vector<check::Site> sites;
  // Held by for_each_call while it looks up or adds kinds and sites (which may move them), so that
  // several threads can read ranks at once; a thread that reads kinds or sites meanwhile holds it too.
  std::mutex tables_mutex;
  int64_t end_ns = 0;  // latest time recorded by any rank, from the time origin
  int64_t time_of(const check::Rank& r, uint64_t t_ns) const;
  int comm_index(uint64_t id) const;

 private:
  const check::Job& job_;
  TimelineOptions opt_;
  std::map<std::string, uint32_t> kind_index_;  // CallKind's fields as bytes -> index
  std::map<std::pair<std::string, uint64_t>, uint32_t> site_index_;
  std::map<uint64_t, int> comm_index_;
};

// A communicator's name for people: its recorded name, else a short id.
std::string comm_label(const check::CommRef& c);

}  // namespace lockstep::report
