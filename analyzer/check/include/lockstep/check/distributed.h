// `lockstep check --mpi`: one job's traces checked by every process of an MPI job
// (`mpirun -np P lockstep check --mpi DIR...`), for traces that lie on many nodes' local disks. Each
// process lists the inputs on its own node and loads a share of the files it sees there; process 0
// gathers each rank's model (what the streaming ingest keeps: a few hundred bytes per sequence, no
// call) and runs the one analysis, reading the records of a rank another process holds from that
// process, a block at a time, only where the analysis looks into them. docs/check-at-scale.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lockstep/check/load.h"

namespace lockstep::check::mpi {

// MPI for the life of the object: initialized by the first one, finalized when it goes.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

// Every process but 0: sends process 0 its listing of `inputs`, loads the files process 0 gives it
// (with `options`: jobs, validate, site keys) and serves their records, strings and member lists
// until process 0 says it is done. Returns then; an error it cannot send back aborts the job.
void serve(const std::vector<std::string>& inputs, const LoadOptions& options);

// Process 0. Its loader (LoadOptions::load_elsewhere) takes every process's listing, gives each file to
// one process that sees it (the fewest files first), loads its own share here and the rest's models
// from their processes; their ranks read records through this object. Going out of scope (or
// finish()) tells every other process to stop; no record of another process's rank is read after.
// As a CallFiller, it asks every owner of the ranks at once for their calls, each owner reading its
// files with its threads, while this process reads its own.
class Coordinator : public CallFiller {
 public:
  explicit Coordinator(const Session& session);
  ~Coordinator() override;
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;
  LoadElsewhere loader();
  void finish();
  void fill(const std::vector<const Rank*>& ranks, const std::function<void()>& meanwhile) override;

  // A request to another process about the file it loaded as its `file`th (distributed.cc), and the
  // reply. Throws std::runtime_error once finished.
  std::string ask(int process, uint32_t op, uint32_t file, uint64_t a, uint64_t b,
                  std::string_view payload = {});

 private:
  Listing load(const std::vector<std::string>& inputs, const LoadOptions& options);
  void take_listings();
  void send_request(int process, const std::string& req);
  std::string reply(int process);
  int size_ = 1;
  bool listed_ = false, finished_ = false;
  std::vector<std::string> listings_;  // each process's listing as it sent it
  std::vector<bool> awaiting_;         // per process: a request not yet answered
};

// Member lists sent once for many ranks: each distinct list (ranks share one, intern_members) gets a
// number, and a rank's model names it by that number.
struct MemberLists {
  std::unordered_map<const std::vector<int32_t>*, uint32_t> index;
  std::vector<std::shared_ptr<const std::vector<int32_t>>> lists;
};

// A rank's model as bytes, its source left out but for its bounds and format (what a process sends
// process 0), and back: the decoded rank reads its records from `source`. With `lists`, member lists
// are numbered into it instead of written out, and decoding takes them from the same lists.
std::string encode_rank(const Rank& rank, MemberLists* lists = nullptr);
Rank decode_rank(std::string_view bytes,
                 const std::function<std::shared_ptr<const RecordSource>(uint64_t first_id, uint64_t end_id,
                                                                         uint32_t major)>& source,
                 const std::vector<std::shared_ptr<const std::vector<int32_t>>>* lists = nullptr);

// A materialized rank's calls, each sequence's signatures and record indices (what an owner sends back
// for process 0 to align), and back into a rank whose sequences have the same counts.
std::string encode_calls(const Rank& rank);
void decode_calls(std::string_view bytes, const Rank& rank);
// Message calls (Rank::for_each_message's), as an owner sends them to process 0, and back.
std::string encode_messages(const std::vector<P2P>& calls);
std::vector<P2P> decode_messages(std::string_view bytes);

}  // namespace lockstep::check::mpi
