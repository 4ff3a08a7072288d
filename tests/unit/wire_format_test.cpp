// The engines' header encoding: every field and inline byte comes back as
// sent (more than a command holds too, handed out where they are in the
// message), headers of a batch decode end to end at their own lengths, and
// bytes that are no header (cut short, too many inline bytes) decode to
// nothing.
#include "runtime/wire_format.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/engine_context.hpp"

namespace {

using grma::detail::remote_command;
using grma::detail::remote_op;

remote_command sample(remote_op op, std::uint16_t inline_bytes, std::uint64_t seed) {
  remote_command c{};
  c.op = op;
  c.signal_op = std::uint8_t(seed + 1);
  c.inline_bytes = inline_bytes;
  c.origin = std::int32_t(seed * 3 + 7);
  c.window = std::uint32_t(seed * 5 + 11);
  c.target = -std::int32_t(seed + 2);
  c.tag = std::int32_t(seed * 13);
  c.flags = std::uint32_t(seed << 8 | 1);
  c.offset = seed * 0x1000000001ull;
  c.bytes = seed + 8;
  c.address = 0xfedcba9876543210ull ^ seed;
  c.signal_offset = seed * 17;
  c.signal_value = ~seed;
  for (std::uint16_t i = 0; i < inline_bytes; ++i)
    c.data[i] = static_cast<unsigned char>(seed * 31 + i);
  return c;
}

// The bytes `c` takes on the wire (its inline bytes in c.data).
std::size_t encoded_bytes(const remote_command& c) {
  std::vector<unsigned char> message;
  grma::detail::wire_append(message, c);
  return message.size();
}

void expect_same(const remote_command& a, const remote_command& b) {
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.signal_op, b.signal_op);
  EXPECT_EQ(a.inline_bytes, b.inline_bytes);
  EXPECT_EQ(a.origin, b.origin);
  EXPECT_EQ(a.window, b.window);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.tag, b.tag);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.address, b.address);
  EXPECT_EQ(a.signal_offset, b.signal_offset);
  EXPECT_EQ(a.signal_value, b.signal_value);
  EXPECT_EQ(0, std::memcmp(a.data, b.data, a.inline_bytes));
}

TEST(WireFormat, HeadersTakeTheirFieldsAndInlineBytesPadded) {
  EXPECT_EQ(encoded_bytes(sample(grma::detail::wire_beat, 0, 1)), 64u);
  EXPECT_EQ(encoded_bytes(sample(remote_op::put_notify, 8, 1)), 72u);
  EXPECT_EQ(encoded_bytes(sample(remote_op::put, 9, 1)), 80u);
  EXPECT_EQ(encoded_bytes(sample(remote_op::put, grma::detail::remote_inline_bytes, 1)),
            grma::detail::wire_header_most);
}

TEST(WireFormat, ABatchDecodesEndToEndAsSent) {
  std::vector<remote_command> sent;
  for (std::uint16_t inline_bytes : {0, 1, 8, 13, 56, 0, 32})
    sent.push_back(sample(inline_bytes == 0 ? remote_op::get : remote_op::put_notify, inline_bytes,
                          sent.size()));
  std::vector<unsigned char> message;
  for (const remote_command& c : sent) grma::detail::wire_append(message, c);
  std::size_t at = 0;
  for (const remote_command& c : sent) {
    remote_command got;
    const unsigned char* bytes = nullptr;
    const std::size_t n =
        grma::detail::wire_read(message.data() + at, message.size() - at, got, bytes);
    ASSERT_EQ(n, encoded_bytes(c));
    expect_same(c, got);
    EXPECT_EQ(bytes, message.data() + at + 64);
    at += n;
  }
  EXPECT_EQ(at, message.size());
}

// A put's bytes beyond what a command holds travel in its header, between
// others, up to the most a batch has room for.
TEST(WireFormat, BytesBeyondACommandTravelInTheirHeader) {
  using grma::detail::wire_carried_most;
  std::vector<unsigned char> large(wire_carried_most);
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<unsigned char>(i * 7 + 1);
  std::vector<unsigned char> message;
  const remote_command before = sample(remote_op::put_notify, 8, 1);
  grma::detail::wire_append(message, before);
  for (const std::size_t n : {std::size_t(57), std::size_t(100), wire_carried_most}) {
    remote_command c = sample(remote_op::put, 0, n);
    c.inline_bytes = std::uint16_t(n);
    c.bytes = n;
    const std::size_t at = message.size();
    grma::detail::wire_append(message, c, large.data());
    EXPECT_EQ(message.size() - at, 64 + (n + 7) / 8 * 8) << n << " bytes";
    remote_command got;
    const unsigned char* bytes = nullptr;
    ASSERT_EQ(grma::detail::wire_read(message.data() + at, message.size() - at, got, bytes),
              message.size() - at);
    EXPECT_EQ(got.inline_bytes, n);
    EXPECT_EQ(got.bytes, n);
    EXPECT_EQ(got.origin, c.origin);
    EXPECT_EQ(bytes, message.data() + at + 64);
    EXPECT_EQ(0, std::memcmp(bytes, large.data(), n)) << n << " bytes";
    for (unsigned char b : got.data) EXPECT_EQ(b, 0) << "c.data holds no part of them";
  }
  EXPECT_EQ(64 + wire_carried_most, grma::detail::batch_bytes)
      << "the longest header fills a batch";
  remote_command got;
  const unsigned char* bytes = nullptr;
  EXPECT_EQ(grma::detail::wire_read(message.data(), message.size(), got, bytes), 72u);
  expect_same(before, got);
}

// The layout itself, which a round trip cannot pin: both ends may be built
// from different sources only if it stays.
TEST(WireFormat, FieldsSitAtTheirPlaces) {
  std::vector<unsigned char> message;
  const remote_command c = sample(remote_op::put_notify, 3, 5);
  grma::detail::wire_append(message, c);
  ASSERT_EQ(message.size(), 72u);
  const auto at = [&](std::size_t offset, auto value) {
    decltype(value) got;
    std::memcpy(&got, message.data() + offset, sizeof got);
    EXPECT_EQ(got, value) << "at byte " << offset;
  };
  at(0, c.op);
  at(1, c.signal_op);
  at(2, c.inline_bytes);
  at(4, c.flags);
  at(8, c.origin);
  at(12, c.window);
  at(16, c.target);
  at(20, c.tag);
  at(24, c.offset);
  at(32, c.bytes);
  at(40, c.address);
  at(48, c.signal_offset);
  at(56, c.signal_value);
  EXPECT_EQ(0, std::memcmp(message.data() + 64, c.data, 3));
  for (std::size_t i = 67; i < 72; ++i) EXPECT_EQ(message[i], 0) << "padding at byte " << i;
}

// A command whose inline count is beyond what it holds, with no bytes of
// its own (corrupted on its way from the rank), goes out without a byte
// past its data, and its receiver refuses it, also where the count is one
// a header may carry (the receiver would take the next headers for its
// bytes).
TEST(WireFormat, AnOversizedInlineCountIsSentCutAndRefused) {
  for (const std::uint16_t count : {std::uint16_t(57), std::uint16_t(1000), std::uint16_t(4000)}) {
    remote_command c = sample(remote_op::put, 0, 9);
    c.inline_bytes = count;
    std::vector<unsigned char> message;
    grma::detail::wire_append(message, c);
    EXPECT_EQ(message.size(), grma::detail::wire_header_most);
    for (int more = 0; more < 40; ++more)
      grma::detail::wire_append(message, sample(remote_op::put, 0, 2));
    remote_command got;
    const unsigned char* bytes = nullptr;
    EXPECT_EQ(grma::detail::wire_read(message.data(), message.size(), got, bytes), 0u) << count;
  }
}

TEST(WireFormat, BytesThatAreNoHeaderDecodeToNothing) {
  std::vector<unsigned char> message;
  grma::detail::wire_append(message, sample(remote_op::put, 40, 3));
  remote_command got;
  const unsigned char* bytes = nullptr;
  EXPECT_EQ(grma::detail::wire_read(message.data(), message.size() - 1, got, bytes),
            0u);                                                           // cut in its data
  EXPECT_EQ(grma::detail::wire_read(message.data(), 63, got, bytes), 0u);  // cut in its fields
  const std::uint16_t too_many = grma::detail::wire_carried_most + 1;
  std::memcpy(message.data() + 2, &too_many, sizeof too_many);  // the inline count's place
  message.resize(message.size() + grma::detail::batch_bytes, 0);
  EXPECT_EQ(grma::detail::wire_read(message.data(), message.size(), got, bytes), 0u);
}

}  // namespace
