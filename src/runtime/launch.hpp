// What every backend checks and reports the same way about a launch.
#pragma once

#include "grma/types.hpp"

namespace grma::detail {

// No negative counts; userdata given when it has a size. Throws grma::error.
void check_launch_options(const launch_options& options);

// The layout of a job of one device driven by one process.
rank_info one_device_job(int ranks, int threads_per_rank, int device_index);

}  // namespace grma::detail
