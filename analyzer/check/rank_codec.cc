// A rank's model as bytes and back (distributed.h, encode_rank and decode_rank): every field of the
// model, listed once (fields()) for both directions, so that the rank process 0 analyzes is the one its
// owner loaded. And a materialized rank's calls (encode_calls, decode_calls).
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include "lockstep/check/distributed.h"
#include "wire.h"

namespace lockstep::check::mpi {
namespace {

using wire::In;
using wire::Out;

// A new field in these is a field to send (fields()), or the rank process 0 analyzes differs from the
// one its owner loaded: the sizes stop the build until fields() lists it (sizes of the x86-64 build
// with GCC's standard library, which the project builds with).
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(Rank) == 968, "a field changed in Rank: send it in fields()");
static_assert(sizeof(Sequence) == 248, "a field changed in Sequence: send it in fields()");
static_assert(sizeof(CommView) == 88, "a field changed in CommView: send it in fields()");
static_assert(sizeof(ModuleRange) == 96, "a field changed in ModuleRange: send it in fields()");
static_assert(sizeof(Rank::CreationCall) == 40 && sizeof(Rank::MpiError) == 48, "send the new field");
static_assert(sizeof(RtSpan) == 24 && sizeof(MessageKey) == 16, "send the new field");
#endif
static_assert(std::is_trivially_copyable_v<P2P> && std::is_trivially_copyable_v<RtSpan>);

using Lists = std::vector<std::shared_ptr<const std::vector<int32_t>>>;

// A communicator's member list: 0 none; 1 the list follows; 2 its number in the shared lists.
void members(Out& o, const std::shared_ptr<const std::vector<int32_t>>& m, MemberLists* lists) {
  if (!m) {
    o.pod(uint8_t(0));
  } else if (!lists) {
    o.pod(uint8_t(1));
    o.vec(*m);
  } else {
    auto [it, fresh] = lists->index.try_emplace(m.get(), uint32_t(lists->lists.size()));
    if (fresh) lists->lists.push_back(m);
    o.pod(uint8_t(2));
    o.pod(it->second);
  }
}
void members(In& in, std::shared_ptr<const std::vector<int32_t>>& m, const Lists* lists) {
  switch (in.pod<uint8_t>()) {
    case 0:
      return;
    case 1:
      m = intern_members(in.vec<int32_t>());
      return;
    case 2: {
      const uint32_t k = in.pod<uint32_t>();
      if (!lists || k >= lists->size())
        throw std::runtime_error("a rank's model names a member list not sent");
      m = (*lists)[k];
      return;
    }
    default:
      throw std::runtime_error("a rank's model from another process is garbled (member list)");
  }
}

// The message tally, key by key (in the map's order: the receiving tally's sum is the same in any).
void messages(Out& o, const MessageTally& t) {
  o.pod(uint64_t(t.counts().size()));
  for (const auto& [k, n] : t.counts()) {
    o.pod(k.comm);
    o.pod(k.peer);
    o.pod(k.op);
    o.pod(k.failed);
    o.pod(k.mpi);
    o.pod(n);
  }
}
void messages(In& in, MessageTally& t) {
  for (uint64_t n = in.pod<uint64_t>(); n > 0; --n) {
    MessageKey k;
    in.pod(k.comm);
    in.pod(k.peer);
    in.pod(k.op);
    in.pod(k.failed);
    in.pod(k.mpi);
    t.add(k, in.pod<uint64_t>());
  }
}

// Every field of the rank, for writing (A = Out, R = const Rank) and reading (A = In, R = Rank); L is
// the member lists' table of that direction.
template <class A, class R, class L>
void fields(A& a, R& r, L* lists) {
  a.field(r.world_rank);
  a.field(r.world_size);
  a.field(r.file);
  a.field(r.host);
  a.field(r.pid);
  a.field(r.job_hash);
  a.field(r.job_id);
  a.field(r.start_wall_ns);
  a.field(r.start_mono_ns);
  a.field(r.header_end_state);
  a.field(r.ring);
  a.field(r.records);
  a.field(r.unpublished);
  a.field(r.dropped);
  a.each(r.modules, [&](auto& m) {
    a.field(m.path);
    a.field(m.build_id);
    a.field(m.base);
    a.field(m.lo);
    a.field(m.hi);
    a.field(m.path_hash);
  });
  a.each(r.comms, [&](auto& c) {
    a.field(c.id);
    a.field(c.parent);
    a.field(c.api);
    a.field(c.create_op);
    a.field(c.size);
    a.field(c.rank);
    a.field(c.color);
    members(a, c.members, lists);
    a.field(c.name);
    a.field(c.freed);
  });
  a.each(r.seqs, [&](auto& s) {
    a.field(s.comm);
    a.field(s.sig);
    a.field(s.ref);
    a.field(s.site);
    a.field(s.hash);
    a.field(s.open);
    a.field(s.open_ref);
    a.field(s.has_control);
    a.field(s.first_seq);
    a.field(s.api);
    a.field(s.last_seq);
    a.field(s.count);
    a.field(s.skip);
    a.field(s.root_min);
    a.field(s.root_max);
    a.field(s.null_dtype);
    a.field(s.site_order);
    a.field(s.site_weight);
    a.field(s.calls);
    a.field(s.power);
    a.field(s.hashed_lo);
    a.field(s.hashed_hi);
  });
  messages(a, r.messages);
  a.field(r.p2p_open);
  a.field(r.messages_until_wall);
  a.field(r.rt);
  a.each(r.annotations, [&](auto& p) {
    a.field(p.first);
    a.field(p.second);
  });
  a.field(r.stopped_by_runtime);
  a.field(r.mpi_initialized);
  a.field(r.spawned_world);
  a.field(r.finalize_entered);
  a.field(r.finalize_returned);
  a.field(r.saw_signal);
  a.field(r.saw_abort);
  a.field(r.saw_process_end);
  a.field(r.exit_status);
  a.field(r.signal);
  a.each(r.mpi_errors, [&](auto& e) {
    a.field(e.record);
    a.field(e.error_class);
    a.field(e.text);
  });
  a.each(r.creations, [&](auto& c) {
    a.field(c.ref);
    a.field(c.comm_op);
    a.field(c.parent);
    a.field(c.color);
    a.field(c.state);
    a.field(c.caller);
  });
  a.field(r.died_in);
  a.field(r.in_wait);
  a.field(r.wait_t_ns);
  a.field(r.wait_first_ref);
  a.field(r.last_t_ns);
  a.field(r.end_t_ns);
  a.field(r.signal_t_ns);
  a.field(r.at_stop);
  a.field(r.at_stop_cpu);
  a.field(r.at_stop_wchan);
  a.field(r.end);
  a.field(r.site_addr);
  a.field(r.site_key);
  a.field(r.streamed);
  a.field(r.materialized);
  a.field(r.end_id);
}

}  // namespace

std::string encode_rank(const Rank& r, MemberLists* lists) {
  Out o;
  const RecordSource* src = r.source.get();
  o.pod(src ? src->first_id() : uint64_t(0));
  o.pod(src ? src->end_id() : uint64_t(0));
  o.pod(src ? src->format_major() : uint32_t(0));
  fields(o, r, lists);
  return std::move(o.bytes());
}

Rank decode_rank(
    std::string_view bytes,
    const std::function<std::shared_ptr<const RecordSource>(uint64_t, uint64_t, uint32_t)>& source,
    const Lists* lists) {
  In in(bytes);
  Rank r;
  const auto first = in.pod<uint64_t>(), end = in.pod<uint64_t>();
  const auto major = in.pod<uint32_t>();
  fields(in, r, lists);
  if (!in.done()) throw std::runtime_error("a rank's model from another process has bytes past its end");
  for (size_t i = 0; i < r.seqs.size(); ++i) r.seq_index.emplace(r.seqs[i].comm, uint32_t(i));
  r.source = source(first, end, major);
  return r;
}

// Per sequence: its length, its distinct signatures once, then per call the index of its signature and
// its record's distance from the previous call's (zigzag: the refs of a sequence increase, but nothing
// here relies on it), each a variable-length number. A loop repeats a few calls, so a call takes two or
// three bytes instead of the vectors' twelve.
std::string encode_calls(const Rank& rank) {
  Out o;
  std::unordered_map<uint64_t, uint64_t> index;
  std::vector<uint64_t> distinct;
  for (const Sequence& s : rank.seqs) {
    index.clear();
    distinct.clear();
    Out c;
    int64_t prev = 0;
    for (size_t i = 0; i < s.sig.size(); ++i) {
      auto [it, fresh] = index.try_emplace(s.sig[i], distinct.size());
      if (fresh) distinct.push_back(s.sig[i]);
      c.var(it->second);
      const int64_t ref = i < s.ref.size() ? int64_t(s.ref[i]) : prev;
      c.svar(ref - prev);
      prev = ref;
    }
    o.var(s.sig.size());
    o.var(distinct.size());
    for (uint64_t v : distinct) o.pod(v);
    o.bytes() += c.bytes();
  }
  return std::move(o.bytes());
}

void decode_calls(std::string_view bytes, const Rank& rank) {
  In in(bytes);
  std::vector<uint64_t> distinct;
  for (const Sequence& s : rank.seqs) {
    const uint64_t n = in.var();
    if (n != s.count)
      throw std::runtime_error(fmt::format("another process sent {} calls for a sequence of {}", n, s.count));
    distinct.resize(in.var());
    for (uint64_t& v : distinct) in.pod(v);
    s.sig.resize(n);
    s.ref.resize(n);
    int64_t prev = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t k = in.var();
      if (k >= distinct.size()) throw std::runtime_error("another process sent a call with no signature");
      s.sig[i] = distinct[k];
      prev += in.svar();
      s.ref[i] = RecordRef(prev);
    }
  }
  if (!in.done()) throw std::runtime_error("another process sent calls past a rank's sequences");
}

// The distinct communicators once, then per call: the communicator's index, the record's distance from
// the previous call's, peer and tag (zigzag: MPI_ANY_SOURCE and the like are negative), operation,
// state and flags. 7-8 bytes a call where the record takes 64.
std::string encode_messages(const std::vector<P2P>& calls) {
  std::unordered_map<uint64_t, uint64_t> index;
  std::vector<uint64_t> comms;
  Out c;
  int64_t prev = 0;
  for (const P2P& p : calls) {
    auto [it, fresh] = index.try_emplace(p.comm, comms.size());
    if (fresh) comms.push_back(p.comm);
    c.var(it->second);
    c.svar(int64_t(p.ref) - prev);
    prev = int64_t(p.ref);
    c.svar(p.peer);
    c.svar(p.tag);
    c.pod(p.op);
    c.pod(p.state);
    c.pod(p.flags);
  }
  Out o;
  o.var(calls.size());
  o.var(comms.size());
  for (uint64_t v : comms) o.pod(v);
  o.bytes() += c.bytes();
  return std::move(o.bytes());
}

std::vector<P2P> decode_messages(std::string_view bytes) {
  In in(bytes);
  const uint64_t n = in.var();
  if (n > bytes.size()) throw std::runtime_error("another process sent more message calls than bytes");
  std::vector<uint64_t> comms(in.var());
  if (comms.size() > bytes.size())
    throw std::runtime_error("another process sent more communicators than bytes");
  for (uint64_t& v : comms) in.pod(v);
  std::vector<P2P> calls(n);
  int64_t prev = 0;
  for (P2P& p : calls) {
    const uint64_t k = in.var();
    if (k >= comms.size()) throw std::runtime_error("another process sent a message call on no communicator");
    p.comm = comms[k];
    prev += in.svar();
    p.ref = RecordRef(prev);
    p.peer = int32_t(in.svar());
    p.tag = int32_t(in.svar());
    in.pod(p.op);
    in.pod(p.state);
    in.pod(p.flags);
  }
  if (!in.done()) throw std::runtime_error("another process sent bytes past its message calls");
  return calls;
}

}  // namespace lockstep::check::mpi
