// Protocol Buffers wire format, as far as the Perfetto export writes it: varints, a message built in
// a string, and a table of interned strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lockstep::exporter {

inline size_t varint_size(uint64_t v) { return v < 0x80 ? 1 : size_t(64 - __builtin_clzll(v) + 6) / 7; }
inline char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = char(v | 0x80);
    v >>= 7;
  }
  *p++ = char(v);
  return p;
}

// A protobuf message under construction.
struct Proto {
  std::string b;
  void varint(uint64_t v) {
    char tmp[10];
    int n = 0;
    while (v >= 0x80) {
      tmp[n++] = char(v | 0x80);
      v >>= 7;
    }
    tmp[n++] = char(v);
    b.append(tmp, size_t(n));
  }
  void tag(uint32_t field, int wire) { varint((uint64_t(field) << 3) | uint64_t(wire)); }
  void u(uint32_t field, uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  void i(uint32_t field, int64_t v) { u(field, uint64_t(v)); }  // int64: two's complement, 10 bytes if < 0
  void bytes(uint32_t field, std::string_view s) {
    tag(field, 2);
    varint(s.size());
    b.append(s);
  }
  void msg(uint32_t field, const Proto& m) { bytes(field, m.b); }
  void fixed64(uint32_t field, uint64_t v) {
    tag(field, 1);
    char x[8];
    for (int k = 0; k < 8; ++k) x[k] = char(v >> (8 * k));
    b.append(x, 8);
  }
  void clear() { b.clear(); }
};

// Interned values: one iid per distinct value for a rank (numbered as the rank first uses them, so
// that a rank's bytes do not depend on the ranks written before it); each packet sequence defines the
// iids it uses the first time it uses them (Perfetto keeps interned data per sequence).
class Table {
 public:
  uint64_t iid(const std::string& s) {
    auto [it, fresh] = index_.try_emplace(s, values_.size() + 1);
    if (fresh) values_.push_back(s);
    return it->second;
  }
  const std::string& value(uint64_t iid) const { return values_[iid - 1]; }
  void clear() {
    index_.clear();
    values_.clear();
  }

 private:
  std::unordered_map<std::string, uint64_t> index_;
  std::vector<std::string> values_;
};

}  // namespace lockstep::exporter
