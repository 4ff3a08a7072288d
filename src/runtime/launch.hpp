// What every backend checks and reports the same way about a launch.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "grma/settings.hpp"
#include "grma/types.hpp"
#include "process_group.hpp"

namespace grma::detail {

// No negative counts; userdata given when it has a size. Throws grma::error.
void check_launch_options(const launch_options& options);

// The layout of a job of `processes` processes (one node) that each drive
// `devices` devices; this process is `process` and its first device is
// `first_device` on the node.
rank_info job_layout(int ranks_per_device, int threads_per_rank, int devices, int process,
                     int processes, int first_device);

// Collective: the processes of a job lay out their arenas alike, so the
// settings that shape them must agree (an error names the first that does
// not). Returns the userdata room every process reserves: the largest any
// asked for (userdata itself is per process).
std::uint64_t agree_on_shape(const process_group& group, const settings& s,
                             int ranks_per_device, int devices_per_process,
                             std::uint64_t userdata_size);

// The nodes of a job where some processes of one host cannot reach each
// other's memory: a host's processes form groups in which every pair
// reaches each other both ways (`reaches(p, q)`), and each group is a node
// of its own, so pairs between groups go through the network engines.
// `node_of`: each process's host; nodes are numbered by their first process.
std::vector<int> split_by_reach(const std::vector<int>& node_of,
                                const std::function<bool(int, int)>& reaches);

// The cores that the CPU quotas of a process's control groups allow, as
// `groups` lists them (its /proc/<pid>/cgroup) under `mounts` (the usual
// /sys/fs/cgroup: cgroup v2 there, v1's controllers in folders named after
// them): the least along each group's path to its root (a fraction, as
// 0.5 for a quota of half a core, at most a million); 0 where no quota
// limits it. A container's CPU limit is such a quota: every core stays
// online and in the affinity mask, but the group's threads together may
// run only so long per period, and are all stopped until the next when
// they have (a thread that spins or yields on a core of its own counts in
// full).
double quota_cores(const std::string& groups, const std::string& mounts);

// How this process's `polling` threads, which wait by polling memory
// (`which` names them: a CPU backend's ranks and network engines; a GPU
// process's engine and the thread that waits for the kernel), pass their
// turns. They spin where the process has a core for each: an unbound
// process shares the machine's cores with the `sharing` processes of its
// node (itself included, each with as many threads), a bound one is taken
// to have its cores to itself; and under a CPU quota (a container's limit,
// which the node's processes share, bound or not) only where the quota
// leaves a core to spare beside all of them, for the process's other
// threads: a group that passes its quota stops whole. Otherwise they
// yield, and under a quota too small, yield and then sleep. Where its CPU
// affinity leaves it fewer cores than the machine has and than it needs,
// it says so on stderr, once per process: Open MPI's mpirun binds each
// process to one core when it starts two, and then every wait of the
// process takes turns on that core.
waits_kind choose_wait_style(int polling, const std::string& which, int process, int sharing);
// Its choice, for a machine of `machine` online cores of which the
// process's affinity leaves it `affinity`, under a quota of `quota` cores
// (0: none).
waits_kind wait_style_for(int polling, int sharing, int machine, int affinity, double quota);

}  // namespace grma::detail
