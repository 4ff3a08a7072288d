// The CUDA backend's host side: how many ranks a program gets on the GPU,
// and running it there.
#pragma once

#include <memory>
#include <vector>

#include "grma/settings.hpp"
#include "grma/topology.hpp"
#include "grma/types.hpp"
#include "grma/detail/cuda_kernel.hpp"

namespace grma::detail {

class host_port;

// True when the CUDA runtime sees at least one device.
bool cuda_device_available();

struct cuda_plan {
  int ranks;
  int threads;
  std::size_t shared_bytes;  // dynamic shared memory per rank (pending list)
};

// Ranks and threads for `kernel` under these settings and options; an
// impossible request is an error that gives the numbers. A job across nodes
// (or with host access) leaves room for one block beside the ranks: the
// network engine's atomics on the GPU run in a kernel of their own
// (cuda_engine_memory).
cuda_plan plan_cuda(const settings& s, const launch_options& o, const cuda_kernel& kernel,
                    bool across_nodes);

// Throws when a rank kernel of this process failed as it ran (a trap ends
// CUDA's use of the GPU in the process): no run, and no question about one,
// can follow. Not collective (run_cuda_ranks asks all processes itself).
void cuda_refuse_after_failed_kernel();

// Under mpirun (several processes), makes process p's GPU the current one:
// one process per GPU.
void cuda_select_device();

// GPUs one run uses: GRMA_DEVICES of them from the current one on (all the
// rest for 0); more than are visible is an error.
int cuda_job_devices(const settings& s);

rank_info cuda_rank_info(const cuda_plan& plan, int devices);

// Which node each process of a job is on: its host (or GRMA_NODE_ID), and
// apart from the processes of its host whose GPUs it cannot reach peer to
// peer with atomics (those pairs go through the network engines).
// Collective the first time (and when GRMA_NODE_ID changes); then kept.
std::vector<int> cuda_job_nodes(const settings& s);

// The job's GPUs and the path between each pair.
topology cuda_topology(const settings& s);

// Runs the kernel on each GPU of the job (one host thread per GPU) with
// userdata, progress threads and the watchdog; throws grma::error when a rank
// failed, the watchdog ended the run or CUDA failed.
// `port`: where host threads hand in operations (o.host_access), or null.
void run_cuda_ranks(const settings& s, const launch_options& o, const cuda_kernel& kernel,
                    const std::shared_ptr<host_port>& port);

}  // namespace grma::detail
