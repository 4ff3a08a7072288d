// Notification matching (papers/000 §2.3, §3.2.4).
//
// A rank's notifications arrive in its ring. Matching looks at them in arrival
// order and succeeds when `count` notifications fit (window, source or any,
// tag or any); then exactly those are removed and every other notification
// keeps its place. When fewer match, nothing is removed.
//
// Entries taken from the ring but not matched yet wait in the rank's pending
// list, oldest first. The ring is drained into the list only as far as a query
// needs (on a GPU, up to a warp's turn further), so a rank that holds many
// unmatched notifications leaves the rest in its ring and its producers feel
// back-pressure instead of losing anything.
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
  std::uint64_t word[4];

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
    // barrier in publish_fence) is visible before any of the words.
    fence_release<S>();
    store_relaxed<S>(word[1], w[1]);
    store_relaxed<S>(word[2], w[2]);
    store_relaxed<S>(word[3], w[3]);
    store_relaxed<S>(word[0], w[0]);
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
    // Words 1-3 are loaded first so that all four loads are in flight
    // together (one trip to L2, not two in a row); a stale word shows in its
    // sequence number and the caller polls again.
    const std::uint64_t w1 = load_relaxed<S>(word[1]);
    const std::uint64_t w2 = load_relaxed<S>(word[2]);
    const std::uint64_t w3 = load_relaxed<S>(word[3]);
    const std::uint64_t w0 = load_acquire<S>(word[0]);
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

// Adds the newest notification (purge_notifications), closing the holes
// first where the list ends at its capacity. The caller checks size < capacity.
GRMA_INLINE void pending_append(pending_list& p, const notification& n) {
  if (p.end == p.capacity) pending_close_holes(p);
  p.items[p.end++] = n;
  ++p.size;
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

// The lanes that match together: on a GPU a warp of the rank (its first,
// or the one calling through one_warp), on the CPU the rank's one thread.
// All of them call match_notifications with the same arguments and get the
// same result; each looks at its own entries of the list or its ring, and
// a ballot gives every lane the whole picture. A platform provides:
//   thread_index()      this lane, 0 .. match_lanes() - 1
//   match_lanes()       how many lanes (1 .. 32)
//   lanes_ballot(p)     bit i set where lane i's p holds
//   lanes_sync()        the lanes meet; shared-memory writes before it are
//                       visible to the others after it
struct one_lane {
  GRMA_INLINE static int thread_index() { return 0; }
  GRMA_INLINE static int match_lanes() { return 1; }
  GRMA_INLINE static std::uint32_t lanes_ballot(bool p) { return p ? 1u : 0u; }
  GRMA_INLINE static void lanes_sync() {}
};

GRMA_INLINE int lowest_bit(std::uint32_t m) {  // m != 0
#if GRMA_DEVICE_CODE
  return __ffs(int(m)) - 1;
#else
  return __builtin_ctz(m);
#endif
}
GRMA_INLINE int highest_bit(std::uint32_t m) {  // m != 0
#if GRMA_DEVICE_CODE
  return 31 - __clz(int(m));
#else
  return 31 - __builtin_clz(m);
#endif
}
GRMA_INLINE int bit_count(std::uint32_t m) {
#if GRMA_DEVICE_CODE
  return __popc(m);
#else
  return __builtin_popcount(m);
#endif
}
// The `k` lowest set bits of m (all of them when it has fewer).
GRMA_INLINE std::uint32_t lowest_bits(std::uint32_t m, int k) {
  std::uint32_t kept = 0;
  for (; m != 0 && k > 0; --k) {
    kept |= m & (~m + 1u);
    m &= m - 1u;
  }
  return kept;
}

// Counts matches of `q` among items[from, end), a lane per entry, until
// `found` reaches q.count; `oldest` gets the first one's index where `found`
// was 0. Holes never match (q.window is a real window's key).
template <class L>
GRMA_INLINE void count_matches(const notification* items, std::uint32_t from, std::uint32_t end,
                               const match_query& q, std::int32_t& found, std::uint32_t& oldest) {
  const std::uint32_t lanes = std::uint32_t(L::match_lanes()),
                      lane = std::uint32_t(L::thread_index());
  for (std::uint32_t at = from; at < end && found < q.count; at += lanes) {
    const std::uint32_t m = L::lanes_ballot(at + lane < end && matches(items[at + lane], q));
    if (m == 0) continue;
    if (found == 0) oldest = at + std::uint32_t(lowest_bit(m));
    found += bit_count(m);
  }
}

// Tries to match `q`. On success removes the q.count oldest matches and
// returns true; otherwise leaves the notifications as they were (though some
// may have moved from the rings into the pending list, in order) and returns
// false. Called by all lanes of L together (one_lane: the caller alone).
//
// The rings are drained a turn of up to a lane per entry at a time, round
// robin, only until enough match: with one lane, exactly as far as the
// query needs; with a warp, at most a turn further, which changes no
// match (every entry taken is older than every entry left in its ring, and
// the list keeps arrival order) and lets the next queries find their
// entries in shared memory. `readers` are the consumer's private heads in
// its rings; every slot taken is handed back to its producers before the
// function returns. `last`, where not null, receives (in every lane) the
// newest of the removed matches (the match, for a count of 1).
//
// The list's bounds stay in registers during the call (each read of shared
// memory is a step of the call's latency), and lane 0 writes them back.
template <scope S, class L = one_lane>
GRMA_INLINE bool match_notifications(pending_list& pending, const inbox_rings& in,
                                     ring_reader* readers, const match_query& q,
                                     notification* last = nullptr) {
  const std::uint32_t lanes = std::uint32_t(L::match_lanes()),
                      lane = std::uint32_t(L::thread_index());
  notification* const items = pending.items;
  const std::uint32_t capacity = pending.capacity;
  std::uint32_t first = pending.first, end = pending.end, size = pending.size;
  std::int32_t found = 0;
  std::uint32_t oldest = end;  // the oldest match's place: the removal starts there
  count_matches<L>(items, first, end, q, found, oldest);
  bool took_any = false;
  for (bool took = true; took && found < q.count;) {
    took = false;
    for (int r = 0; r < in.count && found < q.count && size < capacity; ++r) {
      ring_reader& reader = readers[r];
      const std::uint64_t head = reader.head;
      const std::uint32_t turn = capacity - size < lanes ? capacity - size : lanes;
      // Each lane loads its own slot (acquire, ring_slot::load): the loads are
      // in flight together. An entry counts only where every one before it
      // is there too: the ring is taken in ticket order.
      notification n{};
      const bool there =
          lane < turn && in.ring(r).slots()[(head + lane) & reader.mask].template load<S>(
                             static_cast<std::uint32_t>(head + lane + 1), n);
      const std::uint32_t present = L::lanes_ballot(there);
      const std::uint32_t k = ~present == 0 ? 32u : std::uint32_t(lowest_bit(~present));
      if (k == 0) continue;
      took = took_any = true;
      if (end + k > capacity) {
        // Room, but not at the end: close the holes (entries move, so the
        // removal looks from the start).
        L::lanes_sync();  // every lane has read the list's bounds
        if (lane == 0) {
          pending.end = end;
          pending_close_holes(pending);
        }
        L::lanes_sync();
        first = 0;
        end = size;
        oldest = 0;
      }
      if (lane < k) items[end + lane] = n;
      const std::uint32_t m = L::lanes_ballot(lane < k && matches(n, q));
      if (m != 0) {
        if (found == 0) oldest = end + std::uint32_t(lowest_bit(m));
        found += bit_count(m);
      }
      end += k;
      size += k;
      L::lanes_sync();  // every lane has read the reader's head
      if (lane == 0) reader.head = head + k;
      L::lanes_sync();
    }
  }
  if (lane == 0 && took_any) release_rings<S>(in, readers);
  if (found < q.count) {
    L::lanes_sync();  // every lane has read the list's bounds
    if (lane == 0) {
      pending.end = end;
      pending.size = size;
    }
    L::lanes_sync();
    return false;
  }

  // Take out the q.count oldest matches, leaving holes; the rest keep their
  // places.
  if (q.count == 1) {
    if (last != nullptr) *last = items[oldest];
    L::lanes_sync();  // read before it becomes a hole
    if (lane == 0) items[oldest].window = no_window;
  } else {
    std::int32_t removed = 0;
    for (std::uint32_t at = oldest; removed < q.count; at += lanes) {
      const std::uint32_t m = lowest_bits(
          L::lanes_ballot(at + lane < end && matches(items[at + lane], q)), q.count - removed);
      if (m == 0) continue;
      removed += bit_count(m);
      if (removed == q.count && last != nullptr) *last = items[at + std::uint32_t(highest_bit(m))];
      L::lanes_sync();  // read before it becomes a hole
      if ((m >> lane) & 1u) items[at + lane].window = no_window;
    }
  }
  L::lanes_sync();
  size -= std::uint32_t(q.count);
  if (size == 0) {
    first = end = 0;
  } else {
    // The list's ends move past the holes there, a lane per entry (an entry
    // is held between them: size > 0).
    for (std::uint32_t m = 0; m == 0; first += m == 0 ? lanes : std::uint32_t(lowest_bit(m)))
      m = L::lanes_ballot(lane < end - first && items[first + lane].window != no_window);
    for (std::uint32_t m = 0; m == 0; end -= m == 0 ? lanes : std::uint32_t(lowest_bit(m)))
      m = L::lanes_ballot(lane < end - first && items[end - 1 - lane].window != no_window);
  }
  if (lane == 0) {
    pending.first = first;
    pending.end = end;
    pending.size = size;
  }
  L::lanes_sync();
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
