// Ingest: turns one rank's records into the checker's model (model.h). This loop touches every record
// of every file, so it is kept branch-light: one comm lookup cache, one module lookup cache.
#include <fmt/format.h>
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "lockstep/check/model.h"

#include "lockstep/format/fnv.h"
#include "lockstep/format/reader.h"
#include "record_sig.h"
#include "record_walk.h"

namespace lockstep::check {

using recordsig::done;
using recordsig::mix;
using recordsig::reducing;
using recordsig::semantic;
using recordsig::v_variant;

bool is_reducing(uint8_t op) { return reducing(op); }
bool is_v_variant(uint8_t op, uint8_t flags) { return v_variant(op, flags); }
bool is_done(const lst_record& r) { return done(r); }

const char* end_state_name(EndState s) {
  switch (s) {
    case EndState::kRunning:
      return "running";
    case EndState::kExited:
      return "exited";
    case EndState::kFinalizing:
      return "finalizing";
    case EndState::kCrashed:
      return "crashed";
    case EndState::kAborted:
      return "aborted";
    case EndState::kKilled:
      return "killed";
    case EndState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string at_stop_text(const std::string& state, double cpu, const std::string& wchan) {
  if (state == "stopped") return "stopped (SIGSTOP, or job control)";
  if (state == "traced") return "held by a debugger (a ptrace stop)";
  if (state == "uninterruptible")
    return wchan.empty() ? std::string("in an uninterruptible sleep in the kernel")
                         : "in an uninterruptible sleep in the kernel (at " + wchan + ")";
  if (state.empty()) return "";
  return cpu >= 0 ? fmt::format("{} ({:.2f} CPU)", state, cpu) : state;
}

uint64_t semantic_signature(const lst_record& r, std::string_view name) { return semantic(r, name); }

int Rank::module_of(uint64_t addr) const {
  for (size_t i = 0; i < modules.size(); ++i)
    if (addr >= modules[i].lo && addr < modules[i].hi) return int(i);
  return -1;
}

std::string_view Rank::context(RecordRef before) const {
  auto it =
      std::lower_bound(annotations.begin(), annotations.end(), before,
                       [](const std::pair<RecordRef, uint32_t>& a, RecordRef b) { return a.first < b; });
  if (it == annotations.begin()) return {};
  return source->string(std::prev(it)->second);
}

void Rank::for_each_message(const std::function<bool(const P2P&)>& fn) const {
  if (!source->walk_messages(*this, fn)) for_each_message_from(source->first_id(), fn);
}

void Rank::for_each_message_from(uint64_t from_id, const std::function<bool(const P2P&)>& fn) const {
  const uint64_t first = source->first_id();
  const uint64_t until = messages_until_wall;
  walk::for_each_slot(
      *source, std::max(first, from_id), std::max(first, end_id),
      [&](uint64_t id, const lst_record* r, uint32_t word) {
        if (!r || LST_WORD_KIND(word) != LST_KIND_COLLECTIVE || !recordsig::is_message(*r, word)) return true;
        if (until != UINT64_MAX && past_cut(r->t_ns)) return true;
        return fn(recordsig::message(*r, word, RecordRef(id - first)));
      });
}

void Rank::recount_messages() {
  messages.clear();
  p2p_open.clear();
  for_each_message([&](const P2P& p) {
    recordsig::tally_message(*this, p);
    return true;
  });
  recordsig::finish_messages(*this);
}

uint64_t site_hash(const Rank& rank, uint64_t caller) {
  int m = rank.module_of(caller);
  if (m < 0) return mix(caller);
  return mix(rank.modules[m].path_hash ^ (caller - rank.modules[m].base));
}

std::shared_ptr<const std::vector<int32_t>> intern_members(std::vector<int32_t> members) {
  if (members.empty()) return nullptr;
  static std::mutex mutex;
  // Weak: the lists live as long as some job holds them.
  static std::unordered_map<uint64_t, std::vector<std::weak_ptr<const std::vector<int32_t>>>> table;
  uint64_t h = mix(members.size());
  for (int32_t m : members) h = mix(h ^ uint32_t(m));
  std::lock_guard<std::mutex> lock(mutex);
  auto& bucket = table[h];
  std::erase_if(bucket, [](const auto& w) { return w.expired(); });
  for (auto& w : bucket)
    if (auto p = w.lock(); p && *p == members) return p;
  auto p = std::make_shared<const std::vector<int32_t>>(std::move(members));
  bucket.push_back(p);
  return p;
}

namespace recordsig {
P2P message(const lst_record& r, uint32_t word, RecordRef ref) {
  const uint8_t fl = uint8_t(LST_WORD_FLAGS(word));
  return {r.comm,
          ref,
          r.u.coll.root_or_peer,
          (fl & LST_F_P2P) ? int32_t(r.u.coll.seq) : int32_t(LST_ANY_TAG),
          r.op,
          uint8_t(LST_WORD_STATE(word)),
          fl};
}

uint64_t* tally_message(Rank& rank, const P2P& p) {
  // Messages pair by peer and tag, not by position: never part of the collective sequence.
  uint64_t* n = rank.messages.counter(MessageKey::of(p));
  rank.messages.add_to(n);
  if (p.state == LST_STATE_ENTERED) rank.p2p_open.push_back(p);
  return n;
}

void finish_messages(Rank& rank) {
  // A nonblocking message the rank is blocked waiting for: its record says RETURNED, its MPI_Wait that
  // the rank is still in it. Read here, once the last WAIT record is known.
  const RecordSource& src = *rank.source;
  const uint64_t id = rank.wait_first_ref;
  if (!rank.in_wait || id < src.first_id() || id >= rank.end_id) return;
  const lst_record* r = src.record(id);
  if (!r) return;
  const uint32_t word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  if (LST_WORD_KIND(word) != LST_KIND_COLLECTIVE || !is_message(*r, word) ||
      !(LST_WORD_FLAGS(word) & LST_F_NONBLOCKING) || LST_WORD_STATE(word) != LST_STATE_RETURNED)
    return;
  const P2P p = message(*r, word, RecordRef(id - src.first_id()));
  if (rank.past_cut(r->t_ns)) return;
  auto at = std::lower_bound(rank.p2p_open.begin(), rank.p2p_open.end(), p.ref,
                             [](const P2P& o, RecordRef ref) { return o.ref < ref; });
  if (at == rank.p2p_open.end() || at->ref != p.ref) rank.p2p_open.insert(at, p);
}

void ingest_event(Rank& rank, const RecordSource& src, const lst_record& r, uint32_t word, RecordRef ref) {
  switch (LST_WORD_KIND(word)) {
    case LST_KIND_COMM: {
      uint8_t op = r.op;
      if (ends_comm(op)) {
        for (auto& c : rank.comms)
          if (c.id == r.comm) c.freed = true;
        break;
      }
      CommView v;
      v.id = r.comm;
      v.parent = r.u.comm.parent;
      v.api = r.api;
      v.create_op = op;
      v.size = r.u.comm.size;
      v.rank = r.u.comm.rank;
      v.color = r.u.comm.color;
      if (r.members) v.members = intern_members(src.members(r.members));
      if (r.aux) v.name = std::string(src.string(r.aux));
      bool replaced = false;
      for (auto& c : rank.comms)
        if (c.id == v.id) {
          c = v;
          replaced = true;
        }
      if (!replaced) rank.comms.push_back(std::move(v));
      break;
    }
    case LST_KIND_MARKER:
      switch (r.op) {
        case LST_MARK_MPI_INIT:
          rank.mpi_initialized = true;
          rank.spawned_world = r.u.marker.extra;
          break;
        case LST_MARK_MPI_FINALIZE:
          rank.finalize_entered = true;
          if (LST_WORD_STATE(word) >= LST_STATE_RETURNED) rank.finalize_returned = true;
          break;
        case LST_MARK_SIGNAL:
        case LST_MARK_PROCESS_END:
          // Both name the call the process ended inside, if any.
          if (r.op == LST_MARK_SIGNAL) {
            rank.saw_signal = true;
            rank.signal = r.u.marker.value;
            rank.signal_t_ns = r.t_ns;
          } else {
            rank.saw_process_end = true;
            rank.exit_status = r.u.marker.value;
            rank.end_t_ns = r.t_ns;
          }
          if (r.u.marker.ref) rank.died_in = r.u.marker.ref;
          break;
        case LST_MARK_MPI_ABORT:
          rank.saw_abort = true;
          break;
        case LST_MARK_MPI_ERROR:
          rank.mpi_errors.push_back(
              {r.u.marker.ref, uint32_t(r.u.marker.value), std::string(src.string(r.aux))});
          break;
        case LST_MARK_COMM_CREATE:
          rank.creations.push_back({ref, uint8_t(r.u.marker.value), r.comm, int64_t(r.u.marker.extra),
                                    uint8_t(LST_WORD_STATE(word)), r.caller});
          break;
        case LST_MARK_ANNOTATION:
          // Only the string id is kept; the runtime's own abort note is an end state, not a phase.
          if (r.aux) {
            std::string_view text = src.string(r.aux);
            if (text.substr(0, kRuntimeAbortPrefix.size()) == kRuntimeAbortPrefix)
              rank.stopped_by_runtime = std::string(text.substr(kRuntimeAbortPrefix.size()));
            else
              rank.annotations.emplace_back(ref, r.aux);
          }
          break;
        default:
          break;
      }
      break;
    case LST_KIND_WAIT:
      rank.in_wait = LST_WORD_STATE(word) == LST_STATE_ENTERED;
      rank.wait_first_ref = r.u.wait.first_ref;
      rank.wait_t_ns = r.t_ns;
      break;
    default:
      break;
  }
}
}  // namespace recordsig

void ingest(Rank& rank, std::shared_ptr<const RecordSource> source, bool defer_sites) {
  uint64_t last_comm = ~0ull;
  Sequence* seq = nullptr;
  // Call sites: a small direct-mapped cache in front of the map of distinct addresses.
  struct CacheSlot {
    uint64_t addr = ~0ull;
    uint32_t id = 0;
    uint64_t key = 0;  // site key when resolved now (not deferred)
  };
  CacheSlot cache[256];
  std::unordered_map<uint64_t, uint32_t> site_ids;
  struct CommSlot {
    uint64_t comm = ~0ull;
    uint32_t index = 0;
  };
  CommSlot comm_cache[16];
  const RecordSource& src = *source;
  const uint64_t end = src.end_id(), first = src.first_id();
  walk::ingest_records(
      rank, std::move(source), [&](const lst_record& rec, uint32_t word, RecordRef ref) LOCKSTEP_INLINE {
        const lst_record* r = &rec;
        if (r->comm != last_comm) {
          CommSlot& cs = comm_cache[(r->comm ^ (r->comm >> 17)) & 15];
          if (cs.comm != r->comm) {
            auto [it, fresh] = rank.seq_index.try_emplace(r->comm, uint32_t(rank.seqs.size()));
            if (fresh) {
              rank.seqs.emplace_back();
              Sequence& ns = rank.seqs.back();
              ns.comm = r->comm;
              // Room for every remaining record on the first few communicators: no regrowth copies,
              // and pages never written are never backed, so this costs address space, not memory.
              if (rank.seqs.size() <= 4) {
                const uint64_t left = end - (first + ref);
                ns.sig.reserve(left);
                ns.ref.reserve(left);
                if (defer_sites) ns.site.reserve(left);
              }
            }
            cs = {r->comm, it->second};
          }
          seq = &rank.seqs[cs.index];
          last_comm = r->comm;
        }
        std::string_view name;
        if (r->api == LST_API_RT && r->aux) {
          name = src.string(r->aux);
          rank.rt.push_back({r->t_ns, done(*r) ? r->t_ns + uint64_t(r->t_return_us) * 1000 : ~0ull, r->aux});
        }
        CacheSlot& slot = cache[(r->caller ^ (r->caller >> 8)) & 255];
        if (slot.addr != r->caller) {
          auto [it, fresh] = site_ids.try_emplace(r->caller, uint32_t(rank.site_addr.size()));
          if (fresh) rank.site_addr.push_back(r->caller);
          slot = {r->caller, it->second,
                  defer_sites ? 0 : site_hash(rank, r->caller) * recordsig::kSiteSpread};
        }
        uint64_t sig = semantic(*r, name);
        if (defer_sites)
          seq->site.push_back(slot.id);
        else
          sig ^= slot.key;
        if (LST_WORD_FLAGS(word) & LST_F_CONTROL) seq->has_control = true;
        if (!done(*r)) {
          seq->open.push_back(uint32_t(seq->sig.size()));
          seq->open_ref.push_back(ref);
        }
        if (seq->sig.empty()) {
          seq->first_seq = r->u.coll.seq;
          seq->api = r->api;
        }
        seq->last_seq = r->u.coll.seq;
        seq->sig.push_back(sig);
        seq->ref.push_back(ref);
      });
  for (auto& s : rank.seqs) s.count = uint32_t(s.sig.size());
  if (!defer_sites) resolve_sites(rank, nullptr);
}

std::vector<uint64_t> module_site_keys(const Rank& rank, const std::vector<uint64_t>& addrs) {
  std::vector<uint64_t> keys;
  keys.reserve(addrs.size());
  for (uint64_t a : addrs) keys.push_back(site_hash(rank, a));
  return keys;
}

void resolve_sites(Rank& rank, const SiteKeys& keys) {
  std::vector<uint64_t> k;
  bool folded = !rank.seqs.empty() && rank.seqs.front().site.size() != rank.seqs.front().sig.size();
  if (!folded) k = keys ? keys(rank, rank.site_addr) : module_site_keys(rank, rank.site_addr);
  for (auto& s : rank.seqs) {
    if (!folded && s.site.size() == s.sig.size())
      for (size_t i = 0; i < s.sig.size(); ++i) s.sig[i] ^= k[s.site[i]] * recordsig::kSiteSpread;
    std::vector<uint32_t>().swap(s.site);
    uint64_t h = mix(s.sig.size());
    for (uint64_t v : s.sig) h = mix(h ^ v) + 0x632be59bd9b4e019ull;
    s.hash = h;
  }
}

namespace {
// Signals a user, a launcher or a --timeout sends to stop a job: the process did not fail by itself.
bool stop_signal(uint64_t sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGKILL || sig == SIGQUIT;
}

bool process_alive(uint32_t pid) {
  if (::kill(pid_t(pid), 0) != 0 && errno != EPERM) return false;
  // A zombie has ended; only the reaping is left.
  std::FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (!f) return true;
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string_view st(buf, n);
  size_t p = st.rfind(')');
  return !(p != std::string_view::npos && p + 2 < st.size() && (st[p + 2] == 'Z' || st[p + 2] == 'X'));
}
}  // namespace

void classify_end(Rank& rank, const std::string& this_host) {
  // A header that says "signal" with no SIGNAL marker: the signal came while the tracer itself was
  // running (it leaves the marker out then), so it was sent from outside, not a fault of the program's
  // own code: a launcher's stop (mpirun ends every rank as soon as one exits without MPI_Finalize,
  // whether the rank is still inside MPI_Init or already writing its own exit). After the process's own
  // end was recorded it is that exit; before, the rank was killed.
  bool crash_signal = rank.saw_signal && !stop_signal(rank.signal);
  if (crash_signal) {
    rank.end = EndState::kCrashed;
  } else if (rank.saw_abort || rank.header_end_state == LST_END_ABORT) {
    rank.end = EndState::kAborted;
  } else if (rank.finalize_returned || rank.saw_process_end || rank.header_end_state == LST_END_EXIT) {
    rank.end = EndState::kExited;
  } else if (rank.finalize_entered) {
    rank.end = EndState::kFinalizing;
  } else if (rank.saw_signal || rank.header_end_state == LST_END_SIGNAL) {
    rank.end = EndState::kKilled;
  } else if (!rank.host.empty() && rank.host == this_host && rank.pid) {
    // Only a process on this host can be looked up; a reused pid reads as "running", never as "killed".
    rank.end = process_alive(rank.pid) ? EndState::kRunning : EndState::kKilled;
  } else {
    rank.end = EndState::kUnknown;
  }
}

namespace {
// Keeps positions [lo, hi) of a sequence (a ring's trimmed start, a cut trace's end): its calls, its
// open ones renumbered from lo, and a materialized rank's hash. A streamed rank's hash follows in
// rehash_stream(), once per rank.
void keep_window(Sequence& s, bool streamed, size_t lo, size_t hi) {
  if (streamed) {
    s.skip += uint32_t(lo);
  } else {
    s.sig.resize(hi);
    s.ref.resize(hi);
    s.sig.erase(s.sig.begin(), s.sig.begin() + long(lo));
    s.ref.erase(s.ref.begin(), s.ref.begin() + long(lo));
  }
  if (s.site.size() > hi) s.site.resize(hi);
  s.count = uint32_t(hi - lo);
  std::vector<uint32_t> open;
  std::vector<RecordRef> open_ref;
  for (size_t i = 0; i < s.open.size(); ++i)
    if (s.open[i] >= lo && s.open[i] < hi) {
      open.push_back(uint32_t(s.open[i] - lo));
      open_ref.push_back(s.open_ref[i]);
    }
  s.open.swap(open);
  s.open_ref.swap(open_ref);
  if (streamed) return;
  uint64_t h = mix(s.sig.size());
  for (uint64_t v : s.sig) h = mix(h ^ v) + 0x632be59bd9b4e019ull;
  s.hash = h;
}

// With ring-mode files, ranks may have lost different amounts of history: compare only the window
// every rank still has. Only sequences numbered densely by the tracer (no point-to-point calls in
// between) can be trimmed by number.
void trim_ring_starts(Job& job) {
  bool any_ring = false;
  for (auto& r : job.ranks) any_ring |= r.ring;
  job.ring_base.clear();
  job.ring_start.clear();
  if (!any_ring) return;
  std::unordered_map<uint64_t, uint32_t> base;
  std::unordered_map<uint64_t, uint32_t> starts;  // the latest first number any rank kept
  auto dense = [](const Sequence& s) { return uint64_t(s.last_seq) - s.first_seq + 1 == s.size(); };
  for (auto& r : job.ranks)
    for (auto& s : r.seqs) {
      if (dense(s)) base[s.comm] = std::max(base[s.comm], s.first_seq);
      starts[s.comm] = std::max(starts[s.comm], s.first_seq);
    }
  for (auto& r : job.ranks) {
    bool trimmed = false;
    for (auto& s : r.seqs) {
      auto it = base.find(s.comm);
      if (it == base.end() || !dense(s) || s.first_seq >= it->second) continue;
      keep_window(s, r.streamed, std::min<size_t>(it->second - s.first_seq, s.size()), s.size());
      s.first_seq = it->second;
      trimmed = true;
    }
    if (trimmed && r.streamed) rehash_stream(r);
  }
  for (auto& [comm, b] : base)
    if (b) job.ring_base[comm] = b;
  for (auto& [comm, first] : starts)
    if (first) job.ring_start[comm] = first;
}

// A rank whose tracer dropped records (its file could not grow: a full disk) has a trace that ends
// early. Comparing past that point would blame the ranks that kept recording, so every communicator
// is compared only up to the number of collectives each cut rank recorded on it, and point-to-point
// calls only up to the moment the first cut trace ends. What is left out is counted in a warning.
void trim_cut_ends(Job& job) {
  std::vector<const Rank*> cut;
  for (auto& r : job.ranks)
    if (r.dropped && !r.ring) cut.push_back(&r);
  if (cut.empty()) return;
  auto wall = [](const Rank& r, uint64_t t) { return r.wall_ns(t); };
  std::unordered_map<uint64_t, size_t> window;  // comm -> collectives every cut member recorded
  uint64_t cut_wall = UINT64_MAX;
  for (const Rank* c : cut) {
    for (auto& s : c->seqs) {
      auto [it, fresh] = window.emplace(s.comm, s.size());
      if (!fresh) it->second = std::min(it->second, s.size());
    }
    if (c->last_t_ns) cut_wall = std::min(cut_wall, wall(*c, c->last_t_ns));
    // A communicator the cut rank belongs to but never recorded was created after its trace ended.
    for (auto& r : job.ranks)
      for (auto& v : r.comms)
        if (!c->sequence(v.id) && v.members &&
            std::find(v.members->begin(), v.members->end(), c->world_rank) != v.members->end())
          window[v.id] = 0;
  }
  uint64_t skipped = 0;
  for (auto& r : job.ranks) {
    bool trimmed = false;
    for (auto& s : r.seqs) {
      auto it = window.find(s.comm);
      if (it == window.end() || s.size() <= it->second) continue;
      const size_t keep = it->second;
      skipped += s.size() - keep;
      keep_window(s, r.streamed, 0, keep);
      s.last_seq = keep ? s.first_seq + uint32_t(keep) - 1 : s.first_seq;
      trimmed = true;
    }
    if (trimmed && r.streamed) rehash_stream(r);
    if (cut_wall != UINT64_MAX && r.messages.total()) {
      const uint64_t before = r.messages.total();
      r.messages_until_wall = cut_wall;
      r.recount_messages();
      skipped += before - r.messages.total();
    }
  }
  // The end of a cut trace is lost with its records: that it exited says nothing about MPI_Finalize.
  for (auto& r : job.ranks)
    if (r.dropped && !r.ring && r.end == EndState::kExited && !r.finalize_returned)
      r.end = EndState::kUnknown;
  std::vector<int32_t> who;
  for (const Rank* c : cut) who.push_back(c->world_rank);
  std::string list;
  for (size_t i = 0; i < who.size(); ++i) list += (i ? "," : "") + std::to_string(who[i]);
  job.warnings.push_back(fmt::format(
      "the trace{} of rank{} {} end{} early (the tracer dropped records: its file could not grow); only what "
      "every "
      "rank recorded was compared, {} later call(s) of other ranks could not be checked",
      who.size() == 1 ? "" : "s", who.size() == 1 ? "" : "s", list, who.size() == 1 ? "s" : "", skipped));
}
}  // namespace

void finish_job(Job& job) {
  std::sort(job.ranks.begin(), job.ranks.end(),
            [](const Rank& a, const Rank& b) { return a.world_rank < b.world_rank; });
  job.missing.clear();
  int32_t size = job.world_size;
  for (auto& r : job.ranks) size = std::max(size, r.world_size);
  job.world_size = size;
  if (size > 0) {
    std::vector<bool> seen(size_t(size), false);
    for (auto& r : job.ranks)
      if (r.world_rank >= 0 && r.world_rank < size) seen[size_t(r.world_rank)] = true;
    for (int32_t i = 0; i < size; ++i)
      if (!seen[size_t(i)]) job.missing.push_back(i);
  }
  int32_t top = size;
  for (auto& r : job.ranks) top = std::max(top, r.world_rank + 1);
  job.by_world.assign(size_t(std::max(top, 0)), -1);
  for (size_t i = 0; i < job.ranks.size(); ++i)
    if (job.ranks[i].world_rank >= 0) job.by_world[size_t(job.ranks[i].world_rank)] = int32_t(i);
  trim_ring_starts(job);
  trim_cut_ends(job);
  job.min_wall_ns = 0;
  for (auto& r : job.ranks)
    if (r.start_wall_ns && (!job.min_wall_ns || r.start_wall_ns < job.min_wall_ns))
      job.min_wall_ns = r.start_wall_ns;
}

namespace {
std::string derived_at(uint64_t id, const std::function<const CommView*(uint64_t)>& view_of, int depth) {
  const CommView* v = depth > 6 ? nullptr : view_of(id);
  if (!v) return fmt::format("comm {:#x}", id);
  if (!v->name.empty()) return v->name;
  if (v->create_op == LST_COMM_WORLD) return "MPI_COMM_WORLD";
  std::string how = format::comm_op_name(v->create_op);
  if (!v->parent) return fmt::format("{} {:#010x}", how, id >> 32);  // a root communicator (NCCL unique id)
  std::string parent = derived_at(v->parent, view_of, depth + 1);
  if (v->color != LST_NONE && (v->create_op == LST_COMM_SPLIT || v->create_op == LST_COMM_NCCL_SPLIT))
    return fmt::format("{}({}, color {})", how, parent, v->color);
  return fmt::format("{}({})", how, parent);
}
}  // namespace

std::string derived_comm_name(uint64_t id, const std::function<const CommView*(uint64_t)>& view_of) {
  return derived_at(id, view_of, 0);
}

}  // namespace lockstep::check
