// The MPSC ring: order across laps, back-pressure when full, lazy credits, and
// many producers at once.
#include "grma/detail/ring.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "test_support.hpp"

namespace {

using grma::detail::ring;
using grma::detail::ring_peek;
using grma::detail::ring_publish;
using grma::detail::ring_push;
using grma::detail::ring_reserve;
using grma::detail::ring_try_pop;
using grma::detail::scope;
using grma::test::owned_ring;
using grma::test::unexpected_wait;

// The payload of the n-th entry: distinct from n, so a slot read before its
// payload was written (or one still holding an older lap) shows up.
std::uint64_t payload_of(std::uint64_t n) {
  return n * 0x9e3779b97f4a7c15ull + 1;
}

// Pops until the ring is empty, or until it gave more than it can hold.
std::vector<std::uint64_t> pop_all(ring<std::uint64_t>& q) {
  std::vector<std::uint64_t> out;
  std::uint64_t value = 0;
  while (out.size() <= q.capacity && ring_try_pop<scope::device>(q, value)) out.push_back(value);
  return out;
}

// Pushes and pops with a fill level that moves between empty and full, so the
// head and the tail meet at every slot. `first` is the ring's current ticket.
void exercise_laps(ring<std::uint64_t>& q, std::uint64_t first, std::uint32_t rounds) {
  std::uint64_t credit = first;
  std::uint64_t pushed = first;
  std::uint64_t popped = first;
  for (std::uint32_t round = 0; round < rounds; ++round) {
    const std::uint64_t fill_to = round * 7u % (q.capacity + 1);  // 7 is coprime to 5 and 9
    while (pushed - popped < fill_to)
      ring_push<scope::device>(q, credit, payload_of(pushed++), unexpected_wait);
    const std::uint64_t drain_to = round * 3u % (fill_to + 1);
    while (pushed - popped > drain_to) {
      std::uint64_t value = 0;
      ASSERT_TRUE(ring_try_pop<scope::device>(q, value)) << "round " << round;
      ASSERT_EQ(value, payload_of(popped++)) << "round " << round;
    }
  }
  for (std::uint64_t value : pop_all(q)) ASSERT_EQ(value, payload_of(popped++));
  EXPECT_EQ(popped, pushed);
  EXPECT_GE((pushed - first) / q.capacity, 100u) << "too few laps to exercise wrap-around";
}

class RingWrapAround : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(RingWrapAround, KeepsOrderOverManyLaps) {
  owned_ring<std::uint64_t> q(GetParam());
  exercise_laps(*q, 0, 2000);
}

// A slot's sequence number is the low 32 bits of ticket + 1. Start the ring as
// if it had carried almost 2^32 entries, so the tickets cross that boundary.
TEST_P(RingWrapAround, KeepsOrderWhenSequenceNumbersWrap) {
  owned_ring<std::uint64_t> q(GetParam());
  const std::uint64_t start = (std::uint64_t{1} << 32) - 3 * q->capacity;
  q->reserved = start;
  q->consumed = start;
  for (std::uint64_t t = start - q->capacity; t < start; ++t)
    q->slots()[t & q->mask].seq = static_cast<std::uint32_t>(t + 1);
  exercise_laps(*q, start, 2000);
  EXPECT_GT(q->consumed, std::uint64_t{1} << 32);
}

INSTANTIATE_TEST_SUITE_P(Capacities, RingWrapAround, ::testing::Values(4u, 8u));

TEST(Ring, EmptyRingHasNothingToPop) {
  owned_ring<std::uint64_t> q(4);
  std::uint64_t value = 0;
  EXPECT_FALSE(ring_try_pop<scope::device>(*q, value));
  EXPECT_FALSE(ring_peek<scope::device>(*q, 0, value));
}

TEST(Ring, PeekShowsUnconsumedEntriesWithoutTakingThem) {
  owned_ring<std::uint64_t> q(8);
  std::uint64_t credit = 0;
  for (std::uint64_t n = 0; n < 3; ++n)
    ring_push<scope::device>(*q, credit, payload_of(n), unexpected_wait);
  std::uint64_t value = 0;
  for (std::uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(ring_peek<scope::device>(*q, i, value));
    EXPECT_EQ(value, payload_of(i));
  }
  EXPECT_FALSE(ring_peek<scope::device>(*q, 3, value));
  ASSERT_TRUE(ring_try_pop<scope::device>(*q, value));
  ASSERT_TRUE(ring_peek<scope::device>(*q, 0, value));
  EXPECT_EQ(value, payload_of(1));
  EXPECT_EQ(pop_all(*q), (std::vector<std::uint64_t>{payload_of(1), payload_of(2)}));
}

// Tickets are handed out in order but may be published out of order; the
// consumer must not skip an unpublished head.
TEST(Ring, ConsumerWaitsForUnpublishedHead) {
  owned_ring<std::uint64_t> q(8);
  std::uint64_t credit_a = 0;
  std::uint64_t credit_b = 0;
  const std::uint64_t first = ring_reserve<scope::device>(*q, credit_a, unexpected_wait);
  const std::uint64_t second = ring_reserve<scope::device>(*q, credit_b, unexpected_wait);
  ASSERT_EQ(first, 0u);
  ASSERT_EQ(second, 1u);
  ring_publish<scope::device>(*q, q->capacity, second, payload_of(1));

  std::uint64_t value = 0;
  EXPECT_FALSE(ring_try_pop<scope::device>(*q, value));
  EXPECT_FALSE(ring_peek<scope::device>(*q, 0, value));
  ASSERT_TRUE(ring_peek<scope::device>(*q, 1, value));
  EXPECT_EQ(value, payload_of(1));

  ring_publish<scope::device>(*q, q->capacity, first, payload_of(0));
  EXPECT_EQ(pop_all(*q), (std::vector<std::uint64_t>{payload_of(0), payload_of(1)}));
}

// Every push beyond the capacity finds the ring full. Its wait function spins
// a few times (the held entries must stay intact meanwhile) and then takes one
// entry, which is exactly the room the push needs.
TEST(Ring, FullRingMakesProducerWaitAndLosesNothing) {
  constexpr std::uint32_t capacity = 4;
  constexpr int spins_before_pop = 3;
  owned_ring<std::uint64_t> q(capacity);
  std::uint64_t credit = 0;
  for (std::uint64_t n = 0; n < capacity; ++n)
    ring_push<scope::device>(*q, credit, payload_of(n), unexpected_wait);

  std::vector<std::uint64_t> received;
  const std::uint64_t total = 5 * capacity;
  for (std::uint64_t n = capacity; n < total; ++n) {
    int waits = 0;
    ring_push<scope::device>(*q, credit, payload_of(n), [&] {
      if (++waits > 10 * spins_before_pop)
        throw std::logic_error("the producer kept waiting after the ring had room");
      for (std::uint64_t i = 0; i < capacity; ++i) {
        std::uint64_t held = 0;
        EXPECT_TRUE(ring_peek<scope::device>(*q, i, held));
        EXPECT_EQ(held, payload_of(received.size() + i)) << "a held entry was overwritten";
      }
      if (waits < spins_before_pop) return;
      std::uint64_t value = 0;
      if (!ring_try_pop<scope::device>(*q, value))
        throw std::logic_error("the producer waits on a ring with nothing to pop");
      received.push_back(value);
    });
    EXPECT_EQ(waits, spins_before_pop) << "push " << n;
  }
  for (std::uint64_t value : pop_all(*q)) received.push_back(value);

  ASSERT_EQ(received.size(), total);
  for (std::uint64_t n = 0; n < total; ++n) EXPECT_EQ(received[n], payload_of(n)) << "entry " << n;
}

// The producer's copy of `consumed` is refreshed only when a ticket would not
// fit by the stale copy; while there is room it stays stale.
TEST(Ring, CreditIsReReadOnlyWhenTicketWouldNotFit) {
  owned_ring<std::uint64_t> q(4);
  std::uint64_t credit = 0;
  const auto push = [&](std::uint64_t n) {
    ring_push<scope::device>(*q, credit, payload_of(n), unexpected_wait);
  };
  const auto pop = [&] {
    std::uint64_t value = 0;
    EXPECT_TRUE(ring_try_pop<scope::device>(*q, value));
  };

  push(0);
  push(1);
  pop();
  pop();
  ASSERT_EQ(q->consumed, 2u);
  push(2);
  push(3);
  EXPECT_EQ(credit, 0u) << "tickets 2 and 3 fit by the stale count, no refresh needed";

  push(4);  // 4 - 0 >= capacity: refresh, and the ring has room
  EXPECT_EQ(credit, 2u);

  pop();
  ASSERT_EQ(q->consumed, 3u);
  push(5);  // 5 - 2 < capacity
  EXPECT_EQ(credit, 2u);
  push(6);  // 6 - 2 >= capacity: refresh
  EXPECT_EQ(credit, 3u);

  EXPECT_EQ(pop_all(*q), (std::vector<std::uint64_t>{payload_of(3), payload_of(4), payload_of(5),
                                                     payload_of(6)}));
}

struct stress_entry {
  std::uint32_t producer;
  std::uint32_t index;
  std::uint64_t check;  // derived from the two above: a torn payload breaks it
};

std::uint64_t check_of(std::uint32_t producer, std::uint32_t index) {
  return payload_of((std::uint64_t{producer} << 32) | index);
}

TEST(RingStress, FourProducersOneConsumerReceiveEverythingOnceInOrder) {
  constexpr std::uint32_t producers = 4;
  constexpr std::uint32_t per_producer = 20000;
  constexpr std::uint64_t total = std::uint64_t{producers} * per_producer;
  owned_ring<stress_entry> q(8);

  // Set when the consumer gives up, so producers stuck on a full ring leave.
  std::atomic<bool> abandoned{false};
  struct abandoned_run {};
  std::vector<std::thread> threads;
  for (std::uint32_t p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      std::uint64_t credit = 0;
      try {
        for (std::uint32_t i = 0; i < per_producer; ++i)
          ring_push<scope::device>(*q, credit, stress_entry{p, i, check_of(p, i)}, [&] {
            if (abandoned.load()) throw abandoned_run{};
            std::this_thread::yield();
          });
      } catch (const abandoned_run&) {
      }
    });
  }

  // This thread is the one consumer.
  std::vector<std::uint32_t> next_index(producers, 0);
  std::uint64_t received = 0;
  std::string first_error;
  // A lost entry stalls the consumer at its slot forever; give up after a while
  // without progress.
  constexpr auto stall_limit = std::chrono::seconds(10);
  auto last_progress = std::chrono::steady_clock::now();
  while (received < total && first_error.empty()) {
    stress_entry e{};
    if (!ring_try_pop<scope::device>(*q, e)) {
      if (std::chrono::steady_clock::now() - last_progress > stall_limit)
        first_error = "no entry for 10 s after " + std::to_string(received);
      std::this_thread::yield();
      continue;
    }
    last_progress = std::chrono::steady_clock::now();
    if (e.producer >= producers || e.index != next_index[e.producer] ||
        e.check != check_of(e.producer, e.index)) {
      first_error = "entry " + std::to_string(received) + ": producer " +
                    std::to_string(e.producer) + ", index " + std::to_string(e.index);
      break;
    }
    ++next_index[e.producer];
    ++received;
  }
  abandoned = received < total;
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(first_error, "");
  EXPECT_EQ(received, total);
  for (std::uint32_t p = 0; p < producers; ++p) EXPECT_EQ(next_index[p], per_producer);
  stress_entry extra{};
  EXPECT_FALSE(ring_try_pop<scope::device>(*q, extra));
}

// A command slot's words each carry the sequence number: a GPU stores them
// without ordering, so the engine takes the slot only when every word has
// arrived, and then gets the command byte for byte.
TEST(CommandSlot, IsTakenOnlyOnceEveryWordCarriesItsSequenceNumber) {
  using grma::detail::remote_command;
  owned_ring<remote_command> q(2);
  std::uint64_t credit = 0;
  remote_command c{};
  c.op = grma::detail::remote_op::put_notify;
  c.inline_bytes = 56;
  c.origin = 7;
  c.target = 3;
  c.tag = -1;
  c.offset = 0x1122334455667788ull;
  c.bytes = 56;
  for (std::uint32_t i = 0; i < grma::detail::remote_inline_bytes; ++i) c.data[i] = static_cast<unsigned char>(i * 37 + 1);
  remote_command out{};
  for (int n = 0; n < 2; ++n) {  // a lap, so the next entry's slot holds an older one's words
    ring_push<scope::device>(*q, credit, c, unexpected_wait);
    ASSERT_TRUE(ring_try_pop<scope::device>(*q, out));
  }
  ring_push<scope::device>(*q, credit, c, unexpected_wait);  // ticket 2, slot 0
  // One word (the last of its data) still the first lap's.
  auto& slot = q->slots()[0];
  const std::uint64_t arrived = slot.word[29];
  slot.word[29] = grma::detail::sequence_word(1, static_cast<std::uint32_t>(arrived));
  EXPECT_FALSE(ring_try_pop<scope::device>(*q, out));
  slot.word[29] = arrived;
  out = remote_command{};
  ASSERT_TRUE(ring_try_pop<scope::device>(*q, out));
  EXPECT_EQ(std::memcmp(&out, &c, sizeof c), 0);
}

}  // namespace
