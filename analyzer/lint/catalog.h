// The API catalog read from rules/*.yaml: which functions are collectives and the role of each of their
// arguments, which calls yield rank-dependent or rank-local values, which make a value uniform again.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace lockstep::lint {

// What an argument of a collective means for cross-rank agreement.
enum class ArgRole {
  kOther,       // not checked (tags, requests, statuses, streams, names)
  kInput,       // send buffer: read, not written
  kOutUniform,  // receive buffer whose contents are the same on every rank afterwards (allreduce, allgather)
  kInOutUniform,   // buffer that holds the same contents on every rank afterwards (broadcast)
  kOutLocal,       // receive buffer whose contents differ by rank (scatter, alltoall, reduce at the root)
  kCount,          // element count every rank must pass alike
  kPerRankCounts,  // counts/displacements of v-variants: allowed to differ, exempt
  kDatatype,
  kReduceOp,
  kRoot,
  kCommunicator,
  kPeer,  // point-to-point partner: differs by rank by design, exempt
};

const char* role_name(ArgRole role);
bool role_must_agree(ArgRole role);

struct Collective {
  std::string name;           // qualified name; matches a call when it is a suffix at a '::' boundary
  std::vector<ArgRole> args;  // by argument position (the object of a member call excluded)
  std::string catalog;        // the file it came from, for messages
};

// A call whose result or output argument is rank-dependent, rank-local or uniform.
struct ValueSource {
  enum class Kind { kRank, kLocal, kUniform, kFiniteness };
  std::string name;
  Kind kind = Kind::kLocal;
  int out_arg = -1;           // -1: the return value carries it; otherwise the argument written through
  bool all_out_args = false;  // every non-const pointer/reference argument is written (fread, read)
  std::string what;           // origin note, e.g. "random number drawn here"
};

class Catalog {
 public:
  // Loads one YAML catalog; throws std::runtime_error naming the file and the problem.
  void load_file(const std::string& path);
  // Loads every *.yaml in a directory (sorted by name).
  void load_dir(const std::string& dir);

  const Collective* find_collective(const std::string& qualified_name) const;
  const ValueSource* find_source(const std::string& qualified_name) const;
  bool argv_is_local() const { return argv_local_; }
  // An environment variable the launcher sets differently on each rank (OMPI_COMM_WORLD_RANK, ...).
  bool is_rank_environment(const std::string& name) const { return rank_env_.count(name) != 0; }
  size_t collective_count() const { return collectives_.size(); }

 private:
  std::multimap<std::string, Collective> collectives_;  // keyed by last name component
  std::multimap<std::string, ValueSource> sources_;
  bool argv_local_ = false;
  std::set<std::string> rank_env_;
};

// "a::b::c" matches "b::c" and "a::b::c"; a pattern without "::" ("rand") matches only "rand" and
// "std::rand".
bool qualified_name_matches(const std::string& qualified, const std::string& pattern);

}  // namespace lockstep::lint
