// The checker's in-memory model of one job: per rank, per communicator, the sequence of compact
// collective signatures plus a reference back to each record. Built from trace files (load.h) or,
// in tests, straight from records (RankBuilder), by the same ingest code.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lockstep/annotate.h"
#include "lockstep/format/layout.h"

namespace lockstep::check {

class CallFiller;
struct P2P;

// Where the records of one rank live: a mapped trace file or, in tests, a vector.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual uint64_t first_id() const = 0;
  virtual uint64_t end_id() const = 0;
  virtual const lst_record* record(uint64_t id) const = 0;  // nullptr: unpublished
  virtual std::string_view string(uint32_t id) const = 0;
  virtual std::vector<int32_t> members(uint32_t id) const = 0;
  // Drops the pages of records [lo, hi) from memory after ingest (a hint; may do nothing).
  virtual void release(uint64_t lo, uint64_t hi) const {}
  // Maps the pages of records [lo, hi) in ahead of a sequential walk (a hint; may do nothing).
  virtual void prefetch(uint64_t lo, uint64_t hi) const {}
  // The slots of ids [first_id(), end_id()) as one array when they are contiguous in memory (a
  // growing file), else nullptr. Slot words must still be checked (0: unpublished).
  virtual const lst_record* contiguous() const { return nullptr; }
  // A ring's slots (id i lives in slot i % capacity) when they are one array in memory, else nullptr.
  // A slot may still hold an earlier id: the walk checks the id a collective record carries.
  virtual const lst_record* ring(uint64_t& capacity) const {
    capacity = 0;
    return nullptr;
  }
  // Fills `rank`'s per-call vectors (each sequence's sig and ref, as Rank::materialize() would from
  // the records) where whoever holds the records builds them (`check --mpi`: the process that loaded
  // the file); false: the records are read here.
  virtual bool fill_calls(const struct Rank& rank) const { return false; }
  // Where fill_calls builds the vectors elsewhere, what fills several ranks' at once (materialize_all);
  // null otherwise.
  virtual CallFiller* call_filler() const { return nullptr; }
  // Rank::for_each_message() where whoever holds the records walks them (`check --mpi`: the process
  // that loaded the file, which sends the calls, not the records); false: the records are read here.
  virtual bool walk_messages(const struct Rank& rank, const std::function<bool(const P2P&)>& fn) const {
    return false;
  }
  // The trace format's major version: 2.x records carry a check (lockstep/format/record_check.h).
  virtual uint32_t format_major() const { return 1; }
  // The slots read with pread rather than through the mapping (walk::for_each_slot): a descriptor of
  // the file, which the caller closes, and the file offset of slot 0 (slot i at offset + 64 * i; a
  // growing file's slot i holds id i, a ring's id i sits in slot i % capacity); -1 where this source
  // has no file or cannot open it.
  virtual int open_slots(uint64_t& offset) const {
    offset = 0;
    return -1;
  }
};

struct ModuleRange {
  std::string path;
  std::string build_id;  // hex, empty if none
  uint64_t base = 0, lo = 0, hi = 0;
  uint64_t path_hash = 0;
};

// A communicator as one rank created it.
struct CommView {
  uint64_t id = 0;
  uint64_t parent = 0;
  uint8_t api = LST_API_NONE;
  uint8_t create_op = 0;  // lst_comm_op
  int32_t size = LST_NONE;
  int32_t rank = LST_NONE;  // this process's rank in it
  int32_t color = LST_NONE;
  // World ranks in communicator-rank order; null or empty if unknown. One list is shared by every rank
  // that recorded it: a world-sized list per rank would grow with the square of the job's size.
  std::shared_ptr<const std::vector<int32_t>> members;
  std::string name;
  bool freed = false;
};

// A COMM record that ends a communicator (MPI_Comm_free, ncclCommDestroy/Abort/Finalize) rather than
// creating one.
inline bool ends_comm(uint8_t comm_op) {
  return comm_op == LST_COMM_FREE || comm_op == LST_COMM_NCCL_DESTROY || comm_op == LST_COMM_NCCL_ABORT ||
         comm_op == LST_COMM_NCCL_FINALIZE;
}

// The name a communicator goes by in findings: its own name, else how it was made, as in
// "MPI_Comm_dup(MPI_Comm_split(MPI_COMM_WORLD, color 1))". `view_of` gives a communicator's creation as a
// rank recorded it, or null where none did ("comm 0x..." then).
std::string derived_comm_name(uint64_t id, const std::function<const CommView*(uint64_t)>& view_of);

// Index of a record within a rank's file: id - first_id (fits: 2^32 records are 256 GiB).
using RecordRef = uint32_t;

// One rank's collectives on one communicator, in call order. A streamed rank (ingest_stream) keeps only
// what grouping needs (length, hash, open calls); `sig` and `ref` are filled by Rank::materialize() when
// an analysis looks at individual calls. A materialized rank (ingest) has them from the start.
struct Sequence {
  uint64_t comm = 0;
  mutable std::vector<uint64_t> sig;   // alignment signature of each collective
  mutable std::vector<RecordRef> ref;  // its record
  std::vector<uint32_t> site;          // index into Rank::site_addr until resolve_sites() folds it into sig
  uint64_t hash = 0;                   // hash of the whole sequence (equal sequences share it)
  // Positions not done: a blocking call still ENTERED, a nonblocking one not COMPLETED, or FAILED.
  std::vector<uint32_t> open;
  std::vector<RecordRef> open_ref;  // the record of each open position
  bool has_control = false;
  uint32_t first_seq = 0;      // the tracer's number of the first collective kept (ring mode drops some)
  uint8_t api = LST_API_NONE;  // of the first collective kept: names a communicator whose creation is lost
  uint32_t last_seq = 0;
  uint32_t count = 0;  // collectives kept: sig.size() once materialized
  uint32_t skip = 0;   // collectives of the rank's trace before the first kept (trimmed windows)
  // Streamed ranks: the bounds of the roots of MPI rooted calls (LST_NONE left out), so that a job whose
  // roots all lie inside their communicators needs no second look at its records.
  int32_t root_min = INT32_MAX, root_max = INT32_MIN;
  bool null_dtype = false;  // streamed: an MPI call passed MPI_DATATYPE_NULL
  // Streamed ranks: the sequence's hash is a polynomial over its positions, sum of (f(call) + g(site
  // key)) * B^position modulo a prime, kept as two parts so that site keys can come later and a window
  // can be cut out by subtracting what lies outside it: `calls` = sum of f(call) * B^position and, per
  // site (indices into Rank::site_addr, in the order this sequence first uses them), the sum of
  // B^position over the positions that site called. Positions [hashed_lo, hashed_hi) are summed.
  std::vector<uint32_t> site_order;
  std::vector<uint64_t> site_weight;
  uint64_t calls = 0;
  uint64_t power = 1;  // B^(positions ingested)
  uint32_t hashed_lo = 0, hashed_hi = 0;
  size_t size() const { return count; }
};

// A point-to-point call (kept apart from the collective sequences: they pair by peer, not by order):
// MPI's (flag LST_F_P2P) and NCCL's send/receive, as Rank::for_each_message() reads it from its record,
// with only what pairing and the hang post-mortem use (the rest is read from the record).
struct P2P {
  uint64_t comm = 0;
  RecordRef ref = 0;
  int32_t peer = LST_NONE;    // rank in comm; LST_ANY_SOURCE, LST_PROC_NULL (MPI)
  int32_t tag = LST_ANY_TAG;  // MPI only
  uint8_t op = 0;             // LST_OP_SEND / LST_OP_RECV / LST_OP_PROBE
  uint8_t state = 0;
  uint8_t flags = 0;  // record flags (LST_F_P2P, LST_F_NONBLOCKING)
  bool any_source() const { return peer == LST_ANY_SOURCE || (peer == LST_NONE && op != LST_OP_SEND); }
};
static_assert(sizeof(P2P) == 24, "keep a message call small");

// What pairing needs of a rank's messages without the calls themselves: how many calls went to each
// (communicator, peer, operation), failed ones and MPI's (which check their peer) apart. A rank of a
// point-to-point benchmark makes tens of millions of message calls to a handful of such keys.
struct MessageKey {
  uint64_t comm = 0;
  int32_t peer = LST_NONE;
  uint8_t op = 0;
  bool failed = false;  // state FAILED: MPI moved nothing
  bool mpi = false;     // flag LST_F_P2P
  bool operator==(const MessageKey&) const = default;
  static MessageKey of(const P2P& p) {
    return {p.comm, p.peer, p.op, p.state == LST_STATE_FAILED, (p.flags & LST_F_P2P) != 0};
  }
};
struct MessageKeyHash {
  size_t operator()(const MessageKey& k) const {
    uint64_t h = k.comm * 0x9e3779b97f4a7c15ull ^ (uint64_t(uint32_t(k.peer)) << 16 | uint64_t(k.op) << 2 |
                                                   uint64_t(k.failed) << 1 | uint64_t(k.mpi));
    return size_t(h ^ (h >> 29));
  }
};
class MessageTally {
 public:
  MessageTally() = default;
  // A copy or a move takes the counts, never the cache (it points into the map it came from).
  MessageTally(const MessageTally& o) : counts_(o.counts_), total_(o.total_) {}
  MessageTally(MessageTally&& o) noexcept : counts_(std::move(o.counts_)), total_(o.total_) { o.clear(); }
  MessageTally& operator=(const MessageTally& o) {
    if (this != &o) {
      clear();
      counts_ = o.counts_;
      total_ = o.total_;
    }
    return *this;
  }
  MessageTally& operator=(MessageTally&& o) noexcept {
    if (this != &o) {
      clear();
      counts_ = std::move(o.counts_);
      total_ = o.total_;
      o.clear();
    }
    return *this;
  }
  // The count of a key, which stays where it is until clear() (for a caller's own cache of keys).
  uint64_t* counter(const MessageKey& k) {
    // Calls alternate between a few keys (a send and a receive to one peer): a small cache in front.
    Hit& c = cache_[(uint32_t(k.peer) * 4 + k.op) & 7];
    if (!c.n || !(c.key == k)) c = {k, &counts_[k]};
    return c.n;
  }
  void add_to(uint64_t* n) {
    ++*n;
    ++total_;
  }
  // n calls of a key at once (a tally another process counted).
  void add(const MessageKey& k, uint64_t n) {
    counts_[k] += n;
    total_ += n;
  }
  void clear() {
    counts_.clear();
    for (auto& c : cache_) c = {};
    total_ = 0;
  }
  const std::unordered_map<MessageKey, uint64_t, MessageKeyHash>& counts() const { return counts_; }
  uint64_t total() const { return total_; }

 private:
  struct Hit {
    MessageKey key;
    uint64_t* n = nullptr;
  };
  std::unordered_map<MessageKey, uint64_t, MessageKeyHash> counts_;
  Hit cache_[8];
  uint64_t total_ = 0;
};

// A runtime (api rt) collective span, to name the tensor of MPI/NCCL records it encloses.
struct RtSpan {
  uint64_t t0 = 0, t1 = 0;  // t1 = UINT64_MAX while not returned
  uint32_t name = 0;
};

enum class EndState { kRunning, kExited, kFinalizing, kCrashed, kAborted, kKilled, kUnknown };
const char* end_state_name(EndState s);

// What `lockstep run` read of a process in /proc as it stopped the job (Rank::at_stop and its CPU share
// and wait channel), as words: "stopped (SIGSTOP, or job control)", "in an uninterruptible sleep in the
// kernel (at W)", "running (1.00 CPU)"; empty when it read nothing.
std::string at_stop_text(const std::string& state, double cpu, const std::string& wchan);

struct Rank {
  int32_t world_rank = LST_NONE;
  int32_t world_size = LST_NONE;
  std::string file;
  std::string host;
  uint32_t pid = 0;
  uint64_t job_hash = 0;
  std::string job_id;
  uint64_t start_wall_ns = 0, start_mono_ns = 0;
  uint32_t header_end_state = LST_END_RUNNING;
  bool ring = false;     // the file keeps only its last records (LST_HDR_RING)
  uint64_t records = 0;  // published records ingested
  uint64_t unpublished = 0;
  uint32_t dropped = 0;

  std::vector<ModuleRange> modules;
  std::vector<CommView> comms;
  std::vector<Sequence> seqs;
  std::unordered_map<uint64_t, uint32_t> seq_index;  // comm id -> index in seqs
  // Messages: counted, not kept (MessageTally); the calls themselves are read again from the trace by
  // for_each_message(). `p2p_open` holds the ones in progress when the trace ends, in record order:
  // every call still ENTERED, and the nonblocking one the rank's last MPI_Wait (still entered) names.
  MessageTally messages;
  std::vector<P2P> p2p_open;
  // A cut trace's job compares messages only up to this wall time (trim_cut_ends): later ones are left
  // out of the tally and of every walk.
  uint64_t messages_until_wall = UINT64_MAX;
  // Wall time of a record time (t_ns, this process's monotonic clock).
  uint64_t wall_ns(uint64_t t_ns) const { return start_wall_ns + (t_ns - start_mono_ns); }
  bool past_cut(uint64_t t_ns) const {
    return messages_until_wall != UINT64_MAX && wall_ns(t_ns) > messages_until_wall;
  }
  std::vector<RtSpan> rt;
  // The application's ANNOTATION markers (lockstep_annotate), in record order: (record, string id).
  // Markers are rare, so the hot loop only appends here; a finding looks up the last one before a record.
  std::vector<std::pair<RecordRef, uint32_t>> annotations;
  // Why the bundled runtime stopped this process (its "lockstep-rt abort: " annotation), if it did.
  std::string stopped_by_runtime;

  // Lifecycle as recorded.
  bool mpi_initialized = false;  // an MPI_INIT marker (MPI_Init or MPI_Init_thread returned)
  uint64_t spawned_world = 0;    // its `extra`: nonzero in a process MPI_Comm_spawn started (its world's key)
  bool finalize_entered = false, finalize_returned = false;
  bool saw_signal = false, saw_abort = false, saw_process_end = false;
  uint64_t exit_status = UINT64_MAX;  // PROCESS_END value: UINT64_MAX when the tracer could not see it
  uint64_t signal = 0;
  // (2.0) MPI's own errors: calls that returned an error code (their MPI_ERROR markers), communicator
  // creation calls, and the call the process ended inside (the record id its end or signal marker
  // names; 0 when none or not known). Rare: the hot loop only appends.
  struct MpiError {
    uint64_t record = 0;  // id of the failed call's record
    uint32_t error_class = 0;
    std::string text;  // the class's text, "MPI_ERR_ROOT: invalid root"
  };
  std::vector<MpiError> mpi_errors;
  struct CreationCall {
    RecordRef ref = 0;
    uint8_t comm_op = 0;  // lst_comm_op
    uint64_t parent = 0;  // the communicator it was called on (0: MPI_COMM_NULL)
    int64_t color = 0;    // splits: the colour given (LST_UNDEFINED: MPI_UNDEFINED)
    uint8_t state = 0;    // ENTERED (never came back), RETURNED or FAILED
    uint64_t caller = 0;
  };
  std::vector<CreationCall> creations;
  uint64_t died_in = 0;
  // The last WAIT record if it is still ENTERED (the rank is blocked in MPI_Wait*).
  bool in_wait = false;
  uint64_t wait_t_ns = 0;       // that WAIT record's entry time
  uint64_t wait_first_ref = 0;  // record id of the first request's collective
  uint64_t last_t_ns = 0;
  uint64_t end_t_ns = 0;     // the PROCESS_END marker's time (0: none)
  uint64_t signal_t_ns = 0;  // the SIGNAL marker's time (0: none)
  // What `lockstep run` read of this process in /proc as it stopped the job at --timeout (its note):
  // the kernel's state, "stopped", "traced" (a debugger), "uninterruptible" (held in the kernel),
  // "running", "sleeping" or "exiting" (empty: not seen); its CPU share over 0.2 s; and for
  // "uninterruptible", where the kernel held it.
  std::string at_stop;
  double at_stop_cpu = -1;
  std::string at_stop_wchan;
  // Held by the kernel at the stop: it could not have gone on whatever the others did.
  bool frozen_at_stop() const {
    return at_stop == "stopped" || at_stop == "traced" || at_stop == "uninterruptible";
  }

  EndState end = EndState::kUnknown;  // set by classify_end()

  std::shared_ptr<const RecordSource> source;
  std::vector<uint64_t> site_addr;  // distinct call-site addresses of the collectives
  std::vector<uint64_t> site_key;   // streamed ranks: the key of each site_addr (resolve_stream)
  bool streamed = false;            // ingest_stream: sequences hold no per-call vectors until materialized
  mutable bool materialized = false;

  // The rank's message calls (the tally's, in record order) read again from its trace; fn returns false
  // to stop.
  void for_each_message(const std::function<bool(const P2P&)>& fn) const;
  // The same from record `from_id` on, always reading the records in this process.
  void for_each_message_from(uint64_t from_id, const std::function<bool(const P2P&)>& fn) const;
  // Tallies the messages again from the trace (after messages_until_wall changed).
  void recount_messages();
  uint64_t end_id = 0;  // the source's end when ingested: later walks read no further

  // Fills every sequence's `sig` and `ref` from the records (a second walk over the trace) when the rank
  // was streamed; nothing otherwise. `release()` gives that memory back (a streamed rank only).
  void materialize() const;
  void release() const;
  // Every kept collective once, in record order, without materializing: fn(calls, n) with batches of up
  // to kCallBatch, so that a caller's loop over the calls runs inline rather than one call through fn
  // per record. A streamed rank walks its trace (one pass, a growing file's records copied a piece at a
  // time: a batch's records are valid only during fn); a materialized one goes through its sequences'
  // refs.
  struct CallAt {
    uint32_t seq;  // index into seqs
    uint32_t pos;  // position among the sequence's kept calls
    RecordRef ref;
    const lst_record* rec;
  };
  static constexpr size_t kCallBatch = 256;
  void for_each_call(const std::function<void(const CallAt*, size_t)>& fn) const;

  const Sequence* sequence(uint64_t comm) const {
    auto it = seq_index.find(comm);
    return it == seq_index.end() ? nullptr : &seqs[it->second];
  }
  const CommView* comm(uint64_t id) const {
    for (auto& c : comms)
      if (c.id == id) return &c;
    return nullptr;
  }
  const lst_record* record(RecordRef r) const { return source->record(source->first_id() + r); }
  // Module-relative call site of an address (module index, offset); -1 when outside every module.
  int module_of(uint64_t addr) const;
  // Text of the last application annotation this rank wrote before record `before` ("" if none);
  // UINT32_MAX: the last one in the trace.
  std::string_view context(RecordRef before) const;
};

// Fills the per-call vectors of several ranks whose records lie elsewhere (`check --mpi`: with their
// owners), asking for all of them at once and running `meanwhile` while they are read.
class CallFiller {
 public:
  virtual ~CallFiller() = default;
  virtual void fill(const std::vector<const Rank*>& ranks, const std::function<void()>& meanwhile) = 0;
};

// Rank::materialize() for several ranks: those whose records lie elsewhere are asked for at once, every
// owner reading in parallel, while the others are read here on `jobs` threads (0: one per core); with
// `here` false the others are left as they are (for a caller that materializes and releases them one
// at a time).
void materialize_all(const std::vector<const Rank*>& ranks, bool here = true, int jobs = 1);

// The note `lockstep run` leaves in the trace directory when it stops the job at --timeout.
inline constexpr std::string_view kRunTimeoutNote = "lockstep-run-timeout.txt";

// Prefix of the annotation the bundled runtime writes when it stops a process.
inline constexpr std::string_view kRuntimeAbortPrefix = LOCKSTEP_RT_ABORT_PREFIX;

// Alignment signature of a collective: what must agree across ranks, plus the call site (module and
// offset), so that equal-looking calls from different lines stay apart during alignment.
uint64_t semantic_signature(const lst_record& r, std::string_view name);
uint64_t site_hash(const Rank& rank, uint64_t caller);

// Turns the records of `source` into `rank` (header fields are the caller's). With defer_sites the
// call sites stay unresolved until resolve_sites(); otherwise they are keyed by module and offset.
void ingest(Rank& rank, std::shared_ptr<const RecordSource> source, bool defer_sites = false);

// The streaming ingest: the same model without the per-call vectors, so resident memory stays per
// sequence rather than per record. Every site key is folded in by resolve_stream(), which must follow.
void ingest_stream(Rank& rank, std::shared_ptr<const RecordSource> source);

// Keys the distinct call sites of a rank (one key per address in rank.site_addr): calls with equal
// keys are the same place in the program. The default is module + offset; a symbolizer gives
// file:line, which also merges the copies of one line that an optimizer makes.
using SiteKeys = std::function<std::vector<uint64_t>(const Rank& rank, const std::vector<uint64_t>& addrs)>;
std::vector<uint64_t> module_site_keys(const Rank& rank, const std::vector<uint64_t>& addrs);
// Folds the site keys into the alignment signatures and computes each sequence's hash.
void resolve_sites(Rank& rank, const SiteKeys& keys = {});
// resolve_sites() for a streamed rank: keys its sites and completes each sequence's hash.
void resolve_stream(Rank& rank, const SiteKeys& keys = {});
// Brings a streamed rank's sequence hashes to their windows [skip, skip + count) after trimming, by
// walking only the records outside them (a trimmed start: the few records before the window).
void rehash_stream(Rank& rank);

// How a process ended, as far as its trace and (on this host only) /proc can tell.
void classify_end(Rank& rank, const std::string& this_host);

struct Job {
  std::string job_id;
  uint64_t job_hash = 0;
  int32_t world_size = LST_NONE;
  std::vector<Rank> ranks;            // sorted by world rank
  std::vector<int32_t> missing;       // world ranks with no trace file
  uint64_t min_wall_ns = 0;           // earliest rank start: times are reported from here
  std::vector<std::string> warnings;  // files skipped, unpublished slots: reported, not fatal
  std::vector<int32_t> by_world;      // world rank -> index in ranks, -1 if absent (finish_job)
  // Ring-mode traces: per communicator, the tracer's number of the first collective every rank still
  // has; sequences are trimmed to start there (finish_job) and positions are reported from it.
  std::unordered_map<uint64_t, uint32_t> ring_base;
  // Ring-mode traces: per communicator whose earlier calls some rank's ring overwrote, the latest first
  // number any rank kept (dense or not); the verdict covers nothing before it.
  std::unordered_map<uint64_t, uint32_t> ring_start;
  // Set when `lockstep run --timeout` stopped the job (its note in the trace directory): the job hung.
  std::string stopped_by_run;
  // The moment of run's SIGTERM (CLOCK_MONOTONIC on `stopped_on_host`; 0 when not known).
  uint64_t stopped_at_ns = 0;
  std::string stopped_on_host;
  const Rank* rank(int32_t world) const {
    if (world >= 0 && size_t(world) < by_world.size())
      return by_world[size_t(world)] < 0 ? nullptr : &ranks[size_t(by_world[size_t(world)])];
    for (auto& r : ranks)
      if (r.world_rank == world) return &r;
    return nullptr;
  }
};

// The shared copy of a member list (equal lists recorded by different ranks share one; thread-safe).
std::shared_ptr<const std::vector<int32_t>> intern_members(std::vector<int32_t> members);

// Sorts ranks, finds missing ones, and computes the time origin.
void finish_job(Job& job);

// Records in memory, for tests: a RecordSource and helpers that produce the records a tracer writes.
class MemorySource : public RecordSource {
 public:
  uint64_t first_id() const override { return 0; }
  uint64_t end_id() const override { return records.size(); }
  const lst_record* record(uint64_t id) const override {
    return id < records.size() && records[id].word ? &records[id] : nullptr;
  }
  std::string_view string(uint32_t id) const override {
    return id && id <= strings.size() ? std::string_view(strings[id - 1]) : std::string_view();
  }
  std::vector<int32_t> members(uint32_t id) const override {
    return id && id <= blobs.size() ? blobs[id - 1] : std::vector<int32_t>();
  }
  std::vector<lst_record> records;
  std::vector<std::string> strings;
  std::vector<std::vector<int32_t>> blobs;
  const lst_record* contiguous() const override { return records.data(); }
};

}  // namespace lockstep::check
