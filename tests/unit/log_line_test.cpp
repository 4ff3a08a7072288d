// Formatting of log lines without the C library.
#include "grma/detail/log_line.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "grma/error.hpp"

namespace {

using grma::detail::line_buffer;
using grma::detail::log_line;
using grma::detail::log_text_bytes;

std::string text_of(const line_buffer& b) {
  return std::string(b.data(), b.size());
}

std::string formatted(double v) {
  line_buffer b;
  b.append(v);
  return text_of(b);
}

TEST(LineBuffer, UnsignedIntegers) {
  const auto formatted_unsigned = [](std::uint64_t v, unsigned base) {
    line_buffer b;
    b.append_unsigned(v, base);
    return text_of(b);
  };
  EXPECT_EQ(formatted_unsigned(0, 10), "0");
  EXPECT_EQ(formatted_unsigned(7, 10), "7");
  EXPECT_EQ(formatted_unsigned(1234567890, 10), "1234567890");
  EXPECT_EQ(formatted_unsigned(std::numeric_limits<std::uint64_t>::max(), 10),
            "18446744073709551615");
  EXPECT_EQ(formatted_unsigned(0xbeef, 16), "beef");
  EXPECT_EQ(formatted_unsigned(std::numeric_limits<std::uint64_t>::max(), 16), "ffffffffffffffff");
}

TEST(LineBuffer, SignedIntegers) {
  const auto formatted_signed = [](std::int64_t v) {
    line_buffer b;
    b.append_signed(v);
    return text_of(b);
  };
  EXPECT_EQ(formatted_signed(0), "0");
  EXPECT_EQ(formatted_signed(42), "42");
  EXPECT_EQ(formatted_signed(-1), "-1");
  EXPECT_EQ(formatted_signed(-42), "-42");
  EXPECT_EQ(formatted_signed(std::numeric_limits<std::int64_t>::max()), "9223372036854775807");
  EXPECT_EQ(formatted_signed(std::numeric_limits<std::int64_t>::min()), "-9223372036854775808");
}

TEST(LineBuffer, FixedPointDoubles) {
  EXPECT_EQ(formatted(0.0), "0");
  EXPECT_EQ(formatted(3.0), "3");
  EXPECT_EQ(formatted(1.5), "1.5");
  EXPECT_EQ(formatted(-0.5), "-0.5");
  EXPECT_EQ(formatted(0.1), "0.1");
  EXPECT_EQ(formatted(2.25), "2.25");
  EXPECT_EQ(formatted(123456.789), "123456.789");
  EXPECT_EQ(formatted(0.125), "0.125");
  EXPECT_EQ(formatted(1.0 / 3.0), "0.333333") << "six digits after the point";
  EXPECT_EQ(formatted(0.9999999), "1") << "rounding carries into the whole part";
  EXPECT_EQ(formatted(0.0001), "0.0001") << "1e-4 is the smallest fixed-point value";
  EXPECT_EQ(formatted(999999999999999.0), "999999999999999");
}

TEST(LineBuffer, ScientificDoubles) {
  EXPECT_EQ(formatted(1e15), "1e15");
  EXPECT_EQ(formatted(1.5e20), "1.5e20");
  EXPECT_EQ(formatted(-2.5e30), "-2.5e30");
  EXPECT_EQ(formatted(0.00005), "5e-5");
  EXPECT_EQ(formatted(2.5e-7), "2.5e-7");
  // Normalizing leaves 9.99999999...; rounding must carry into the exponent.
  EXPECT_EQ(formatted(1e-300), "1e-300");
  EXPECT_EQ(formatted(9.99999999e20), "1e21");
  EXPECT_EQ(formatted(9.99999999e-5), "1e-4");
  EXPECT_EQ(formatted(std::numeric_limits<double>::max()), "1.797693e308");
}

TEST(LineBuffer, SpecialDoubles) {
  EXPECT_EQ(formatted(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(formatted(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(formatted(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(LineBuffer, PointersBoolsCharsAndStrings) {
  line_buffer b;
  b.append(reinterpret_cast<const void*>(std::uintptr_t{0x7f12ab}));
  b.append(' ');
  b.append(static_cast<const void*>(nullptr));
  b.append(' ');
  b.append(true);
  b.append(' ');
  b.append(false);
  b.append(' ');
  b.append(static_cast<const char*>(nullptr));
  b.append(" done");
  EXPECT_EQ(text_of(b), "0x7f12ab 0x0 true false (null) done");
}

TEST(LineBuffer, LineOfExactlyTheCapacityIsNotCut) {
  line_buffer b;
  const std::string full(log_text_bytes, 'x');
  b.append(full.c_str());
  EXPECT_EQ(text_of(b), full);
}

TEST(SourceTail, KeepsTheLastTwoComponents) {
  using grma::detail::source_tail;
  const std::string deep = "/" + std::string(150, 'd') + "/grma/tests/integration/test_errors.cpp";
  EXPECT_STREQ(source_tail(deep.c_str()), "integration/test_errors.cpp");
  EXPECT_STREQ(source_tail("/a.cu"), "/a.cu");
  EXPECT_STREQ(source_tail("dir/a.cu"), "dir/a.cu");
  EXPECT_STREQ(source_tail("a.cu"), "a.cu");
}

TEST(LineBuffer, LongerLineIsCutAndMarked) {
  line_buffer b;
  b.append(std::string(log_text_bytes, 'x').c_str());
  b.append('y');
  b.append_signed(-12345);
  EXPECT_EQ(text_of(b), std::string(log_text_bytes - 3, 'x') + "\u2026");

  line_buffer long_number_line;
  long_number_line.append(std::string(log_text_bytes - 2, 'x').c_str());
  long_number_line.append_unsigned(123456);
  EXPECT_EQ(text_of(long_number_line), std::string(log_text_bytes - 3, 'x') + "\u2026");
}

// A rank stand-in that keeps the line log_line sends when it goes away.
struct recording_rank {
  std::string sent;
  int lines = 0;
  void send_log(const line_buffer& b) {
    sent = text_of(b);
    ++lines;
  }
};

TEST(LogLine, FormatsEachTypeAndSendsOneLineAtTheEnd) {
  recording_rank rank;
  log_line<recording_rank>(rank) << "int " << -7 << ", unsigned " << 7u << ", int64 "
                                 << std::int64_t{-9000000000} << ", double " << 2.5 << ", float "
                                 << 0.25f;
  EXPECT_EQ(rank.lines, 1) << "sent when the statement ends";
  EXPECT_EQ(rank.sent, "int -7, unsigned 7, int64 -9000000000, double 2.5, float 0.25");

  const int value = 0;
  line_buffer pointer_text;
  pointer_text.append(static_cast<const void*>(&value));
  log_line<recording_rank>(rank) << "bool " << true << ", char " << 'c' << ", enum "
                                 << grma::call::barrier << ", pointer " << &value;
  EXPECT_EQ(rank.lines, 2);
  EXPECT_EQ(rank.sent, "bool true, char c, enum " +
                           std::to_string(static_cast<int>(grma::call::barrier)) + ", pointer " +
                           text_of(pointer_text));
}

}  // namespace
