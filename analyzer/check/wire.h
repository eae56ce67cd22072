// The byte encoding `check --mpi`'s processes send each other (distributed.cc, rank_codec.cc): plain
// values as their bytes, strings and vectors of plain values behind their length. A message cut short
// is a std::runtime_error, never a read past its end.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace lockstep::check::mpi::wire {

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

// Out and In also offer the same two calls, so that one function can list a structure's fields for
// both directions (rank_codec.cc): field(x) for a plain value, a string or a vector of plain values,
// and each(v, fn) for a vector of structures, fn(element) listing each element's fields.
class Out {
 public:
  template <class T>
  void field(const T& v) {
    if constexpr (std::is_same_v<T, std::string>)
      str(v);
    else if constexpr (IsVector<T>::value)
      vec(v);
    else
      pod(v);
  }
  template <class T, class Fn>
  void each(const std::vector<T>& v, Fn&& fn) {
    pod(uint64_t(v.size()));
    for (const T& x : v) fn(x);
  }
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    b_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  // A number in as few bytes as it needs, seven bits a byte, the low ones first.
  void var(uint64_t v) {
    for (; v >= 0x80; v >>= 7) b_.push_back(char(v | 0x80));
    b_.push_back(char(v));
  }
  // A signed number the same way, zigzag-mapped (0, -1, 1, -2, ...) so that small negatives stay short.
  void svar(int64_t v) { var(uint64_t(v) << 1 ^ uint64_t(v >> 63)); }
  void str(std::string_view s) {
    pod(uint64_t(s.size()));
    b_.append(s.data(), s.size());
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    pod(uint64_t(v.size()));
    b_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void strings(const std::vector<std::string>& v) {
    pod(uint64_t(v.size()));
    for (auto& s : v) str(s);
  }
  std::string& bytes() { return b_; }

 private:
  std::string b_;
};

class In {
 public:
  explicit In(std::string_view b) : p_(b.data()), end_(b.data() + b.size()) {}
  template <class T>
  void field(T& v) {
    if constexpr (std::is_same_v<T, std::string>)
      v = str();
    else if constexpr (IsVector<T>::value)
      v = vec<typename T::value_type>();
    else
      pod(v);
  }
  template <class T, class Fn>
  void each(std::vector<T>& v, Fn&& fn) {
    const uint64_t n = pod<uint64_t>();
    if (n > uint64_t(end_ - p_)) short_of(n);  // every element takes a byte at least
    v.resize(n);
    for (T& x : v) fn(x);
  }
  template <class T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  template <class T>
  void pod(T& v) {
    v = pod<T>();
  }
  uint64_t var() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto byte = static_cast<uint8_t>(*take(1));
      v |= uint64_t(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return v;
    }
    throw std::runtime_error("a message from another process holds a number of more than 64 bits");
  }
  int64_t svar() {
    const uint64_t z = var();
    return int64_t(z >> 1) ^ -int64_t(z & 1);
  }
  std::string str() {
    const uint64_t n = pod<uint64_t>();
    return std::string(take(n), n);
  }
  template <class T>
  std::vector<T> vec() {
    const uint64_t n = pod<uint64_t>();
    if (n > uint64_t(end_ - p_) / sizeof(T)) short_of(n * sizeof(T));
    std::vector<T> v(n);
    std::memcpy(v.data(), take(n * sizeof(T)), n * sizeof(T));
    return v;
  }
  std::vector<std::string> strings() {
    std::vector<std::string> v(pod<uint64_t>());
    for (auto& s : v) s = str();
    return v;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* take(uint64_t n) {
    if (n > uint64_t(end_ - p_)) short_of(n);
    const char* at = p_;
    p_ += n;
    return at;
  }
  [[noreturn]] void short_of(uint64_t n) const {
    throw std::runtime_error(
        fmt::format("a message from another process ends early ({} bytes wanted, {} left)", n, end_ - p_));
  }
  const char* p_;
  const char* end_;
};

}  // namespace lockstep::check::mpi::wire
