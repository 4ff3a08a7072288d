// The symmetric heap, portable: alloc_symmetric gives every rank a block at
// the same offset of its slice, calloc_symmetric zeroes it, the alignment
// holds, ptr reaches another rank's copy where its memory is reachable (and
// only there), and free_symmetric makes the room reusable.
#include <cstddef>
#include <cstdint>

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

INSTANTIATE_TEST_SUITE_P(Conformance, SymmetricHeap, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
