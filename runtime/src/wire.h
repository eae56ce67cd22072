// Byte encoding of the control-plane messages (readiness lists and plans). Little-endian, length
// prefixed; the reader checks every length against what is left, so a short message fails cleanly.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace lockstep::rt::internal {

class WireWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(v); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i32(int32_t v) { raw(&v, 4); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  const std::vector<uint8_t>& bytes() const { return buf_; }

 private:
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  std::vector<uint8_t> buf_;
};

class WireReader {
 public:
  WireReader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t u8() {
    uint8_t v;
    raw(&v, 1);
    return v;
  }
  uint32_t u32() {
    uint32_t v;
    raw(&v, 4);
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    raw(&v, 8);
    return v;
  }
  int32_t i32() {
    int32_t v;
    raw(&v, 4);
    return v;
  }
  std::string str() {
    const uint32_t len = u32();
    if (len > n_ - off_) throw std::runtime_error("control message truncated");
    std::string s(reinterpret_cast<const char*>(p_ + off_), len);
    off_ += len;
    return s;
  }
  uint32_t count(size_t min_each) {  // an element count that cannot exceed what is left
    const uint32_t c = u32();
    if (min_each && c > (n_ - off_) / min_each) throw std::runtime_error("control message truncated");
    return c;
  }

 private:
  void raw(void* v, size_t k) {
    if (k > n_ - off_) throw std::runtime_error("control message truncated");
    std::memcpy(v, p_ + off_, k);
    off_ += k;
  }
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
};

}  // namespace lockstep::rt::internal
