// The kernel-boundary baseline of Jacobi 2D (papers/001 §6.3, "Inter-K"):
// one kernel launch per iteration over the whole grid of the current GPU, a
// thread per cell, the host launching the next sweep after the last.
#pragma once

#include <vector>

namespace jacobi {

// Seconds for `iterations` sweeps of a rows x cols grid (timed after one
// warm-up sweep, from a fresh grid); with `grid`, the final cells, row by row.
double run_baseline(int rows, int cols, int iterations, int threads, std::vector<double>* grid);

}  // namespace jacobi
