// The kernel-boundary baseline of horizontal diffusion (papers/000 §4.3.3,
// "MPI CUDA"): one kernel per stencil, a block per band of rows (the same
// bands and stencil code as the grma ranks), and the halo rows between GPUs
// copied by the host between kernels (apps/band_exchange.hpp:
// cudaMemcpyPeerAsync between the GPUs of one process, MPI through the host
// between processes).
#pragma once

#include <vector>

#include "hd_grma.hpp"

namespace hd {

struct baseline_job {
  variant how;
  int devices;           // this process's GPUs: the current one and those after it
  int bands_per_device;  // blocks per kernel
  int threads;           // threads per block
  int rows;              // rows per band
  int n;                 // grid width
  int iterations;
  int first_row;         // the grid row of this process's first row
  // The MPI_COMM_WORLD processes whose rows lie just above and just below
  // this process's, or -1 at the grid's edge (one process: both -1).
  int process_above = -1;
  int process_below = -1;

  bool across_processes() const { return process_above >= 0 || process_below >= 0; }
};

// Seconds for the iterations (after one warm-up iteration); when `grids` is
// given, this process's rows of each data set's final grid (devices x
// bands_per_device x rows rows of n doubles per set) after exactly
// `iterations` iterations.
double run_baseline(const baseline_job& job, std::vector<double>* grids);

}  // namespace hd
