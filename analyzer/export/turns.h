// The file of an export written by several threads in a fixed order: the bytes go out a buffer at a
// time, on a thread of their own (Output), and each part takes its turn at the file (Turns), so that
// parts encoded at once land in the order the file needs.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lockstep::exporter {

// The cores this process may run on (its affinity mask), or the machine's when that cannot be read.
inline size_t usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return size_t(CPU_COUNT(&set));
  return std::max<size_t>(std::thread::hardware_concurrency(), 1);
}

// The file, written a buffer at a time on a thread of its own, so that the system's copy of one buffer
// into the file (or its wait for the disk) overlaps the encoding of the next; or, without that thread
// (own_thread false), by the caller as it hands each buffer over.
class Output {
 public:
  // `buffer_size`: what a buffer handed back holds at least.
  Output(std::FILE* f, size_t buffer_size, bool own_thread = true)
      : f_(f), buffer_size_(buffer_size), own_(own_thread) {
    if (own_) thread_ = std::thread([this] { run(); });
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Hands buf's first `len` bytes to the thread and gives the caller, in exchange, the buffer it wrote
  // last; without the thread, writes them before it returns. Throws when a write has failed.
  void write(std::vector<char>& buf, size_t len) {
    if (!own_) {
      if (error_) throw std::runtime_error(failure(error_));
      errno = 0;
      if (std::fwrite(buf.data(), 1, len, f_) != len) {
        error_ = errno ? errno : EIO;
        throw std::runtime_error(failure(error_));
      }
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return !busy_; });
    if (error_) throw std::runtime_error(failure(error_));
    buf.swap(writing_);
    if (buf.size() < buffer_size_) buf.resize(buffer_size_);
    pending_ = len;
    busy_ = true;
    lock.unlock();
    changed_.notify_all();
  }
  // Waits for every byte handed over; throws when a write has failed.
  void finish() {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return !busy_; });
    if (error_) throw std::runtime_error(failure(error_));
  }

 private:
  static std::string failure(int err) {
    return err ? std::string("write failed: ") + std::strerror(err) : std::string("write failed");
  }
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      changed_.wait(lock, [&] { return busy_ || stopping_; });
      if (!busy_) return;
      lock.unlock();
      errno = 0;
      const bool ok = std::fwrite(writing_.data(), 1, pending_, f_) == pending_;
      const int err = errno;
      lock.lock();
      if (!ok && !error_) error_ = err ? err : EIO;
      busy_ = false;
      changed_.notify_all();
    }
  }

  std::FILE* f_;
  size_t buffer_size_;
  std::vector<char> writing_;  // the bytes being written while busy_
  size_t pending_ = 0;
  std::mutex mu_;
  std::condition_variable changed_;
  bool own_ = true;  // the writes on a thread of their own; else on the caller's
  bool busy_ = false, stopping_ = false;
  int error_ = 0;       // errno of the first failed write
  std::thread thread_;  // last: started once the rest is set up
};

struct Stopped {};  // another thread failed: leave the rank being written

// The ranks' turns at the file. Several threads encode ranks at once, each into its own buffer, and the
// file takes them in job order: turn 0 is the file's first packet, turn k + 1 rank k. The thread whose
// turn it is writes as it goes; the others hold their bytes until their turn comes.
class Turns {
 public:
  size_t take() { return taken_.fetch_add(1, std::memory_order_relaxed); }  // the next rank to encode
  bool is(size_t turn) const { return now_.load(std::memory_order_acquire) == turn; }
  void wait(size_t turn) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return now_.load(std::memory_order_relaxed) == turn || stopped(); });
    if (now_.load(std::memory_order_relaxed) != turn) throw Stopped{};
  }
  void pass(size_t turn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      now_.store(turn + 1, std::memory_order_release);
    }
    changed_.notify_all();
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_.store(true, std::memory_order_relaxed);
    }
    changed_.notify_all();
  }
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

 private:
  std::atomic<size_t> taken_{0}, now_{0};
  std::atomic<bool> stopped_{false};
  std::mutex mu_;
  std::condition_variable changed_;
};

}  // namespace lockstep::exporter
