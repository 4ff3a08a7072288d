// Notification matching (papers/000 §2.3, §3.2.4).
//
// A rank's notifications arrive in its ring. Matching looks at them in arrival
// order and succeeds when `count` notifications fit (window, source or any,
// tag or any); then exactly those are removed and every other notification
// keeps its place. When fewer match, nothing is removed. A query for some
// (wait_some_notifications) succeeds with one match or more: it removes
// the oldest of those the rank can see, up to `count`, in one call, which
// is how a rank takes many notifications at a cost far below a call each.
//
// Entries taken from the ring but not matched yet wait in the rank's pending
// list, oldest first. The list is bounded, so a rank that holds many
// unmatched notifications leaves the rest in its ring and its producers feel
// back-pressure instead of losing anything. A rank's first warp searches
// the list together, each lane looking at one entry of 32 (lane_group).
// A match leaves a hole where it took an entry; the list closes its holes
// only when it needs the room, so taking one entry out of a long list costs
// no shifting of the others.
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/ring.hpp"
#include "grma/types.hpp"

namespace grma::detail {

struct notification {
  std::uint32_t window;  // window slot (low 16 bits) and generation (high 16 bits)
  std::int32_t source;   // origin's rank in the window's communicator
  std::int32_t tag;
  std::uint32_t carried = 0;    // a value put's place and size (carried_value); 0: none
  std::uint64_t immediate = 0;  // the put's or get's 64-bit value for the target
};

// A value put (put_value_notify) carries its bytes in its notification:
// the immediate holds them, and `carried` says where in the target's range
// they go, which the target's matching call writes (land_carried). So the
// origin needs no fence between data and notification. `carried` fits the
// 28 bits a slot has to spare (ring_slot<notification>): bit 2 says there
// is a value, bits 0-1 its size (1, 2, 4 or 8 bytes, as log2), bits 3-27
// its offset in units of its size (natural alignment).
inline constexpr int carried_bits = 28;
inline constexpr std::uint64_t carried_units = std::uint64_t{1} << (carried_bits - 3);

// The `carried` field of a value of 2^size_log2 bytes at byte `offset`
// (a multiple of the size, below carried_units of it).
GRMA_INLINE constexpr std::uint32_t carried_value(std::uint64_t offset, unsigned size_log2) {
  return std::uint32_t(((offset >> size_log2) << 3) | 4u | size_log2);
}

// Writes a value put's bytes into the matching rank's own range of the
// window, `range` (nothing for another notification). By the thread that
// takes the notification out, before the call's threads meet: they read
// the range after it (papers/000: window data is read once its
// notification is matched).
GRMA_INLINE void land_carried(const notification& n, unsigned char* range) {
  if (n.carried == 0) return;
  const unsigned size_log2 = n.carried & 3u;
  unsigned char* at = range + (std::uint64_t(n.carried >> 3) << size_log2);
  switch (size_log2) {
    case 0: *at = std::uint8_t(n.immediate); break;
    case 1: *reinterpret_cast<std::uint16_t*>(at) = std::uint16_t(n.immediate); break;
    case 2: *reinterpret_cast<std::uint32_t*>(at) = std::uint32_t(n.immediate); break;
    default: *reinterpret_cast<std::uint64_t*>(at) = n.immediate; break;
  }
}

// Entries of a notification ring: GRMA_QUEUE_CAPACITY is at most this.
inline constexpr std::uint32_t max_queue_capacity = 1u << 16;

// A notification slot: four 64-bit words, each with the low 17 bits of the
// slot's sequence number (its ticket + 1) at the top and 47 bits of the
// entry below: window, source and tag take 32 bits of one word each, the
// immediate is cut into the rest (15 + 15 + 15 + 19 bits), and `carried`
// takes word 3's last 28. A 64-bit store
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
    w[3] = stamp(sequence) | (std::uint64_t(n.carried) << 19) | (n.immediate >> 45);
  }

  template <scope S>
  GRMA_INLINE void store(std::uint32_t sequence, const notification& n) {
#if GRMA_DEVICE_CODE
    // Release fence: the put's data (written by the whole block before the
    // barrier in publish_fence) is visible before any of the words.
    fence_release<S>();
#endif
    store_unordered<S>(sequence, n);
  }

  // The words alone, with no fence before them on a GPU: for a
  // notification that orders nothing written before it (a value put,
  // whose bytes are in it), the consumer taking the slot only once every
  // word has come. On the host the release of word 0 stays (a plain store
  // on x86, and what ThreadSanitizer sees of the handover).
  template <scope S>
  GRMA_INLINE void store_unordered(std::uint32_t sequence, const notification& n) {
    std::uint64_t w[4];
    words_of(sequence, n, w);
#if GRMA_DEVICE_CODE
    // Two 16-byte pairs (store_relaxed_pair).
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
    out = notification{field(w0), std::int32_t(field(w1)), std::int32_t(field(w2)),
                       std::uint32_t(w3 >> 19) & ((1u << carried_bits) - 1u),
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
  // False: exactly `count` matches, or none. True: as many as the rank can
  // see now, at least one and at most `count` (wait_some_notifications).
  bool some = false;
  // The rank's own range of the window, where the value puts it takes out
  // land (land_carried).
  unsigned char* range = nullptr;
};

GRMA_INLINE constexpr envelope envelope_of(const notification& n) {
  return {n.source, n.tag, n.immediate};
}

// Without short-circuits: a lane loads the entry's three fields at once
// and compares without branches (a search's loops run it on 32 entries a
// step; decision 042).
GRMA_INLINE constexpr bool matches(const notification& n, const match_query& q) {
  return bool(int(n.window == q.window) & (int(q.source < 0) | int(n.source == q.source)) &
              (int(q.tag < 0) | int(n.tag == q.tag)));
}

// What the last search that found too few (match_in_list, match_serially)
// saw, so that the next search for the same query (a wait's next turn, a
// test in a loop) starts where it stopped: `found` matches in [first,
// end) of the list, the oldest at `oldest` or after it (no match
// between). So a wait for many notifications through a small ring looks
// at each held entry once, not again on each arrival (time growing as
// the count squared). Appends keep it true; closing the holes (entries
// move) and removals (held entries become holes) forget it.
struct pending_search {
  std::uint32_t window;  // the query's window key; no_window: nothing remembered
  std::int32_t source;
  std::int32_t tag;
  std::uint32_t end;
  std::uint32_t found;
  std::uint32_t oldest;
};

// Unmatched notifications of one rank, oldest first. `items` points at
// `capacity` entries owned by the same rank; items[first, end) hold the
// `size` notifications and holes (window no_window) between them.
struct pending_list {
  std::uint32_t size;
  std::uint32_t capacity;
  notification* items;
  std::uint32_t first;
  std::uint32_t end;
  pending_search searched;  // value-initialized: nothing remembered
};

// Where a search for `q` starts: after what the last one that found too
// few for the same query saw (pending_search), else at the list's first.
struct search_start {
  std::uint32_t from, found, oldest;
};

GRMA_INLINE search_start search_start_of(const pending_list& p, const match_query& q) {
  const pending_search& s = p.searched;
  if (s.window == q.window && s.window != no_window && s.source == q.source && s.tag == q.tag)
    return {s.end, s.found, s.oldest};
  return {p.first, 0, p.end};
}

// A search found `found` < wanted matches of `q` in the whole list.
GRMA_INLINE void remember_search(pending_list& p, const match_query& q, std::uint32_t found,
                                 std::uint32_t oldest) {
  p.searched = {q.window, q.source, q.tag, p.end, found, oldest};
}

// On a GPU a rank's pending list is in its block's shared memory
// (cuda_launch.hpp). Saying so lets the compiler load and store its
// entries with shared-memory instructions, which need not wait behind the
// lanes' stores of envelopes to global memory as generic ones may.
GRMA_INLINE notification* shared_entries(notification* items) {
#if GRMA_DEVICE_CODE
  __builtin_assume(__isShared(items));
#endif
  return items;
}

// The threads of a rank that match together: lanes [0, count) of its first
// warp, this thread being lane `index`. A whole warp (32) where the rank's
// threads fill whole warps, else one thread (and on the CPU backend): the
// lanes look at 32 entries of the list or a ring at once, each comparing
// one, and combine their answers by ballot. Every lane makes the same call
// with the same arguments and gets the same result; the list's and the
// readers' bookkeeping is kept by each lane in registers and written back
// by lane 0 alone.
struct lane_group {
  int count = 1;  // 32 or 1
  int index = 0;

  // Bit i: lane i's `p`.
  GRMA_INLINE std::uint32_t ballot(bool p) const {
#if GRMA_DEVICE_CODE
    if (count > 1) return __ballot_sync(0xffffffffu, p);
#endif
    return p ? 1u : 0u;
  }
  // Orders each lane's shared-memory accesses before the others' after it.
  GRMA_INLINE void sync() const {
#if GRMA_DEVICE_CODE
    if (count > 1) __syncwarp();
#endif
  }
  GRMA_INLINE bool leads() const {
    return index == 0;
  }
  GRMA_INLINE std::uint32_t lanes_below() const {
    return (1u << index) - 1u;
  }
};

GRMA_INLINE std::uint32_t lanes_in(std::uint32_t mask) {
#if GRMA_DEVICE_CODE
  return std::uint32_t(__popc(mask));
#else
  return std::uint32_t(__builtin_popcount(mask));
#endif
}

// The lowest lane of a nonzero mask.
GRMA_INLINE std::uint32_t lowest_lane(std::uint32_t mask) {
#if GRMA_DEVICE_CODE
  return std::uint32_t(__ffs(int(mask)) - 1);
#else
  return std::uint32_t(__builtin_ctz(mask));
#endif
}

// The highest lane of a nonzero mask.
GRMA_INLINE std::uint32_t highest_lane(std::uint32_t mask) {
#if GRMA_DEVICE_CODE
  return std::uint32_t(31 - __clz(int(mask)));
#else
  return std::uint32_t(31 - __builtin_clz(mask));
#endif
}

// Moves the held notifications to items[0, size), in order. Each step reads
// up to g.count entries, then writes them to places at or below where they
// were, so no write reaches an entry a later step reads.
template <class Lanes>
GRMA_INLINE void pending_close_holes(pending_list& p, Lanes g) {
  std::uint32_t kept = 0;
  for (std::uint32_t base = p.first; base < p.end; base += std::uint32_t(g.count)) {
    const std::uint32_t i = base + std::uint32_t(g.index);
    notification n{};
    if (i < p.end) n = p.items[i];
    const std::uint32_t held = g.ballot(i < p.end && n.window != no_window);
    g.sync();  // every lane has read its entry before any is overwritten
    if ((held >> g.index) & 1u) p.items[kept + lanes_in(held & g.lanes_below())] = n;
    kept += lanes_in(held);
  }
  g.sync();
  p.first = 0;
  p.end = kept;
  p.searched.window = no_window;  // the entries moved
}

// Adds `n` of the lanes in `taking`, in lane order, as the newest
// notifications, closing the holes first where the list's end has no room.
// True when that moved the entries. The caller checks size + k <= capacity.
template <class Lanes>
GRMA_INLINE bool pending_append(pending_list& p, const notification& n, std::uint32_t taking,
                                Lanes g) {
  const std::uint32_t k = lanes_in(taking);
  const bool close = p.end + k > p.capacity;
  if (close) pending_close_holes(p, g);
  if ((taking >> g.index) & 1u) p.items[p.end + lanes_in(taking & g.lanes_below())] = n;
  g.sync();
  p.end += k;
  p.size += k;
  return close;
}

// The first held entry at or after `from` (p.end when none).
template <class Lanes>
GRMA_INLINE std::uint32_t pending_next_held(const pending_list& p, std::uint32_t from, Lanes g) {
  for (std::uint32_t base = from; base < p.end; base += std::uint32_t(g.count)) {
    const std::uint32_t i = base + std::uint32_t(g.index);
    const std::uint32_t held = g.ballot(i < p.end && p.items[i].window != no_window);
    if (held != 0) return base + lowest_lane(held);
  }
  return p.end;
}

// One past the last held entry (the list holds one).
template <class Lanes>
GRMA_INLINE std::uint32_t pending_held_end(const pending_list& p, Lanes g) {
  for (std::uint32_t top = p.end;; top -= std::uint32_t(g.count)) {
    // Lane i looks at entry top - 1 - i: lane 0 the newest.
    const std::uint32_t left = top - p.first;
    const bool looks = std::uint32_t(g.index) < left;
    const std::uint32_t held =
        g.ballot(looks && p.items[top - 1 - std::uint32_t(g.index)].window != no_window);
    if (held != 0) return top - lowest_lane(held);
    if (left <= std::uint32_t(g.count)) return p.first;
  }
}

// After `count` held entries in [low, high] became holes: the list's size,
// and its ends moved past the holes at them.
template <class Lanes>
GRMA_INLINE void pending_removed(pending_list& p, std::uint32_t low, std::uint32_t high,
                                 std::uint32_t count, Lanes g) {
  p.size -= count;
  p.searched.window = no_window;  // matches it counted may be gone
  if (p.size == 0) {
    p.first = p.end = 0;
    return;
  }
  if (low == p.first) p.first = pending_next_held(p, low + 1, g);
  if (high + 1 == p.end) p.end = pending_held_end(p, g);
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

// What a lane group finds at a ring's private head: lane i looks at the
// entry head + i, where i < reach.
struct arrivals {
  notification entry;   // this lane's, where `ready` has its bit
  std::uint32_t ready;  // lanes 0 .. k-1: the entries published in a row from the head
  std::uint32_t hits;   // of those, the ones the query matches
};

template <scope S, class Lanes>
GRMA_INLINE arrivals look_at_ring(notification_ring& ring, const ring_reader& reader,
                                  std::uint32_t reach, const match_query& q, Lanes g) {
  arrivals a{};
  const std::uint64_t ticket = reader.head + std::uint64_t(g.index);
  const bool got =
      std::uint32_t(g.index) < reach && ring.slots()[ticket & reader.mask].template load<S>(
                                            static_cast<std::uint32_t>(ticket + 1), a.entry);
  const std::uint32_t published = g.ballot(got);
  // The lanes below the lowest one without an entry (all of them when every lane has one).
  a.ready = (~published & (published + 1u)) - 1u;
  a.hits = g.ballot(got && matches(a.entry, q)) & a.ready;
  return a;
}

// Moves the ring's head past `taken` entries. Every lane has read the head
// (look_at_ring) before lane 0 writes it.
template <class Lanes>
GRMA_INLINE void advance_head(ring_reader& reader, std::uint32_t taken, Lanes g) {
  g.sync();
  if (g.leads()) reader.head += taken;
  g.sync();
}

// The lowest `wanted` lanes of `hits` (all of them when it has fewer).
template <class Lanes>
GRMA_INLINE std::uint32_t lowest_lanes(std::uint32_t hits, std::uint32_t wanted, Lanes g) {
  if (lanes_in(hits) <= wanted) return hits;
  const bool hit = (hits >> g.index) & 1u;
  return g.ballot(hit && lanes_in(hits & g.lanes_below()) < wanted);
}

// How many entries a run from one of `rings` rings may take into a list
// that holds `held` of its `capacity`: at most the rings' fair share of the
// room left, so that one ring's run never takes the room the others'
// entries would have had in turn (one at a time, round robin); at least
// one, at most one a lane and the ring's capacity.
GRMA_INLINE std::uint32_t run_reach(std::uint32_t capacity, std::uint32_t held, int rings,
                                    std::uint32_t lanes, const ring_reader& reader) {
  const std::uint32_t share = (capacity - held) / std::uint32_t(rings);
  const std::uint32_t most = share == 0 ? 1u : lanes < share ? lanes : share;
  return most < reader.mask + 1u ? most : reader.mask + 1u;
}

// The end of a step of the lanes: hands the slots taken back to their
// producers and writes the list's bookkeeping `p` back (lane 0, once every
// lane has read it).
template <scope S, class Lanes>
GRMA_INLINE void end_step(pending_list& pending, const pending_list& p, const inbox_rings& in,
                          ring_reader* readers, Lanes g) {
  g.sync();
  if (g.leads()) {
    release_rings<S>(in, readers);
    pending = p;
  }
  g.sync();
}

// A query for some (match_query::some), by all lanes, in one pass: any
// match meets it, so each step hands its matches out at once, oldest
// first: the held entries' (leaving holes), then those of runs from the
// rings, whose other entries join the list. The same entries move and go
// out as in match_in_list's two passes (runs take their room as if the
// matches handed out were still held, as there until the removal); the
// number handed out (0: no match).
template <scope S, class Lanes>
GRMA_OUT_OF_LINE std::uint32_t take_some(pending_list& pending, const inbox_rings& in,
                                         ring_reader* readers, const match_query q, envelope* taken,
                                         Lanes g) {
  pending_list p = pending;
  p.items = shared_entries(p.items);
  const std::uint32_t wanted = std::uint32_t(q.count), lanes = std::uint32_t(g.count);
  std::uint32_t removed = 0, low = 0, high = 0;
  // The lanes in `out` hand out their own entry each, in lane order.
  const auto hand_out = [&](std::uint32_t out, const notification& n) {
    land_carried(n, q.range);
    if (taken != nullptr) taken[removed + lanes_in(out & g.lanes_below())] = envelope_of(n);
  };
  for (std::uint32_t base = p.first; base < p.end && removed < wanted; base += lanes) {
    const std::uint32_t i = base + std::uint32_t(g.index);
    const std::uint32_t out =
        lowest_lanes(g.ballot(i < p.end && matches(p.items[i], q)), wanted - removed, g);
    if (out == 0) continue;
    if (removed == 0) low = base + lowest_lane(out);
    high = base + highest_lane(out);
    if (((out >> g.index) & 1u) != 0) {
      hand_out(out, p.items[i]);
      p.items[i].window = no_window;
    }
    removed += lanes_in(out);
  }
  g.sync();  // every hole is made before the lanes look for the list's new ends
  if (removed != 0) {
    pending_removed(p, low, high, removed, g);
    g.sync();  // every lane has looked for the list's new ends before a run appends there
  }
  // The list as the runs see it: the matches handed out still in it.
  const auto held = [&] { return p.size + removed; };
  for (bool took = true; took && removed < wanted;) {
    took = false;
    for (int r = 0; r < in.count && removed < wanted && held() < p.capacity; ++r) {
      const std::uint32_t reach = run_reach(p.capacity, held(), in.count, lanes, readers[r]);
      const arrivals a = look_at_ring<S>(in.ring(r), readers[r], reach, q, g);
      if (a.ready == 0) continue;
      took = true;
      const std::uint32_t out = lowest_lanes(a.hits, wanted - removed, g);
      if (((out >> g.index) & 1u) != 0) hand_out(out, a.entry);
      removed += lanes_in(out);
      if ((a.ready & ~out) != 0) pending_append(p, a.entry, a.ready & ~out, g);
      advance_head(readers[r], lanes_in(a.ready), g);
    }
  }
  end_step<S>(pending, p, in, readers, g);
  return removed;
}

// Matching's second step (see match_at_head), by all lanes: the held
// entries, then runs from the rings; the number of matches removed (0: no
// match). Out of line: its registers would cost every kernel that waits
// (decision 034).
template <scope S, class Lanes>
GRMA_OUT_OF_LINE std::uint32_t match_in_list(pending_list& pending, const inbox_rings& in,
                                             ring_reader* readers, const match_query& q,
                                             envelope* taken, Lanes g) {
  pending_list p = pending;
  const std::uint32_t wanted = std::uint32_t(q.count);
  const auto finish = [&](std::uint32_t removed) {
    end_step<S>(pending, p, in, readers, g);
    return removed;
  };

  // The held matches, oldest first, up to the number wanted (those the
  // last search for `q` counted, then from where it stopped). `oldest` is
  // the oldest match's place where this search found it, or a place at or
  // before it (no match between).
  const search_start start = search_start_of(p, q);
  std::uint32_t found = start.found, oldest = start.oldest;
  for (std::uint32_t base = start.from; base < p.end && found < wanted;
       base += std::uint32_t(g.count)) {
    const std::uint32_t i = base + std::uint32_t(g.index);
    const std::uint32_t hits = g.ballot(i < p.end && matches(p.items[i], q));
    if (hits != 0 && found == 0) oldest = base + lowest_lane(hits);
    found += lanes_in(hits);
  }
  // Take a run from each ring in turn until enough match, the list is full
  // or the rings are empty.
  for (bool took = true; took && found < wanted;) {
    took = false;
    for (int i = 0; i < in.count && found < wanted && p.size < p.capacity; ++i) {
      const std::uint32_t reach =
          run_reach(p.capacity, p.size, in.count, std::uint32_t(g.count), readers[i]);
      const arrivals a = look_at_ring<S>(in.ring(i), readers[i], reach, q, g);
      if (a.ready == 0) continue;
      took = true;
      const std::uint32_t run = lanes_in(a.ready);
      // Appending may close the holes, which moves the held entries: the
      // removal then looks for them from the start (only where more than
      // one is wanted: one found ends the search).
      if (pending_append(p, a.entry, a.ready, g) && found != 0) oldest = p.first;
      if (found == 0 && a.hits != 0) oldest = p.end - run + lowest_lane(a.hits);
      found += lanes_in(a.hits);
      advance_head(readers[i], run, g);
    }
  }
  if (found < wanted) {
    remember_search(p, q, found, oldest);
    return finish(0);
  }

  // A lone match that an earlier search counted may lie past the place
  // remembered (the holes closed since): find its place, at or after it.
  if (wanted == 1 && start.found != 0)
    for (std::uint32_t base = oldest;; base += std::uint32_t(g.count)) {
      const std::uint32_t i = base + std::uint32_t(g.index);
      const std::uint32_t hits = g.ballot(i < p.end && matches(p.items[i], q));
      if (hits != 0) {
        oldest = base + lowest_lane(hits);
        break;
      }
    }

  // Take out the `wanted` oldest matches, leaving holes (the rest keep
  // their places); [low, high] spans the removed. Each lane hands out the
  // matches it looked at; a lone match, at `oldest`, lane 0.
  std::uint32_t low = oldest, high = oldest;
  if (wanted == 1) {
    if (g.leads()) {
      land_carried(p.items[oldest], q.range);
      if (taken != nullptr) *taken = envelope_of(p.items[oldest]);
    }
    g.sync();
    if (g.leads()) p.items[oldest].window = no_window;
  } else {
    for (std::uint32_t base = oldest, removed = 0; removed < wanted;
         base += std::uint32_t(g.count)) {
      const std::uint32_t i = base + std::uint32_t(g.index);
      const std::uint32_t hits =
          lowest_lanes(g.ballot(i < p.end && matches(p.items[i], q)), wanted - removed, g);
      if (hits == 0) continue;
      if (removed == 0) low = base + lowest_lane(hits);
      high = base + highest_lane(hits);
      const bool hit = (hits >> g.index) & 1u;
      if (hit) land_carried(p.items[i], q.range);
      if (hit && taken != nullptr)
        taken[removed + lanes_in(hits & g.lanes_below())] = envelope_of(p.items[i]);
      removed += lanes_in(hits);
      g.sync();
      if (hit) p.items[i].window = no_window;
    }
  }
  g.sync();  // every hole is made before the lanes look for the list's new ends
  pending_removed(p, low, high, wanted, g);
  return finish(wanted);
}

// What the leading thread's look at the rings' heads decided.
enum class head_match : std::int32_t {
  matched,  // the query's one match, taken
  empty,    // nothing held, nothing arrived: no match yet
  search,   // the list must be searched (match_in_list)
};

// Matching has two steps; together they try to match `q`. On success the
// q.count oldest matches are removed; otherwise the notifications stay as
// they were (though some may have moved from the rings into the pending
// list, in order). A query never matches a hole (q.window is a real
// window's key).
//
// The first step is the common case, taken by the leading thread alone
// (only a lone thread polls fast): with nothing held and one match wanted,
// the oldest arrival is the match (taken) or goes to the list (search).
// It is also the way to wait once the second step found no match for one
// wanted (`held_unmatched`: nothing held matches): each arrival is then the
// match or joins the list, and the step goes on (empty) until the match
// comes, or the list is full (search: the lanes' step waits there).
// The second, match_in_list, is the lanes' together: each looks at one
// entry of 32 of the list or of a ring's run, and ballots combine the
// comparisons. Entries move from a ring there a run at a time: those
// published in a row at its head, as many as the lanes and the rings' fair
// share of the list's room reach, until enough match. From one ring, what a
// query can match is the same as if they moved one at a time as far as it
// needs: the list holds them in arrival order, and they take room the
// ring's entries behind them would have taken; only how the unmatched are
// split between ring and list differs. Across rings, whose order among
// each other is the order they are taken in, runs interleave them more
// coarsely than single entries would.
//
// `readers` are the consumer's private heads in its rings; every slot taken
// is handed back to its producers before a step returns. `taken`, where not
// null, receives the removed matches, oldest first: each written by the
// lane that held it, a lone match by lane 0 (so that a caller may pass
// each thread's own place where it wants one match). The same thread
// writes a removed value put's bytes into q.range (land_carried), whether
// or not `taken` is null.
template <scope S>
GRMA_INLINE head_match match_at_head(pending_list& pending, const inbox_rings& in,
                                     ring_reader* readers, const match_query& q, envelope* taken,
                                     bool held_unmatched) {
  if ((pending.size != 0 && !held_unmatched) || q.count != 1) return head_match::search;
  for (int i = 0; i < in.count; ++i) {
    if (pending.size == pending.capacity) return head_match::search;
    notification n;
    if (!ring_try_pop<S>(in.ring(i), readers[i], n)) continue;
    ring_release<S>(in.ring(i), readers[i]);
    if (!matches(n, q)) {
      pending_append(pending, n, 1u, lane_group{});
      if (held_unmatched) continue;
      return head_match::search;
    }
    land_carried(n, q.range);
    if (taken != nullptr) *taken = envelope_of(n);
    return head_match::matched;
  }
  return head_match::empty;
}

// Matching by one thread alone, one entry at a time: the first step
// (match_at_head), then the list and the rings' arrivals round robin, as far
// as the query needs; the number of matches removed (0: no match).
template <scope S>
GRMA_INLINE std::uint32_t match_serially(pending_list& pending, const inbox_rings& in,
                                         ring_reader* readers, const match_query& q,
                                         envelope* taken) {
  const head_match step = match_at_head<S>(pending, in, readers, q, taken, false);
  if (step != head_match::search) return step == head_match::matched ? 1u : 0u;
  const std::uint32_t wanted = std::uint32_t(q.count);
  const search_start start = search_start_of(pending, q);
  std::uint32_t found = start.found, oldest = start.oldest;
  for (std::uint32_t i = start.from; i < pending.end && found < wanted; ++i)
    if (matches(pending.items[i], q) && found++ == 0) oldest = i;
  for (bool took = true; took && found < wanted;) {
    took = false;
    for (int i = 0; i < in.count && found < wanted && pending.size < pending.capacity; ++i) {
      notification n;
      if (!ring_try_pop<S>(in.ring(i), readers[i], n)) continue;
      took = true;
      if (pending_append(pending, n, 1u, lane_group{})) oldest = pending.first;
      if (matches(n, q) && found++ == 0) oldest = pending.end - 1;
    }
  }
  release_rings<S>(in, readers);
  if (found == 0 || (!q.some && found < wanted)) {
    remember_search(pending, q, found, oldest);
    return 0;
  }
  // Take out the oldest matches, as many as wanted or found (the search
  // starts at `oldest`), leaving holes; [low, high] spans them.
  const std::uint32_t removing = found < wanted ? found : wanted;
  std::uint32_t low = oldest, high = oldest;
  for (std::uint32_t removed = 0;; ++high)
    if (matches(pending.items[high], q)) {
      if (removed == 0) low = high;
      land_carried(pending.items[high], q.range);
      if (taken != nullptr) taken[removed] = envelope_of(pending.items[high]);
      pending.items[high].window = no_window;
      if (++removed == removing) break;
    }
  pending_removed(pending, low, high, removing, lane_group{});
  return removing;
}

// Moves the rings' arrivals into the pending list, each ring's in its
// order, as far as the list has room, dropping those of window `dropped`
// (no_window: none); every slot taken is handed back to its producers.
template <scope S>
GRMA_INLINE void take_arrivals(pending_list& pending, const inbox_rings& in, ring_reader* readers,
                               std::uint32_t dropped) {
  for (int r = 0; r < in.count; ++r) {
    notification_ring& ring = in.ring(r);
    ring_reader& reader = readers[r];
    notification n;
    while (ring.slots()[reader.head & reader.mask].template load<S>(
        static_cast<std::uint32_t>(reader.head + 1), n)) {
      if (n.window != dropped) {
        if (pending.size == pending.capacity) break;  // no room: it stays in the ring
        pending_append(pending, n, 1u, lane_group{});
      }
      ++reader.head;
    }
    ring_release<S>(ring, reader);
  }
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
  pending_close_holes(pending, lane_group{});
  pending.size = pending.end;
  take_arrivals<S>(pending, in, readers, key);
}

}  // namespace grma::detail
