// Escaping for text that comes out of a trace (paths, argv, interned strings) or from the file system:
// such bytes may be anything, and must not split a one-line error, break a JSON document or make a
// JUnit file invalid XML. Header only, shared by the reader and every report.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep::format {

// Length of the valid UTF-8 sequence starting at s[i] (1-4), or 0 when the byte there does not start
// one (overlong forms, surrogates and code points past U+10FFFF are invalid).
inline size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (c == 0xED)
    n = 3, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF)
    n = 3;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3)
    n = 4;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else
    return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

inline void append_byte_escape(std::string& out, unsigned char c) {
  static const char* hex = "0123456789abcdef";
  out += "\\x";
  out += hex[c >> 4];
  out += hex[c & 15];
}

// For one-line messages: control bytes (newlines included) and bytes that are not valid UTF-8 become
// \xNN; a backslash stays as it is. Valid UTF-8 text is unchanged.
inline std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_sequence(s, i);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      append_byte_escape(out, c);
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

// For JSON, SARIF and XML text: valid UTF-8 with every byte that is not part of a valid sequence
// written as the text \xNN, so that the report stays valid and still tells which byte it was.
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) {
      append_byte_escape(out, static_cast<unsigned char>(s[i]));
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

// XML 1.0 character data or attribute value: markup characters as entities, control characters XML
// cannot carry (all below 0x20 but tab, newline and carriage return) and invalid UTF-8 as \xNN text.
inline std::string xml_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_sequence(s, i);
    if (n == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      append_byte_escape(out, c);
      ++i;
      continue;
    }
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace lockstep::format
