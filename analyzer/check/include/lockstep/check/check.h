// What `lockstep check` concludes about a job: findings (docs/check-output.md "How it decides"), the per-rank
// hang picture, and the wait-for graph. Pure analysis over the model (model.h); rendering lives in
// analyzer/report/.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/check/model.h"

namespace lockstep::check {

// The JSON names of the finding kinds (docs/check-output.md).
enum class Kind {
  kMissingCollective,
  kOpMismatch,
  kCountMismatch,
  kDtypeMismatch,
  kRootMismatch,
  kRedopMismatch,
  kPeerMismatch,
  kNameMismatch,
  kMembershipMismatch,
  kDeadlockCycle,
  kUnfinished,
  kHang,
  kCallsiteMismatch,
  kInvalidArgument,
  kRankDied
};
const char* kind_name(Kind k);

enum class Severity { kError, kWarning };
const char* severity_name(Severity s);

struct CommRef {
  uint64_t id = 0;
  std::string name;
  int32_t size = LST_NONE;
  uint8_t api = LST_API_NONE;
};

// A call site, symbolized when possible.
struct Site {
  uint64_t address = 0;  // as recorded (absolute, in that process)
  std::string module;    // path, empty if unknown
  uint64_t offset = 0;   // address - module load base
  std::string function;  // from the symbolizer, empty if unknown
  std::string file;      // from the symbolizer, empty if unknown
  int line = 0;
  std::string text() const;  // "train.cc:88", else "module+0x1234", else ""
};

// What one rank did at the finding's position.
struct RankDetail {
  int32_t rank = LST_NONE;  // world rank
  bool present = false;     // false: the rank has no collective at this position
  int64_t seq = -1;         // the rank's own position of this call on the communicator
  uint8_t api = 0, op = 0, dtype = 0, redop = 0, state = 0, flags = 0;
  std::string operation;  // "MPI_Allreduce"
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint32_t dtype_size = 0;
  int32_t root = LST_NONE;  // rooted collectives
  bool rooted = false;      // an MPI rooted collective: `root` is the root given (format 2.0: -1 too)
  std::string datatype;     // the datatype's name, null handles included ("MPI_DATATYPE_NULL")
  int32_t peer = LST_NONE;  // point-to-point
  std::string tensor;       // runtime tensor name, when known
  Site site;
  // With LOCKSTEP_TRACE_STACK: the frames above the call site, from the call's STACK records
  // (innermost first); empty without them.
  std::vector<Site> callers;
  double time_s = 0;  // seconds since the earliest rank's trace start
  std::string note;   // e.g. "exited", "blocked in MPI_Bcast on comm 3 #4"
  // A call with no position of its own on the communicator (seq -1: a message), said where it stands
  // in the rank's calls: "in MPI_Recv from rank 0, after #3 on MPI_COMM_WORLD". Empty otherwise.
  std::string position;
  std::string context;  // the rank's last annotation before this call (absent: before it ended)
};

struct WaitEdge {
  int32_t from = 0, to = 0;  // world ranks: `from` waits for `to`
  uint64_t comm = 0;
  std::string comm_name;
  int64_t seq = 0;        // position `from` is blocked at; -1 for a message
  std::string operation;  // what `from` is blocked in: "MPI_Allreduce", "MPI_Recv"
  bool message = false;   // a point-to-point call (`to` is its peer, or any rank for MPI_ANY_SOURCE)
};

struct Finding {
  Kind kind = Kind::kMissingCollective;
  Severity severity = Severity::kError;
  CommRef comm;
  int64_t seq = -1;  // position on the communicator as the majority numbers it
  std::vector<int32_t> ranks;
  std::vector<int32_t> culprits;
  std::vector<RankDetail> detail;
  std::string explanation;
  std::vector<std::string> notes;
  bool control = false;         // control-plane traffic (LST_F_CONTROL)
  bool tie = false;             // no majority: both views reported, nobody blamed
  std::vector<WaitEdge> edges;  // deadlock_cycle
  int64_t mispaired = 0;        // skip and continue: later collectives paired with the wrong ones
  bool silently_wrong = false;  // ... and they completed
  std::string tensor;
  // missing_collective over name-matched (runtime) calls: the tensors the rank skipped, in order.
  std::vector<std::string> skipped_tensors;
};

// One rank's state at the end of its trace.
struct RankState {
  int32_t rank = 0;
  std::string file, host;
  uint32_t pid = 0;
  EndState end = EndState::kUnknown;
  uint64_t signal = 0;
  bool blocked = false;  // in a collective that did not complete
  RankDetail in;         // that collective
  CommRef comm;
  std::vector<int32_t> waits_for;  // world ranks
  // A send or receive whose partner call this world rank had already made (recorded): the message was
  // under way, so the rank waits for the transfer, not for that peer. LST_NONE otherwise.
  int32_t under_way_with = LST_NONE;
  // What `lockstep run --timeout` read of the process in /proc as it stopped the job (Rank::at_stop);
  // empty when it did not.
  std::string at_stop, at_stop_wchan;
  double at_stop_cpu = -1;
};

struct Summary {
  int32_t ranks = 0;
  int32_t world_size = LST_NONE;
  int32_t communicators = 0;
  uint64_t collectives = 0;  // collective calls on the majority's sequences
  uint64_t records = 0;      // records read, every rank
  uint64_t unpublished = 0;
  std::string job_id;
};

struct Result {
  Summary summary;
  std::vector<int32_t> missing_processes;
  std::vector<Finding> findings;   // data-plane first, by communicator and seq; control plane after
  std::vector<RankState> states;   // every rank
  bool hung = false;               // some rank is blocked in a collective
  std::vector<WaitEdge> wait_for;  // the whole graph
  std::vector<int32_t> look_here;  // waited for by others, waiting for nothing
  std::vector<CommRef> comms;      // every communicator seen (for per-communicator reports)
  std::vector<std::string> warnings;
  bool in_lockstep() const { return findings.empty() && missing_processes.empty(); }
};

// Resolves a call site to function and file:line; the default leaves the module+offset form.
using Symbolizer = std::function<void(const Rank& rank, Site& site)>;

struct Options {
  Symbolizer symbolize;
  // Upper bound on the edit distance searched per rank and communicator; beyond it the sequences
  // are compared position by position (far apart sequences are reported at their first difference).
  int max_edits = 4096;
  // Report a rank that makes a collective from another line than its own pattern (callsite_mismatch) as
  // a warning in Result::warnings instead of a finding, so it does not fail the check.
  bool allow_callsite_differences = false;
  // Threads that read ranks' calls again where their views differ (0: one per core).
  int jobs = 1;
};

Result analyze(const Job& job, const Options& options = {});

// What differs between two calls the alignment paired (the majority's `a`, another rank's `b`) in what
// MPI requires to agree, and the finding that makes; `kind` is empty when they differ only in call site.
// `name_a`/`name_b` are runtime tensor names ("" when none).
struct Classification {
  std::optional<Kind> kind;
  Severity severity = Severity::kError;
  bool op = false, name = false, root = false, redop = false, bytes = false, dtype = false;
};
Classification classify(const lst_record& a, std::string_view name_a, const lst_record& b,
                        std::string_view name_b);

}  // namespace lockstep::check
