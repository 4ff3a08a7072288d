// The network engines' headers on the wire: an encoding of their own, not
// the ranks' command struct (remote_command, which the rings carry and
// which may change with the ranks' needs). A header is 64 bytes of fields,
// then its inline bytes (a put's data, a get's answer) padded to 8: an
// 8-byte notified put is 72 bytes on the wire, a beat or an acknowledgement
// 64, where the struct is 120. A message of headers is headers end to end.
// Both ends are engines of one job, built alike, on hosts of one byte order.
//
// A header's inline bytes may be more than a command holds (its `data`):
// up to wire_carried_most, read from and handed out as a pointer of their
// own (a put's bytes from its payload slot, a get's answer). Bytes that
// travel in their header cost no message of their own on the data channel
// (a message is a send and a receive to complete at each end).
#pragma once

#include <cstddef>
#include <vector>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

inline constexpr std::size_t wire_fields_bytes = 64;
// The longest header: fields and the most inline bytes.
inline constexpr std::size_t wire_header_most = wire_fields_bytes + remote_inline_bytes;
// Headers for one process travel together, up to this many bytes in a
// message (under Open MPI's shared-memory eager limit of 4 KiB, so a batch
// costs the receiver one copy and no handshake): 32 of the longest headers
// a command fills, 60 of the shortest.
inline constexpr std::size_t batch_bytes = 32 * wire_header_most;
// The most inline bytes a header carries: a message's room past its fields.
inline constexpr std::size_t wire_carried_most = batch_bytes - wire_fields_bytes;
static_assert(wire_carried_most % 8 == 0 && wire_carried_most < 0xffff,
              "a header's inline count is 16 bits, and no padding takes a header past a batch");

// Appends `c`'s encoding to `out`, its inline bytes from `bytes` (where
// they are more than c.data holds: at most wire_carried_most) or c.data.
void wire_append(std::vector<unsigned char>& out, const remote_command& c,
                 const unsigned char* bytes = nullptr);

// Decodes the header that starts at `at`, with `left` bytes of the message
// from there: its length, or 0 where the bytes are no header (too few, or
// more inline bytes than a header carries). `bytes`: where its inline bytes
// are in the message; c.data has them too where they fit (the rest is 0).
std::size_t wire_read(const unsigned char* at, std::size_t left, remote_command& c,
                      const unsigned char*& bytes);

}  // namespace grma::detail
