// The window table: slot claiming, generations and handle lookup.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "grma/detail/device_state.hpp"

namespace {

using grma::detail::window_check;
using grma::detail::window_entry;
using grma::detail::window_lookup;
using grma::detail::window_slot;
using grma::detail::window_table;
using grma::detail::window_table_find;
using grma::detail::window_table_find_across_nodes;
using grma::detail::window_table_release;

// What window_create does with the table: a free slot, then taking it.
std::uint32_t window_table_claim(const window_table& t, std::uint32_t comm, std::uint32_t comm_size) {
  const std::uint32_t s = window_table_find(t);
  if (s != t.capacity) grma::detail::window_slot_take(t, s, comm, comm_size);
  return s;
}

// A table with its slots and entries, zeroed as the runtime creates it.
class owned_window_table {
 public:
  owned_window_table(std::uint32_t capacity, std::uint32_t max_ranks)
      : slots_(capacity),
        entries_(std::size_t(capacity) * max_ranks),
        states_(capacity),
        table_{capacity, max_ranks, slots_.data(), entries_.data(), &lock_, states_.data()} {}

  window_table& table() { return table_; }
  const window_slot& slot(std::uint32_t i) const { return slots_.at(i); }
  const window_entry* first_entry() const { return entries_.data(); }
  std::uint64_t state(std::uint32_t i) const { return states_.at(i); }

 private:
  std::vector<window_slot> slots_;
  std::vector<window_entry> entries_;
  std::vector<std::uint64_t> states_;
  std::uint32_t lock_ = 0;
  window_table table_;
};

TEST(WindowTable, ClaimTakesSlotsInOrderUntilFull) {
  owned_window_table windows(4, 3);
  for (std::uint32_t i = 0; i < 4; ++i) {
    ASSERT_EQ(window_table_claim(windows.table(), 1, 3 + i), i);
    EXPECT_EQ(windows.slot(i).generation, 2u) << "device windows have even generations";
    EXPECT_EQ(windows.slot(i).active, 1u);
    EXPECT_EQ(windows.slot(i).comm, 1u);
    EXPECT_EQ(windows.slot(i).comm_size, 3 + i);
  }
  EXPECT_EQ(window_table_claim(windows.table(), 0, 2), 4u) << "a full table returns its capacity";
}

TEST(WindowTable, ReleasedSlotIsReusedWithTheNextGeneration) {
  owned_window_table windows(4, 2);
  for (int i = 0; i < 4; ++i) window_table_claim(windows.table(), 0, 2);
  window_table_release(windows.table(), 2);
  window_table_release(windows.table(), 1);
  EXPECT_EQ(windows.slot(1).active, 0u);
  EXPECT_EQ(windows.slot(1).generation, 1u) << "release keeps the generation";
  EXPECT_EQ(windows.state(1), (std::uint64_t{1} << 32) | (1u << 17) | (1u << 1)) << "the state word follows release";
  EXPECT_EQ(windows.state(3), (std::uint64_t{1} << 32) | (1u << 17) | (1u << 1) | 1u)
      << "takes high, world claims from bit 17, generation from bit 1, active in bit 0";

  EXPECT_EQ(window_table_claim(windows.table(), 0, 2), 1u) << "the first free slot";
  EXPECT_EQ(windows.slot(1).generation, 3u) << "world windows have odd generations";
  EXPECT_EQ(windows.state(1), (std::uint64_t{2} << 32) | (2u << 17) | (3u << 1) | 1u);
  EXPECT_EQ(window_table_claim(windows.table(), 0, 2), 2u);
  EXPECT_EQ(windows.slot(2).generation, 3u);
  EXPECT_EQ(window_table_claim(windows.table(), 0, 2), 4u);
  EXPECT_EQ(windows.slot(0).generation, 1u);
}

// A network engine that reads only a free slot's state word learns what
// the slot itself says of the next world window.
TEST(WindowTable, StateWordHoldsWhatAFreeSlotTells) {
  owned_window_table windows(1, 2);
  for (std::uint32_t comm : {0u, 1u, 0u, 0u, 1u}) {
    ASSERT_EQ(window_table_claim(windows.table(), comm, 2), 0u);
    window_table_release(windows.table(), 0);
    const window_slot s = grma::detail::window_slot_of_state(windows.state(0));
    EXPECT_EQ(s.active, 0u);
    EXPECT_EQ(s.generation, windows.slot(0).generation);
    EXPECT_EQ(s.takes, windows.slot(0).takes);
    EXPECT_EQ(grma::detail::window_next_generation(s, 0),
              grma::detail::window_next_generation(windows.slot(0), 0));
  }
}

TEST(WindowTable, LookupTellsLiveFreedAndNeverCreatedApart) {
  owned_window_table windows(4, 2);
  EXPECT_EQ(window_lookup(windows.table(), 0, 1), window_check::not_created) << "never used slot";

  ASSERT_EQ(window_table_claim(windows.table(), 0, 2), 0u);
  ASSERT_EQ(window_table_claim(windows.table(), 0, 2), 1u);
  EXPECT_EQ(window_lookup(windows.table(), 0, 1), window_check::ok);
  EXPECT_EQ(window_lookup(windows.table(), 1, 1), window_check::ok);

  window_table_release(windows.table(), 1);
  EXPECT_EQ(window_lookup(windows.table(), 1, 1), window_check::freed) << "inactive slot";
  ASSERT_EQ(window_table_claim(windows.table(), 0, 2), 1u);
  EXPECT_EQ(window_lookup(windows.table(), 1, 1), window_check::freed) << "stale generation";
  EXPECT_EQ(window_lookup(windows.table(), 1, 3), window_check::ok);

  EXPECT_EQ(window_lookup(windows.table(), 0, 0), window_check::not_created) << "generation 0";
  EXPECT_EQ(window_lookup(windows.table(), 2, 1), window_check::not_created) << "unused slot";
  EXPECT_EQ(window_lookup(windows.table(), 4, 1), window_check::not_created) << "past the table";
  EXPECT_EQ(window_lookup(windows.table(), 0xffffffffu, 1), window_check::not_created);
}

// Generations must fit the 16 high bits of a notification's window key, and 0
// means "never created": world windows run 1, 3, ..., 65533 and start again.
TEST(WindowTable, GenerationWrapsWithinSixteenBits) {
  owned_window_table windows(1, 1);
  for (std::uint32_t expected = 1; expected <= 0xfffd; expected += 2) {
    ASSERT_EQ(window_table_claim(windows.table(), 0, 1), 0u);
    ASSERT_EQ(windows.slot(0).generation, expected);
    window_table_release(windows.table(), 0);
  }
  ASSERT_EQ(window_table_claim(windows.table(), 0, 1), 0u);
  EXPECT_EQ(windows.slot(0).generation, 1u);
  EXPECT_EQ(window_lookup(windows.table(), 0, 1), window_check::ok);
  EXPECT_EQ(window_lookup(windows.table(), 0, 0xfffd), window_check::freed);
  // A network engine keeps its copy of a window while the state word stays:
  // the first window of generation 1 and this one must differ.
  EXPECT_EQ(windows.state(0), (std::uint64_t{32768} << 32) | (1u << 17) | (1u << 1) | 1u);
}

// Nodes of a job keep a table each and may hold different device windows; a
// world window's generation must not depend on them.
TEST(WindowTable, WorldGenerationsFollowWorldClaimsAlone) {
  owned_window_table with_device(1, 1), without(1, 1);
  for (owned_window_table* t : {&with_device, &without}) {
    ASSERT_EQ(window_table_claim(t->table(), 0, 1), 0u);
    window_table_release(t->table(), 0);
  }
  ASSERT_EQ(window_table_claim(with_device.table(), 1, 1), 0u);  // a device window in between
  EXPECT_EQ(with_device.slot(0).generation, 2u);
  window_table_release(with_device.table(), 0);
  for (owned_window_table* t : {&with_device, &without}) {
    ASSERT_EQ(window_table_claim(t->table(), 0, 1), 0u);
    EXPECT_EQ(t->slot(0).generation, 3u);
  }
}

// World windows of a job across nodes come from the top; the search stops
// at a window of another communicator rather than step over it.
TEST(WindowTable, WorldWindowsAcrossNodesTakeSlotsFromTheTop) {
  owned_window_table windows(4, 2);
  EXPECT_EQ(window_table_find_across_nodes(windows.table(), 0), 3u);
  grma::detail::window_slot_take(windows.table(), 3, 0, 2);
  EXPECT_EQ(window_table_find_across_nodes(windows.table(), 0), 2u) << "past the world's own window";
  EXPECT_EQ(window_table_claim(windows.table(), 1, 2), 0u) << "device windows from the bottom";
  grma::detail::window_slot_take(windows.table(), 2, 1, 2);  // a device window up high
  EXPECT_EQ(window_table_find_across_nodes(windows.table(), 0), 4u)
      << "a device window in the way: no slot";
}

TEST(WindowTable, EntriesAreOneRowOfMaxRanksPerSlot) {
  owned_window_table windows(3, 5);
  for (std::uint32_t slot = 0; slot < 3; ++slot)
    for (int rank = 0; rank < 5; ++rank)
      EXPECT_EQ(&windows.table().entry(slot, rank), windows.first_entry() + slot * 5 + rank);
}

}  // namespace
