// What every backend checks and reports the same way about a launch.
#pragma once

#include "grma/types.hpp"

namespace grma::detail {

// No negative counts; userdata given when it has a size. Throws grma::error.
void check_launch_options(const launch_options& options);

// The layout of a job of `processes` processes (one node) that each drive
// `devices` devices; this process is `process` and its first device is
// `first_device` on the node.
rank_info job_layout(int ranks_per_device, int threads_per_rank, int devices, int process,
                     int processes, int first_device);

}  // namespace grma::detail
