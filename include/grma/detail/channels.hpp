// Channels: notification rings that one producer owns (docs/design.md,
// "Channels").
//
// Each rank has, beside its rings (one per device of the job, whose
// producers take a ticket with an atomic add: about 1 800 cycles on a GPU,
// most of it in a notification's path), channel_count channels. A channel
// is a ring with one producer, a rank of the target's node that holds its
// lease for the job: it numbers its entries itself, so a notification
// there takes no ticket. Rank p's channel at a target is number
// p % channel_count; the first rank of the node to notify the target with
// that number takes the lease (one fetch_or on the table's `leased`, once)
// and the others notify it through their device's ring as before. So each
// (source, target) pair uses one path for the whole job, and its
// notifications keep their order.
//
// A channel holds channel_capacity_limit entries at most (fewer where
// GRMA_QUEUE_CAPACITY is smaller). When its owner finds it full, the entry
// spills: it goes to the owner's device ring with a ticket, marked with its
// channel, and the owner keeps to the ring until the target has taken every
// entry it spilled (the ring's consumed count passes the last); the target
// takes a marked entry only when the channel holds nothing before it. The
// capacity a rank's senders share (GRMA_QUEUE_CAPACITY, the rings') is
// therefore still theirs whatever the channels hold.
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/heap.hpp"
#include "grma/detail/matching.hpp"

namespace grma::detail {

inline constexpr int channel_count = 32;  // at each rank: the bits of channel_table::leased
inline constexpr std::uint32_t channel_capacity_limit = 32;

// What a channel's owner keeps of it at the target while its lease cache
// holds other targets: only the owner reads or writes it.
struct channel_state {
  std::uint64_t next;       // entries the owner has put in the channel (its next ticket)
  std::uint64_t spill_end;  // while spilling: the ring ticket after its last spilled entry; else 0
};

// The head of a rank's channels, followed by the channels themselves.
struct channel_table {
  std::uint32_t leased;                // bit k: channel k has an owner (set once, by it)
  std::uint32_t owner[channel_count];  // world rank + 1 of channel k's owner; 0: none yet
  channel_state state[channel_count];
};

GRMA_INLINE constexpr std::uint32_t channel_capacity_for(std::uint32_t queue_capacity) {
  return queue_capacity < channel_capacity_limit ? queue_capacity : channel_capacity_limit;
}
// Bytes from one channel to the next (host: the arena's layout).
constexpr std::uint64_t channel_stride_for(std::uint32_t capacity) {
  return align_up(notification_ring::bytes_for(capacity), heap_alignment);
}
// A rank's channel table and channels.
constexpr std::uint64_t channel_block_for(std::uint32_t capacity) {
  return align_up(sizeof(channel_table), heap_alignment) +
         std::uint64_t(channel_count) * channel_stride_for(capacity);
}
// The first channel of the block that starts with `table`.
GRMA_INLINE unsigned char* first_channel(channel_table& table) {
  return reinterpret_cast<unsigned char*>(&table) + align_up(sizeof(channel_table), heap_alignment);
}

// A producer's lease on its channel at one target, or the knowledge that it
// has none there (rank_local keeps lease_cache_size of them).
struct channel_lease {
  std::int32_t target;      // world rank; -1: an empty entry
  std::int32_t channel;     // this rank's channel at the target; -1: the target's ring
  std::uint64_t next;       // channel_state::next
  std::uint64_t known;      // the channel's consumed count as last read (its credit)
  std::uint64_t spill_end;  // channel_state::spill_end
};
inline constexpr int lease_cache_size = 8;

}  // namespace grma::detail
