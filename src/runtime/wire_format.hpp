// The network engines' headers on the wire: an encoding of their own, not
// the ranks' command struct (remote_command, which the rings carry and
// which may change with the ranks' needs). A header is 64 bytes of fields,
// then its inline bytes (a small put's data, a get's answer) padded to 8:
// an 8-byte notified put is 72 bytes on the wire, a beat or an
// acknowledgement 64, where the struct is 120. A message of headers is
// headers end to end. Both ends are engines of one job, built alike, on
// hosts of one byte order.
#pragma once

#include <cstddef>
#include <vector>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

inline constexpr std::size_t wire_fields_bytes = 64;
// The longest header: fields and the most inline bytes.
inline constexpr std::size_t wire_header_most = wire_fields_bytes + remote_inline_bytes;

// The bytes `c` takes on the wire.
std::size_t wire_bytes(const remote_command& c);

// Appends `c`'s encoding to `out`.
void wire_append(std::vector<unsigned char>& out, const remote_command& c);

// Decodes the header that starts at `at`, with `left` bytes of the message
// from there: its length, or 0 where the bytes are no header (too few, or
// more inline bytes than a header holds). `data` past the inline bytes is 0.
std::size_t wire_read(const unsigned char* at, std::size_t left, remote_command& c);

}  // namespace grma::detail
