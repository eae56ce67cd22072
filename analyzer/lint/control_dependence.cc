// Control dependence for the lint analysis (see control_dependence.h).
//
// Clang's CFGPostDomTree and ControlDependencyCalculator work on the CFG exactly as built. The analysis
// needs post-dominators over a subgraph: the exit side of uniform error checks is left out, and which
// edges those are changes while the uniformity fixpoint learns which conditions are rank-local. LLVM's
// dominator-tree builder cannot be given such a filtered edge set, so post-dominators are computed here
// with the iterative algorithm of Cooper, Harvey and Kennedy (linear in practice, no n*n bit sets); the
// unit tests compare the result with ControlDependencyCalculator when no edge is left out.
#include "lint/control_dependence.h"

#include "lint/ast_queries.h"

#include <clang/Analysis/CFG.h>
#include <llvm/ADT/SmallPtrSet.h>

#include <algorithm>
#include <utility>

namespace lockstep::lint {

using namespace clang;

std::vector<const CFGBlock*> reverse_post_order(const CFG& cfg) {
  unsigned n = cfg.getNumBlockIDs();
  std::vector<const CFGBlock*> rpo;
  std::vector<char> seen(n, 0);
  std::vector<std::pair<const CFGBlock*, CFGBlock::const_succ_iterator>> stack;
  stack.push_back({&cfg.getEntry(), cfg.getEntry().succ_begin()});
  seen[cfg.getEntry().getBlockID()] = 1;
  while (!stack.empty()) {
    auto& [b, it] = stack.back();
    if (it == b->succ_end()) {
      rpo.push_back(b);
      stack.pop_back();
      continue;
    }
    const CFGBlock* next = it->getReachableBlock();
    ++it;
    if (next && !seen[next->getBlockID()]) {
      seen[next->getBlockID()] = 1;
      stack.push_back({next, next->succ_begin()});
    }
  }
  std::reverse(rpo.begin(), rpo.end());
  return rpo;
}

bool exit_bound(const CFG& cfg, const CFGBlock* s) {
  for (int steps = 0; s && steps < 16; ++steps) {
    if (s == &cfg.getExit()) return true;
    const CFGBlock* next = nullptr;
    int count = 0;
    for (const CFGBlock* x : s->succs())
      if (x) {
        next = x;
        ++count;
      }
    if (count != 1) return false;
    s = next;
  }
  return false;
}

std::vector<char> job_ending_blocks(const CFG& cfg, const std::vector<const CFGBlock*>& rpo,
                                    const std::vector<char>& ends, const std::vector<char>& blocked) {
  std::vector<char> out(cfg.getNumBlockIDs(), 0);
  // Least fixpoint, successors before predecessors (reverse of rpo): a block ends the job when it does so
  // itself, or when all its successors do and it performs no collective on the way.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = rpo.rbegin(); it != rpo.rend(); ++it) {
      const CFGBlock* b = *it;
      unsigned id = b->getBlockID();
      if (out[id] || blocked[id] || b == &cfg.getExit()) continue;
      bool all = ends[id];
      if (!all) {
        int succs = 0;
        all = true;
        for (const CFGBlock* s : b->succs()) {
          if (!s) continue;
          ++succs;
          all &= out[s->getBlockID()] != 0;
        }
        all &= succs > 0;
      }
      if (all) {
        out[id] = 1;
        changed = true;
      }
    }
  }
  return out;
}

std::vector<char> exit_edges_to_drop(const CFG& cfg, const std::vector<const CFGBlock*>& rpo,
                                     const std::vector<char>& varies, const std::vector<char>& ending) {
  std::vector<char> dropped(size_t(cfg.getNumBlockIDs()) * 2, 0);
  for (const CFGBlock* b : rpo) {
    if (b->succ_size() != 2 || !b->getTerminatorStmt()) continue;
    // A loop's way out is not an error exit: without it the loop would never reach the function's exit,
    // post-dominate nothing, and every branch inside it would seem to control the loop's increment.
    if (is_loop(b->getTerminatorStmt())) continue;
    const CFGBlock* s0 = b->succ_begin()->getReachableBlock();
    const CFGBlock* s1 = (b->succ_begin() + 1)->getReachableBlock();
    if (!s0 || !s1) continue;
    if (!ending.empty()) {
      bool j0 = ending[s0->getBlockID()], j1 = ending[s1->getBlockID()];
      if (j0 != j1) {
        dropped[b->getBlockID() * 2 + (j0 ? 0 : 1)] = 1;
        continue;
      }
    }
    if (varies[b->getBlockID()]) continue;
    bool e0 = exit_bound(cfg, s0), e1 = exit_bound(cfg, s1);
    if (e0 != e1) dropped[b->getBlockID() * 2 + (e0 ? 0 : 1)] = 1;
  }
  return dropped;
}

ControlDependence compute_control_dependence(const CFG& cfg, const std::vector<const CFGBlock*>& rpo,
                                             const std::vector<char>& dropped) {
  unsigned n = cfg.getNumBlockIDs();
  unsigned exit_id = cfg.getExit().getBlockID();
  ControlDependence out;
  out.by_id.assign(n, nullptr);
  for (const CFGBlock* b : rpo) out.by_id[b->getBlockID()] = b;

  std::vector<std::vector<unsigned>> succs(n), preds(n);
  for (const CFGBlock* b : rpo) {
    unsigned k = 0;
    for (auto it = b->succ_begin(); it != b->succ_end(); ++it, ++k) {
      const CFGBlock* s = it->getReachableBlock();
      if (!s || (k < 2 && !dropped.empty() && dropped[b->getBlockID() * 2 + k])) continue;
      succs[b->getBlockID()].push_back(s->getBlockID());
      preds[s->getBlockID()].push_back(b->getBlockID());
    }
  }

  // Post-order of the reverse graph from the exit: blocks that do not reach the exit over kept edges
  // (endless loops) get no number and post-dominate only themselves.
  std::vector<int> po(n, -1);
  std::vector<unsigned> order;  // reverse-graph post-order
  if (out.by_id[exit_id]) {
    std::vector<char> seen(n, 0);
    std::vector<std::pair<unsigned, size_t>> stack{{exit_id, 0}};
    seen[exit_id] = 1;
    while (!stack.empty()) {
      auto& [b, i] = stack.back();
      if (i == preds[b].size()) {
        po[b] = static_cast<int>(order.size());
        order.push_back(b);
        stack.pop_back();
        continue;
      }
      unsigned p = preds[b][i++];
      if (!seen[p]) {
        seen[p] = 1;
        stack.push_back({p, 0});
      }
    }
  }
  std::vector<int> idom(n, -1);
  if (!order.empty()) idom[exit_id] = static_cast<int>(exit_id);
  auto intersect = [&](int a, int b) {
    while (a != b) {
      while (po[a] < po[b]) a = idom[a];
      while (po[b] < po[a]) b = idom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      unsigned b = *it;
      if (b == exit_id) continue;
      int next = -1;
      for (unsigned s : succs[b]) {
        if (po[s] < 0 || idom[s] < 0) continue;
        next = next < 0 ? static_cast<int>(s) : intersect(static_cast<int>(s), next);
      }
      if (next >= 0 && idom[b] != next) {
        idom[b] = next;
        changed = true;
      }
    }
  }
  if (!order.empty()) idom[exit_id] = -1;
  out.ipdom = std::move(idom);

  out.direct.assign(n, {});
  for (const CFGBlock* a : rpo) {
    const auto& targets = succs[a->getBlockID()];
    if (targets.size() < 2) continue;
    int stop = out.ipdom[a->getBlockID()];
    for (unsigned s : targets) {
      int runner = static_cast<int>(s);
      for (unsigned guard = 0; runner >= 0 && runner != stop && guard < n; ++guard) {
        auto& list = out.direct[runner];
        if (list.empty() || list.back() != a) {
          if (std::find(list.begin(), list.end(), a) == list.end()) list.push_back(a);
        }
        runner = out.ipdom[runner];
      }
    }
  }
  return out;
}

std::vector<const CFGBlock*> ControlDependence::controllers(const CFGBlock* b) const {
  std::vector<const CFGBlock*> found;
  llvm::SmallPtrSet<const CFGBlock*, 16> seen;
  std::vector<const CFGBlock*> work{b};
  while (!work.empty()) {
    std::vector<const CFGBlock*> next;
    for (const CFGBlock* x : work)
      for (const CFGBlock* a : direct[x->getBlockID()])
        if (seen.insert(a).second) {
          found.push_back(a);
          next.push_back(a);
        }
    work = std::move(next);
  }
  return found;
}

const CFGBlock* ControlDependence::merge_point(const CFGBlock* a) const {
  int d = ipdom[a->getBlockID()];
  return d >= 0 ? by_id[d] : nullptr;
}

}  // namespace lockstep::lint
