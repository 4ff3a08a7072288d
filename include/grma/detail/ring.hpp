// Fixed-size ring queue with sequence-numbered slots (papers/000 §3.2.4).
//
// Many producers, one consumer. A producer takes a ticket with one atomic add
// on `reserved`, waits until the ticket's slot is free, fills the slot and
// publishes it; the slot's sequence number (ticket + 1) tells the consumer
// that the entry at its head is valid, so no shared tail is read on the fast
// path. Taking the ticket and publishing are separate steps, so a producer can
// issue the atomic early and let its latency overlap other work.
//
// Credits. A producer keeps a private copy of the consumer's published
// `consumed` count and re-reads it only when its ticket would not fit by that
// stale count. The consumer keeps its head private (ring_reader) while it
// takes entries and publishes it (ring_release) before the call that took
// them returns: a slot whose entry has left the ring (matched, or moved to
// the consumer's own list) is the producers' again at once, whatever the
// consumer does next. So the slots a full ring waits for are entries the
// consumer has not taken yet, never ones it took and kept. A full ring is
// back-pressure: the producer waits (through the caller's wait function,
// which is bounded by the watchdog) and nothing is ever dropped or
// overwritten.
//
// The header and the slots are one block of memory, so the ring has no
// pointers and stays valid wherever that block is mapped (peer device, other
// process).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "grma/config.hpp"
#include "grma/detail/atomic.hpp"

namespace grma::detail {

// A slot: the payload, then its sequence number stored with release; the
// consumer loads the sequence number with acquire, then the payload.
// Specialized where the payload fits self-validating words (matching.hpp).
template <class Payload>
struct ring_slot {
  // The consumer reads the payload after checking `seq`, so it must be done
  // reading before a producer may overwrite the slot (ring_release).
  static constexpr bool self_validating = false;
  std::uint32_t seq;  // ticket + 1 once the payload is published; 0 = never written
  Payload payload;

  template <scope S>
  GRMA_INLINE void store(std::uint32_t sequence, const Payload& p) {
    payload = p;
    // Release: the payload, and everything the producer wrote before (the
    // data of a put), is visible to a consumer that sees the sequence number.
    store_release<S>(seq, sequence);
  }
  template <scope S>
  GRMA_INLINE bool load(std::uint32_t sequence, Payload& out) {
    if (load_acquire<S>(seq) != sequence) return false;
    out = payload;
    return true;
  }
};

// A word of a self-validating slot (specializations of ring_slot whose
// words are each checked, not ordered): the slot's sequence number beside
// 32 bits of the payload.
GRMA_INLINE constexpr std::uint64_t sequence_word(std::uint32_t sequence, std::uint32_t field) {
  return (std::uint64_t(sequence) << 32) | field;
}

// A self-validating slot of a payload in four-byte fields: each word holds
// one field beside the sequence number, so a consumer takes the slot once
// every word carries it, in whatever order the words arrived. A GPU
// producer stores them with no system-scope fence between them (one before
// a host-visible flag waits for the earlier stores to cross PCIe: 0.5-1 us),
// only a device-scope release first, for what it wrote before: whoever reads
// that (the network engine's proxy, a copy) reads it through the device's
// memory, after seeing the slot. ring_slot specializations derive from it.
template <class Payload, int Words>
struct sequenced_slot {
  // Every word the consumer takes carries the slot's sequence number
  // (ring_release).
  static constexpr bool self_validating = true;
  static constexpr int fields = int(sizeof(Payload) / 4);
  static_assert(sizeof(Payload) % 4 == 0 && fields <= Words, "a payload of whole four-byte fields");
  std::uint64_t word[Words];

  template <scope S>
  GRMA_INLINE void store(std::uint32_t sequence, const Payload& p) {
    std::uint32_t field[fields];
    std::memcpy(field, &p, sizeof p);
#if GRMA_DEVICE_CODE
    fence_release<scope::device>();
    for (int i = 0; i < fields; ++i) store_relaxed<S>(word[i], sequence_word(sequence, field[i]));
#else
    for (int i = 1; i < fields; ++i) store_relaxed<S>(word[i], sequence_word(sequence, field[i]));
    // Release: the other words, and what the producer wrote before (a
    // copy's source), are visible to a consumer that sees word 0.
    store_release<S>(word[0], sequence_word(sequence, field[0]));
#endif
  }

  template <scope S>
  GRMA_INLINE bool load(std::uint32_t sequence, Payload& out) {
    std::uint32_t field[fields];
    const std::uint64_t w0 = load_acquire<S>(word[0]);  // pairs with a CPU producer's release
    if (std::uint32_t(w0 >> 32) != sequence) return false;
    field[0] = std::uint32_t(w0);
    for (int i = 1; i < fields; ++i) {
      const std::uint64_t w = load_relaxed<S>(word[i]);
      if (std::uint32_t(w >> 32) != sequence) return false;  // a GPU's word still on its way
      field[i] = std::uint32_t(w);
    }
    std::memcpy(&out, field, sizeof out);
    return true;
  }
};

template <class Payload>
struct ring {
  alignas(64) std::uint64_t reserved;  // tickets handed out, unless kept elsewhere (ring_take_ticket)
  alignas(64) std::uint64_t consumed;  // entries the consumer has released, in ticket order
  std::uint32_t capacity;              // a power of two
  std::uint32_t mask;

  GRMA_INLINE ring_slot<Payload>* slots() {
    return reinterpret_cast<ring_slot<Payload>*>(reinterpret_cast<unsigned char*>(this) +
                                                 sizeof(ring));
  }

  static constexpr std::size_t bytes_for(std::uint32_t capacity) {
    return sizeof(ring) + std::size_t(capacity) * sizeof(ring_slot<Payload>);
  }
};

// The consumer's private state: its head, how much of it it has published,
// and the ring's mask (a private copy: on a GPU the ring header misses L1
// after every acquire, and a poll should cost one load, not two in a row).
struct ring_reader {
  std::uint64_t head;
  std::uint64_t released;
  std::uint32_t mask;
};

// Prepares zeroed memory of ring<Payload>::bytes_for(capacity) bytes. Host only,
// before any producer or consumer runs.
template <class Payload>
inline ring<Payload>* ring_init(void* memory, std::uint32_t capacity) {
  auto* q = static_cast<ring<Payload>*>(memory);
  q->reserved = 0;
  q->consumed = 0;
  q->capacity = capacity;
  q->mask = capacity - 1;
  for (std::uint32_t i = 0; i < capacity; ++i) q->slots()[i] = ring_slot<Payload>{};
  return q;
}

// Producer, step 1: a ticket, from the ring's counter or from one its owner
// keeps elsewhere (where the producers take it cheaply: grma's notification
// rings keep theirs on the producers' device, the log ring in device memory).
// Relaxed: the add publishes nothing. The consumer takes slots in ticket
// order, so a ticket holds back every later entry until it is published:
// take it only shortly before the entry is written (before a put's last
// piece of copy, basic_rank::copy_taking_ticket), never before work of
// unbounded length.
template <scope S>
GRMA_INLINE std::uint64_t ring_take_ticket(std::uint64_t& tickets) {
  return fetch_add_relaxed<S>(tickets, std::uint64_t{1});
}
template <scope S, class Payload>
GRMA_INLINE std::uint64_t ring_take_ticket(ring<Payload>& q) {
  return ring_take_ticket<S>(q.reserved);
}

// Producer, step 2 without waiting: whether the ticket's slot is free. Calls
// `load_consumed` for the consumer's count only when the stale copy says the
// ring is full; it must load with acquire (or as strongly: a network
// engine's copy of a GPU's count), which pairs with the consumer's release
// where there is one (ring_release: slots whose payload is read after the
// sequence number), so its reads of the slot we are about to overwrite
// happen before our writes.
template <class LoadConsumed>
GRMA_INLINE bool ring_has_credit(std::uint32_t capacity, std::uint64_t ticket,
                                 std::uint64_t& known_consumed, LoadConsumed&& load_consumed) {
  // consumed never passes an unpublished ticket, so ticket >= known_consumed.
  if (ticket - known_consumed < capacity) return true;
  known_consumed = load_consumed();
  return ticket - known_consumed < capacity;
}

template <scope S, class Payload>
GRMA_INLINE bool ring_has_credit(ring<Payload>& q, std::uint32_t capacity, std::uint64_t ticket,
                                 std::uint64_t& known_consumed) {
  // Acquire: see above.
  return ring_has_credit(capacity, ticket, known_consumed, [&] { return load_acquire<S>(q.consumed); });
}

// Producer, step 2: wait until the ticket's slot is free. `known_consumed` is
// the producer's private credit state for this ring; `wait` is called while
// the ring is full. `capacity` is the caller's copy of q.capacity (see
// ring_reader::mask for why not read it here).
template <scope S, class Wait>
GRMA_INLINE void ring_wait_credit(std::uint64_t& consumed, std::uint32_t capacity, std::uint64_t ticket,
                                  std::uint64_t& known_consumed, Wait&& wait) {
  // Acquire: see ring_has_credit.
  while (!ring_has_credit(capacity, ticket, known_consumed, [&] { return load_acquire<S>(consumed); })) wait();
}

template <scope S, class Payload, class Wait>
GRMA_INLINE void ring_wait_credit(ring<Payload>& q, std::uint32_t capacity, std::uint64_t ticket,
                                  std::uint64_t& known_consumed, Wait&& wait) {
  ring_wait_credit<S>(q.consumed, capacity, ticket, known_consumed, wait);
}

template <scope S, class Payload, class Wait>
GRMA_INLINE std::uint64_t ring_reserve(ring<Payload>& q, std::uint64_t& known_consumed,
                                       Wait&& wait) {
  const std::uint64_t ticket = ring_take_ticket<S>(q);
  ring_wait_credit<S>(q, q.capacity, ticket, known_consumed, wait);
  return ticket;
}

// Producer, step 3: fill the slot and publish it (see ring_slot::store for
// the ordering each slot kind gives). `Ordered` false: a slot kind's
// store_unordered, which orders nothing the producer wrote before.
template <scope S, bool Ordered = true, class Payload>
GRMA_INLINE void ring_publish(ring<Payload>& q, std::uint32_t capacity, std::uint64_t ticket,
                              const Payload& payload) {
  ring_slot<Payload>& slot = q.slots()[ticket & (capacity - 1)];
  const auto sequence = static_cast<std::uint32_t>(ticket + 1);
  if constexpr (Ordered)
    slot.template store<S>(sequence, payload);
  else
    slot.template store_unordered<S>(sequence, payload);
}

template <scope S, class Payload, class Wait>
GRMA_INLINE void ring_push(ring<Payload>& q, std::uint64_t& known_consumed,
                           const Payload& payload, Wait&& wait) {
  ring_publish<S>(q, q.capacity, ring_reserve<S>(q, known_consumed, wait), payload);
}

// Consumer: take the entry at the private head if it is published. The slot
// stays the consumer's until ring_release publishes the head, which the
// consumer does before the call that took it returns.
template <scope S, class Payload>
GRMA_INLINE bool ring_try_pop(ring<Payload>& q, ring_reader& reader, Payload& out) {
  if (!q.slots()[reader.head & reader.mask].template load<S>(
          static_cast<std::uint32_t>(reader.head + 1), out))
    return false;
  ++reader.head;
  return true;
}

// Consumer: hand the slots taken so far back to the producers; their reads
// of `consumed` (acquire, ring_has_credit) come before they reuse a slot.
// The consumer's reads of the slots must not see a reuse:
// - A slot whose payload is read after its sequence number: release, so
//   those reads happen before the count that lets a producer overwrite it.
// - A self-validating slot: relaxed. The consumer took the slot only because
//   every word it loaded carried the slot's sequence number, and a reuse
//   writes another one (ticket + capacity + 1), so each of those loads read
//   the entry, not a reuse, whenever this store becomes visible; and the
//   store is made only after that check. Nothing is read from the slot
//   afterwards. On a GPU a release costs a fence (about 670 cycles even
//   with nothing outstanding), which every match would pay.
template <scope S, class Payload>
GRMA_INLINE void ring_release(ring<Payload>& q, ring_reader& reader) {
  if (reader.released == reader.head) return;
  if constexpr (ring_slot<Payload>::self_validating)
    store_relaxed<S>(q.consumed, reader.head);
  else
    store_release<S>(q.consumed, reader.head);
  reader.released = reader.head;
}

// Consumer without private state (the host's log drain, tests): take one
// entry and release it at once. Only the consumer writes `consumed`.
template <scope S, class Payload>
GRMA_INLINE bool ring_try_pop(ring<Payload>& q, Payload& out) {
  const std::uint64_t head = load_relaxed<S>(q.consumed);
  ring_reader reader{head, head, q.mask};
  if (!ring_try_pop<S>(q, reader, out)) return false;
  ring_release<S>(q, reader);
  return true;
}

// Read-only look at the entry `i` places after the released head, for
// diagnostics and tests. False when that entry is not published.
template <scope S, class Payload>
inline bool ring_peek(ring<Payload>& q, std::uint64_t i, Payload& out) {
  const std::uint64_t index = load_acquire<S>(q.consumed) + i;
  return q.slots()[index & q.mask].template load<S>(static_cast<std::uint32_t>(index + 1), out);
}

}  // namespace grma::detail
