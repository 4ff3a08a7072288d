// Notification matching (papers/000 §2.3, §3.2.4).
//
// A rank's notifications arrive in its ring. Matching looks at them in arrival
// order and succeeds when `count` notifications fit (window, source or any,
// tag or any); then exactly those are removed and every other notification
// keeps its place. When fewer match, nothing is removed.
//
// Entries taken from the ring but not matched yet wait in the rank's pending
// list, oldest first. The ring is drained into the list only as far as a query
// needs, so a rank that holds many unmatched notifications leaves the rest in
// its ring and its producers feel back-pressure instead of losing anything.
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/ring.hpp"

namespace grma::detail {

struct notification {
  std::uint32_t window;  // window slot (low 16 bits) and generation (high 16 bits)
  std::int32_t source;   // origin's rank in the window's communicator
  std::int32_t tag;
};
using notification_ring = ring<notification>;
static_assert(sizeof(ring_slot<notification>) == 16, "notification slots are 16 bytes");

GRMA_INLINE constexpr std::uint32_t window_key(std::uint32_t slot, std::uint32_t generation) {
  return (generation << 16) | (slot & 0xffffu);
}

struct match_query {
  std::uint32_t window;  // window_key
  std::int32_t source;   // or any_source (-1)
  std::int32_t tag;      // or any_tag (-1)
  std::int32_t count;    // >= 1
};

GRMA_INLINE constexpr bool matches(const notification& n, const match_query& q) {
  return n.window == q.window && (q.source < 0 || n.source == q.source) &&
         (q.tag < 0 || n.tag == q.tag);
}

// Unmatched notifications of one rank, oldest first. `items` points at
// `capacity` entries owned by the same rank.
struct pending_list {
  std::uint32_t size;
  std::uint32_t capacity;
  notification* items;
};

// Tries to match `q`. On success removes the q.count oldest matches and
// returns true; otherwise leaves the notifications as they were (though some
// may have moved from the ring into the pending list, in order) and returns
// false.
template <scope S>
GRMA_INLINE bool match_notifications(pending_list& pending, notification_ring& ring,
                                     const match_query& q) {
  std::int32_t found = 0;
  for (std::uint32_t i = 0; i < pending.size && found < q.count; ++i)
    if (matches(pending.items[i], q)) ++found;
  while (found < q.count && pending.size < pending.capacity) {
    notification n;
    if (!ring_try_pop<S>(ring, n)) break;
    pending.items[pending.size++] = n;
    if (matches(n, q)) ++found;
  }
  if (found < q.count) return false;

  // Stable compaction: drop the first q.count matches, keep the rest in order.
  std::uint32_t kept = 0;
  std::int32_t removed = 0;
  for (std::uint32_t i = 0; i < pending.size; ++i) {
    if (removed < q.count && matches(pending.items[i], q)) {
      ++removed;
      continue;
    }
    pending.items[kept++] = pending.items[i];
  }
  pending.size = kept;
  return true;
}

}  // namespace grma::detail
