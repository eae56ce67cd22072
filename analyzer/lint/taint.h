// The values of the lint analysis: how a value depends on the rank (Taint), the per-block dataflow state,
// the collectives a function performs (Event) and the function summaries callers apply.
#pragma once

#include <clang/Basic/SourceLocation.h>
#include <llvm/ADT/DenseMap.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lint/catalog.h"

namespace clang {
class FunctionDecl;
class ValueDecl;
}  // namespace clang

namespace lockstep::lint {

// Parameters beyond this index are not tracked symbolically (their bits would not fit).
constexpr unsigned kMaxParams = 32;

// Where a rank-local value came from, for the notes of a finding.
struct Origin {
  clang::SourceLocation loc;
  std::string what;
  int cause = -1;  // the origin this one passes on (a call's result computed from an argument's origin)
};

// Whether a value is the same on every rank. `local`: it is not (origin says why); `params`/`param_mem`:
// it is unless the caller passes a rank-local value for these parameters (or for what they point to).
struct Taint {
  bool local = false;
  int origin = -1;
  uint32_t params = 0;
  uint32_t param_mem = 0;
  // A communicator made on the ranks that chose to make it (MPI_Comm_create_group, ncclCommInitRank on
  // some ranks): a collective on it is called by exactly its members, whatever condition guards it.
  bool member_comm = false;

  bool any() const { return local || params || param_mem; }
  bool same(const Taint& o) const {
    return local == o.local && params == o.params && param_mem == o.param_mem && member_comm == o.member_comm;
  }
  void join(const Taint& o) {
    if (o.origin >= 0 && (origin < 0 || (!local && o.local))) origin = o.origin;
    local |= o.local;
    member_comm |= o.member_comm;
    params |= o.params;
    param_mem |= o.param_mem;
  }
  Taint symbolic_part() const {
    Taint t = *this;
    t.local = false;
    if (!t.any()) t.origin = -1;
    return t;
  }
};

inline Taint joined(Taint a, const Taint& b) {
  a.join(b);
  return a;
}

// Values of variables (`val`) and what variables that are pointers, arrays or containers hold (`mem`).
struct State {
  // Only values that are not plainly uniform are stored (a missing entry is uniform): a long function
  // has thousands of variables, and copying and joining maps of all of them per block is quadratic.
  llvm::DenseMap<const clang::ValueDecl*, Taint> val, mem;
  bool reached = false;

  static bool uniform(const Taint& t) { return !t.any() && !t.member_comm; }
  static void put(llvm::DenseMap<const clang::ValueDecl*, Taint>& m, const clang::ValueDecl* d,
                  const Taint& t) {
    if (uniform(t))
      m.erase(d);
    else
      m[d] = t;
  }
  void set_val(const clang::ValueDecl* d, const Taint& t) { put(val, d, t); }
  void set_mem(const clang::ValueDecl* d, const Taint& t) { put(mem, d, t); }

  // Joins `o` into this state; true when anything changed.
  bool join(const State& o) {
    bool changed = !reached && o.reached;
    reached |= o.reached;
    auto merge = [&](llvm::DenseMap<const clang::ValueDecl*, Taint>& mine,
                     const llvm::DenseMap<const clang::ValueDecl*, Taint>& theirs) {
      for (const auto& [d, t] : theirs) {
        if (uniform(t)) continue;
        auto [it, inserted] = mine.try_emplace(d, t);
        if (inserted) {
          changed |= t.any() || t.member_comm;
          continue;
        }
        Taint before = it->second;
        it->second.join(t);
        changed |= !before.same(it->second);
      }
    };
    merge(val, o.val);
    merge(mem, o.mem);
    return changed;
  }
};

// A collective performed by a function, directly or inside a callee.
struct Event {
  std::string collective;
  bool members_from_arguments = false;       // see Collective: no condition can make it one-sided
  clang::SourceLocation loc;                 // the collective call itself (maybe in a callee)
  clang::SourceLocation site;                // the call in the function that holds the event
  const clang::FunctionDecl* via = nullptr;  // the callee performing it, if not direct
  Taint control;  // conditions inside callees controlling it (symbolic, substituted)
  clang::SourceLocation control_loc;
  struct Arg {
    ArgRole role;
    Taint taint;
    clang::SourceLocation loc;
  };
  std::vector<Arg> args;
};

struct Summary {
  Taint result;
  std::vector<Taint> out_val, out_mem;  // per parameter, at function exit
  std::vector<Event> events;

  bool same(const Summary& o) const {
    if (!result.same(o.result) || events.size() != o.events.size() || out_val.size() != o.out_val.size())
      return false;
    for (size_t i = 0; i < out_val.size(); ++i)
      if (!out_val[i].same(o.out_val[i]) || !out_mem[i].same(o.out_mem[i])) return false;
    for (size_t i = 0; i < events.size(); ++i) {
      if (!events[i].control.same(o.events[i].control) || events[i].args.size() != o.events[i].args.size())
        return false;
      for (size_t k = 0; k < events[i].args.size(); ++k)
        if (!events[i].args[k].taint.same(o.events[i].args[k].taint)) return false;
    }
    return true;
  }
};

}  // namespace lockstep::lint
