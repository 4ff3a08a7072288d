// Formatting of one log line without the C library, so the same code runs in
// device code. Text past the line's capacity is cut and marked with "…".
#pragma once

#include <cstdint>
#include <type_traits>

#include "grma/config.hpp"
#include "grma/detail/device_state.hpp"

namespace grma::detail {

// The last two components of a source path ("dir/file.cpp"): what names a
// file in a message, whatever the folder it was compiled in.
GRMA_INLINE const char* source_tail(const char* path) {
  const char* tail = path;
  const char* after_last = path;  // just after the last '/' seen
  for (const char* p = path; *p != '\0'; ++p)
    if (*p == '/') {
      tail = after_last;
      after_last = p + 1;
    }
  return tail;
}

// A line of at most Capacity bytes (not zero-terminated).
template <std::uint32_t Capacity>
class basic_line_buffer {
  static_assert(Capacity > 3, "room for the cut mark");

 public:
  GRMA_INLINE void append(const char* s) {
    if (s == nullptr) s = "(null)";
    while (*s) put(*s++);
  }
  GRMA_INLINE void append(char c) { put(c); }
  GRMA_INLINE void append(bool b) { append(b ? "true" : "false"); }

  GRMA_INLINE void append_unsigned(std::uint64_t v, unsigned base = 10) {
    char digits[24];
    int n = 0;
    do {
      const unsigned d = static_cast<unsigned>(v % base);
      digits[n++] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
      v /= base;
    } while (v != 0);
    while (n > 0) put(digits[--n]);
  }
  GRMA_INLINE void append_signed(std::int64_t v) {
    if (v < 0) {
      put('-');
      append_unsigned(0 - static_cast<std::uint64_t>(v));
    } else {
      append_unsigned(static_cast<std::uint64_t>(v));
    }
  }
  GRMA_INLINE void append(const void* p) {
    append("0x");
    append_unsigned(reinterpret_cast<std::uintptr_t>(p), 16);
  }
  // Up to six digits after the point, trailing zeros dropped; scientific
  // notation outside [1e-4, 1e15).
  GRMA_INLINE void append(double v) {
    if (v != v) return append("nan");
    if (v < 0) {
      put('-');
      v = -v;
    }
    if (v > 1.7976931348623157e308) return append("inf");
    int exponent = 0;
    if (v != 0 && (v >= 1e15 || v < 1e-4)) {
      while (v >= 10) { v /= 10; ++exponent; }
      while (v < 1) { v *= 10; --exponent; }
    }
    std::uint64_t whole = static_cast<std::uint64_t>(v);
    std::uint64_t frac = static_cast<std::uint64_t>((v - static_cast<double>(whole)) * 1e6 + 0.5);
    if (frac >= 1000000) { ++whole; frac -= 1000000; }
    if (exponent != 0 && whole == 10) { whole = 1; ++exponent; }  // 9.9999997e-301 -> 1e-300
    append_unsigned(whole);
    if (frac != 0) {
      put('.');
      char digits[6];
      for (int i = 5; i >= 0; --i) { digits[i] = static_cast<char>('0' + frac % 10); frac /= 10; }
      int last = 5;
      while (digits[last] == '0') --last;
      for (int i = 0; i <= last; ++i) put(digits[i]);
    }
    if (exponent != 0) {
      put('e');
      append_signed(exponent);
    }
  }

  GRMA_INLINE const char* data() const { return text_; }
  GRMA_INLINE std::uint32_t size() const { return length_; }

 private:
  GRMA_INLINE void put(char c) {
    if (length_ < Capacity) {
      text_[length_++] = c;
    } else if (!cut_) {  // "…" (U+2026, three bytes of UTF-8) replaces the last three
      cut_ = true;
      text_[Capacity - 3] = '\xe2';
      text_[Capacity - 2] = '\x80';
      text_[Capacity - 1] = '\xa6';
    }
  }
  char text_[Capacity];
  std::uint32_t length_ = 0;
  bool cut_ = false;
};

// A log record's line.
using line_buffer = basic_line_buffer<log_text_bytes>;

// `r.log() << "x = " << x;` prints one whole line, tagged with the rank, when
// the statement ends. All threads of the rank log the same values; one sends.
template <class Rank>
class log_line {
 public:
  GRMA_INLINE explicit log_line(Rank& rank) : rank_(rank) {}
  log_line(const log_line&) = delete;
  log_line& operator=(const log_line&) = delete;
  GRMA_INLINE ~log_line() { rank_.send_log(buffer_); }

  template <class T>
  GRMA_INLINE log_line& operator<<(const T& value) {
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, char>) {
      buffer_.append(value);
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      buffer_.append_signed(value);
    } else if constexpr (std::is_integral_v<T>) {
      buffer_.append_unsigned(value);
    } else if constexpr (std::is_enum_v<T>) {
      buffer_.append_signed(static_cast<std::int64_t>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      buffer_.append(static_cast<double>(value));
    } else if constexpr (std::is_convertible_v<T, const char*>) {
      buffer_.append(static_cast<const char*>(value));
    } else {
      static_assert(std::is_pointer_v<T>, "log: unsupported type");
      buffer_.append(static_cast<const void*>(value));
    }
    return *this;
  }

 private:
  Rank& rank_;
  line_buffer buffer_;
};

}  // namespace grma::detail
