// How a job's processes become nodes when some GPUs of a host cannot reach
// each other peer to peer (split_by_reach).
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "runtime/launch.hpp"

namespace {

using grma::detail::split_by_reach;

TEST(SplitByReach, KeepsHostsWhoseProcessesAllReachEachOther) {
  const std::vector<int> hosts{0, 0, 1, 1};
  EXPECT_EQ(split_by_reach(hosts, [](int, int) { return true; }), hosts);
}

TEST(SplitByReach, PairsWithoutPeerAccessLandOnDifferentNodes) {
  // One host of four GPUs in two NVLink pairs: 0-1 and 2-3.
  auto paired = [](int p, int q) { return p / 2 == q / 2; };
  EXPECT_EQ(split_by_reach({0, 0, 0, 0}, paired), (std::vector<int>{0, 0, 1, 1}));
  // No pair reaches another: every process is a node.
  EXPECT_EQ(split_by_reach({0, 0, 0}, [](int p, int q) { return p == q; }),
            (std::vector<int>{0, 1, 2}));
}

TEST(SplitByReach, ReachMustHoldBothWaysAndForEveryMember) {
  // 2 reaches 0 but 0 does not reach 2; 3 reaches 0 but not 1.
  const std::set<std::pair<int, int>> missing{{0, 2}, {1, 3}, {3, 1}};
  auto reaches = [&](int p, int q) { return missing.count({p, q}) == 0; };
  EXPECT_EQ(split_by_reach({0, 0, 0, 0}, reaches), (std::vector<int>{0, 0, 1, 1}));
}

TEST(SplitByReach, NeverJoinsProcessesOfDifferentHosts) {
  EXPECT_EQ(split_by_reach({0, 1, 0, 1}, [](int, int) { return true; }),
            (std::vector<int>{0, 1, 0, 1}));
  // Numbered by first process: host 1's split groups come after host 0's first.
  auto odd_alone = [](int p, int q) { return p == q || (p % 2 == 0 && q % 2 == 0) || p == 1 || q == 1; };
  EXPECT_EQ(split_by_reach({0, 1, 1, 1}, odd_alone), (std::vector<int>{0, 1, 1, 2}));
}

}  // namespace
