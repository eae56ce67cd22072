// Myers' diff with the common prefix and suffix stripped first: sequences that agree cost one
// comparison per element, and only the differing middle pays for the O(ND) search.
#include "lockstep/check/myers.h"

#include <algorithm>

namespace lockstep::check {

std::optional<std::vector<Hunk>> diff(std::span<const uint64_t> a, std::span<const uint64_t> b,
                                      int max_edits) {
  std::vector<Hunk> hunks;
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  const int64_t n = int64_t(a.size() - pre - suf), m = int64_t(b.size() - pre - suf);
  if (n == 0 && m == 0) return hunks;
  auto A = [&](int64_t i) { return a[pre + size_t(i)]; };
  auto B = [&](int64_t j) { return b[pre + size_t(j)]; };
  if (n == 0 || m == 0) {
    if (n + m > max_edits) return std::nullopt;
    hunks.push_back({uint32_t(pre), uint32_t(pre + n), uint32_t(pre), uint32_t(pre + m)});
    return hunks;
  }

  const int64_t dmax = std::min<int64_t>(n + m, max_edits);
  const int64_t off = dmax + 1;
  std::vector<int64_t> v(size_t(2 * dmax + 3), 0);
  std::vector<std::vector<int64_t>> trace;  // v after each d, for the backtrack
  int64_t found = -1;
  for (int64_t d = 0; d <= dmax && found < 0; ++d) {
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x;
      if (k == -d || (k != d && v[size_t(off + k - 1)] < v[size_t(off + k + 1)]))
        x = v[size_t(off + k + 1)];
      else
        x = v[size_t(off + k - 1)] + 1;
      int64_t y = x - k;
      while (x < n && y < m && A(x) == B(y)) ++x, ++y;
      v[size_t(off + k)] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    // Only the diagonals [-d, d] are needed to backtrack step d.
    trace.emplace_back(v.begin() + (off - d - 1), v.begin() + (off + d + 2));
  }
  if (found < 0) return std::nullopt;

  // Backtrack into single edits, then merge adjacent ones into hunks.
  struct Edit {
    int64_t x, y;
    bool del;
  };
  std::vector<Edit> edits;
  int64_t x = n, y = m;
  for (int64_t d = found; d > 0; --d) {
    const std::vector<int64_t>& pv = trace[size_t(d - 1)];  // covers k in [-(d-1)-1, (d-1)+1]
    auto at = [&](int64_t k) { return pv[size_t(k + d)]; };
    int64_t k = x - y;
    int64_t pk;
    if (k == -d || (k != d && at(k - 1) < at(k + 1)))
      pk = k + 1;  // came down: insertion of b[y-1]
    else
      pk = k - 1;  // came right: deletion of a[x-1]
    int64_t px = at(pk), py = px - pk;
    bool del = pk == k - 1;
    edits.push_back({px, py, del});
    x = px;
    y = py;
  }
  std::reverse(edits.begin(), edits.end());
  for (const Edit& e : edits) {
    uint32_t ax = uint32_t(pre + e.x), by = uint32_t(pre + e.y);
    Hunk h = e.del ? Hunk{ax, ax + 1, by, by} : Hunk{ax, ax, by, by + 1};
    if (!hunks.empty() && hunks.back().a1 == h.a0 && hunks.back().b1 == h.b0) {
      hunks.back().a1 = h.a1;
      hunks.back().b1 = h.b1;
    } else {
      hunks.push_back(h);
    }
  }
  return hunks;
}

}  // namespace lockstep::check
