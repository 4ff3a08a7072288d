// The kernel-boundary baseline of horizontal diffusion (papers/000 §4.3.3,
// "MPI CUDA"): one kernel per stencil, a block per band of rows (the same
// bands and stencil code as the grma ranks), and the halo rows between GPUs
// copied by the host between kernels (cudaMemcpyPeerAsync, ordered by
// events, so the host never waits inside an iteration).
#pragma once

#include <vector>

#include "hd_grma.hpp"

namespace hd {

struct baseline_job {
  variant how;
  int devices;           // GPUs 0..devices-1 of this process, bands split evenly
  int bands_per_device;  // blocks per kernel
  int threads;           // threads per block
  int rows;              // rows per band
  int n;                 // grid width
  int iterations;
};

// Seconds for the iterations (after one warm-up iteration); when `grids` is
// given, the final grid of each data set (m x n doubles each) after exactly
// `iterations` iterations.
double run_baseline(const baseline_job& job, std::vector<double>* grids);

}  // namespace hd
