// The streaming ingest (model.h, ingest_stream): one pass over a rank's records that keeps, per
// communicator, the sequence's length, hash and open calls instead of a signature and a record index per
// call. Rank::materialize() walks the records again when an analysis needs the calls themselves.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "lockstep/check/model.h"
#include "lockstep/format/reader.h"
#include "record_sig.h"

namespace lockstep::check {

using recordsig::mix;

namespace {

// A sequence's hash is built from elements mix(semantic ^ (site number + 1) * spread), a site's number
// being its rank among the sequence's sites by first use, and the site keys are folded in at the end in
// that order. So equal calls from equal lines hash alike before the keys (file:line from the
// symbolizer) are known, while the records stream by.
inline uint64_t fold(uint64_t h, uint64_t elem) {
  h = (h ^ elem) * 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

inline uint64_t element(uint64_t sem, uint32_t site_number) {
  return mix(sem ^ (uint64_t(site_number) + 1) * recordsig::kSiteSpread);
}

uint64_t finish_hash(uint64_t shape, uint32_t count, const std::vector<uint64_t>& keys) {
  uint64_t h = mix(shape ^ mix(count));
  for (uint64_t k : keys) h = mix(h ^ k) + 0x632be59bd9b4e019ull;
  return h;
}

constexpr uint64_t kRelease = 1u << 16;  // records per page-release step

// Every collective of a rank (messages left out) in record order, with its sequence and its position in
// that sequence over the whole trace (before any trimming). Pages walked are released as in ingest.
template <class Fn>
void walk(const Rank& rank, Fn fn) {
  const RecordSource& src = *rank.source;
  const uint64_t first = src.first_id(), end = src.end_id();
  const lst_record* slots = src.contiguous();
  std::vector<uint32_t> pos(rank.seqs.size(), 0);
  struct CommSlot {
    uint64_t comm = ~0ull;
    uint32_t index = 0;
  };
  CommSlot comms[16];
  uint64_t last_comm = ~0ull, released = first;
  uint32_t si = 0;
  for (uint64_t id = first; id < end; ++id) {
    if (id - released >= kRelease) {
      src.release(released, id);
      released = id;
    }
    const lst_record* r;
    if (slots) {
      r = slots + (id - first);
      if (!__atomic_load_n(&r->word, __ATOMIC_ACQUIRE)) continue;
    } else if (!(r = src.record(id))) {
      continue;
    }
    const uint32_t word = r->word;
    if (LST_WORD_KIND(word) != LST_KIND_COLLECTIVE || recordsig::is_message(*r, word)) continue;
    if (r->comm != last_comm) {
      CommSlot& cs = comms[(r->comm ^ (r->comm >> 17)) & 15];
      if (cs.comm != r->comm) {
        auto it = rank.seq_index.find(r->comm);
        if (it == rank.seq_index.end()) continue;  // published after the ingest: not part of the model
        cs = {r->comm, it->second};
      }
      si = cs.index;
      last_comm = r->comm;
    }
    fn(si, pos[si]++, *r, RecordRef(id - first));
  }
  src.release(released, end);
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

}  // namespace

void ingest_stream(Rank& rank, std::shared_ptr<const RecordSource> source) {
  auto bad_record = [&](uint64_t id, const char* what, uint32_t word) {
    throw std::runtime_error(fmt::format("record {}: {} (word {:#010x})", id, what, word));
  };
  const RecordSource& src = *source;
  rank.source = std::move(source);
  rank.streamed = true;
  rank.materialized = false;
  for (auto& m : rank.modules)
    if (!m.path_hash) m.path_hash = format::fnv1a(m.path.substr(m.path.rfind('/') + 1));

  // One slot per (call site, communicator): the arguments of its last call and that call's element.
  // A loop of collectives repeats the same few calls, so almost every record is a hit whose arguments
  // compare equal, and its element is reused instead of hashed again.
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
    uint64_t elem = 0;
  };
  std::vector<Slot> cache(256);
  std::unordered_map<uint64_t, uint32_t> site_ids;
  std::unordered_map<uint64_t, uint32_t> numbers;  // sequence << 32 | site -> the site's number there
  const lst_record* slots = src.contiguous();
  const uint64_t first = src.first_id(), end = src.end_id();
  const uint32_t major = src.format_major();
  uint64_t released = first;
  if (slots) src.prefetch(first, std::min(end, first + kRelease));
  for (uint64_t id = first; id < end; ++id) {
    if (id - released >= kRelease) {
      src.release(released, id);
      released = id;
      if (slots) src.prefetch(id, std::min(end, id + kRelease));
    }
    uint32_t w;
    const lst_record* r = recordsig::load_record(src, slots, first, id, major, w);
    if (!r) {
      ++rank.unpublished;
      continue;
    }
    ++rank.records;
    const uint32_t word = w;
    if (!recordsig::record_ok(*r, word)) bad_record(id, "bad record", word);
    if (r->t_ns > rank.last_t_ns) rank.last_t_ns = r->t_ns;
    const RecordRef ref = RecordRef(id - first);
    if (LST_WORD_KIND(word) != LST_KIND_COLLECTIVE || recordsig::is_message(*r, word)) {
      recordsig::ingest_event(rank, src, *r, word, ref);
      continue;
    }
    uint32_t head;
    std::memcpy(&head, &r->op, sizeof head);
    const uint8_t flags = uint8_t(LST_WORD_FLAGS(word));
    Slot& sl = cache[((r->caller ^ (r->comm * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull) >> 56];
    const bool hit = sl.caller == r->caller && sl.comm == r->comm;
    if (!hit) {
      auto [it, fresh] = rank.seq_index.try_emplace(r->comm, uint32_t(rank.seqs.size()));
      if (fresh) {
        rank.seqs.emplace_back();
        rank.seqs.back().comm = r->comm;
      }
      auto [sit, new_site] = site_ids.try_emplace(r->caller, uint32_t(rank.site_addr.size()));
      if (new_site) rank.site_addr.push_back(r->caller);
      Sequence& s = rank.seqs[it->second];
      auto [nit, new_number] =
          numbers.try_emplace(uint64_t(it->second) << 32 | sit->second, uint32_t(s.site_order.size()));
      if (new_number) s.site_order.push_back(sit->second);
      sl.caller = r->caller;
      sl.comm = r->comm;
      sl.seq = it->second;
      sl.number = nit->second;
    }
    if (!hit || head != sl.head || flags != sl.flags || r->u.coll.count != sl.count ||
        r->u.coll.dtype_size != sl.dtype_size || r->u.coll.root_or_peer != sl.root || r->aux != sl.aux) {
      sl.head = head;
      sl.flags = flags;
      sl.count = r->u.coll.count;
      sl.dtype_size = r->u.coll.dtype_size;
      sl.root = r->u.coll.root_or_peer;
      sl.aux = r->aux;
      sl.elem = element(recordsig::semantic(*r, recordsig::call_name(src, *r)), sl.number);
      Sequence& s = rank.seqs[sl.seq];
      if (flags & LST_F_CONTROL) s.has_control = true;
      // Roots as given (-1 included) and null datatypes: what invalid_arguments() looks for.
      if (is_rooted(r->op) && r->api == LST_API_MPI) {
        s.root_min = std::min(s.root_min, sl.root);
        s.root_max = std::max(s.root_max, sl.root);
      }
      if (r->api == LST_API_MPI && std::string_view(format::dtype_text(*r)) == "MPI_DATATYPE_NULL")
        s.null_dtype = true;
    }
    Sequence& s = rank.seqs[sl.seq];
    s.shape = fold(s.shape, sl.elem);
    if (r->api == LST_API_RT && r->aux)
      rank.rt.push_back(
          {r->t_ns, recordsig::done(*r) ? r->t_ns + uint64_t(r->t_return_us) * 1000 : ~0ull, r->aux});
    if (!recordsig::done(*r)) {
      s.open.push_back(s.count);
      s.open_ref.push_back(ref);
    }
    if (s.count == 0) s.first_seq = r->u.coll.seq;
    s.last_seq = r->u.coll.seq;
    ++s.count;
  }
  src.release(released, end);
}

void rehash_stream(Rank& rank) {
  // Sites numbered by first use of their key, not of their address: two addresses of one line (copies
  // an optimizer made) are one site, and a trimmed window numbers its sites from its own start.
  SiteLookup site(rank);
  std::vector<std::unordered_map<uint64_t, uint32_t>> numbers(rank.seqs.size());
  std::vector<std::vector<uint64_t>> keys(rank.seqs.size());
  for (auto& s : rank.seqs) s.shape = 0;
  // As in ingest_stream: a call whose site, communicator and arguments repeat reuses its element.
  struct Slot {
    uint64_t caller = ~0ull;
    uint32_t seq = UINT32_MAX, number = 0;
    lst_record last{};
    uint64_t elem = 0;
  };
  std::vector<Slot> cache(64);
  walk(rank, [&](uint32_t si, uint32_t pos, const lst_record& r, RecordRef) {
    Sequence& s = rank.seqs[si];
    if (pos < s.skip || pos - s.skip >= s.count) return;
    Slot& sl = cache[((r.caller ^ (uint64_t(si) * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull) >> 58];
    if (sl.caller != r.caller || sl.seq != si) {
      const uint32_t id = site(r.caller);
      const uint64_t key = id < rank.site_key.size() ? rank.site_key[id] : site_hash(rank, r.caller);
      auto [it, fresh] = numbers[si].try_emplace(key, uint32_t(keys[si].size()));
      if (fresh) keys[si].push_back(key);
      sl.caller = r.caller;
      sl.seq = si;
      sl.number = it->second;
      sl.last.word = 0;  // never a published word: computed below
    }
    if (sl.last.word != r.word || std::memcmp(&sl.last.op, &r.op, 4) != 0 ||
        sl.last.u.coll.count != r.u.coll.count || sl.last.u.coll.dtype_size != r.u.coll.dtype_size ||
        sl.last.u.coll.root_or_peer != r.u.coll.root_or_peer || sl.last.aux != r.aux) {
      sl.last = r;
      sl.elem = element(recordsig::semantic(r, recordsig::call_name(*rank.source, r)), sl.number);
    }
    s.shape = fold(s.shape, sl.elem);
  });
  for (size_t i = 0; i < rank.seqs.size(); ++i)
    rank.seqs[i].hash = finish_hash(rank.seqs[i].shape, rank.seqs[i].count, keys[i]);
}

void resolve_stream(Rank& rank, const SiteKeys& keys) {
  std::vector<uint64_t> k = keys ? keys(rank, rank.site_addr) : module_site_keys(rank, rank.site_addr);
  if (k.size() != rank.site_addr.size()) k = module_site_keys(rank, rank.site_addr);
  rank.site_key = std::move(k);
  bool again = false;
  for (auto& s : rank.seqs) {
    std::vector<uint64_t> ks;
    ks.reserve(s.site_order.size());
    for (uint32_t id : s.site_order) ks.push_back(rank.site_key[id]);
    std::vector<uint64_t> sorted = ks;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      again = true;  // two addresses of one line in this sequence: number its sites by key instead
      continue;
    }
    s.hash = finish_hash(s.shape, s.count, ks);
  }
  if (again) rehash_stream(rank);
}

void Rank::materialize() const {
  if (!streamed || materialized) return;
  SiteLookup site(*this);
  for (auto& s : seqs) {
    s.sig.clear();
    s.ref.clear();
    s.sig.reserve(s.count);
    s.ref.reserve(s.count);
  }
  walk(*this, [&](uint32_t si, uint32_t pos, const lst_record& r, RecordRef ref) {
    const Sequence& s = seqs[si];
    if (pos < s.skip || pos - s.skip >= s.count) return;
    const uint32_t id = site(r.caller);
    const uint64_t key = id < site_key.size() ? site_key[id] : site_hash(*this, r.caller);
    s.sig.push_back(recordsig::semantic(r, recordsig::call_name(*source, r)) ^ key * recordsig::kSiteSpread);
    s.ref.push_back(ref);
  });
  // The records were read once already; a trace that changed since cannot shrink the model under the
  // analysis, which indexes by the counts taken then.
  for (auto& s : seqs) {
    s.sig.resize(s.count, 0);
    s.ref.resize(s.count, s.ref.empty() ? 0 : s.ref.back());
  }
  materialized = true;
}

void Rank::for_each_call(
    const std::function<void(uint32_t, uint32_t, const lst_record&, RecordRef)>& fn) const {
  if (!streamed || materialized) {
    for (uint32_t si = 0; si < seqs.size(); ++si)
      for (uint32_t i = 0; i < seqs[si].ref.size(); ++i)
        if (const lst_record* r = record(seqs[si].ref[i])) fn(si, i, *r, seqs[si].ref[i]);
    return;
  }
  walk(*this, [&](uint32_t si, uint32_t pos, const lst_record& r, RecordRef ref) {
    const Sequence& s = seqs[si];
    if (pos >= s.skip && pos - s.skip < s.count) fn(si, pos - s.skip, r, ref);
  });
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
