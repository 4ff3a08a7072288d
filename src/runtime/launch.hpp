// What every backend checks and reports the same way about a launch.
#pragma once

#include "grma/types.hpp"

namespace grma::detail {

// No negative counts; userdata given when it has a size. Throws grma::error.
void check_launch_options(const launch_options& options);

// The layout of a job of `devices` devices driven by one process, the first
// being `first_device` on its node.
rank_info one_process_job(int ranks_per_device, int threads_per_rank, int devices,
                          int first_device);

}  // namespace grma::detail
