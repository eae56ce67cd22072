// `lockstep check --mpi` (distributed.h): the listing exchange, the rank models sent to process 0, and
// the records of other processes' ranks read on demand. Every message goes between process 0 and one
// other process, from process 0's main thread: a request (op, file, two numbers, bytes) and its reply.
#include "lockstep/check/distributed.h"

#include <fmt/format.h>
// MPI's C interface alone: the C++ bindings some MPI headers add need a library this does not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include "lockstep/format/escape.h"
#include "parallel.h"
#include "wire.h"

namespace lockstep::check::mpi {
namespace {

using wire::In;
using wire::Out;

enum Tag : int { kTagListing = 7301, kTagRequest = 7302, kTagReply = 7303 };
enum Op : uint32_t {
  kAssign = 1,
  kRecords = 2,
  kString = 3,
  kMembers = 4,
  kStop = 5,
  kCalls = 6,
  kMessages = 7
};
// Another process's records come in blocks of kBlock (16 KiB): one block for a record looked up on its
// own (a finding's call), kRun blocks at once for a walk (a record in the block after the last fetched).
constexpr uint64_t kBlock = 256;
constexpr uint64_t kRun = 16;
// Message calls come kMessageBatch at a time: a walk that stops early (the first call past a point) asks
// for no more.
constexpr size_t kMessageBatch = size_t(1) << 16;
constexpr size_t kPiece = size_t(1) << 30;  // bytes per MPI message (counts are ints)

// One message of any length: its size, then pieces of at most kPiece bytes.
void send_bytes(const std::string& b, int to, int tag) {
  uint64_t n = b.size();
  MPI_Send(&n, 1, MPI_UINT64_T, to, tag, MPI_COMM_WORLD);
  for (size_t at = 0; at < b.size(); at += kPiece)
    MPI_Send(b.data() + at, int(std::min(kPiece, b.size() - at)), MPI_BYTE, to, tag, MPI_COMM_WORLD);
}
std::string recv_bytes(int from, int tag) {
  uint64_t n = 0;
  MPI_Recv(&n, 1, MPI_UINT64_T, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::string b(n, '\0');
  for (size_t at = 0; at < b.size(); at += kPiece)
    MPI_Recv(b.data() + at, int(std::min(kPiece, b.size() - at)), MPI_BYTE, from, tag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  return b;
}

std::string request(uint32_t op, uint32_t file, uint64_t a, uint64_t b, std::string_view payload = {}) {
  Out o;
  o.pod(op);
  o.pod(file);
  o.pod(a);
  o.pod(b);
  o.str(payload);
  return std::move(o.bytes());
}

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("?");
}

// Another process's rank, as process 0 reads it: records a block at a time, kept for the rest of the
// check (the analysis holds pointers to several records at once), strings kept, member lists asked for.
class RemoteSource : public RecordSource {
 public:
  RemoteSource(Coordinator* c, int process, uint32_t file, uint64_t first, uint64_t end, uint32_t major)
      : c_(c), process_(process), file_(file), first_(first), end_(end), major_(major) {}
  uint64_t first_id() const override { return first_; }
  uint64_t end_id() const override { return end_; }
  uint32_t format_major() const override { return major_; }
  const lst_record* record(uint64_t id) const override {
    if (id < first_ || id >= end_) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t k = id / kBlock;
    auto it = blocks_.find(k);
    if (it == blocks_.end()) {
      uint64_t n = 1;  // blocks to fetch: a walk's next kRun, up to the next one already here
      if (k == last_ + 1)
        while (n < kRun && !blocks_.count(k + n) && (k + n) * kBlock < end_) ++n;
      const uint64_t lo = std::max(first_, k * kBlock), hi = std::min(end_, (k + n) * kBlock);
      const std::string b = c_->ask(process_, kRecords, file_, lo, hi - lo);
      if (b.size() != (hi - lo) * (1 + sizeof(lst_record)))
        throw std::runtime_error(
            fmt::format("process {}: {} bytes for {} records", process_, b.size(), hi - lo));
      for (uint64_t j = k; j < k + n; ++j) {
        const uint64_t a = std::max(lo, j * kBlock), z = std::min(hi, (j + 1) * kBlock);
        Block blk;
        blk.lo = a;
        blk.there.assign(b.data() + (a - lo), z - a);
        blk.records.reset(new lst_record[z - a]);
        std::memcpy(blk.records.get(), b.data() + (hi - lo) + (a - lo) * sizeof(lst_record),
                    (z - a) * sizeof(lst_record));
        blocks_.emplace(j, std::move(blk));
      }
      last_ = k + n - 1;
      it = blocks_.find(k);
    }
    const Block& blk = it->second;
    return blk.there[id - blk.lo] ? &blk.records[id - blk.lo] : nullptr;
  }
  std::string_view string(uint32_t id) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = strings_.find(id);
    if (it == strings_.end()) it = strings_.emplace(id, c_->ask(process_, kString, file_, id, 0)).first;
    return it->second;
  }
  // The owner builds the vectors from its records (Coordinator::fill).
  bool fill_calls(const Rank& rank) const override {
    c_->fill({&rank}, {});
    return true;
  }
  CallFiller* call_filler() const override { return c_; }
  // The owner walks its file and sends the message calls, a batch at a time, not the records; the
  // rank's end and cut (messages_until_wall) go with each request, as process 0 holds them now.
  bool walk_messages(const Rank& rank, const std::function<bool(const P2P&)>& fn) const override {
    Out o;
    o.pod(rank.end_id);
    o.pod(rank.messages_until_wall);
    for (uint64_t from = first_; from != UINT64_MAX;) {
      std::string b;
      {
        std::lock_guard<std::mutex> lock(mu_);
        b = c_->ask(process_, kMessages, file_, from, 0, o.bytes());
      }
      In in(b);
      from = in.pod<uint64_t>();  // the record to go on from, UINT64_MAX at the end
      for (const P2P& p : decode_messages(in.str()))
        if (!fn(p)) return true;
    }
    return true;
  }
  int process() const { return process_; }
  uint32_t file() const { return file_; }
  std::vector<int32_t> members(uint32_t id) const override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string b = c_->ask(process_, kMembers, file_, id, 0);
    std::vector<int32_t> v(b.size() / sizeof(int32_t));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(int32_t));
    return v;
  }

 private:
  struct Block {
    uint64_t lo = 0;
    std::string there;  // per record: 1 published, 0 not (record() gives nullptr)
    std::unique_ptr<lst_record[]> records;
  };
  Coordinator* c_;
  int process_;
  uint32_t file_;
  uint64_t first_, end_;
  uint32_t major_;
  mutable std::mutex mu_;
  mutable std::unordered_map<uint64_t, Block> blocks_;
  mutable uint64_t last_ = UINT64_MAX - 1;  // the last block fetched
  mutable std::unordered_map<uint32_t, std::string> strings_;
};

// The reply of a process to process 0's kAssign: per file, its error, or its rank and warning.
// The member lists the ranks share go first, each once (a world-sized list is in every rank's model).
std::string loaded_reply(const std::vector<LoadedFile>& files) {
  MemberLists lists;
  Out ranks;
  for (const LoadedFile& f : files) {
    ranks.str(f.error);
    if (!f.error.empty()) continue;
    ranks.str(f.warning);
    ranks.str(encode_rank(f.rank, &lists));
  }
  Out o;
  o.pod(uint64_t(lists.lists.size()));
  for (const auto& l : lists.lists) o.vec(*l);
  o.pod(uint64_t(files.size()));
  o.bytes() += ranks.bytes();
  return std::move(o.bytes());
}

// The rank this process loaded as its `file`th, as process 0 names it.
Rank& loaded_rank(const std::vector<std::unique_ptr<Rank>>& loaded, uint64_t file) {
  if (file >= loaded.size() || !loaded[file])
    throw std::runtime_error(
        fmt::format("process 0 asked for file {}, which this process did not load", file));
  return *loaded[file];
}

// A request for calls: per rank, its file and each sequence's window as process 0 holds it now
// (communicator, calls trimmed off the start, calls kept), so that both sides materialize the same calls.
void calls_request(Out& o, const RemoteSource& src, const Rank& r) {
  o.pod(src.file());
  o.pod(uint64_t(r.seqs.size()));
  for (const Sequence& s : r.seqs) {
    o.pod(s.comm);
    o.pod(s.skip);
    o.pod(s.count);
  }
}

// The owner's side: each rank asked for, its windows set as process 0 has them, materialized (`jobs`
// threads at a time, 0: one per core) and encoded (encode_calls), then let go again.
std::string calls_reply(const std::vector<std::unique_ptr<Rank>>& loaded, uint64_t n,
                        const std::string& payload, int jobs) {
  In in(payload);
  std::vector<Rank*> ranks;
  for (uint64_t i = 0; i < n; ++i) {
    const auto file = in.pod<uint32_t>();
    Rank& r = loaded_rank(loaded, file);
    const auto seqs = in.pod<uint64_t>();
    if (seqs != r.seqs.size())
      throw std::runtime_error(fmt::format("process 0 holds {} sequences of {} where this process has {}",
                                           seqs, r.file, r.seqs.size()));
    for (uint64_t k = 0; k < seqs; ++k) {
      const auto comm = in.pod<uint64_t>();
      auto it = r.seq_index.find(comm);
      if (it == r.seq_index.end())
        throw std::runtime_error(fmt::format("process 0 asked for a communicator {} has not", r.file));
      Sequence& s = r.seqs[it->second];
      in.pod(s.skip);
      in.pod(s.count);
    }
    ranks.push_back(&r);
  }
  std::vector<std::string> out(ranks.size());
  std::vector<std::string> errors(ranks.size());
  for_each_parallel(ranks.size(), jobs, [&](size_t i) {
    try {
      ranks[i]->materialize();
      out[i] = encode_calls(*ranks[i]);
    } catch (const std::exception& e) {
      errors[i] = e.what();
    }
    ranks[i]->release();
  });
  Out o;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!errors[i].empty()) throw std::runtime_error(fmt::format("{}: {}", ranks[i]->file, errors[i]));
    o.str(out[i]);
  }
  return std::move(o.bytes());
}

// The owner's side of RemoteSource::walk_messages: up to kMessageBatch message calls of the rank from
// record `from` on, and the record to go on from (UINT64_MAX: none left).
std::string messages_reply(const std::vector<std::unique_ptr<Rank>>& loaded, uint32_t file, uint64_t from,
                           const std::string& payload) {
  Rank& r = loaded_rank(loaded, file);
  In in(payload);
  in.pod(r.end_id);
  in.pod(r.messages_until_wall);
  std::vector<P2P> calls;
  uint64_t next = UINT64_MAX;
  r.for_each_message_from(from, [&](const P2P& p) {
    calls.push_back(p);
    if (calls.size() < kMessageBatch) return true;
    next = r.source->first_id() + p.ref + 1;
    return false;
  });
  Out o;
  o.pod(next);
  o.str(encode_messages(calls));
  return std::move(o.bytes());
}

std::string listing_message(const std::vector<std::string>& inputs) {
  Out o;
  o.str(host_name());
  try {
    Listing l = list_inputs(inputs);
    o.str("");
    o.strings(l.paths);
    o.strings(l.skipped);
  } catch (const std::exception& e) {
    o.str(e.what());
  }
  return std::move(o.bytes());
}

}  // namespace

Session::Session() {
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Session::~Session() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

void serve(const std::vector<std::string>& inputs, const LoadOptions& options) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  try {
    send_bytes(listing_message(inputs), 0, kTagListing);
    std::vector<std::unique_ptr<Rank>> ranks;  // as loaded here (null: the file failed), by file number
    for (;;) {
      const std::string req = recv_bytes(0, kTagRequest);
      In in(req);
      const auto op = in.pod<uint32_t>(), file = in.pod<uint32_t>();
      const auto a = in.pod<uint64_t>(), b = in.pod<uint64_t>();
      const std::string payload = in.str();
      if (op == kStop) return;
      if (op == kAssign) {
        In p(payload);
        const std::vector<std::string> paths = p.strings();
        std::vector<LoadedFile> files = load_files(paths, options);
        send_bytes(loaded_reply(files), 0, kTagReply);
        for (auto& f : files)
          ranks.push_back(f.error.empty() ? std::make_unique<Rank>(std::move(f.rank)) : nullptr);
        continue;
      }
      if (op == kCalls) {
        send_bytes(calls_reply(ranks, a, payload, options.jobs), 0, kTagReply);
        continue;
      }
      if (op == kMessages) {
        send_bytes(messages_reply(ranks, file, a, payload), 0, kTagReply);
        continue;
      }
      const RecordSource& src = *loaded_rank(ranks, file).source;
      std::string reply;
      if (op == kRecords) {
        if (b > kBlock * kRun) throw std::runtime_error("process 0 asked for more records than a walk's run");
        reply.assign(size_t(b) * (1 + sizeof(lst_record)), '\0');
        for (uint64_t i = 0; i < b; ++i)
          if (const lst_record* rec = src.record(a + i)) {
            reply[size_t(i)] = 1;
            std::memcpy(reply.data() + b + i * sizeof(lst_record), rec, sizeof(lst_record));
          }
      } else if (op == kString) {
        reply = std::string(src.string(uint32_t(a)));
      } else if (op == kMembers) {
        const std::vector<int32_t> m = src.members(uint32_t(a));
        reply.assign(reinterpret_cast<const char*>(m.data()), m.size() * sizeof(int32_t));
      } else {
        throw std::runtime_error(fmt::format("unknown request {} from process 0", op));
      }
      send_bytes(reply, 0, kTagReply);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep check --mpi: process %d: %s\n", me, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

Coordinator::Coordinator(const Session& session) : size_(session.size()), awaiting_(size_t(session.size())) {}

Coordinator::~Coordinator() { finish(); }

void Coordinator::take_listings() {
  if (listed_) return;
  listed_ = true;
  listings_.resize(size_t(size_));
  for (int p = 1; p < size_; ++p) listings_[size_t(p)] = recv_bytes(p, kTagListing);
}

void Coordinator::finish() {
  if (finished_) return;
  // A process blocked sending its listing or a reply must be heard before it can hear the end.
  take_listings();
  for (int p = 1; p < size_; ++p)
    if (awaiting_[size_t(p)]) (void)recv_bytes(p, kTagReply);
  finished_ = true;
  for (int p = 1; p < size_; ++p) send_bytes(request(kStop, 0, 0, 0), p, kTagRequest);
}

void Coordinator::send_request(int process, const std::string& req) {
  send_bytes(req, process, kTagRequest);
  awaiting_[size_t(process)] = true;
}

std::string Coordinator::reply(int process) {
  std::string b = recv_bytes(process, kTagReply);
  awaiting_[size_t(process)] = false;
  return b;
}

std::string Coordinator::ask(int process, uint32_t op, uint32_t file, uint64_t a, uint64_t b,
                             std::string_view payload) {
  if (finished_) throw std::runtime_error("records of another process asked for after the check ended");
  send_request(process, request(op, file, a, b, payload));
  return reply(process);
}

void Coordinator::fill(const std::vector<const Rank*>& ranks, const std::function<void()>& meanwhile) {
  if (finished_) throw std::runtime_error("calls of another process asked for after the check ended");
  std::map<int, std::vector<const Rank*>> by_owner;
  for (const Rank* r : ranks) {
    const auto* src = dynamic_cast<const RemoteSource*>(r->source.get());
    if (!src) throw std::logic_error("a rank this process holds was given to be filled by another");
    by_owner[src->process()].push_back(r);
  }
  for (auto& [p, list] : by_owner) {
    Out o;
    for (const Rank* r : list) calls_request(o, static_cast<const RemoteSource&>(*r->source), *r);
    send_request(p, request(kCalls, 0, list.size(), 0, o.bytes()));
  }
  if (meanwhile) meanwhile();
  for (auto& [p, list] : by_owner) {
    const std::string b = reply(p);
    In in(b);
    for (const Rank* r : list) {
      decode_calls(in.str(), *r);
      r->materialized = true;
    }
    if (!in.done()) throw std::runtime_error(fmt::format("process {}: calls past the ranks asked for", p));
  }
}

LoadElsewhere Coordinator::loader() {
  return [this](const std::vector<std::string>& inputs, const LoadOptions& options) {
    return load(inputs, options);
  };
}

Listing Coordinator::load(const std::vector<std::string>& inputs, const LoadOptions& options) {
  take_listings();
  listings_[0] = listing_message(inputs);
  // Which processes see each file: the same path on two nodes is one file (a shared file system);
  // node-local directories hold different files, named by rank and host.
  // A process that finds no trace file (a node where the job ran no rank, a directory not there) adds
  // none and is named in a warning: the ranks it would have held are missing processes in the verdict.
  // Only when no process finds one is it bad input.
  std::map<std::string, std::vector<int>> seen;
  std::map<std::string, bool> skipped;
  std::vector<std::string> errors;
  for (int p = 0; p < size_; ++p) {
    In in(listings_[size_t(p)]);
    const std::string host = in.str(), error = in.str();
    if (!error.empty()) {
      errors.push_back(fmt::format("process {} on {}: {}", p, host, error));
      continue;
    }
    for (std::string& path : in.strings()) seen[path].push_back(p);
    for (std::string& s : in.strings()) skipped[s] = true;
  }
  if (seen.empty()) {
    std::string all;
    for (auto& e : errors) all += (all.empty() ? "" : "; ") + e;
    throw LoadError(all.empty() ? "no process found a trace file (*.lstrace)" : all);
  }
  Listing l;
  for (auto& e : errors) l.skipped.push_back(e + ": no trace file from there");
  std::vector<std::vector<std::string>> share(static_cast<size_t>(size_));
  std::vector<std::pair<int, uint32_t>> where;  // per path: process and index in its share
  for (auto& [path, procs] : seen) {
    const int p = *std::min_element(procs.begin(), procs.end(), [&](int x, int y) {
      return share[size_t(x)].size() < share[size_t(y)].size();
    });
    where.emplace_back(p, uint32_t(share[size_t(p)].size()));
    share[size_t(p)].push_back(path);
    l.paths.push_back(path);
  }
  for (auto& [s, _] : skipped) l.skipped.push_back(s);
  for (int p = 1; p < size_; ++p) {
    Out paths;
    paths.strings(share[size_t(p)]);
    send_request(p, request(kAssign, 0, 0, 0, paths.bytes()));
  }
  std::vector<std::vector<LoadedFile>> loaded(static_cast<size_t>(size_));
  loaded[0] = load_files(share[0], options);
  for (int p = 1; p < size_; ++p) {
    const std::string loaded_p = reply(p);
    In in(loaded_p);
    std::vector<std::shared_ptr<const std::vector<int32_t>>> lists(in.pod<uint64_t>());
    for (auto& list : lists) list = intern_members(in.vec<int32_t>());
    std::vector<LoadedFile>& files = loaded[size_t(p)];
    files.resize(in.pod<uint64_t>());
    if (files.size() != share[size_t(p)].size())
      throw std::runtime_error(
          fmt::format("process {} loaded {} files of {}", p, files.size(), share[size_t(p)].size()));
    for (uint32_t i = 0; i < files.size(); ++i) {
      LoadedFile& f = files[i];
      f.error = in.str();
      if (!f.error.empty()) continue;
      f.warning = in.str();
      f.rank = decode_rank(
          in.str(),
          [&](uint64_t first, uint64_t end, uint32_t major) {
            return std::make_shared<RemoteSource>(this, p, i, first, end, major);
          },
          &lists);
    }
  }
  for (auto& [p, i] : where) l.files.push_back(std::move(loaded[size_t(p)][i]));
  return l;
}

}  // namespace lockstep::check::mpi
