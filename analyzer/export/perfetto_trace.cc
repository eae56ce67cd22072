// Perfetto protobuf trace writer: a minimal encoder of the few TracePacket fields the export needs,
// written from the field numbers of Perfetto's public trace protos. Times are nanoseconds from the job's
// time origin, the earliest rank's trace start, so every rank shares one clock; a lane's slices carry them
// as deltas on a sequence-scoped incremental clock, the bulk of the file being these two packets per call.
#include "perfetto_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "lockstep/format/reader.h"
#include "lockstep/report/report.h"
#include "proto_wire.h"
#include "turns.h"

namespace lockstep::exporter {

namespace {

// Field numbers (protos/perfetto/trace/...): only those written here.
constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket; defaults: TracePacketDefaults { track_event_defaults = 11 { track_uuid = 11 },
// timestamp_clock_id = 58 }
constexpr uint32_t kClockSnapshot = 6, kTimestamp = 8, kSequenceId = 10 /* trusted_packet_sequence_id */,
                   kTrackEvent = 11, kInternedData = 12, kSequenceFlags = 13, kTimestampClockId = 58,
                   kPacketDefaults = 59, kTrackDescriptor = 60;
// ClockSnapshot { repeated Clock clocks = 1 { clock_id = 1, timestamp = 2, is_incremental = 3 } }
constexpr uint32_t kCsClocks = 1, kClkId = 1, kClkTimestamp = 2, kClkIncremental = 3;
// BUILTIN_CLOCK_BOOTTIME is the trace clock when a snapshot names it; ids 64-127 are sequence-scoped.
constexpr uint64_t kBootTime = 6, kLaneClock = 64;
// TrackEvent. Flows use the varint flow_ids_old (36), which trace processor reads like flow_ids (47,
// fixed64): an id below 2^21 takes 3 bytes there instead of 8.
constexpr uint32_t kEvAnnotation = 4, kEvType = 9, kEvNameIid = 10, kEvTrackUuid = 11, kEvName = 23,
                   kEvSourceLocationIid = 34, kEvFlowIdsVarint = 36;
// Packet sequences: the findings of every rank in turn on one; a rank's lanes each on their own, written
// together as the rank's calls are read, with ids from kFirstLaneSequence (so that they take one byte
// for a rank's first 126 communicators), cleared and reused by the next rank.
constexpr uint32_t kFindingSequence = 1, kFirstLaneSequence = 2;
// DebugAnnotation
constexpr uint32_t kDaNameIid = 1, kDaUint = 3, kDaInt = 4, kDaString = 6, kDaStringIid = 17;
// InternedData; each entry is { iid = 1, name/str/file_name = 2, function_name = 3, line_number = 4 }
constexpr uint32_t kInEventNames = 2, kInAnnotationNames = 3, kInSourceLocations = 4,
                   kInStrings = 29 /* debug_annotation_string_values */;
// TrackDescriptor; process: ProcessDescriptor { pid = 1, process_name = 6 }
constexpr uint32_t kTdUuid = 1, kTdName = 2, kTdProcess = 3, kTdParent = 5, kTdChildOrdering = 11,
                   kTdSiblingRank = 12, kTdProcessOrdering = 19;
enum : uint64_t { kSeqCleared = 1, kSeqNeedsState = 2 };
enum : uint64_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3 };
enum : uint64_t { kChildOrderingExplicit = 3, kProcessOrderingExplicit = 1 };

// Debug annotation names, interned on every sequence (iid = value).
enum Arg : uint64_t {
  kArgSeq = 1,
  kArgCount,
  kArgDtype,
  kArgOp,
  kArgRoot,
  kArgPeer,
  kArgTensor,
  kArgState,
  kArgSummary,
  kArgExplanation,
  kArgCommunicator,
  kArgEnd
};
constexpr const char* kArgNames[] = {"",     "seq",    "count", "dtype",   "op",          "root",
                                     "peer", "tensor", "state", "summary", "explanation", "communicator"};
static_assert(sizeof kArgNames / sizeof *kArgNames == kArgEnd);

// A packet sequence's incremental state as written so far: the interned ids it has defined, each marked
// with the generation the sequence was (re)started as, so that a restart clears nothing; and its clock.
struct Sequence {
  uint32_t wire = 0;  // trusted_packet_sequence_id
  uint32_t generation = 0;
  uint64_t last = 0;  // the lane clock's time
  std::vector<uint32_t> names, strings, sites, kinds;
  // True the first time since the sequence's start that it uses `iid` of table `t`.
  bool first_use(std::vector<uint32_t>& t, uint64_t iid) {
    if (t.size() <= iid) t.resize(iid + 1, 0);
    if (t[iid] == generation) return false;
    t[iid] = generation;
    return true;
  }
};

constexpr size_t kCopy = 64;  // bytes copied at once from a short field list

// What every call of one kind carries: name, call site and arguments, encoded once.
struct KindBlock {
  bool built = false;
  // TrackEvent fields: name_iid, source_location_iid, argument annotations; then kCopy zero bytes, so
  // that a call copies a fixed kCopy bytes of short fields (a few moves) rather than calling memcpy.
  std::string fields;
  size_t size = 0;
  uint64_t name = 0, site = 0;  // iids (site 0: no call site)
  uint32_t site_index = 0;      // into Timeline::sites, when `site`
  std::vector<uint64_t> strings;
};

// One thread's writer: the bytes of one turn at a time (Turns), with the interned ids of that turn.
class PerfettoWriter {
 public:
  PerfettoWriter(Output& out, Turns& turns, report::Timeline& tl)
      : out_(out), turns_(turns), tl_(tl), buf_(kBufferSize) {}

  static constexpr size_t kFlushAt = 4 << 20;  // one write per 4 MB
  static constexpr size_t kBufferSize = kFlushAt + (1 << 16);

  // Starts the bytes of `turn`, with interned ids of its own.
  void begin_turn(size_t turn) {
    turn_ = turn;
    names_.clear();
    strings_.clear();
    for (uint32_t k : built_) blocks_[k] = KindBlock();
    built_.clear();
    site_iids_.clear();
  }
  // Waits for the turn, writes what it holds of it and passes the turn on.
  void end_turn() {
    turns_.wait(turn_);
    flush();
    turns_.pass(turn_);
  }

  void packet(const Proto& p) {
    char* o = room(1 + 10 + p.b.size());
    *o++ = char(kTracePacket << 3 | 2);
    o = put_varint(o, p.b.size());
    o = std::copy(p.b.begin(), p.b.end(), o);
    len_ = size_t(o - buf_.data());
    ++stats.packets;
  }
  // Only in the writer's turn.
  void flush() {
    if (len_) out_.write(buf_, len_);
    len_ = 0;
  }

  // A slice on the current lane sequence's track (its two packets counted by the caller in stats): a
  // begin packet carrying the TrackEvent fields `fields`
  // (what every call of its kind carries, followed by at least kCopy readable bytes), what tail(o) writes
  // at o (the call's own fields, at most kTail bytes) and the interned data `in` they need, then an end
  // packet. Framed straight into the output buffer, since this runs once per call: each length is first
  // given one byte, which is what nearly every slice needs, and widened afterwards when it does not fit.
  // The packets leave out sequence_flags: it only tells a reader to drop them when the sequence's state
  // was lost, and every sequence here starts by setting it.
  static constexpr size_t kTail = 64;
  template <class Tail>
  __attribute__((always_inline)) void slice(Sequence& seq, int64_t begin, int64_t end, std::string_view in,
                                            const char* fields, size_t fields_len, Tail&& tail) {
    // Two packets: tags, lengths (at most 10 bytes each once widened), stamps, the fixed fields.
    constexpr size_t kFrame = 2 * (2 + 10 + kMaxStamp) + size_t{2} * (2 + 10) + 4 + kTail;
    char* o = room(kFrame + fields_len + kCopy + (in.empty() ? 0 : 11 + in.size()));
    char* const base = o - len_;  // the buffer, read before the stores below (which could alias it)
    char* const packet = o;
    o += 2;  // the packet's tag and length
    o = put_stamp(o, seq, begin < 0 ? 0 : uint64_t(begin));
    if (!in.empty()) {
      *o++ = char(kInternedData << 3 | 2);
      o = put_varint(o, in.size());
      std::memcpy(o, in.data(), in.size());
      o += in.size();
    }
    *o++ = char(kTrackEvent << 3 | 2);
    char* const event = o++;  // its length
    *o++ = char(kEvType << 3);
    *o++ = char(kSliceBegin);
    copy_short(o, fields, fields_len);
    o = tail(o + fields_len);
    const size_t ev_len = size_t(o - event - 1), body = size_t(o - packet - 2);
    packet[0] = char(kTracePacket << 3 | 2);
    if (__builtin_expect(body < 0x80, 1)) {
      packet[1] = char(body);
      *event = char(ev_len);
    } else {
      o = widen(packet, event, o);
    }
    char* const end_packet = o;
    *o++ = char(kTracePacket << 3 | 2);
    o++;
    o = put_stamp(o, seq, end < 0 ? 0 : uint64_t(end));
    *o++ = char(kTrackEvent << 3 | 2);
    *o++ = 2;
    *o++ = char(kEvType << 3);
    *o++ = char(kSliceEnd);
    end_packet[1] = char(o - end_packet - 2);  // at most 4 + kMaxStamp
    len_ = size_t(o - base);
  }
  // An event on the findings sequence, at an absolute time.
  void event(int64_t ts, const Proto& ev) {
    Proto p;
    p.u(kTimestamp, ts < 0 ? 0 : uint64_t(ts));  // the time origin is the earliest rank's start
    p.u(kSequenceId, kFindingSequence);
    p.u(kSequenceFlags, kSeqNeedsState);
    p.msg(kTrackEvent, ev);
    packet(p);
  }

  // A track: `process` names a process track (pid = the rank), else a child track of `parent`.
  void track(uint64_t uuid, uint64_t parent, const std::string& name, int64_t order, int32_t pid = -1) {
    Proto d, p;
    d.u(kTdUuid, uuid);
    if (pid >= 0) {
      Proto pd;
      pd.u(1, uint64_t(uint32_t(pid)));
      pd.bytes(6, name);
      d.msg(kTdProcess, pd);
      d.u(kTdChildOrdering, kChildOrderingExplicit);
    } else {
      d.u(kTdParent, parent);
      d.bytes(kTdName, name);
    }
    d.i(kTdSiblingRank, order);
    p.msg(kTrackDescriptor, d);
    packet(p);
  }
  void root_ordering() {
    Proto d, p;
    d.u(kTdUuid, 0);
    d.u(kTdProcessOrdering, kProcessOrderingExplicit);
    p.msg(kTrackDescriptor, d);
    packet(p);
  }

  // (Re)starts a lane's or the findings' packet sequence, its events landing on `track` unless they say
  // otherwise: it has defined no interned ids yet. A lane sequence also times its
  // packets on an incremental clock: each timestamp is the delta from the previous one on the sequence. Its
  // snapshot puts it and BOOTTIME (the trace clock) at 0, so the times it adds up are the absolute ones,
  // and every lane's snapshot is the same (the trace clock must not go back from one to the next).
  void start_sequence(Sequence& seq, uint64_t track, bool lane) {
    const uint32_t wire = seq.wire;
    seq.generation = ++generation_;
    Proto p, defaults, ted, in, e;
    p.u(kSequenceId, wire);
    p.u(kSequenceFlags, kSeqCleared | kSeqNeedsState);
    ted.u(11, track);
    defaults.msg(11, ted);
    if (lane) defaults.u(kTimestampClockId, kLaneClock);
    p.msg(kPacketDefaults, defaults);
    for (uint64_t a = 1; a < kArgEnd; ++a) {
      e.clear();
      e.u(1, a);
      e.bytes(2, kArgNames[a]);
      in.msg(kInAnnotationNames, e);
    }
    p.msg(kInternedData, in);
    packet(p);
    if (lane) {
      Proto snap, clock;
      p.clear();
      p.u(kSequenceId, wire);
      clock.u(kClkId, kBootTime);
      clock.u(kClkTimestamp, 0);
      snap.msg(kCsClocks, clock);
      clock.clear();
      clock.u(kClkId, kLaneClock);
      clock.u(kClkTimestamp, 0);
      clock.u(kClkIncremental, 1);
      snap.msg(kCsClocks, clock);
      p.msg(kClockSnapshot, snap);
      packet(p);
      seq.last = 0;
    }
  }

  const KindBlock& kind(uint32_t k) {
    if (blocks_.size() <= k) blocks_.resize(k + 1);
    KindBlock& b = blocks_[k];
    if (b.built) return b;
    built_.push_back(k);
    std::lock_guard<std::mutex> lock(tl_.tables_mutex);  // other threads may be adding kinds
    const report::CallKind& ck = tl_.kinds[k];
    Proto f, a;
    b.name = names_.iid(ck.operation);
    f.u(kEvNameIid, b.name);
    const check::Site& site = tl_.sites[ck.site];
    if (!site.text().empty()) {
      auto [it, fresh] = site_iids_.try_emplace(ck.site, site_iids_.size() + 1);
      b.site = it->second;
      b.site_index = ck.site;
      f.u(kEvSourceLocationIid, b.site);
    }
    auto str = [&](Arg name, const std::string& v) {
      uint64_t iid = strings_.iid(v);
      b.strings.push_back(iid);
      a.clear();
      a.u(kDaNameIid, name);
      a.u(kDaStringIid, iid);
      f.msg(kEvAnnotation, a);
    };
    auto num = [&](Arg name, int64_t v) {
      a.clear();
      a.u(kDaNameIid, name);
      if (v >= 0)
        a.u(kDaUint, uint64_t(v));
      else
        a.i(kDaInt, v);
      f.msg(kEvAnnotation, a);
    };
    if (ck.dtype != LST_DT_NONE || ck.count) {
      num(kArgCount, int64_t(ck.count));
      str(kArgDtype, format::dtype_name(ck.dtype));
    }
    if (ck.redop) str(kArgOp, format::redop_name(ck.redop));
    if (ck.root != LST_NONE) num(kArgRoot, ck.root);
    if (ck.peer != LST_NONE) num(kArgPeer, ck.peer);
    if (!ck.tensor.empty()) str(kArgTensor, ck.tensor);
    b.size = f.b.size();
    b.fields = std::move(f.b);
    b.fields.resize(b.size + kCopy);
    b.built = true;
    return b;
  }

  // The interned data a packet on `seq` must carry before it can use kind `k` (empty when defined already).
  void define(uint32_t k, Sequence& seq, Proto& in) {
    if (!seq.first_use(seq.kinds, k)) return;
    const KindBlock& b = blocks_[k];
    Proto e;
    if (seq.first_use(seq.names, b.name)) {
      e.u(1, b.name);
      e.bytes(2, names_.value(b.name));
      in.msg(kInEventNames, e);
    }
    for (uint64_t s : b.strings) define_string(s, seq, in);
    if (b.site && seq.first_use(seq.sites, b.site)) {
      std::lock_guard<std::mutex> lock(tl_.tables_mutex);
      const check::Site& site = tl_.sites[b.site_index];
      e.clear();
      e.u(1, b.site);
      e.bytes(2, site.file.empty() ? site.text() : site.file);
      if (!site.function.empty()) e.bytes(3, site.function);
      if (site.line > 0) e.u(4, uint64_t(site.line));
      in.msg(kInSourceLocations, e);
    }
  }
  void define_string(uint64_t s, Sequence& seq, Proto& in) {
    if (!seq.first_use(seq.strings, s)) return;
    Proto e;
    e.u(1, s);
    e.bytes(2, strings_.value(s));
    in.msg(kInStrings, e);
  }
  uint64_t string_iid(const std::string& s) { return strings_.iid(s); }

  PerfettoStats stats;

 private:
  static constexpr size_t kHoldAt = 64 << 20;  // what a thread holds at most while not its turn

  // Space for `n` more bytes at the end of the buffer, flushing it first once it holds kFlushAt bytes and it
  // is the writer's turn; out of turn it grows, until it holds kHoldAt and waits for the turn.
  // The check that nearly every call ends with inline, the rest out of line.
  __attribute__((always_inline)) char* room(size_t n) {
    if (__builtin_expect(len_ < kFlushAt && len_ + n <= buf_.size(), 1)) return buf_.data() + len_;
    return make_room(n);
  }
  __attribute__((noinline)) char* make_room(size_t n) {
    if (turns_.stopped()) throw Stopped{};  // another thread failed: this rank is not written
    if (len_ >= kFlushAt) {
      if (len_ >= kHoldAt) turns_.wait(turn_);
      if (turns_.is(turn_)) flush();
    }
    if (len_ + n > buf_.size()) buf_.resize(std::max(len_ + n, buf_.size() * 2));
    return buf_.data() + len_;
  }
  // The begin packet at p, whose TrackEvent's length byte is at e and which ends at o, with its two
  // lengths written as the varints they need: the bytes after each move up to make room.
  static char* widen(char* p, char* e, char* o) {
    const size_t ev_len = size_t(o - e - 1), ev_extra = varint_size(ev_len) - 1;
    std::memmove(e + 1 + ev_extra, e + 1, ev_len);
    put_varint(e, ev_len);
    o += ev_extra;
    const size_t body = size_t(o - p - 2), body_extra = varint_size(body) - 1;
    std::memmove(p + 2 + body_extra, p + 2, body);
    put_varint(p + 1, body);
    return o + body_extra;
  }
  // Copies n bytes, and up to kCopy whatever n is when n is below it: the caller made room for that.
  static void copy_short(char* o, const char* p, size_t n) {
    if (n <= kCopy)
      std::memcpy(o, p, kCopy);
    else
      std::memcpy(o, p, n);
  }

  // A lane packet's timestamp and sequence id: the delta from the sequence's previous time, or, for a
  // time before it (which the unsigned delta cannot say), the absolute time on the trace clock.
  static constexpr size_t kMaxStamp = 1 + 10 + 3 + 1 + 5;  // the largest put_stamp writes
  static char* put_stamp(char* o, Sequence& seq, uint64_t t) {
    *o++ = char(kTimestamp << 3);
    if (t >= seq.last) {
      o = put_varint(o, t - seq.last);
      seq.last = t;
    } else {
      o = put_varint(o, t);
      o = put_varint(o, kTimestampClockId << 3);
      *o++ = char(kBootTime);
    }
    *o++ = char(kSequenceId << 3);
    return put_varint(o, seq.wire);
  }

  Output& out_;
  Turns& turns_;
  size_t turn_ = 0;
  report::Timeline& tl_;
  std::vector<char> buf_;
  size_t len_ = 0;
  uint32_t generation_ = 0;  // of the sequence last (re)started
  Table names_, strings_;
  // By Timeline kind; a deque: lanes keep references to their kinds while others are added.
  std::deque<KindBlock> blocks_;
  std::vector<uint32_t> built_;                       // the kinds built in this turn
  std::unordered_map<uint32_t, uint64_t> site_iids_;  // Timeline site -> source location iid
};

// A DebugAnnotation with an unsigned or an interned string value, framed as TrackEvent field 4.
char* uint_arg(char* o, Arg name, uint64_t v) {
  *o++ = char(kEvAnnotation << 3 | 2);
  *o++ = char(2 + 1 + varint_size(v));
  *o++ = char(kDaNameIid << 3);
  *o++ = char(name);
  *o++ = char(kDaUint << 3);
  return put_varint(o, v);
}
char* string_arg(char* o, Arg name, uint64_t iid) {
  *o++ = char(kEvAnnotation << 3 | 2);
  *o++ = char(2 + 2 + varint_size(iid));
  *o++ = char(kDaNameIid << 3);
  *o++ = char(name);
  o = put_varint(o, kDaStringIid << 3);
  return put_varint(o, iid);
}

// Track ids: the rank's process track, then two per communicator (host calls, device times).
uint64_t process_uuid(int32_t rank) { return (uint64_t(uint32_t(rank)) + 1) << 24; }
uint64_t host_uuid(int32_t rank, uint32_t comm) { return process_uuid(rank) + 2 * uint64_t(comm) + 1; }
uint64_t device_uuid(int32_t rank, uint32_t comm) { return process_uuid(rank) + 2 * uint64_t(comm) + 2; }

}  // namespace

PerfettoStats write_perfetto_trace(const check::Job& job, const check::Result& result, report::Timeline& tl,
                                   std::FILE* out, const ChromeOptions& opt) {
  const auto findings_of = findings_by_rank(result);
  const uint64_t ncomms = tl.comms.size();
  const uint64_t first = uint64_t(std::max<int64_t>(opt.from, 0)),
                 to = uint64_t(std::max<int64_t>(opt.to, 0));
  const size_t nthreads = std::min<size_t>(std::max(opt.threads, 1), std::max<size_t>(job.ranks.size(), 1));
  // A thread of its own for the writes only where a core is left for it: with every core encoding, it
  // only takes turns with the encoders (and wakes one per buffer), which measured slower, to /dev/null
  // and to a file alike.
  Output output(out, PerfettoWriter::kBufferSize, nthreads < usable_cpus());
  Turns turns;
  // One thread's share of the ranks: the next rank nobody has taken, until none is left. What it keeps
  // from rank to rank (lanes, sequences) is its own; the timeline's tables are shared, under their lock.
  auto encode_ranks = [&](PerfettoWriter& w) {
    Proto ev, a, in;
    // A lane being written: its sequence, and what each of its calls needs.
    struct LaneOut {
      Sequence seq;
      uint32_t comm = 0;  // index into tl.comms
      bool flows = false;
      size_t paired = 0;  // positions every rank of the communicator reached
      const KindBlock* kb = nullptr;
      uint32_t kb_kind = 0;
    };
    std::vector<LaneOut> lanes;
    struct DeviceCall {
      uint32_t lane, pos, kind;
      int64_t t0, t1;
    };
    std::vector<DeviceCall> device;
    Sequence findings;
    findings.wire = kFindingSequence;
    auto encode_rank = [&](const check::Rank& r) {
      const int32_t rank = r.world_rank;
      w.track(process_uuid(rank), 0, fmt::format("rank {} ({} pid {})", rank, r.host, r.pid), rank, rank);
      const int64_t rank_end = tl.time_of(r, r.last_t_ns);
      // Every lane's track and sequence first; then the rank's calls in record order, each a slice on its
      // lane's sequence as it is read, so that no rank's calls are ever held in memory.
      if (lanes.size() < r.seqs.size()) lanes.resize(r.seqs.size());
      for (size_t si = 0; si < r.seqs.size(); ++si) {
        LaneOut& l = lanes[si];
        l.comm = uint32_t(tl.comm_index(r.seqs[si].comm));
        const report::TimelineComm& comm = tl.comms[l.comm];
        const uint64_t track = host_uuid(rank, l.comm);
        w.track(track, process_uuid(rank), comm.ref.name, 2 * int64_t(l.comm));
        l.flows = opt.flows && comm.ranks.size() > 1;
        l.paired = comm.min_length;
        l.kb = nullptr;
        l.seq.wire = kFirstLaneSequence + uint32_t(si);
        w.start_sequence(l.seq, track, true);
      }
      device.clear();
      // One slice per call, on its lane's sequence. Timeline::each_call runs this on a copy per batch of
      // calls, whose fields stay in registers while bytes are stored into the buffer.
      struct Slices {
        PerfettoWriter* w;
        LaneOut* lanes;
        Proto* in;
        std::vector<DeviceCall>* device;
        uint64_t from, to, comms;
        int64_t rank_end;
        uint64_t slices = 0, flows = 0;
        void operator()(uint32_t lane, uint32_t pos, const report::Call& c) {
          const uint64_t i = pos;
          if (i < from || i >= to) return;
          LaneOut& l = lanes[lane];
          // The interned data this call's packet must carry: none, but for a kind or state new to the
          // sequence. A lane repeats its kinds in runs: the same kind as the previous call is defined on
          // the sequence already.
          std::string_view define;
          if (__builtin_expect(!l.kb || c.kind != l.kb_kind, 0)) {
            in->clear();
            l.kb = &w->kind(c.kind);
            l.kb_kind = c.kind;
            w->define(c.kind, l.seq, *in);
            define = in->b;
          }
          uint64_t state = 0;  // the iid of a call's state other than RETURNED
          if (__builtin_expect(!c.returned || c.state == LST_STATE_FAILED, 0)) {
            if (define.empty()) in->clear();
            state = w->string_iid(c.returned ? format::state_name(c.state) : "ENTERED (never returned)");
            w->define_string(state, l.seq, *in);
            define = in->b;
          }
          // One flow per position every rank of the communicator reached (MPI pairs calls by it);
          // Perfetto chains the slices that share a flow id by time. Ids interleave the communicators
          // (position K of communicator C is K * comms + C + 1), so that they stay small whatever the
          // number of communicators.
          const bool flow = l.flows && i < l.paired;
          flows += flow;
          ++slices;
          const int64_t t1 = c.returned ? c.t1_ns : std::max(rank_end, c.t0_ns);
          w->slice(l.seq, c.t0_ns, std::max(t1, c.t0_ns), define, l.kb->fields.data(), l.kb->size,
                   [&](char* o) {
                     o = uint_arg(o, kArgSeq, i);
                     if (state) o = string_arg(o, kArgState, state);
                     if (flow) {
                       static_assert(kEvFlowIdsVarint << 3 >= 0x80 && kEvFlowIdsVarint << 3 < 0x4000);
                       *o++ = char((kEvFlowIdsVarint << 3) | 0x80);
                       *o++ = char((kEvFlowIdsVarint << 3) >> 7);
                       o = put_varint(o, i * comms + l.comm + 1);
                     }
                     return o;
                   });
          if (c.device && c.dev1_ns >= c.dev0_ns)
            device->push_back({lane, pos, c.kind, c.dev0_ns, c.dev1_ns});
        }
      } slices{&w, lanes.data(), &in, &device, first, to, ncomms, rank_end};
      tl.each_call(r, slices);
      w.stats.slices += slices.slices;
      w.stats.packets += 2 * slices.slices;
      w.stats.flows += slices.flows;
      // Device times on their own track per lane: they overlap the host calls that enqueued them.
      std::stable_sort(device.begin(), device.end(),
                       [](const DeviceCall& x, const DeviceCall& y) { return x.lane < y.lane; });
      for (size_t d = 0; d < device.size();) {
        LaneOut& l = lanes[device[d].lane];
        const uint64_t dtrack = device_uuid(rank, l.comm);
        w.track(dtrack, process_uuid(rank), tl.comms[l.comm].ref.name + " (device)", 2 * int64_t(l.comm) + 1);
        w.start_sequence(l.seq, dtrack, true);
        for (const uint32_t lane = device[d].lane; d < device.size() && device[d].lane == lane; ++d) {
          const DeviceCall& c = device[d];
          const uint64_t name = w.kind(c.kind).name;
          in.clear();
          w.define(c.kind, l.seq, in);
          static const char kNone[kCopy] = {};
          w.slice(l.seq, c.t0, c.t1, in.b, kNone, 0, [&](char* o) {
            o = put_varint(o, kEvNameIid << 3);
            o = put_varint(o, name);
            return uint_arg(o, kArgSeq, c.pos);
          });
          ++w.stats.slices;
          w.stats.packets += 2;
        }
      }
      auto fit = findings_of.find(rank);
      if (fit == findings_of.end()) return;
      w.start_sequence(findings, process_uuid(rank), false);
      for (const check::Finding* f : fit->second) {
        if (f->seq >= 0 && (f->seq < opt.from || f->seq >= opt.to)) continue;
        const int ci = tl.comm_index(f->comm.id);
        ev.clear();
        ev.u(kEvType, kInstant);
        // On the communicator's track when this rank has one, else on the rank's process track.
        bool has_lane = false;
        for (auto& l : lanes) has_lane |= ci >= 0 && l.comm == uint32_t(ci);
        if (has_lane) ev.u(kEvTrackUuid, host_uuid(rank, uint32_t(ci)));
        ev.bytes(kEvName, check::kind_name(f->kind));
        auto text = [&](Arg name, const std::string& v) {
          a.clear();
          a.u(kDaNameIid, name);
          a.bytes(kDaString, v);
          ev.msg(kEvAnnotation, a);
        };
        text(kArgSummary, report::headline(*f));
        text(kArgExplanation, f->explanation);
        a.clear();
        a.u(kDaNameIid, kArgSeq);
        a.i(kDaInt, f->seq);
        ev.msg(kEvAnnotation, a);
        text(kArgCommunicator, f->comm.name);
        if (!f->tensor.empty()) text(kArgTensor, f->tensor);
        w.event(finding_time(*f, rank, rank_end), ev);
        ++w.stats.instants;
      }
    };
    for (size_t ri; (ri = turns.take()) < job.ranks.size();) {
      w.begin_turn(ri + 1);
      encode_rank(job.ranks[ri]);
      w.end_turn();
    }
  };
  std::vector<std::unique_ptr<PerfettoWriter>> writers;
  for (size_t t = 0; t < nthreads; ++t)
    writers.push_back(std::make_unique<PerfettoWriter>(output, turns, tl));
  // Turn 0: the file's first packet.
  writers[0]->begin_turn(0);
  writers[0]->root_ordering();
  writers[0]->end_turn();
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&](PerfettoWriter& w) {
    try {
      encode_ranks(w);
    } catch (const Stopped&) {
      return;  // another thread failed first: its error is the one reported
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
      turns.stop();
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < nthreads; ++t) threads.emplace_back(work, std::ref(*writers[t]));
  work(*writers[0]);
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  output.finish();
  PerfettoStats stats;
  for (auto& w : writers) stats += w->stats;
  return stats;
}

}  // namespace lockstep::exporter
