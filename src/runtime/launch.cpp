#include "launch.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grma/error.hpp"

namespace grma::detail {
namespace {
[[noreturn]] void bad(const std::string& message) {
  throw error(errc::invalid_config, -1, call::runtime, "grma: " + message);
}
}  // namespace

void check_launch_options(const launch_options& o) {
  if (o.ranks_per_device < 0)
    bad("ranks_per_device " + std::to_string(o.ranks_per_device) + " is negative");
  if (o.threads_per_rank < 0)
    bad("threads_per_rank " + std::to_string(o.threads_per_rank) + " is negative");
  if (o.userdata_size != 0 && o.userdata == nullptr)
    bad("userdata is null but userdata_size is " + std::to_string(o.userdata_size));
}

rank_info job_layout(int ranks_per_device, int threads_per_rank, int devices, int process,
                     int processes, int first_device) {
  rank_info info;
  info.rank_responsible = ranks_per_device * devices;
  info.rank_count = info.rank_responsible * processes;
  info.rank_start = info.rank_responsible * process;
  info.ranks_per_device = ranks_per_device;
  info.threads_per_rank = threads_per_rank;
  info.device_index = first_device;
  info.device_count = devices * processes;
  info.node_index = 0;
  info.node_count = 1;
  info.process_index = process;
  info.process_count = processes;
  return info;
}

std::uint64_t agree_on_shape(const process_group& group, const settings& s,
                             int ranks_per_device, int devices_per_process,
                             std::uint64_t userdata_size) {
  constexpr int fields = 8;
  const char* names[fields] = {"ranks per device", "devices per process (GRMA_DEVICES)",
                               "GRMA_HEAP_SIZE", "GRMA_SYMMETRIC_SIZE", "GRMA_QUEUE_CAPACITY",
                               "GRMA_MATCH_CAPACITY", "GRMA_MAX_WINDOWS", "userdata size"};
  const std::uint64_t mine[fields] = {std::uint64_t(ranks_per_device),
                                      std::uint64_t(devices_per_process), s.heap_size,
                                      s.symmetric_size, s.queue_capacity, s.match_capacity,
                                      s.max_windows, userdata_size};
  std::vector<std::uint64_t> all(std::size_t(fields) * std::size_t(group.count()));
  group.all_gather(mine, sizeof mine, all.data());
  std::uint64_t most_userdata = 0;
  for (int p = 0; p < group.count(); ++p) {
    const std::uint64_t* theirs = &all[std::size_t(fields) * std::size_t(p)];
    most_userdata = std::max(most_userdata, theirs[fields - 1]);
    for (int f = 0; f < fields - 1; ++f)
      if (theirs[f] != all[std::size_t(f)])
        bad("processes 0 and " + std::to_string(p) + " differ in " + names[f] + ": " +
            std::to_string(all[std::size_t(f)]) + " and " + std::to_string(theirs[f]));
  }
  return most_userdata;
}

std::vector<int> split_by_reach(const std::vector<int>& node_of,
                                const std::function<bool(int, int)>& reaches) {
  std::vector<std::vector<int>> groups;  // members, in process order
  std::vector<int> group_of(node_of.size());
  for (int p = 0; p < int(node_of.size()); ++p) {
    std::size_t g = 0;
    for (; g < groups.size(); ++g) {
      const std::vector<int>& members = groups[g];
      if (node_of[std::size_t(members[0])] != node_of[std::size_t(p)]) continue;
      if (std::all_of(members.begin(), members.end(),
                      [&](int m) { return reaches(p, m) && reaches(m, p); }))
        break;
    }
    if (g == groups.size()) groups.emplace_back();
    groups[g].push_back(p);
    group_of[std::size_t(p)] = int(g);
  }
  return group_of;
}

namespace {

// The cores a group's CPU quota allows where one is set there: cgroup v2's
// cpu.max ("max 100000" or "200000 100000"), v1's cpu.cfs_quota_us (-1 for
// none) over cpu.cfs_period_us. 0 where none is.
double quota_in(const std::string& group, bool v2) {
  double quota = 0, period = 0;
  if (v2) {
    std::ifstream max(group + "/cpu.max");
    std::string first;
    if (!(max >> first >> period) || first == "max") return 0;
    quota = std::atof(first.c_str());
  } else {
    std::ifstream q(group + "/cpu.cfs_quota_us"), p(group + "/cpu.cfs_period_us");
    if (!(q >> quota) || !(p >> period)) return 0;
  }
  return quota > 0 && period > 0 ? quota / period : 0;
}

}  // namespace

double quota_cores(const std::string& groups, const std::string& mounts) {
  std::ifstream self(groups);
  std::string line;
  double least = 0;
  while (std::getline(self, line)) {  // hierarchy:controllers:path
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const bool v2 = controllers.empty();
    std::stringstream list(controllers);
    std::string controller;
    bool cpu = v2;
    while (!cpu && std::getline(list, controller, ',')) cpu = controller == "cpu";
    if (!cpu) continue;
    const std::string root = v2 ? mounts : mounts + "/" + controllers;
    for (std::string path = line.substr(second + 1);;) {
      const double cores = quota_in(root + (path == "/" ? "" : path), v2);
      if (cores > 0 && (least == 0 || cores < least)) least = cores;
      const std::size_t slash = path.rfind('/');
      if (path == "/" || slash == std::string::npos) break;
      path = slash == 0 ? "/" : path.substr(0, slash);
    }
  }
  // At most a million: a quota may be any number, and a core count is an int.
  return std::min(least, 1e6);
}

waits_kind wait_style_for(int polling, int sharing, int machine, int affinity, double quota) {
  const bool unbound = affinity >= machine;
  const bool cores_enough = affinity >= polling * (unbound ? sharing : 1);
  const bool quota_enough = quota == 0 || quota >= double(polling) * sharing + 1;
  if (cores_enough && quota_enough) return waits_kind::spin;
  return quota_enough ? waits_kind::yield : waits_kind::sleep;
}

waits_kind choose_wait_style(int polling, const std::string& which, int process, int sharing) {
  // Online cores, which the affinity mask does not limit (as it may
  // hardware_concurrency).
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int machine = online > 0 ? int(online) : int(std::thread::hardware_concurrency());
  int affinity = machine;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) affinity = CPU_COUNT(&set);
  const double quota = quota_cores("/proc/self/cgroup", "/sys/fs/cgroup");
  const waits_kind style = wait_style_for(polling, sharing, machine, affinity, quota);
  // Where the affinity limits it, the user can lift it: say so. A quota
  // is the container's, and the waits sleep under it.
  static std::atomic<bool> said{false};
  if (affinity < polling && affinity < machine && !said.exchange(true))
    std::fprintf(stderr,
                 "grma: process %d may use %d of this machine's %d cores (its CPU affinity) for %d "
                 "threads that wait by polling (%s): every wait shares them. Start it unbound "
                 "(mpirun --bind-to none) or with a core for each thread (mpirun --map-by "
                 "slot:PE=%d).\n",
                 process, affinity, machine, polling, which.c_str(), polling);
  return style;
}

}  // namespace grma::detail
