// A rank's model as bytes and back (distributed.h, encode_rank and decode_rank): every field of the
// model, in a fixed order, so that the rank process 0 analyzes is the one its owner loaded.
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "lockstep/check/distributed.h"
#include "wire.h"

namespace lockstep::check::mpi {
namespace {

using wire::In;
using wire::Out;

// A new field in these is a field to send (encode_rank, decode_rank), or the rank process 0 analyzes
// differs from the one its owner loaded: the sizes stop the build until both functions know it (sizes
// of the x86-64 build with GCC's standard library, which the project builds with).
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(Rank) == 968, "a field changed in Rank: send it in encode_rank/decode_rank");
static_assert(sizeof(Sequence) == 248, "a field changed in Sequence: send it in put_seq/get_seq");
static_assert(sizeof(CommView) == 88, "a field changed in CommView: send it in encode_rank/decode_rank");
static_assert(sizeof(ModuleRange) == 96, "a field changed in ModuleRange: send it");
static_assert(sizeof(Rank::CreationCall) == 40 && sizeof(Rank::MpiError) == 48, "send the new field");
static_assert(sizeof(RtSpan) == 24 && sizeof(MessageKey) == 16, "send the new field");
#endif
static_assert(std::is_trivially_copyable_v<P2P> && std::is_trivially_copyable_v<RtSpan>);

void put_seq(Out& o, const Sequence& s) {
  o.pod(s.comm);
  o.vec(s.sig);
  o.vec(s.ref);
  o.vec(s.site);
  o.pod(s.hash);
  o.vec(s.open);
  o.vec(s.open_ref);
  o.pod(s.has_control);
  o.pod(s.first_seq);
  o.pod(s.api);
  o.pod(s.last_seq);
  o.pod(s.count);
  o.pod(s.skip);
  o.pod(s.root_min);
  o.pod(s.root_max);
  o.pod(s.null_dtype);
  o.vec(s.site_order);
  o.vec(s.site_weight);
  o.pod(s.calls);
  o.pod(s.power);
  o.pod(s.hashed_lo);
  o.pod(s.hashed_hi);
}

void get_seq(In& in, Sequence& s) {
  in.pod(s.comm);
  s.sig = in.vec<uint64_t>();
  s.ref = in.vec<RecordRef>();
  s.site = in.vec<uint32_t>();
  in.pod(s.hash);
  s.open = in.vec<uint32_t>();
  s.open_ref = in.vec<RecordRef>();
  in.pod(s.has_control);
  in.pod(s.first_seq);
  in.pod(s.api);
  in.pod(s.last_seq);
  in.pod(s.count);
  in.pod(s.skip);
  in.pod(s.root_min);
  in.pod(s.root_max);
  in.pod(s.null_dtype);
  s.site_order = in.vec<uint32_t>();
  s.site_weight = in.vec<uint64_t>();
  in.pod(s.calls);
  in.pod(s.power);
  in.pod(s.hashed_lo);
  in.pod(s.hashed_hi);
}

}  // namespace

std::string encode_rank(const Rank& r, MemberLists* lists) {
  Out o;
  const RecordSource* src = r.source.get();
  o.pod(src ? src->first_id() : uint64_t(0));
  o.pod(src ? src->end_id() : uint64_t(0));
  o.pod(src ? src->format_major() : uint32_t(0));
  o.pod(r.world_rank);
  o.pod(r.world_size);
  o.str(r.file);
  o.str(r.host);
  o.pod(r.pid);
  o.pod(r.job_hash);
  o.str(r.job_id);
  o.pod(r.start_wall_ns);
  o.pod(r.start_mono_ns);
  o.pod(r.header_end_state);
  o.pod(r.ring);
  o.pod(r.records);
  o.pod(r.unpublished);
  o.pod(r.dropped);
  o.pod(uint64_t(r.modules.size()));
  for (const ModuleRange& m : r.modules) {
    o.str(m.path);
    o.str(m.build_id);
    o.pod(m.base);
    o.pod(m.lo);
    o.pod(m.hi);
    o.pod(m.path_hash);
  }
  o.pod(uint64_t(r.comms.size()));
  for (const CommView& c : r.comms) {
    o.pod(c.id);
    o.pod(c.parent);
    o.pod(c.api);
    o.pod(c.create_op);
    o.pod(c.size);
    o.pod(c.rank);
    o.pod(c.color);
    // 0: none; 1: the list follows; 2: its number in `lists`.
    if (!c.members) {
      o.pod(uint8_t(0));
    } else if (!lists) {
      o.pod(uint8_t(1));
      o.vec(*c.members);
    } else {
      auto [it, fresh] = lists->index.try_emplace(c.members.get(), uint32_t(lists->lists.size()));
      if (fresh) lists->lists.push_back(c.members);
      o.pod(uint8_t(2));
      o.pod(it->second);
    }
    o.str(c.name);
    o.pod(c.freed);
  }
  o.pod(uint64_t(r.seqs.size()));
  for (const Sequence& s : r.seqs) put_seq(o, s);
  o.pod(uint64_t(r.messages.counts().size()));
  // In the map's order: the receiving tally's sum is the same whatever the order.
  for (const auto& [k, n] : r.messages.counts()) {
    o.pod(k.comm);
    o.pod(k.peer);
    o.pod(k.op);
    o.pod(k.failed);
    o.pod(k.mpi);
    o.pod(n);
  }
  o.vec(r.p2p_open);
  o.pod(r.messages_until_wall);
  o.vec(r.rt);
  o.pod(uint64_t(r.annotations.size()));
  for (const auto& [ref, id] : r.annotations) {
    o.pod(ref);
    o.pod(id);
  }
  o.str(r.stopped_by_runtime);
  o.pod(r.mpi_initialized);
  o.pod(r.spawned_world);
  o.pod(r.finalize_entered);
  o.pod(r.finalize_returned);
  o.pod(r.saw_signal);
  o.pod(r.saw_abort);
  o.pod(r.saw_process_end);
  o.pod(r.exit_status);
  o.pod(r.signal);
  o.pod(uint64_t(r.mpi_errors.size()));
  for (const Rank::MpiError& e : r.mpi_errors) {
    o.pod(e.record);
    o.pod(e.error_class);
    o.str(e.text);
  }
  o.pod(uint64_t(r.creations.size()));
  for (const Rank::CreationCall& c : r.creations) {
    o.pod(c.ref);
    o.pod(c.comm_op);
    o.pod(c.parent);
    o.pod(c.color);
    o.pod(c.state);
    o.pod(c.caller);
  }
  o.pod(r.died_in);
  o.pod(r.in_wait);
  o.pod(r.wait_t_ns);
  o.pod(r.wait_first_ref);
  o.pod(r.last_t_ns);
  o.pod(r.end_t_ns);
  o.pod(r.signal_t_ns);
  o.str(r.at_stop);
  o.pod(r.at_stop_cpu);
  o.str(r.at_stop_wchan);
  o.pod(r.end);
  o.vec(r.site_addr);
  o.vec(r.site_key);
  o.pod(r.streamed);
  o.pod(r.materialized);
  o.pod(r.end_id);
  return std::move(o.bytes());
}

Rank decode_rank(
    std::string_view bytes,
    const std::function<std::shared_ptr<const RecordSource>(uint64_t, uint64_t, uint32_t)>& source,
    const std::vector<std::shared_ptr<const std::vector<int32_t>>>* lists) {
  In in(bytes);
  Rank r;
  const auto first = in.pod<uint64_t>(), end = in.pod<uint64_t>();
  const auto major = in.pod<uint32_t>();
  in.pod(r.world_rank);
  in.pod(r.world_size);
  r.file = in.str();
  r.host = in.str();
  in.pod(r.pid);
  in.pod(r.job_hash);
  r.job_id = in.str();
  in.pod(r.start_wall_ns);
  in.pod(r.start_mono_ns);
  in.pod(r.header_end_state);
  in.pod(r.ring);
  in.pod(r.records);
  in.pod(r.unpublished);
  in.pod(r.dropped);
  r.modules.resize(in.pod<uint64_t>());
  for (ModuleRange& m : r.modules) {
    m.path = in.str();
    m.build_id = in.str();
    in.pod(m.base);
    in.pod(m.lo);
    in.pod(m.hi);
    in.pod(m.path_hash);
  }
  r.comms.resize(in.pod<uint64_t>());
  for (CommView& c : r.comms) {
    in.pod(c.id);
    in.pod(c.parent);
    in.pod(c.api);
    in.pod(c.create_op);
    in.pod(c.size);
    in.pod(c.rank);
    in.pod(c.color);
    switch (in.pod<uint8_t>()) {
      case 0:
        break;
      case 1:
        c.members = intern_members(in.vec<int32_t>());
        break;
      case 2: {
        const uint32_t k = in.pod<uint32_t>();
        if (!lists || k >= lists->size())
          throw std::runtime_error("a rank's model names a member list not sent");
        c.members = (*lists)[k];
        break;
      }
      default:
        throw std::runtime_error("a rank's model from another process is garbled (member list)");
    }
    c.name = in.str();
    in.pod(c.freed);
  }
  r.seqs.resize(in.pod<uint64_t>());
  for (size_t i = 0; i < r.seqs.size(); ++i) {
    get_seq(in, r.seqs[i]);
    r.seq_index.emplace(r.seqs[i].comm, uint32_t(i));
  }
  for (uint64_t n = in.pod<uint64_t>(); n > 0; --n) {
    MessageKey k;
    in.pod(k.comm);
    in.pod(k.peer);
    in.pod(k.op);
    in.pod(k.failed);
    in.pod(k.mpi);
    r.messages.add(k, in.pod<uint64_t>());
  }
  r.p2p_open = in.vec<P2P>();
  in.pod(r.messages_until_wall);
  r.rt = in.vec<RtSpan>();
  r.annotations.resize(in.pod<uint64_t>());
  for (auto& [ref, id] : r.annotations) {
    in.pod(ref);
    in.pod(id);
  }
  r.stopped_by_runtime = in.str();
  in.pod(r.mpi_initialized);
  in.pod(r.spawned_world);
  in.pod(r.finalize_entered);
  in.pod(r.finalize_returned);
  in.pod(r.saw_signal);
  in.pod(r.saw_abort);
  in.pod(r.saw_process_end);
  in.pod(r.exit_status);
  in.pod(r.signal);
  r.mpi_errors.resize(in.pod<uint64_t>());
  for (Rank::MpiError& e : r.mpi_errors) {
    in.pod(e.record);
    in.pod(e.error_class);
    e.text = in.str();
  }
  r.creations.resize(in.pod<uint64_t>());
  for (Rank::CreationCall& c : r.creations) {
    in.pod(c.ref);
    in.pod(c.comm_op);
    in.pod(c.parent);
    in.pod(c.color);
    in.pod(c.state);
    in.pod(c.caller);
  }
  in.pod(r.died_in);
  in.pod(r.in_wait);
  in.pod(r.wait_t_ns);
  in.pod(r.wait_first_ref);
  in.pod(r.last_t_ns);
  in.pod(r.end_t_ns);
  in.pod(r.signal_t_ns);
  r.at_stop = in.str();
  in.pod(r.at_stop_cpu);
  r.at_stop_wchan = in.str();
  in.pod(r.end);
  r.site_addr = in.vec<uint64_t>();
  r.site_key = in.vec<uint64_t>();
  in.pod(r.streamed);
  r.materialized = in.pod<bool>();
  in.pod(r.end_id);
  if (!in.done()) throw std::runtime_error("a rank's model from another process has bytes past its end");
  r.source = source(first, end, major);
  return r;
}

}  // namespace lockstep::check::mpi
