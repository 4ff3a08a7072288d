// How a job's processes become nodes when some GPUs of a host cannot reach
// each other peer to peer (split_by_reach), how many cores a control
// group's CPU quota leaves a process (quota_cores), and how its waits pass
// their turns (wait_style_for).
#include "runtime/launch.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

// A made-up /sys/fs/cgroup and /proc/self/cgroup in a folder of their own.
class fake_groups {
 public:
  fake_groups()
      : root_(std::filesystem::temp_directory_path() /
              ("grma-quota-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "mounts");
  }
  ~fake_groups() { std::filesystem::remove_all(root_); }
  void write(const std::string& file, const std::string& text) const {
    const std::filesystem::path path = root_ / file;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  double cores(const std::string& self) const {
    write("self", self);
    return grma::detail::quota_cores((root_ / "self").string(), (root_ / "mounts").string());
  }

 private:
  std::filesystem::path root_;
};

TEST(QuotaCores, ReadsCgroupV2sCpuMaxAsAFractionOfCores) {
  fake_groups g;
  g.write("mounts/job/cpu.max", "250000 100000\n");
  EXPECT_DOUBLE_EQ(g.cores("0::/job\n"), 2.5);
  g.write("mounts/job/cpu.max", "50000 100000\n");  // Kubernetes' 500m
  EXPECT_DOUBLE_EQ(g.cores("0::/job\n"), 0.5);
  g.write("mounts/job/cpu.max", "max 100000\n");
  EXPECT_EQ(g.cores("0::/job\n"), 0);
  g.write("mounts/job/cpu.max", "1e300 1\n");  // counted up to a million cores
  EXPECT_EQ(g.cores("0::/job\n"), 1e6);
}

TEST(QuotaCores, TheLeastQuotaOnTheWayToTheRootLimits) {
  fake_groups g;
  g.write("mounts/cpu.max", "800000 100000\n");  // a namespace's root has one
  g.write("mounts/outer/cpu.max", "300000 100000\n");
  g.write("mounts/outer/inner/cpu.max", "max 100000\n");
  EXPECT_EQ(g.cores("0::/outer/inner\n"), 3);
  EXPECT_EQ(g.cores("0::/\n"), 8);
  // A group whose folder is not there (v1 in a container without a cgroup
  // namespace: the host's path, the container's group mounted as the root).
  EXPECT_EQ(g.cores("0::/host/path/of/the/container\n"), 8);
}

TEST(QuotaCores, ReadsCgroupV1sQuotaOverPeriodInTheCpuControllersFolder) {
  fake_groups g;
  g.write("mounts/cpu,cpuacct/job/cpu.cfs_quota_us", "400000\n");
  g.write("mounts/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  // Not the cpu controller's: memory, cpuacct alone, a named hierarchy.
  for (const char* other : {"memory", "cpuacct", "name=systemd"}) {
    g.write(std::string("mounts/") + other + "/job/cpu.cfs_quota_us", "100000\n");
    g.write(std::string("mounts/") + other + "/job/cpu.cfs_period_us", "100000\n");
  }
  EXPECT_EQ(g.cores("12:memory:/job\n3:cpuacct:/job\n1:name=systemd:/job\n"), 0);
  EXPECT_EQ(g.cores("12:memory:/job\n4:cpu,cpuacct:/job\n1:name=systemd:/job\n0::/\n"), 4);
  g.write("mounts/cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ(g.cores("12:memory:/job\n4:cpu,cpuacct:/job\n"), 0);
}

TEST(QuotaCores, NoQuotaWhereTheFilesAreMissingOrUnreadable) {
  fake_groups g;
  EXPECT_EQ(g.cores("0::/nowhere\n"), 0);
  EXPECT_EQ(g.cores("not a cgroup line\n"), 0);
  g.write("mounts/job/cpu.max", "garbage\n");
  EXPECT_EQ(g.cores("0::/job\n"), 0);
}

using grma::waits_kind;
using grma::detail::wait_style_for;

TEST(WaitStyleFor, SpinsWithACoreForEachPollingThreadOfTheNodesProcesses) {
  // polling, sharing, machine, affinity, quota
  EXPECT_EQ(wait_style_for(4, 2, 8, 8, 0), waits_kind::spin);
  EXPECT_EQ(wait_style_for(5, 2, 8, 8, 0), waits_kind::yield);  // 10 threads on the node
}

TEST(WaitStyleFor, ABoundProcessHasItsCoresToItself) {
  EXPECT_EQ(wait_style_for(4, 2, 8, 4, 0), waits_kind::spin);
  EXPECT_EQ(wait_style_for(4, 2, 8, 2, 0), waits_kind::yield);
}

TEST(WaitStyleFor, AQuotaMustLeaveACoreBesideEveryPollingThreadOfTheNode) {
  EXPECT_EQ(wait_style_for(2, 1, 64, 64, 3), waits_kind::spin);
  EXPECT_EQ(wait_style_for(2, 1, 64, 64, 2.5), waits_kind::sleep);
  EXPECT_EQ(wait_style_for(1, 1, 64, 64, 0.5), waits_kind::sleep);
  EXPECT_EQ(wait_style_for(32, 1, 64, 64, 2), waits_kind::sleep);
  EXPECT_EQ(wait_style_for(2, 2, 64, 64, 4), waits_kind::sleep);
  EXPECT_EQ(wait_style_for(2, 2, 64, 64, 5), waits_kind::spin);
}

TEST(WaitStyleFor, BoundProcessesShareTheQuotaStill) {
  // mpirun's two processes, each bound to a core, under a quota of one.
  EXPECT_EQ(wait_style_for(1, 2, 64, 1, 1), waits_kind::sleep);
  EXPECT_EQ(wait_style_for(4, 2, 64, 4, 8), waits_kind::sleep);
  EXPECT_EQ(wait_style_for(4, 2, 64, 4, 9), waits_kind::spin);
  // Bound to fewer cores than it needs under a quota that would do: the
  // affinity limits, and the waits only yield.
  EXPECT_EQ(wait_style_for(4, 1, 64, 2, 8), waits_kind::yield);
}

}  // namespace
