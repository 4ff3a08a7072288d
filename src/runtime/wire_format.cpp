#include "wire_format.hpp"

#include <cstdint>
#include <cstring>

namespace grma::detail {
namespace {

// Where each field is in the 64 bytes (naturally aligned within them).
struct field_at {
  static constexpr std::size_t op = 0;              // 1
  static constexpr std::size_t signal_op = 1;       // 1
  static constexpr std::size_t inline_bytes = 2;    // 2
  static constexpr std::size_t flags = 4;           // 4
  static constexpr std::size_t origin = 8;          // 4
  static constexpr std::size_t window = 12;         // 4
  static constexpr std::size_t target = 16;         // 4
  static constexpr std::size_t tag = 20;            // 4
  static constexpr std::size_t offset = 24;         // 8
  static constexpr std::size_t bytes = 32;          // 8
  static constexpr std::size_t address = 40;        // 8
  static constexpr std::size_t signal_offset = 48;  // 8
  static constexpr std::size_t signal_value = 56;   // 8
};
static_assert(field_at::signal_value + 8 == wire_fields_bytes);

std::size_t padded(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

// A count no header carries: what a corrupted count (beyond a command's
// `data` with no bytes of its own, or beyond what a header carries) is
// sent as, so that the receiver refuses the batch while no byte past what
// the sender holds is read.
constexpr std::uint16_t refused_count = 0xffff;

// The inline count a header is sent with, and where its bytes are.
std::uint16_t sent_count(const remote_command& c, const unsigned char*& bytes) {
  const std::size_t room = bytes != nullptr ? wire_carried_most : remote_inline_bytes;
  if (bytes == nullptr) bytes = c.data;
  return c.inline_bytes <= room ? c.inline_bytes : refused_count;
}

std::size_t carried(std::uint16_t count) {
  return count == refused_count ? remote_inline_bytes : count;
}

template <class T>
void put_field(unsigned char* header, std::size_t at, T value) {
  std::memcpy(header + at, &value, sizeof value);
}

template <class T>
T field(const unsigned char* header, std::size_t at) {
  T value;
  std::memcpy(&value, header + at, sizeof value);
  return value;
}

}  // namespace

void wire_append(std::vector<unsigned char>& out, const remote_command& c,
                 const unsigned char* bytes) {
  const std::uint16_t count = sent_count(c, bytes);
  const std::size_t start = out.size();
  out.resize(start + wire_fields_bytes + padded(carried(count)), 0);
  unsigned char* h = out.data() + start;
  put_field(h, field_at::op, c.op);
  put_field(h, field_at::signal_op, c.signal_op);
  put_field(h, field_at::inline_bytes, count);
  put_field(h, field_at::flags, c.flags);
  put_field(h, field_at::origin, c.origin);
  put_field(h, field_at::window, c.window);
  put_field(h, field_at::target, c.target);
  put_field(h, field_at::tag, c.tag);
  put_field(h, field_at::offset, c.offset);
  put_field(h, field_at::bytes, c.bytes);
  put_field(h, field_at::address, c.address);
  put_field(h, field_at::signal_offset, c.signal_offset);
  put_field(h, field_at::signal_value, c.signal_value);
  std::memcpy(h + wire_fields_bytes, bytes, carried(count));
}

std::size_t wire_read(const unsigned char* at, std::size_t left, remote_command& c,
                      const unsigned char*& bytes) {
  if (left < wire_fields_bytes) return 0;
  const auto inline_bytes = field<std::uint16_t>(at, field_at::inline_bytes);
  if (inline_bytes > wire_carried_most) return 0;
  const std::size_t length = wire_fields_bytes + padded(inline_bytes);
  if (left < length) return 0;
  c = remote_command{};
  c.op = field<remote_op>(at, field_at::op);
  c.signal_op = field<std::uint8_t>(at, field_at::signal_op);
  c.inline_bytes = inline_bytes;
  c.flags = field<std::uint32_t>(at, field_at::flags);
  c.origin = field<std::int32_t>(at, field_at::origin);
  c.window = field<std::uint32_t>(at, field_at::window);
  c.target = field<std::int32_t>(at, field_at::target);
  c.tag = field<std::int32_t>(at, field_at::tag);
  c.offset = field<std::uint64_t>(at, field_at::offset);
  c.bytes = field<std::uint64_t>(at, field_at::bytes);
  c.address = field<std::uint64_t>(at, field_at::address);
  c.signal_offset = field<std::uint64_t>(at, field_at::signal_offset);
  c.signal_value = field<std::uint64_t>(at, field_at::signal_value);
  bytes = at + wire_fields_bytes;
  if (inline_bytes <= remote_inline_bytes) std::memcpy(c.data, bytes, inline_bytes);
  return length;
}

}  // namespace grma::detail
