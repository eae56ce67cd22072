// fn(i) for every i in [0, n) on up to `jobs` threads (0: one per core, never more than n), the calling
// thread one of them. fn catches what it throws: an exception leaving a worker ends the process.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace lockstep::check {

template <class Fn>
void for_each_parallel(size_t n, int jobs, Fn&& fn) {
  size_t workers = jobs > 0 ? size_t(jobs) : std::max(1u, std::thread::hardware_concurrency());
  workers = std::max<size_t>(1, std::min(workers, n));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace lockstep::check
