// Control dependence over a function's CFG: which branches decide whether a block runs. Pure functions of
// a `const CFG&` and of the edges left out (the exit side of uniform error checks).
#pragma once

#include <vector>

namespace clang {
class CFG;
class CFGBlock;
}  // namespace clang

namespace lockstep::lint {

// Blocks reachable from the entry, in reverse post-order.
std::vector<const clang::CFGBlock*> reverse_post_order(const clang::CFG& cfg);

// A successor that only leads out of the function (return, throw, exit) through straight-line code.
bool exit_bound(const clang::CFG& cfg, const clang::CFGBlock* s);

// Blocks from which every path ends the whole job (`ends[id]` set for blocks that do so themselves, as
// computed by the caller: a call to MPI_Abort, abort, exit) without passing a block in `blocked` (one
// that performs a collective first). Endless loops are never included.
std::vector<char> job_ending_blocks(const clang::CFG& cfg, const std::vector<const clang::CFGBlock*>& rpo,
                                    const std::vector<char>& ends, const std::vector<char>& blocked);

// Edges (block id * 2 + successor index) to leave out of control dependence:
// - the exit side of a two-way branch whose condition is the same on every rank (`varies[id] == 0`), such
//   as `if (!status.ok()) return fail(...)`. Every rank that reaches such a check decides alike, and error
//   paths would otherwise make everything after them look conditional on whatever led to the check;
// - the side of any two-way branch that ends the job (`ending[id]`, from job_ending_blocks): a rank that
//   takes it leaves no peer waiting forever in a collective, because the launcher ends every rank.
std::vector<char> exit_edges_to_drop(const clang::CFG& cfg, const std::vector<const clang::CFGBlock*>& rpo,
                                     const std::vector<char>& varies, const std::vector<char>& ending = {});

struct ControlDependence {
  std::vector<int> ipdom;                                   // immediate post-dominator by block id (-1: none)
  std::vector<std::vector<const clang::CFGBlock*>> direct;  // direct control dependences by block id
  std::vector<const clang::CFGBlock*> by_id;                // reachable blocks by id (nullptr otherwise)

  // Every branch `b` depends on, transitively, nearest first.
  std::vector<const clang::CFGBlock*> controllers(const clang::CFGBlock* b) const;
  // Where the sides of the branch at `a` meet again (nullptr: only at the exit or never).
  const clang::CFGBlock* merge_point(const clang::CFGBlock* a) const;
};

// Post-dominators over the kept edges, then control dependence (Ferrante et al.): for an edge a -> s,
// s and its post-dominators up to a's immediate post-dominator depend on a. `dropped` may be empty.
ControlDependence compute_control_dependence(const clang::CFG& cfg,
                                             const std::vector<const clang::CFGBlock*>& rpo,
                                             const std::vector<char>& dropped);

}  // namespace lockstep::lint
