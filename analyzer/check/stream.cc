// The streaming ingest (model.h, ingest_stream): one pass over a rank's records that keeps, per
// communicator, the sequence's length, hash and open calls instead of a signature and a record index per
// call. Rank::materialize() walks the records again when an analysis needs the calls themselves.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "lockstep/check/model.h"
#include "lockstep/format/reader.h"
#include "parallel.h"
#include "record_sig.h"
#include "record_walk.h"

namespace lockstep::check {

using recordsig::mix;

namespace {

// A sequence's hash is a polynomial in B over the prime 2^61 - 1: position i adds (f(call) + g(site
// key)) * B^i (model.h, Sequence). The site keys (file:line from the symbolizer) are folded in once
// known, so equal calls from equal lines hash alike while the records stream by; two addresses of one
// line add to the same key; and a window that drops a prefix or a suffix is the sum minus what lies
// outside it, so trimming walks only those records. Modulo a prime, unlike 2^64, no family of
// sequences (Thue-Morse strings) collides whatever the base.
constexpr uint64_t kPrime = (1ull << 61) - 1;
// Below 2^40, so that a power kept partly reduced (below 2^62) times B folds back below 2^62 with no
// compare: the hot loop's one multiplication stays three instructions and a fold.
constexpr uint64_t kBase = 0x9c5f3a2b71ull;

inline uint64_t fold(uint64_t x) { return (x & kPrime) + (x >> 61); }  // same residue, below 2^61 + 8
inline uint64_t reduce(uint64_t x) {
  x = fold(x);
  return x >= kPrime ? x - kPrime : x;
}
inline uint64_t add(uint64_t a, uint64_t b) { return reduce(a + b); }                    // a, b below 2^63
inline uint64_t sub(uint64_t a, uint64_t b) { return a >= b ? a - b : a + kPrime - b; }  // a, b reduced
inline uint64_t mul(uint64_t a, uint64_t b) {                                            // a, b below 2^62
  const unsigned __int128 m = static_cast<unsigned __int128>(a) * b;
  return reduce((uint64_t(m) & kPrime) + uint64_t(m >> 61));
}
// p * B for p below 2^62, partly reduced (below 2^62).
inline uint64_t times_base(uint64_t p) {
  const unsigned __int128 m = static_cast<unsigned __int128>(p) * kBase;
  return (uint64_t(m) & kPrime) + uint64_t(m >> 61);
}
uint64_t power(uint64_t b, uint64_t e) {
  uint64_t r = 1;
  for (; e; e >>= 1, b = mul(b, b))
    if (e & 1) r = mul(r, b);
  return r;
}

// f and g: a call's and a site key's values in the field.
inline uint64_t call_value(const RecordSource& src, const lst_record& r) {
  return reduce(mix(recordsig::semantic(r, recordsig::call_name(src, r))) >> 3);
}
inline uint64_t site_value(uint64_t key) { return reduce(mix(key ^ 0x632be59bd9b4e019ull) >> 3); }

// The hash of positions [hashed_lo, hashed_hi), counted from hashed_lo, with the site keys folded in.
void seal(const Rank& rank, Sequence& s) {
  uint64_t h = s.calls;
  for (size_t n = 0; n < s.site_order.size(); ++n) {
    const uint32_t id = s.site_order[n];
    const uint64_t key = id < rank.site_key.size() ? rank.site_key[id] : site_hash(rank, rank.site_addr[id]);
    h = add(h, mul(site_value(key), s.site_weight[n]));
  }
  if (s.hashed_lo) h = mul(h, power(kBase, kPrime - 1 - s.hashed_lo));  // B^-lo (Fermat)
  s.hash = mix(h ^ mix(s.count));
}

// Every collective of a rank (messages left out) in record order from the trace's first record, with
// its sequence and its position in that sequence over the whole trace (before any trimming); fn returns
// false to stop; `ahead` and `piece_done` as for walk::for_each_slot (the record handed to fn may be
// a copy, valid until the next piece_done).
struct NoPieceDone {
  void operator()() const {}
};
template <class Fn, class PieceDone = NoPieceDone>
void walk_calls(const Rank& rank, Fn fn, bool ahead = true, PieceDone piece_done = {}) {
  const RecordSource& src = *rank.source;
  const uint64_t first = src.first_id();
  std::vector<uint32_t> pos(rank.seqs.size(), 0);
  struct CommSlot {
    uint64_t comm = ~0ull;
    uint32_t index = 0;
  };
  CommSlot comms[16];
  uint64_t last_comm = ~0ull;
  uint32_t si = 0;
  walk::for_each_slot(
      src, first, src.end_id(),
      [&](uint64_t id, const lst_record* r, uint32_t word) LOCKSTEP_INLINE {
        if (!r || LST_WORD_KIND(word) != LST_KIND_COLLECTIVE || recordsig::is_message(*r, word)) return true;
        if (r->comm != last_comm) {
          // Fibonacci hashing: ids that differ only in a few low or middle bits (as NCCL's and a
          // generator's do) would share a slot under a plain fold, and then look up the map on every call.
          CommSlot& cs = comms[(r->comm * 0x9e3779b97f4a7c15ull) >> 60];
          if (cs.comm != r->comm) {
            auto it = rank.seq_index.find(r->comm);
            if (it == rank.seq_index.end()) return true;  // published after the ingest: not in the model
            cs = {r->comm, it->second};
          }
          si = cs.index;
          last_comm = r->comm;
        }
        return fn(si, pos[si]++, *r, RecordRef(id - first));
      },
      ahead, piece_done);
}

// Site index of a call address, through a small direct-mapped cache.
class SiteLookup {
 public:
  explicit SiteLookup(const Rank& rank) {
    for (size_t i = 0; i < rank.site_addr.size(); ++i) ids_.emplace(rank.site_addr[i], uint32_t(i));
  }
  uint32_t operator()(uint64_t addr) {
    Slot& s = cache_[(addr ^ (addr >> 8)) & 63];
    if (s.addr != addr) {
      auto it = ids_.find(addr);
      s = {addr, it == ids_.end() ? UINT32_MAX : it->second};
    }
    return s.id;
  }

 private:
  struct Slot {
    uint64_t addr = ~0ull;
    uint32_t id = UINT32_MAX;
  };
  Slot cache_[64];
  std::unordered_map<uint64_t, uint32_t> ids_;
};

// Two of a record's eight words, compared two at a time (SSE2 on x86-64).
using Pair = uint64_t __attribute__((vector_size(16)));
inline Pair pair_at(const lst_record* r, size_t i) {
  Pair v;
  std::memcpy(&v, reinterpret_cast<const char*>(r) + 16 * i, sizeof v);
  return v;
}
// The bits of a record's words (as pairs) a repeated call keeps: all but its word (compared on its own,
// without the check bits), seq, id_lo, t_ns and t_return_us, which differ from one call of a loop to
// the next.
constexpr Pair kTaken[4] = {
    {~0ull << 32, ~0ull}, {~0ull << 32, ~0ull >> 32}, {~0ull, ~0ull}, {0, ~0ull << 32}};

// MPI_DATATYPE_NULL as format::dtype_text() names it (no type on a collective that takes one), tested
// on the integers instead of the text.
inline bool null_datatype(const lst_record& r) {
  return r.api == LST_API_MPI && r.dtype == LST_DT_NONE && r.op != LST_OP_BARRIER && r.op != LST_OP_PROBE &&
         r.op != LST_OP_ALLTOALLW;
}

}  // namespace

void ingest_stream(Rank& rank, std::shared_ptr<const RecordSource> source) {
  rank.streamed = true;
  rank.materialized = false;
  // One slot per (call site, communicator): the arguments of its last call and that call's value.
  // A loop of collectives repeats the same few calls, so almost every record is a hit whose arguments
  // compare equal, and its value is reused instead of hashed again.
  struct Slot {
    uint64_t caller = ~0ull, comm = ~0ull;
    uint64_t count = 0;
    uint32_t head = 0;  // op, api, dtype, redop (bytes 4..7 of the record)
    uint32_t dtype_size = 0;
    int32_t root = 0;
    uint32_t aux = 0;
    uint8_t flags = 0;
    uint32_t seq = 0;     // index in rank.seqs
    uint32_t number = 0;  // the site's number in that sequence
    uint64_t value = 0;
    // Sum of B^position over the calls since `value` was set: added to the sequence's sums (times
    // value, and to its site's weight) when the value or the slot changes, not per call.
    uint64_t run = 0;
    // The first 8 bytes of the last call taken here, check bits cleared (kind, state, flags, op, api,
    // dtype, redop); 0 while none. A record equal to it in these and the fields above is that call
    // again but for its place, time and number, and takes the fast path.
    uint64_t v0 = 0;
    uint32_t check = 0;     // walk::check_part() of that call's words 0, 1, 4 and 5
    Sequence* s = nullptr;  // &rank.seqs[seq]
    bool done = false;      // recordsig::done() of that call
    bool rare = false;      // not done, or a runtime call with a name (recorded as a span)
    // The slot the call after this slot's last one went to: in a loop of collectives, the slot of the
    // next record, found without the hash (bulk below).
    Slot* next = nullptr;
    // The last call's record as four pairs of words, of which bulk compares kTaken's bits; its first
    // word is v0, or zero where bulk leaves this slot's calls to the fast path (rare).
    Pair tmpl[4] = {};
  };
  std::vector<Slot> slots(256);
  Slot* const cache = slots.data();
  auto slot_of = [cache](const lst_record& r) LOCKSTEP_INLINE -> Slot& {
    return cache[((r.caller ^ (r.comm * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull) >> 56];
  };
  using walk::first_word;
  // What the slow path below does with a call its slot last took with the same arguments, state and
  // flags: no new value, no change of sequence, root or type; only its place in the sequence.
  auto take = [&rank](Slot& sl, const lst_record& r, RecordRef ref) LOCKSTEP_INLINE {
    Sequence& s = *sl.s;
    sl.run = fold(sl.run + s.power);
    s.power = times_base(s.power);
    if (__builtin_expect(sl.rare, 0)) {
      if (r.api == LST_API_RT && r.aux)
        rank.rt.push_back({r.t_ns, sl.done ? r.t_ns + uint64_t(r.t_return_us) * 1000 : ~0ull, r.aux});
      if (!sl.done) {
        s.open.push_back(s.count);
        s.open_ref.push_back(ref);
      }
    }
    s.last_seq = r.u.coll.seq;
    ++s.count;
  };
  auto flush = [&](Slot& sl) {
    if (!sl.run) return;
    Sequence& s = rank.seqs[sl.seq];
    const uint64_t run = reduce(sl.run);
    s.calls = add(s.calls, mul(sl.value, run));
    s.site_weight[sl.number] = add(s.site_weight[sl.number], run);
    sl.run = 0;
  };
  Slot start;           // before the first collective
  Slot* prev = &start;  // the slot of the last collective taken
  std::unordered_map<uint64_t, uint32_t> site_ids;
  std::unordered_map<uint64_t, uint32_t> numbers;  // sequence << 32 | site -> the site's number there
  const RecordSource& src = *source;
  walk::ingest_records(
      rank, std::move(source),
      [&](const lst_record& rec, uint32_t word, RecordRef ref) LOCKSTEP_INLINE {
        const lst_record* r = &rec;
        uint32_t head;
        std::memcpy(&head, &r->op, sizeof head);
        const uint8_t flags = uint8_t(LST_WORD_FLAGS(word));
        Slot& sl = slot_of(*r);
        const bool hit = sl.caller == r->caller && sl.comm == r->comm;
        if (!hit) {
          flush(sl);
          auto [it, fresh] = rank.seq_index.try_emplace(r->comm, uint32_t(rank.seqs.size()));
          if (fresh) {
            rank.seqs.emplace_back();
            rank.seqs.back().comm = r->comm;
            for (Slot& o : slots)  // the vector may have moved
              if (o.s) o.s = &rank.seqs[o.seq];
          }
          auto [sit, new_site] = site_ids.try_emplace(r->caller, uint32_t(rank.site_addr.size()));
          if (new_site) rank.site_addr.push_back(r->caller);
          Sequence& s = rank.seqs[it->second];
          auto [nit, new_number] =
              numbers.try_emplace(uint64_t(it->second) << 32 | sit->second, uint32_t(s.site_order.size()));
          if (new_number) {
            s.site_order.push_back(sit->second);
            s.site_weight.push_back(0);
          }
          sl.caller = r->caller;
          sl.comm = r->comm;
          sl.seq = it->second;
          sl.s = &rank.seqs[sl.seq];
          sl.number = nit->second;
        }
        if (!hit || head != sl.head || flags != sl.flags || r->u.coll.count != sl.count ||
            r->u.coll.dtype_size != sl.dtype_size || r->u.coll.root_or_peer != sl.root || r->aux != sl.aux) {
          flush(sl);
          sl.head = head;
          sl.flags = flags;
          sl.count = r->u.coll.count;
          sl.dtype_size = r->u.coll.dtype_size;
          sl.root = r->u.coll.root_or_peer;
          sl.aux = r->aux;
          sl.value = call_value(src, *r);
          Sequence& s = rank.seqs[sl.seq];
          if (flags & LST_F_CONTROL) s.has_control = true;
          // Roots as given (-1 included) and null datatypes: what invalid_arguments() looks for.
          if (is_rooted(r->op) && r->api == LST_API_MPI) {
            s.root_min = std::min(s.root_min, sl.root);
            s.root_max = std::max(s.root_max, sl.root);
          }
          if (null_datatype(*r)) s.null_dtype = true;
        }
        sl.done = recordsig::done(*r);
        sl.rare = !sl.done || (r->api == LST_API_RT && r->aux);
        // The fast path takes `word`'s answer for done(), which read the record's word again: a live
        // trace may have changed it since, and then the slot waits for another call.
        sl.v0 = sl.done == recordsig::done(word, r->api) ? first_word(*r, word) : 0;
        sl.check = walk::check_part(sl.v0, r->comm, r->u.coll.count, r->caller);
        sl.tmpl[0] = Pair{sl.rare ? 0 : sl.v0, sl.comm};
        sl.tmpl[1] = Pair{uint64_t(uint32_t(sl.root)) << 32, sl.dtype_size};
        sl.tmpl[2] = Pair{sl.count, sl.caller};
        sl.tmpl[3] = Pair{0, uint64_t(sl.aux) << 32};
        prev->next = &sl;
        prev = &sl;
        if (sl.s->count == 0) {
          sl.s->first_seq = r->u.coll.seq;
          sl.s->api = r->api;
        }
        take(sl, *r, ref);
      },
      [slot_of, take, &prev](const lst_record& r, uint32_t word, RecordRef ref) LOCKSTEP_INLINE {
        Slot& sl = slot_of(r);
        if (first_word(r, word) != sl.v0 || r.caller != sl.caller || r.comm != sl.comm ||
            r.u.coll.count != sl.count || r.u.coll.dtype_size != sl.dtype_size ||
            r.u.coll.root_or_peer != sl.root || r.aux != sl.aux || !walk::intact_with(&r, word, sl.check))
          return false;
        take(sl, r, ref);
        prev->next = &sl;
        prev = &sl;
        return true;
      },
      // The fast path above without the hash, for a run of records each the call its predecessor's slot
      // was followed by last time (Slot::next), with the same fields (Slot::tmpl) and intact: what the
      // fast path would do with each, but for a rare slot's, which is left to it.
      [&prev, take](const lst_record* p, uint64_t id, uint64_t n, bool wraps, uint64_t& last_t_ns)
          LOCKSTEP_INLINE {
            Slot* at = prev;
            uint64_t k = 0;
            for (; k < n; ++k, ++p) {
              Slot* const sl = at->next;
              if (!sl) break;
              const uint32_t word = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);
              const Pair d = ((pair_at(p, 0) ^ sl->tmpl[0]) & kTaken[0]) |
                             ((pair_at(p, 1) ^ sl->tmpl[1]) & kTaken[1]) | (pair_at(p, 2) ^ sl->tmpl[2]) |
                             ((pair_at(p, 3) ^ sl->tmpl[3]) & kTaken[3]);
              if ((d[0] | d[1] | ((word ^ sl->tmpl[0][0]) & ~LST_REC_CHECK_MASK & 0xFFFFFFFFu)) ||
                  (wraps && p->u.coll.id_lo != uint32_t(id + k)) || !walk::intact_with(p, word, sl->check))
                break;
              take(*sl, *p, RecordRef(0));  // the reference serves a rare slot's calls, none of them here
              last_t_ns = std::max(last_t_ns, p->t_ns);
              at = sl;
            }
            prev = at;
            return k;
          });
  for (auto& sl : slots) flush(sl);
  for (auto& s : rank.seqs) {
    s.hashed_hi = s.count;
    s.power = reduce(s.power);
  }
}

void rehash_stream(Rank& rank) {
  // Positions to take out of each sum: [hashed_lo, skip) before the window, [skip + count, hashed_hi)
  // after it. A trimmed start lies in the trace's first records, so the walk stops once every
  // sequence is past its window's start, unless some sequence also lost its end.
  struct Cut {
    uint64_t power = 1;                             // B^position of the next position walked
    std::unordered_map<uint32_t, uint32_t> number;  // site index -> the site's number in the sequence
  };
  std::vector<Cut> cut(rank.seqs.size());
  size_t starts = 0;
  bool ends = false;
  for (size_t i = 0; i < rank.seqs.size(); ++i) {
    Sequence& s = rank.seqs[i];
    if (s.hashed_lo < s.skip) ++starts;
    if (s.skip + s.count < s.hashed_hi) ends = true;
    for (size_t n = 0; n < s.site_order.size(); ++n) cut[i].number.emplace(s.site_order[n], uint32_t(n));
  }
  if (starts || ends) {
    SiteLookup site(rank);
    walk_calls(
        rank,
        [&](uint32_t si, uint32_t pos, const lst_record& r, RecordRef) {
          Sequence& s = rank.seqs[si];
          Cut& c = cut[si];
          const uint64_t pw = c.power;
          c.power = reduce(times_base(c.power));
          const bool before = pos >= s.hashed_lo && pos < s.skip;
          if (before || (pos >= s.skip + s.count && pos < s.hashed_hi)) {
            s.calls = sub(s.calls, mul(call_value(*rank.source, r), pw));
            auto it = c.number.find(site(r.caller));
            if (it != c.number.end()) s.site_weight[it->second] = sub(s.site_weight[it->second], pw);
            if (before && pos + 1 == s.skip) --starts;
          }
          return starts > 0 || ends;
        },
        /*ahead=*/false);  // trims a few calls, usually at the start
  }
  for (auto& s : rank.seqs) {
    s.hashed_lo = s.skip;
    s.hashed_hi = s.skip + s.count;
    seal(rank, s);
  }
}

void resolve_stream(Rank& rank, const SiteKeys& keys) {
  std::vector<uint64_t> k = keys ? keys(rank, rank.site_addr) : module_site_keys(rank, rank.site_addr);
  if (k.size() != rank.site_addr.size()) k = module_site_keys(rank, rank.site_addr);
  rank.site_key = std::move(k);
  for (auto& s : rank.seqs) seal(rank, s);
}

void Rank::materialize() const {
  if (!streamed || materialized) return;
  if (source && source->fill_calls(*this)) {
    materialized = true;
    return;
  }
  SiteLookup site(*this);
  for (auto& s : seqs) {
    s.sig.clear();
    s.ref.clear();
    s.sig.reserve(s.count);
    s.ref.reserve(s.count);
  }
  walk_calls(*this, [&](uint32_t si, uint32_t pos, const lst_record& r, RecordRef ref) {
    const Sequence& s = seqs[si];
    if (pos < s.skip || pos - s.skip >= s.count) return true;
    const uint32_t id = site(r.caller);
    const uint64_t key = id < site_key.size() ? site_key[id] : site_hash(*this, r.caller);
    s.sig.push_back(recordsig::semantic(r, recordsig::call_name(*source, r)) ^ key * recordsig::kSiteSpread);
    s.ref.push_back(ref);
    return true;
  });
  // The records were read once already; a trace that changed since cannot shrink the model under the
  // analysis, which indexes by the counts taken then.
  for (auto& s : seqs) {
    s.sig.resize(s.count, 0);
    s.ref.resize(s.count, s.ref.empty() ? 0 : s.ref.back());
  }
  materialized = true;
}

void materialize_all(const std::vector<const Rank*>& ranks, bool here, int jobs) {
  std::vector<const Rank*> local, elsewhere;
  std::set<const Rank*> seen;
  CallFiller* filler = nullptr;
  for (const Rank* r : ranks) {
    if (!r->streamed || r->materialized || !seen.insert(r).second) continue;
    CallFiller* f = r->source ? r->source->call_filler() : nullptr;
    if (f && (!filler || f == filler)) {
      filler = f;
      elsewhere.push_back(r);
    } else if (!f && here) {
      local.push_back(r);
    }  // a second filler's ranks: each materialized when it is first read
  }
  // Each rank's walk reads its own file into its own vectors. A walk that throws (a trace damaged since
  // it was loaded) throws here, on this thread, as a walk on its own would.
  std::vector<std::exception_ptr> failed(local.size());
  const auto walk_here = [&] {
    for_each_parallel(local.size(), jobs, [&](size_t i) {
      try {
        local[i]->materialize();
      } catch (...) {
        failed[i] = std::current_exception();
      }
    });
    for (auto& e : failed)
      if (e) std::rethrow_exception(e);
  };
  if (filler)
    filler->fill(elsewhere, walk_here);
  else
    walk_here();
}

void Rank::for_each_call(const std::function<void(const CallAt*, size_t)>& fn) const {
  CallAt batch[kCallBatch];
  size_t n = 0;
  auto add = [&](uint32_t si, uint32_t pos, const lst_record& r, RecordRef ref) LOCKSTEP_INLINE {
    batch[n++] = {si, pos, ref, &r};
    if (n == kCallBatch) {
      fn(batch, n);
      n = 0;
    }
  };
  if (!streamed || materialized) {
    // In record order, as the streamed walk below goes: the sequences merged by their references
    // (each increasing), so that what is built from the calls (the report's kinds, numbered as met)
    // is the same whichever way the rank was read.
    using Next = std::pair<RecordRef, uint32_t>;  // the sequence's next reference, the sequence
    std::priority_queue<Next, std::vector<Next>, std::greater<>> next;
    std::vector<uint32_t> at(seqs.size(), 0);
    for (uint32_t si = 0; si < seqs.size(); ++si)
      if (!seqs[si].ref.empty()) next.emplace(seqs[si].ref[0], si);
    while (!next.empty()) {
      const uint32_t si = next.top().second;
      next.pop();
      const uint32_t i = at[si]++;
      const RecordRef ref = seqs[si].ref[i];
      if (const lst_record* r = record(ref)) add(si, i, *r, ref);
      if (at[si] < seqs[si].ref.size()) next.emplace(seqs[si].ref[at[si]], si);
    }
  } else {
    // A batch never outlives the piece of records it points into (a copy the walk then reuses).
    walk_calls(
        *this,
        [&](uint32_t si, uint32_t pos, const lst_record& r, RecordRef ref) LOCKSTEP_INLINE {
          const Sequence& s = seqs[si];
          if (pos >= s.skip && pos - s.skip < s.count) add(si, pos - s.skip, r, ref);
          return true;
        },
        true,
        [&] {
          if (n) fn(batch, n);
          n = 0;
        });
  }
  if (n) fn(batch, n);
}

void Rank::release() const {
  if (!streamed) return;
  for (auto& s : seqs) {
    std::vector<uint64_t>().swap(s.sig);
    std::vector<RecordRef>().swap(s.ref);
  }
  materialized = false;
}

}  // namespace lockstep::check
