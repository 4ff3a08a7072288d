// The symmetric heap's allocator: first fit over the slice (or from a
// candidate offset on), alignment in the slice, reuse of freed room, and its
// two ways of failing; the team table's slots as nodes agree on one; and the
// round words of the teams' barriers.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <grma/detail/symmetric_table.hpp>
#include <grma/detail/team_table.hpp>

namespace {

using grma::detail::symmetric_allocate;
using grma::detail::symmetric_block;
using grma::detail::symmetric_failure;
using grma::detail::symmetric_release;
constexpr auto released = grma::detail::symmetric_release_result::released;
constexpr auto not_found = grma::detail::symmetric_release_result::not_found;
constexpr auto not_owner = grma::detail::symmetric_release_result::not_owner;
using grma::detail::symmetric_table;

constexpr std::uint64_t none = ~std::uint64_t{0};

struct table_with_room {
  explicit table_with_room(std::uint32_t capacity) : blocks(capacity) {
    table = symmetric_table{capacity, &count, blocks.data()};
  }
  std::uint32_t count = 0;
  std::vector<symmetric_block> blocks;
  symmetric_table table{};
};

TEST(SymmetricTable, FirstFitInWholeLines) {
  table_with_room t(8);
  symmetric_failure why{};
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 100, 64, 0, why), 0u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 1, 64, 0, why), 128u);  // 100 bytes take two lines
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 0, 64, 0, why), 192u);  // a zero-byte block is a line
  EXPECT_EQ(t.count, 3u);
  EXPECT_EQ(symmetric_release(t.table, 128, 0), released);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 64, 64, 0, why), 128u);  // the freed line again
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 65, 64, 0, why), 256u);  // too large for any gap before
}

TEST(SymmetricTable, AlignsInTheSlice) {
  table_with_room t(8);
  symmetric_failure why{};
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, 64, 64, 0, why), 0u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, 64, 4096, 0, why), 4096u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, 64, 16, 0, why), 64u);  // 64 at least
  EXPECT_EQ(t.blocks[1].offset, 64u);  // kept in offset order
  EXPECT_EQ(t.blocks[2].offset, 4096u);
}

TEST(SymmetricTable, ReportsTheLargestGapWhenNothingFits) {
  table_with_room t(8);
  symmetric_failure why{};
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 1024, 64, 0, why), 0u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 1024, 64, 0, why), 1024u);
  EXPECT_EQ(symmetric_release(t.table, 0, 0), released);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 3000, 64, 0, why), none);
  EXPECT_EQ(why.largest_free, 2048u);  // after the second block; the first gap is 1024
}

// The largest block named is the largest one at the alignment asked: a
// gap whose start is not aligned gives up its first bytes, and a request of
// exactly what is named fits.
TEST(SymmetricTable, ReportsTheLargestGapAtTheAlignmentAsked) {
  table_with_room t(8);
  symmetric_failure why{};
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, 64, 64, 0, why), 0u);  // the gap starts at 64
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, 8192 - 64 - 192 + 1, 256, 0, why), none);
  EXPECT_EQ(why.largest_free, 8192u - 256);  // from 256: 64 .. 256 is lost to the alignment
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, why.largest_free, 256, 0, why), 256u);
}

TEST(SymmetricTable, KeepsTheReservedStart) {
  table_with_room t(4);
  symmetric_failure why{};
  EXPECT_EQ(symmetric_allocate(t.table, 8192, 16384, 64, 64, 0, why), 8192u);
  EXPECT_EQ(symmetric_allocate(t.table, 8192, 16384, 64, 4096, 0, why), 12288u);
  EXPECT_EQ(symmetric_allocate(t.table, 8192, 16384, 8192, 64, 0, why), none);
  EXPECT_EQ(why.largest_free, 4032u);  // between the two blocks
  table_with_room empty(4);
  EXPECT_EQ(symmetric_allocate(empty.table, 8192, 4096, 64, 64, 0, why), none);  // a slice with no room
  EXPECT_EQ(why.largest_free, 0u);
}

TEST(SymmetricTable, FullTableFails) {
  table_with_room t(2);
  symmetric_failure why{};
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 64, 64, 0, why), 0u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 64, 64, 0, why), 64u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 64, 64, 0, why), none);
  EXPECT_EQ(t.count, 2u);
}

TEST(SymmetricTable, ReleaseOfAnUnknownOffsetFails) {
  table_with_room t(4);
  symmetric_failure why{};
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 256, 64, 0, why), 0u);
  EXPECT_EQ(symmetric_release(t.table, 64, 0), not_found);
  EXPECT_EQ(symmetric_release(t.table, 0, 0), released);
  EXPECT_EQ(symmetric_release(t.table, 0, 0), not_found);
  EXPECT_EQ(t.count, 0u);
}

TEST(SymmetricTable, OnlyTheOwningTeamReleasesItsBlock) {
  table_with_room t(4);
  symmetric_failure why{};
  const std::uint64_t team = (std::uint64_t{7} << 32) | 3;  // generation 7, slot 3
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 64, 64, team, why), 0u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 4096, 64, 64, 0, why), 64u);
  EXPECT_EQ(symmetric_release(t.table, 0, 0), not_owner);     // world does not own the team's block
  EXPECT_EQ(symmetric_release(t.table, 64, team), not_owner);  // nor the team world's
  EXPECT_EQ(t.count, 2u);
  EXPECT_EQ(grma::detail::symmetric_blocks_of(t.table, team), 1u);
  EXPECT_EQ(grma::detail::symmetric_blocks_of(t.table, 0), 1u);
  EXPECT_EQ(symmetric_release(t.table, 0, team), released);
  EXPECT_EQ(symmetric_release(t.table, 64, 0), released);
  EXPECT_EQ(t.count, 0u);
}

// An agreement's candidate past live blocks: the first gap at or after it,
// never one before it.
TEST(SymmetricTable, FirstFitFromACandidateOffset) {
  table_with_room t(8);
  symmetric_failure why{};
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, 64, 64, 0, why), 0u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, 64, 64, 0, why), 64u);
  EXPECT_EQ(symmetric_allocate(t.table, 0, 8192, 64, 64, 0, why), 128u);
  EXPECT_EQ(symmetric_release(t.table, 64, 0), released);
  EXPECT_EQ(symmetric_allocate(t.table, 1024, 8192, 64, 64, 0, why), 1024u);  // not the gap at 64
  EXPECT_EQ(symmetric_allocate(t.table, 96, 8192, 64, 64, 0, why), 192u);     // 96..128 is too small
  EXPECT_EQ(symmetric_allocate(t.table, 64, 8192, 64, 64, 0, why), 64u);
  EXPECT_EQ(symmetric_allocate(t.table, 8000, 8192, 256, 64, 0, why), none);
  EXPECT_EQ(why.largest_free, 192u);  // from the candidate to the slice's end
}

TEST(TeamTable, FindsTheLowestFreeSlotFromACandidateAndSettlesAnAgreedOne) {
  grma::detail::team_slots t{};
  using grma::detail::team_slot_find;
  EXPECT_EQ(team_slot_find(t, 0), (std::uint64_t{3} << 32) | 1);  // after the predefined teams' slots
  EXPECT_EQ(team_slot_find(t, 5), (std::uint64_t{5} << 32) | 1);
  EXPECT_EQ(t.created, 0u);  // finding changes nothing
  grma::detail::team_slot_settle(t, 5, 9, 4);  // agreed with a generation another node proposed
  EXPECT_EQ(t.generation[5], 9u);
  EXPECT_EQ(t.members[5], 4u);
  EXPECT_EQ(team_slot_find(t, 5), (std::uint64_t{6} << 32) | 10);  // above every generation seen
  grma::detail::team_slot_free(t, 5);
  EXPECT_EQ(team_slot_find(t, 4), (std::uint64_t{4} << 32) | 10);
  for (std::uint32_t s = 0; s < grma::detail::max_teams; ++s) t.generation[s] = s < 31 ? 1u : 0u;
  EXPECT_EQ(team_slot_find(t, 0) >> 32, 31u);
  t.generation[31] = 1;
  EXPECT_EQ(team_slot_find(t, 0), 0u);  // every slot taken
}

TEST(TeamTable, RoundWordsCarryTheEpochsLow24BitsAndAClippedValue) {
  using grma::detail::team_round_word;
  using grma::detail::team_value_bits;
  using grma::detail::team_value_none;
  EXPECT_EQ(team_round_word(5, 77), (std::uint64_t{5} << team_value_bits) | 77);
  EXPECT_EQ(team_round_word((std::uint64_t{1} << 24) + 3, 0), std::uint64_t{3} << team_value_bits);
  EXPECT_EQ(team_round_word(1, ~std::uint64_t{0}) & team_value_none, team_value_none);  // none, not a carry
  EXPECT_EQ(team_round_word(1, ~std::uint64_t{0}) >> team_value_bits, 1u);
}

}  // namespace
