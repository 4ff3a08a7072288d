// Fixed-size ring queue with sequence-numbered slots (papers/000 §3.2.4).
//
// Many producers, one consumer. A producer reserves a ticket with one atomic
// add on `reserved`, writes the slot's payload and then publishes the slot by a
// release store of its sequence number (ticket + 1). The consumer needs one
// acquire load of the slot's sequence number to know whether the entry at its
// head is valid; no shared tail is read on the fast path.
//
// Credits are lazy: a producer keeps a private copy of the consumer's published
// `consumed` count and re-reads it only when its ticket would not fit by that
// stale count. A full ring is back-pressure: the producer waits (through the
// caller's wait function, which is bounded by the watchdog) and nothing is ever
// dropped or overwritten.
//
// The header and the slots are one block of memory, so the ring has no
// pointers and stays valid wherever that block is mapped (peer device, other
// process).
#pragma once

#include <cstddef>
#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/atomic.hpp"

namespace grma::detail {

template <class Payload>
struct ring_slot {
  std::uint32_t seq;  // ticket + 1 once the payload is published; 0 = never written
  Payload payload;
};

template <class Payload>
struct ring {
  alignas(64) std::uint64_t reserved;  // tickets handed out to producers
  alignas(64) std::uint64_t consumed;  // entries the consumer has taken, in ticket order
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

constexpr bool is_power_of_two(std::uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Prepares zeroed memory of ring<Payload>::bytes_for(capacity) bytes. Host only,
// before any producer or consumer runs.
template <class Payload>
inline ring<Payload>* ring_init(void* memory, std::uint32_t capacity) {
  auto* q = static_cast<ring<Payload>*>(memory);
  q->reserved = 0;
  q->consumed = 0;
  q->capacity = capacity;
  q->mask = capacity - 1;
  for (std::uint32_t i = 0; i < capacity; ++i) q->slots()[i].seq = 0;
  return q;
}

// Producer, step 1: reserve a slot. `known_consumed` is the producer's private
// credit state for this ring. `wait` is called while the ring is full.
template <scope S, class Payload, class Wait>
GRMA_INLINE std::uint64_t ring_reserve(ring<Payload>& q, std::uint64_t& known_consumed,
                                       Wait&& wait) {
  const std::uint64_t ticket = fetch_add_relaxed<S>(q.reserved, std::uint64_t{1});
  // consumed never passes an unpublished ticket, so ticket >= known_consumed.
  if (ticket - known_consumed >= q.capacity) {
    // Acquire pairs with the consumer's release of `consumed`: the consumer's
    // reads of the slot we are about to overwrite happen before our writes.
    known_consumed = load_acquire<S>(q.consumed);
    while (ticket - known_consumed >= q.capacity) {
      wait();
      known_consumed = load_acquire<S>(q.consumed);
    }
  }
  return ticket;
}

// Producer, step 2: fill the reserved slot and publish it. The release store of
// seq orders the payload (and everything the producer wrote before, such as
// the data of a put) before the slot becomes valid to the consumer.
template <scope S, class Payload>
GRMA_INLINE void ring_publish(ring<Payload>& q, std::uint64_t ticket, const Payload& payload) {
  ring_slot<Payload>& slot = q.slots()[ticket & q.mask];
  slot.payload = payload;
  store_release<S>(slot.seq, static_cast<std::uint32_t>(ticket + 1));
}

template <scope S, class Payload, class Wait>
GRMA_INLINE void ring_push(ring<Payload>& q, std::uint64_t& known_consumed,
                           const Payload& payload, Wait&& wait) {
  ring_publish<S>(q, ring_reserve<S>(q, known_consumed, wait), payload);
}

// Consumer: take the entry at the head if it is published. Only the single
// consumer writes `consumed`, so it may read it relaxed.
template <scope S, class Payload>
GRMA_INLINE bool ring_try_pop(ring<Payload>& q, Payload& out) {
  const std::uint64_t head = load_relaxed<S>(q.consumed);
  ring_slot<Payload>& slot = q.slots()[head & q.mask];
  // Acquire pairs with ring_publish's release: the payload is complete.
  if (load_acquire<S>(slot.seq) != static_cast<std::uint32_t>(head + 1)) return false;
  out = slot.payload;
  // Release: our read of the slot happens before a producer reuses it.
  store_release<S>(q.consumed, head + 1);
  return true;
}

// Read-only look at the i-th unconsumed entry, for diagnostics (the watchdog's
// report). False when that entry is not published.
template <scope S, class Payload>
inline bool ring_peek(ring<Payload>& q, std::uint64_t i, Payload& out) {
  const std::uint64_t index = load_acquire<S>(q.consumed) + i;
  ring_slot<Payload>& slot = q.slots()[index & q.mask];
  if (load_acquire<S>(slot.seq) != static_cast<std::uint32_t>(index + 1)) return false;
  out = slot.payload;
  return true;
}

}  // namespace grma::detail
