// The baselines of the triangular solve (papers/001 §6.4), CUDA only.
#pragma once

#include <vector>

#include "matrix.hpp"

namespace spts {

// Level-set: the rows grouped by level (a row's level is one more than its
// dependencies' highest), one kernel launch per level on the current GPU, a
// thread per row. Seconds for one solve (after one not timed); `x` gets the
// solution.
double run_level_set(const csr& m, const std::vector<double>& b, int threads,
                     std::vector<double>& x);

// Host helper (the CPU-assisted intra-kernel networking the paper compares
// with, as dCUDA and DCGN do it): the rows, taken level by level, dealt in
// chunks of `chunk` to `devices` GPUs from the current one on (grma's deal
// of rows to PEs, `chunk` PEs a GPU). Each GPU runs one sync-free kernel,
// a warp a row; a row that another GPU needs goes into its GPU's outbox in
// host memory, and a helper thread a GPU forwards it to the host-memory
// inbox that the other GPUs read. Across nodes the forwarding would be a
// network transfer: on one node this is the scheme's floor. Seconds for one
// solve (after one not timed); `x` gets the solution.
double run_host_helper(const csr& m, const std::vector<double>& b, int devices, int chunk,
                       int threads, std::vector<double>& x);

}  // namespace spts
