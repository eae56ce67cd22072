// The job's collectives laid out for drawing: per rank and communicator, every call with its times
// on one job-wide clock, its arguments and call site. Shared by the HTML report and the trace export;
// built one rank at a time so that a large job never holds every call in memory at once.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
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
  // The same calls without keeping them: fn(lane, pos, call) for each call in record order (lane: the
  // index lanes() gives the communicator among the rank's; pos: the call's position there), for a writer
  // that needs each call once (the Perfetto export), so that a rank's calls are never all in memory.
  // Inline, and on a copy of `fn` made for each batch of calls and copied back after it: what fn holds
  // stays in registers across the loop (a pointer into an output buffer could otherwise alias it), so fn
  // must be copyable and assignable; fn.end_batch(), where fn has one, runs after each batch. Threads may
  // read different ranks at once; a kind's or site's index then depends on which thread met it first.
  template <class Fn>
  void each_call(const check::Rank& rank, Fn& fn);

  std::vector<TimelineComm> comms;  // every communicator with collectives, by first rank seen
  std::vector<CallKind> kinds;
  std::vector<check::Site> sites;
  // Held by each_call while it looks up or adds kinds and sites (which may move them), so that
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

  // What makes two calls the same kind, straight from the record's words: a small direct-mapped cache
  // of them (a rank repeats a handful of kinds) spares building the full description per call. Every
  // field the description reads is kept whole (none folded into another), so equal keys are equal kinds.
  struct KindKey {
    // op, api, dtype, redop and the flags: the word's state and check masked off, so an empty slot's
    // ~0 is never a call's
    uint64_t head = ~0ull;
    uint64_t args = 0;  // root or peer, datatype size
    uint64_t count = 0, caller = 0;
    uint32_t tensor = 0, kind = 0;
    static constexpr uint64_t kHeadMask = 0xFFFFFFFFFF000000ull;
  };
  // One rank's reading state for each_call; out of line, what the loop does rarely.
  class RankCalls {
   public:
    RankCalls(Timeline& tl, const check::Rank& r);
    ~RankCalls();  // lets the rank's mapped records go
    RankCalls(const RankCalls&) = delete;
    RankCalls& operator=(const RankCalls&) = delete;
    // A kind met for the first time: described in full and numbered in the shared table.
    __attribute__((noinline)) uint32_t learn(const lst_record& rec, const KindKey& key);
    uint32_t tensor(const lst_record& rec) const;  // the runtime tensor naming the call
    __attribute__((noinline)) void device_times(Call& c, uint64_t id) const;  // device times, when any

    std::vector<KindKey> cache;
    bool names_tensors = false, with_device = false;
    int64_t shift = 0;  // time_of(r, t) is t + shift

   private:
    uint32_t site(uint64_t caller);
    Timeline& tl_;
    const check::Rank& r_;
    std::unordered_map<uint64_t, uint32_t> site_of_;
    std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> device_;
  };
};

template <class Fn>
void Timeline::each_call(const check::Rank& r, Fn& fn) {
  RankCalls rc(*this, r);
  r.for_each_call([&](const check::Rank::CallAt* at, size_t n) {
    // What every call reads, in locals: through the captures, each store could have changed them, so
    // the compiler would load them again for every call.
    KindKey* const slots = rc.cache.data();
    const bool names_tensors = rc.names_tensors, with_device = rc.with_device;
    const int64_t to_origin = rc.shift;
    Fn f = fn;
    for (const check::Rank::CallAt* end = at + n; at != end; ++at) {
      if (end - at > 8) __builtin_prefetch(at[8].rec);
      const lst_record& rec = *at->rec;
      // The record's words at byte offsets 0, 16 and 24 (root or peer, datatype size), as loaded.
      auto word = [&rec](size_t offset) {
        uint64_t v;
        std::memcpy(&v, reinterpret_cast<const char*>(&rec) + offset, sizeof v);
        return v;
      };
      KindKey key;
      key.head = word(0) & KindKey::kHeadMask;
      key.args = word(16) >> 32 | word(24) << 32;
      key.count = rec.u.coll.count;
      key.caller = rec.caller;
      key.tensor = names_tensors || rec.api == LST_API_RT ? rc.tensor(rec) : 0;
      KindKey& slot =
          slots[(key.head ^ key.args * 0x9e3779b97f4a7c15ull ^ key.count ^ key.caller ^ key.tensor) *
                    0x2545f4914f6cdd1dull >>
                56];
      uint32_t kind_id;
      if (__builtin_expect(slot.head == key.head && slot.args == key.args && slot.count == key.count &&
                               slot.caller == key.caller && slot.tensor == key.tensor,
                           1)) {
        kind_id = slot.kind;
      } else {
        kind_id = rc.learn(rec, key);
        key.kind = kind_id;
        slot = key;
      }
      Call c;
      c.kind = kind_id;
      c.state = uint8_t(LST_WORD_STATE(rec.word));
      c.t0_ns = int64_t(rec.t_ns) + to_origin;
      c.returned = c.state >= LST_STATE_RETURNED;  // FAILED calls returned too, with an error
      c.t1_ns = c.returned ? c.t0_ns + int64_t(rec.t_return_us) * 1000 : 0;
      if (with_device) rc.device_times(c, r.source->first_id() + at->ref);
      f(at->seq, at->pos, c);
    }
    if constexpr (requires { f.end_batch(); }) f.end_batch();
    fn = f;
  });
}

// A communicator's name for people: its recorded name, else a short id.
std::string comm_label(const check::CommRef& c);

}  // namespace lockstep::report
