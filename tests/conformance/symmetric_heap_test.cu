// The symmetric heap, portable: alloc_symmetric gives every rank a block at
// the same offset of its slice, calloc_symmetric zeroes it, the alignment
// holds, ptr reaches another rank's copy where its memory is reachable (and
// only there), and free_symmetric makes the room reusable; blocks of
// teams likewise among their members, apart from other teams' and world's.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "support.hpp"

namespace conformance {
namespace {

class SymmetricHeap : public testing::TestWithParam<config> {};

constexpr int zeroed_words = 5;

struct symmetric_blocks {
  std::size_t bytes;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* a = static_cast<std::uint8_t*>(r.alloc_symmetric(bytes));
    auto* b = static_cast<std::uint64_t*>(r.calloc_symmetric(zeroed_words, sizeof(std::uint64_t)));
    auto* c = static_cast<std::uint8_t*>(r.alloc_symmetric(256, 4096));
    CONF_EXPECT(r, rec, reinterpret_cast<std::uintptr_t>(c) % 4096 == 0, 1,
                reinterpret_cast<std::uintptr_t>(c) % 4096, 0);
    CONF_EXPECT(r, rec, r.ptr(a, me) == a, 2, 0, 0);
    for (int i = 0; i < zeroed_words; ++i) CONF_EXPECT(r, rec, b[i] == 0, 3, i, b[i]);
    fill(r, a, bytes, mix(std::uint64_t(me), 1));
    r.barrier(grma::world);
    // Every reachable rank's copy, at the same offsets, holds its pattern.
    int reached = 0;
    for (int t = 0; t < n; ++t) {
      const std::uint8_t* theirs = r.ptr(a, t);
      if (theirs == nullptr) continue;
      ++reached;
      CONF_EXPECT(r, rec, r.ptr(b, t) - reinterpret_cast<const std::uint64_t*>(theirs) ==
                              b - reinterpret_cast<std::uint64_t*>(a),
                  4, t, 0);
      CONF_EXPECT(r, rec, r.ptr(c, t) - theirs == c - a, 5, t, 0);
      if (t % 7 == me % 7) CONF_CHECK_PATTERN(r, rec, theirs, bytes, mix(std::uint64_t(t), 1), 0, t);
    }
    tally(r, rec, 0, unsigned(reached));
    r.barrier(grma::world);
    // Freed room comes back first fit: the same blocks again.
    r.free_symmetric(c);
    r.free_symmetric(b);
    void* b2 = r.alloc_symmetric(zeroed_words * sizeof(std::uint64_t));
    CONF_EXPECT(r, rec, b2 == b, 6, 0, 0);
    r.free_symmetric(b2);
    r.free_symmetric(a);
    void* a2 = r.alloc_symmetric(bytes);
    CONF_EXPECT(r, rec, a2 == a, 7, 0, 0);
    r.free_symmetric(a2);
    r.free_symmetric(nullptr);
  }
};

TEST_P(SymmetricHeap, BlocksHaveOneOffsetOnEveryRank) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(symmetric_blocks{});
  j.prepare();
  const symmetric_blocks program{min_of<std::size_t>(j.symmetric_slice() / 4, 40000) + 3};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    // Ranks reach their node's ranks: all of them on one node.
    const char* nodes = std::getenv("CONFORMANCE_NODES");
    if (nodes == nullptr)
      j.expect_counts(
          0, [&](int) { return unsigned(n); }, "ranks reached");
  }
}

// Blocks of teams: the parent's (the node's team, or world's, whose teams
// span nodes where the job does) even and odd members (two teams that
// allocate at the same time) each allocate over their team; a member reads
// the next member's copy at the same offset, the two teams' blocks and a
// world block allocated while they live do not overlap (offsets measured
// from a world block, the same in every slice), and calloc zeroes. Other
// members' memory is read with get and g, which reach every node.
struct team_blocks {
  bool over_world;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const grma::team parent = over_world ? grma::team_world : grma::team_node;
    // This rank's team block's offset and size from the anchor, for its
    // neighbour of the other team to read.
    auto* range = static_cast<std::uint64_t*>(r.calloc_symmetric(2, sizeof(std::uint64_t)));
    const auto* anchor = reinterpret_cast<const std::uint8_t*>(range);
    const int s = r.team_size(parent), at = r.team_rank(parent);
    grma::team even = r.team_split_strided(parent, 0, 2, (s + 1) / 2);
    grma::team odd = s > 1 ? r.team_split_strided(parent, 1, 2, s / 2) : grma::team_none;
    grma::team mine = at % 2 == 0 ? even : odd;
    const std::size_t bytes = at % 2 == 0 ? 3000 : 5000;
    auto* block = static_cast<std::uint8_t*>(r.alloc_symmetric(mine, bytes));
    auto* zeroed = static_cast<std::uint64_t*>(r.calloc_symmetric(mine, zeroed_words, sizeof(std::uint64_t)));
    for (int i = 0; i < zeroed_words; ++i) CONF_EXPECT(r, rec, zeroed[i] == 0, 1, i, zeroed[i]);
    const int me = r.rank(grma::world);
    fill(r, block, bytes, mix(std::uint64_t(me), 2));
    if (r.thread() == 0) {
      range[0] = std::uint64_t(block - anchor);
      range[1] = bytes;
    }
    r.barrier(parent);
    // The next member's copy, at the same offset.
    const int k = r.team_rank(mine), m = r.team_size(mine);
    const int next = r.team_translate(mine, (k + 1) % m, grma::team_world);
    auto* theirs = static_cast<std::uint8_t*>(r.alloc(bytes));
    r.get(theirs, block, bytes, next);
    CONF_CHECK_PATTERN(r, rec, theirs, bytes, mix(std::uint64_t(next), 2), 0, next);
    r.free(theirs);
    // The other team's block, as the neighbour of the other parity has it.
    const int other = at % 2 == 0 ? at + 1 : at - 1;
    const std::uint64_t mine_at = std::uint64_t(block - anchor);
    auto* w = static_cast<std::uint8_t*>(r.alloc_symmetric(4096));  // while both teams' blocks live
    const std::uint64_t world_at = std::uint64_t(w - anchor);
    CONF_EXPECT(r, rec, world_at + 4096 <= mine_at || mine_at + bytes <= world_at, 3, world_at, mine_at);
    if (other < s) {
      const int o = r.team_translate(parent, other, grma::team_world);
      std::uint64_t their_at = 0, their_bytes = 0;
      if (r.thread() == 0) {
        their_at = r.g(range, o);
        their_bytes = r.g(range + 1, o);
      }
      CONF_EXPECT(r, rec, their_at + their_bytes <= mine_at || mine_at + bytes <= their_at, 4, their_at, mine_at);
      CONF_EXPECT(r, rec, world_at + 4096 <= their_at || their_at + their_bytes <= world_at, 5, world_at,
                  their_at);
      tally(r, rec, 0);
    }
    r.barrier(parent);  // every rank has read the others' ranges
    r.free_symmetric(w);
    r.free_symmetric(mine, zeroed);
    r.free_symmetric(mine, block);
    r.free_symmetric(mine, nullptr);
    r.team_destroy(odd);
    r.team_destroy(even);
    r.free_symmetric(range);
  }
};

void check_team_blocks(bool over_world) {
  grma::runtime rt(suite_settings());
  job j(rt, testing::TestWithParam<config>::GetParam());
  const int n = j.resolve(team_blocks{over_world});
  j.prepare();
  if (j.run(team_blocks{over_world})) {
    j.expect_no_failures(__FILE__);
    // Every rank but an odd count's last has a neighbour of the other team
    // (world's numbering; node teams' across nodes are not counted).
    if (over_world || std::getenv("CONFORMANCE_NODES") == nullptr)
      j.expect_counts(
          0, [&](int rank) { return unsigned(n % 2 == 1 && rank == n - 1 ? 0 : 1); },
        "neighbours checked");
  }
}

TEST_P(SymmetricHeap, TeamBlocksHaveOneOffsetOnEveryMember) { check_team_blocks(false); }
TEST_P(SymmetricHeap, TeamBlocksAcrossNodesHaveOneOffsetOnEveryMember) { check_team_blocks(true); }

// Nodes whose tables differ: the ranks of world rank 0's node allocate a
// block over their node's team at the slice's first gap; the other nodes
// leave that gap free and take the room after it. A world block allocated
// while they live must overlap neither (no node's first fit is right for the
// others), and must work on every rank (each puts into its neighbour's copy,
// across nodes where the job spans them); then a world split, whose slot
// the nodes must agree on too, as tables differ there as well.
struct differing_tables {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* anchor = static_cast<unsigned char*>(r.calloc_symmetric(1, 64));
    const bool first_node = r.ptr(anchor, 0) != nullptr;
    unsigned char* node_block = static_cast<unsigned char*>(r.alloc_symmetric(grma::team_node, 4096));
    grma::team node_split = grma::team_none;
    if (!first_node) {  // the same room, one block further on
      unsigned char* gap = node_block;
      node_block = static_cast<unsigned char*>(r.alloc_symmetric(grma::team_node, 4096));
      r.free_symmetric(grma::team_node, gap);
      node_split = r.team_split_strided(grma::team_node, 0, 1, r.team_size(grma::team_node));
    }
    auto* world_block = static_cast<unsigned char*>(r.alloc_symmetric(4096));
    CONF_EXPECT(r, rec, world_block + 4096 <= node_block || node_block + 4096 <= world_block, 1,
                world_block - anchor, node_block - anchor);
    const int next = (me + 1) % n;
    auto* mine = static_cast<unsigned char*>(r.alloc(256));
    fill(r, mine, 256, mix(std::uint64_t(me), 7));
    r.put(world_block + 1024, mine, 256, next);
    r.free(mine);
    r.barrier(grma::world);
    const int before = (me + n - 1) % n;
    CONF_CHECK_PATTERN(r, rec, world_block + 1024, 256, mix(std::uint64_t(before), 7), 0, before);
    grma::team all = r.team_split_strided(grma::team_world, 0, 1, n);
    auto* count = static_cast<long long*>(r.alloc_symmetric(all, sizeof(long long)));
    if (r.thread() == 0) *count = 1;
    r.sync_threads();
    r.allreduce(all, count, count, 1, grma::reduce_op::sum);
    CONF_EXPECT(r, rec, *count == n, 2, *count, n);
    tally(r, rec, 0);
    r.free_symmetric(all, count);
    r.team_destroy(all);
    r.free_symmetric(world_block);
    r.team_destroy(node_split);
    r.free_symmetric(grma::team_node, node_block);
    r.free_symmetric(anchor);
  }
};

TEST_P(SymmetricHeap, NodesWithDifferentTablesAgreeOnWorldBlocksAndTeams) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(differing_tables{});
  j.prepare();
  if (j.run(differing_tables{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "ranks checked");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, SymmetricHeap, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
