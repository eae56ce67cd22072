// The values of the lint analysis: how a value depends on the rank (Taint), the per-block dataflow state,
// the collectives a function performs (Event) and the function summaries callers apply.
#pragma once

#include <clang/Basic/SourceLocation.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lint/catalog.h"

namespace clang {
class FieldDecl;
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

// One field of what a parameter refers to, as it was on entry: `(i, f, true)` is field `f` of what
// parameter `i` points to (`p->f`, `p[k].f`), `(i, f, false)` field `f` of the parameter itself (a struct
// passed by value or by reference).
struct ParamField {
  const clang::FieldDecl* field = nullptr;
  uint8_t param = 0;
  bool mem = false;
  bool operator==(const ParamField& o) const { return field == o.field && param == o.param && mem == o.mem; }
};

// A branch identity for `written_under` and `members_under` that stands for "more than one branch".
inline const char kSeveralBranchesTag = 0;
inline const void* const kSeveralBranches = &kSeveralBranchesTag;

// Whether a value is the same on every rank. `local`: it is not (origin says why); `params`/`param_mem`:
// it is unless the caller passes a rank-local value for these parameters (or for what they point to);
// `fields`: the same for single fields of what a parameter refers to.
struct Taint {
  bool local = false;
  int origin = -1;
  uint32_t params = 0;
  uint32_t param_mem = 0;
  // A communicator made on the ranks that chose to make it (MPI_Comm_create_group, ncclCommInitRank on
  // some ranks): a collective on it is called by exactly its members, whatever condition guards it.
  bool member_comm = false;
  // With `local`: the one rank-local branch (its terminator statement) that explains all of the value's
  // locality, because a value every rank computes alike was written only on that branch (null: the data
  // itself differs, or several reasons mix). Such a value is uniform among the ranks that took the branch.
  const void* written_under = nullptr;
  // With `member_comm`: the rank-local branch the communicator was made on (null: made by every rank that
  // gets there), so that the ranks taking the branch are exactly its members.
  const void* members_under = nullptr;
  // Field-exact parameter dependences; at most kMaxFields, more fold into `params`/`param_mem` (the whole
  // parameter, which is what they were before fields were told apart).
  static constexpr unsigned kMaxFields = 2;
  uint8_t nfields = 0;
  ParamField fields[kMaxFields];

  bool any() const { return local || params || param_mem || nfields; }
  bool same(const Taint& o) const {
    if (local != o.local || params != o.params || param_mem != o.param_mem || member_comm != o.member_comm ||
        nfields != o.nfields || written_under != o.written_under || members_under != o.members_under)
      return false;
    for (unsigned i = 0; i < nfields; ++i)
      if (!o.has_field(fields[i])) return false;
    return true;
  }
  bool has_field(const ParamField& f) const {
    for (unsigned i = 0; i < nfields; ++i)
      if (fields[i] == f) return true;
    return false;
  }
  void add_field(const ParamField& f) {
    if ((f.mem ? param_mem : params) & (1u << f.param)) return;  // the whole parameter already
    if (has_field(f)) return;
    if (nfields < kMaxFields) {
      fields[nfields++] = f;
      return;
    }
    // Too many to keep apart: depend on the whole parameter (and drop the fields it covers).
    (f.mem ? param_mem : params) |= 1u << f.param;
    normalize();
  }
  void normalize() {
    unsigned n = 0;
    for (unsigned i = 0; i < nfields; ++i)
      if (!((fields[i].mem ? param_mem : params) & (1u << fields[i].param))) fields[n++] = fields[i];
    nfields = static_cast<uint8_t>(n);
  }
  void join(const Taint& o) {
    if (o.origin >= 0 && (origin < 0 || (!local && o.local))) origin = o.origin;
    if (o.local)
      written_under = !local ? o.written_under : (written_under == o.written_under ? written_under : nullptr);
    if (o.member_comm) {
      // A variable that holds a communicator made everywhere and one made on a branch (an array of
      // communicators, some on every rank, some on a subset) has the branch's members where it matters.
      if (!member_comm || !members_under)
        members_under = o.members_under;
      else if (o.members_under && o.members_under != members_under)
        members_under = kSeveralBranches;
    }
    local |= o.local;
    member_comm |= o.member_comm;
    params |= o.params;
    param_mem |= o.param_mem;
    if (o.params || o.param_mem) normalize();
    for (unsigned i = 0; i < o.nfields; ++i) add_field(o.fields[i]);
  }
  Taint symbolic_part() const {
    Taint t = *this;
    t.local = false;
    t.written_under = nullptr;
    if (!t.any()) t.origin = -1;
    return t;
  }
};

inline Taint joined(Taint a, const Taint& b) {
  a.join(b);
  return a;
}

// Taints of single fields of one object, beyond what the whole object holds.
using FieldTaints = llvm::SmallVector<std::pair<const clang::FieldDecl*, Taint>, 4>;
using VarMap = llvm::DenseMap<const clang::ValueDecl*, Taint>;
using FieldMap = llvm::DenseMap<const clang::ValueDecl*, FieldTaints>;

// Values of variables (`val`) and what variables that are pointers, arrays or containers hold (`mem`).
// `fval`/`fmem` keep single fields of a struct variable, or of the structs an array or pointer holds,
// apart: a field reads as the whole object's taint joined with its own entry, the whole object as the
// join of everything.
struct State {
  // Only values that are not plainly uniform are stored (a missing entry is uniform): a long function
  // has thousands of variables, and copying and joining maps of all of them per block is quadratic.
  VarMap val, mem;
  FieldMap fval, fmem;
  bool reached = false;

  static bool uniform(const Taint& t) { return !t.any() && !t.member_comm; }
  static void put(VarMap& m, const clang::ValueDecl* d, const Taint& t) {
    if (uniform(t))
      m.erase(d);
    else
      m[d] = t;
  }
  // `strong`: the field now holds `t`; otherwise it may hold `t` as well as what it held.
  static void put_field(FieldMap& m, const clang::ValueDecl* d, const clang::FieldDecl* f, const Taint& t,
                        bool strong) {
    if (uniform(t) && (!strong || !m.count(d))) return;
    FieldTaints& fs = m[d];
    for (auto it = fs.begin(); it != fs.end(); ++it) {
      if (it->first != f) continue;
      if (!strong)
        it->second.join(t);
      else if (uniform(t))
        fs.erase(it);
      else
        it->second = t;
      if (fs.empty()) m.erase(d);
      return;
    }
    if (!uniform(t)) fs.push_back({f, t});
    if (fs.empty()) m.erase(d);
  }
  void set_val(const clang::ValueDecl* d, const Taint& t) {
    put(val, d, t);
    fval.erase(d);
  }
  void set_mem(const clang::ValueDecl* d, const Taint& t) {
    put(mem, d, t);
    fmem.erase(d);
  }
  void forget(const clang::ValueDecl* d) {
    val.erase(d);
    mem.erase(d);
    fval.erase(d);
    fmem.erase(d);
  }

  // Joins `o` into this state; true when anything changed.
  bool join(const State& o) {
    bool changed = !reached && o.reached;
    reached |= o.reached;
    auto merge_one = [&](Taint& mine, const Taint& theirs) {
      Taint before = mine;
      mine.join(theirs);
      changed |= !before.same(mine);
    };
    auto merge = [&](VarMap& mine, const VarMap& theirs) {
      for (const auto& [d, t] : theirs) {
        if (uniform(t)) continue;
        auto [it, inserted] = mine.try_emplace(d, t);
        if (inserted) {
          changed = true;
          continue;
        }
        merge_one(it->second, t);
      }
    };
    auto merge_fields = [&](FieldMap& mine, const FieldMap& theirs) {
      for (const auto& [d, fs] : theirs) {
        auto [it, inserted] = mine.try_emplace(d, fs);
        if (inserted) {
          changed |= !fs.empty();
          continue;
        }
        for (const auto& [f, t] : fs) {
          auto hit =
              std::find_if(it->second.begin(), it->second.end(), [&](const auto& e) { return e.first == f; });
          if (hit == it->second.end()) {
            it->second.push_back({f, t});
            changed = true;
          } else {
            merge_one(hit->second, t);
          }
        }
      }
    };
    merge(val, o.val);
    merge(mem, o.mem);
    merge_fields(fval, o.fval);
    merge_fields(fmem, o.fmem);
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
  // Per parameter: the function leaves it (what it points to) exactly as it found it, field by field.
  std::vector<char> kept_val, kept_mem;
  std::vector<Event> events;

  bool same(const Summary& o) const {
    if (!result.same(o.result) || events.size() != o.events.size() || out_val.size() != o.out_val.size())
      return false;
    for (size_t i = 0; i < out_val.size(); ++i)
      if (!out_val[i].same(o.out_val[i]) || !out_mem[i].same(o.out_mem[i]) || kept_val[i] != o.kept_val[i] ||
          kept_mem[i] != o.kept_mem[i])
        return false;
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
