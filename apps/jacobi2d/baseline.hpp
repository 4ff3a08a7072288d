// The kernel-boundary baselines of Jacobi 2D (papers/001 §6.3): one kernel
// launch per iteration on each GPU over its band of the grid's rows (a
// thread per cell), the halo rows between GPUs copied by the host between
// kernels (apps/band_exchange.hpp: cudaMemcpyPeerAsync within a process, MPI
// between processes).
// - Inter-K: a sweep, then the exchange of its edge rows.
// - Inter-K-Overlap: the band's first and last rows first, their exchange
//   on the same stream, while the rows between them are swept on a second
//   stream.
#pragma once

#include <vector>

namespace jacobi {

struct baseline_job {
  bool overlap;  // Inter-K-Overlap, else Inter-K
  int devices;   // this process's GPUs: the current one and those after it
  int rows;      // rows of each GPU's band
  int cols;
  int iterations;
  int threads;    // per block
  int first_row;  // the grid row of this process's first row
  int grid_rows;  // the whole grid's
  // The MPI_COMM_WORLD processes whose rows lie just above and just below
  // this process's, or -1 at the grid's edge (one process: both -1).
  int process_above = -1;
  int process_below = -1;
};

// Seconds for the iterations (timed after one warm-up iteration, from a
// fresh grid); with `grid`, this process's rows of the final grid (devices
// x rows rows of cols cells) after exactly `iterations` iterations.
double run_baseline(const baseline_job& job, std::vector<double>* grid);

}  // namespace jacobi
