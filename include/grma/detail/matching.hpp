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
// A match leaves a hole where it took an entry; the list closes its holes
// only when it needs the room, so taking one entry out of a long list costs
// no shifting of the others.
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/ring.hpp"

namespace grma::detail {

struct notification {
  std::uint32_t window;  // window slot (low 16 bits) and generation (high 16 bits)
  std::int32_t source;   // origin's rank in the window's communicator
  std::int32_t tag;
  std::uint32_t pad = 0;
  std::uint64_t immediate = 0;  // the put's or get's 64-bit value for the target
};

// Entries of a notification ring: GRMA_QUEUE_CAPACITY is at most this.
inline constexpr std::uint32_t max_queue_capacity = 1u << 16;

// A notification slot: four 64-bit words, each with the low 17 bits of the
// slot's sequence number (its ticket + 1) at the top and 47 bits of the
// entry below: window, source and tag take 32 bits of one word each, the
// immediate is cut into the rest (15 + 15 + 15 + 19 bits). A 64-bit store
// is single-copy atomic, so a consumer that finds the sequence number in
// all four words has the whole entry, in whatever order the stores
// arrived; 17 bits tell the expected entry from the slot's last one, a
// capacity (at most 2^16) of tickets earlier. On the GPU the producer
// therefore needs one release fence before the four stores, not a fence
// per store; host code stores word 0 last with release instead.
template <>
struct ring_slot<notification> {
  static constexpr bool self_validating = true;  // ring_release
  alignas(16) std::uint64_t word[4];             // two 16-byte pairs on a GPU

  static constexpr int sequence_shift = 47;
  static constexpr std::uint64_t piece_mask = (std::uint64_t{1} << 15) - 1;

  GRMA_INLINE static constexpr std::uint64_t stamp(std::uint32_t sequence) {
    return std::uint64_t(sequence & 0x1ffffu) << sequence_shift;
  }
  GRMA_INLINE static constexpr std::uint64_t pack(std::uint32_t sequence, std::uint32_t field,
                                                  std::uint64_t piece) {
    return stamp(sequence) | (std::uint64_t(field) << 15) | (piece & piece_mask);
  }
  GRMA_INLINE static constexpr bool stamped(std::uint64_t w, std::uint32_t sequence) {
    return (w >> sequence_shift) == (sequence & 0x1ffffu);
  }

  // The four words of entry `n` with sequence number `sequence` (a network
  // engine writes them in one copy).
  GRMA_INLINE static void words_of(std::uint32_t sequence, const notification& n,
                                   std::uint64_t (&w)[4]) {
    w[0] = pack(sequence, n.window, n.immediate);
    w[1] = pack(sequence, std::uint32_t(n.source), n.immediate >> 15);
    w[2] = pack(sequence, std::uint32_t(n.tag), n.immediate >> 30);
    w[3] = stamp(sequence) | (n.immediate >> 45);
  }

  template <scope S>
  GRMA_INLINE void store(std::uint32_t sequence, const notification& n) {
    std::uint64_t w[4];
    words_of(sequence, n, w);
#if GRMA_DEVICE_CODE
    // Release fence: the put's data (written by the whole block before the
    // barrier in publish_fence) is visible before any of the words, stored
    // as two 16-byte pairs (store_relaxed_pair).
    fence_release<S>();
    store_relaxed_pair<S>(word + 2, w[2], w[3]);
    store_relaxed_pair<S>(word, w[0], w[1]);
#else
    store_relaxed<S>(word[1], w[1]);
    store_relaxed<S>(word[2], w[2]);
    store_relaxed<S>(word[3], w[3]);
    store_release<S>(word[0], w[0]);  // the data and words 1-3 are visible before word 0
#endif
  }

  template <scope S>
  GRMA_INLINE bool load(std::uint32_t sequence, notification& out) {
    // Acquire on word 0 pairs with the producer's release (fence or store).
#if GRMA_DEVICE_CODE
    // Words 2-3 are loaded first so that both pairs are in flight together
    // (one trip to L2, not two in a row: an acquire holds back the loads
    // after it); a stale word shows in its sequence number and the caller
    // polls again.
    std::uint64_t w0, w1, w2, w3;
    load_relaxed_pair<S>(word + 2, w2, w3);
    load_acquire_pair<S>(word, w0, w1);
    if (!stamped(w0, sequence)) return false;
#else
    // The host producer stores word 0 last with release: after it, words 1
    // to 3 are current.
    const std::uint64_t w0 = load_acquire<S>(word[0]);
    if (!stamped(w0, sequence)) return false;
    const std::uint64_t w1 = load_relaxed<S>(word[1]);
    const std::uint64_t w2 = load_relaxed<S>(word[2]);
    const std::uint64_t w3 = load_relaxed<S>(word[3]);
#endif
    if (!stamped(w1, sequence) || !stamped(w2, sequence) || !stamped(w3, sequence)) return false;
    const auto field = [](std::uint64_t w) { return std::uint32_t(w >> 15); };
    out = notification{field(w0), std::int32_t(field(w1)), std::int32_t(field(w2)), 0,
                       (w0 & piece_mask) | ((w1 & piece_mask) << 15) | ((w2 & piece_mask) << 30) |
                           ((w3 & ((std::uint64_t{1} << 19) - 1)) << 45)};
    return true;
  }
};
static_assert(sizeof(ring_slot<notification>) == 32, "notification slots are 32 bytes");

using notification_ring = ring<notification>;

GRMA_INLINE constexpr std::uint32_t window_key(std::uint32_t slot, std::uint32_t generation) {
  return (generation << 16) | (slot & 0xffffu);
}

// A window key no window has (generations start at 1): marks a hole in the
// pending list, which no query matches.
inline constexpr std::uint32_t no_window = 0;

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
// `capacity` entries owned by the same rank; items[first, end) hold the
// `size` notifications and holes (window no_window) between them.
struct pending_list {
  std::uint32_t size;
  std::uint32_t capacity;
  notification* items;
  std::uint32_t first;
  std::uint32_t end;
};

// Moves the held notifications to items[0, size), in order.
GRMA_INLINE void pending_close_holes(pending_list& p) {
  std::uint32_t kept = 0;
  for (std::uint32_t i = p.first; i < p.end; ++i)
    if (p.items[i].window != no_window) p.items[kept++] = p.items[i];
  p.first = 0;
  p.end = kept;
}

// Adds the newest notification; true when that closed the holes first
// (entries moved). The caller checks size < capacity.
GRMA_INLINE bool pending_append(pending_list& p, const notification& n) {
  const bool close = p.end == p.capacity;
  if (close) pending_close_holes(p);
  p.items[p.end++] = n;
  ++p.size;
  return close;
}

// Takes out the notification at index i (in [first, end)), leaving a hole.
GRMA_INLINE void pending_remove(pending_list& p, std::uint32_t i) {
  p.items[i].window = no_window;
  if (--p.size == 0) {
    p.first = p.end = 0;
    return;
  }
  while (p.items[p.first].window == no_window) ++p.first;
  while (p.items[p.end - 1].window == no_window) --p.end;
}

// Calls f(n) for each held notification, oldest first, until f returns false.
template <class F>
GRMA_INLINE void pending_for_each(const pending_list& p, F&& f) {
  for (std::uint32_t i = p.first; i < p.end; ++i)
    if (p.items[i].window != no_window && !f(p.items[i])) return;
}

// A rank's rings, one per device of the job (each written by that device's
// ranks), consecutive in memory. Arrival order across rings is the order the
// consumer takes entries from them; within a ring it is ticket order.
struct inbox_rings {
  unsigned char* first;
  std::uint64_t stride;
  int count;
  GRMA_INLINE notification_ring& ring(int i) const {
    return *reinterpret_cast<notification_ring*>(first + stride * std::uint64_t(i));
  }
};

// Hands every slot taken so far back to its producers (ring_release does
// nothing for a ring whose head has not moved). Called at the end of every
// call that takes entries, matched or not: a taken slot is never held while
// the rank does anything else, so a rank blocked anywhere (its own put to a
// full ring, a barrier, a signal wait) holds no slot its senders wait for.
template <scope S>
GRMA_INLINE void release_rings(const inbox_rings& in, ring_reader* readers) {
  for (int i = 0; i < in.count; ++i) ring_release<S>(in.ring(i), readers[i]);
}

// Tries to match `q`. On success removes the q.count oldest matches and
// returns true; otherwise leaves the notifications as they were (though some
// may have moved from the rings into the pending list, in order) and returns
// false. A query never matches a hole (q.window is a real window's key).
//
// `readers` are the consumer's private heads in its rings; every slot taken
// is handed back to its producers before the function returns.
// `last`, where not null, receives the newest of the removed matches (the
// match, for a count of 1).
template <scope S>
GRMA_INLINE bool match_notifications(pending_list& pending, const inbox_rings& in,
                                     ring_reader* readers, const match_query& q,
                                     notification* last = nullptr) {
  // Fast path: nothing held back and the next arrival is the one wanted.
  if (pending.size == 0 && q.count == 1) {
    for (int i = 0; i < in.count; ++i) {
      notification n;
      if (!ring_try_pop<S>(in.ring(i), readers[i], n)) continue;
      if (matches(n, q)) {
        ring_release<S>(in.ring(i), readers[i]);
        if (last != nullptr) *last = n;
        return true;
      }
      pending_append(pending, n);  // not this one: the general path goes on from here
      break;
    }
    if (pending.size == 0) return false;  // no ring had an entry: none to hand back
  }
  // The oldest match's place: the removal below starts there.
  std::int32_t found = 0;
  std::uint32_t oldest = pending.end;
  for (std::uint32_t i = pending.first; i < pending.end && found < q.count; ++i)
    if (matches(pending.items[i], q) && found++ == 0) oldest = i;
  // Take arrivals round robin over the rings until enough match, the list is
  // full or the rings are empty.
  for (bool took = true; took && found < q.count;) {
    took = false;
    for (int i = 0; i < in.count && found < q.count && pending.size < pending.capacity; ++i) {
      notification n;
      if (!ring_try_pop<S>(in.ring(i), readers[i], n)) continue;
      took = true;
      // Appending may close the holes, which moves the entries: the removal
      // then looks from the start.
      if (pending_append(pending, n)) oldest = pending.first;
      if (matches(n, q) && found++ == 0) oldest = pending.end - 1;
    }
  }
  release_rings<S>(in, readers);
  if (found < q.count) return false;

  // Take out the q.count oldest matches; the rest keep their places.
  for (std::int32_t removed = 0; removed < q.count; ++oldest)
    if (matches(pending.items[oldest], q)) {
      if (last != nullptr) *last = pending.items[oldest];
      pending_remove(pending, oldest);
      ++removed;
    }
  return true;
}

// Drops every notification of window `key` (slot and generation) that the
// rank holds: from its pending list, and from its rings as far as the list
// has room for the others' entries on the way. Used when the window is freed,
// so that notifications nobody can match any more do not fill the pending
// list.
template <scope S>
GRMA_INLINE void purge_notifications(pending_list& pending, const inbox_rings& in,
                                     ring_reader* readers, std::uint32_t key) {
  for (std::uint32_t i = pending.first; i < pending.end; ++i)
    if (pending.items[i].window == key) pending.items[i].window = no_window;
  pending_close_holes(pending);
  pending.size = pending.end;
  for (int r = 0; r < in.count; ++r) {
    notification_ring& ring = in.ring(r);
    ring_reader& reader = readers[r];
    notification n;
    while (ring.slots()[reader.head & reader.mask].template load<S>(
        static_cast<std::uint32_t>(reader.head + 1), n)) {
      if (n.window != key) {
        if (pending.size == pending.capacity) break;  // no room: it stays in the ring
        pending_append(pending, n);
      }
      ++reader.head;
    }
    ring_release<S>(ring, reader);
  }
}

}  // namespace grma::detail
