// NVSHMEM's figures between GPUs 0 and 1, for grma-bench's peer-device path:
// runs grma-bench-nvshmem (nvshmem_peer.cu) as two processes, one per GPU,
// waits for them (bounded) and reads what they measured.
#pragma once

#include <cmath>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace bench {

struct nvshmem_request {
  std::vector<std::size_t> latency_sizes;
  std::vector<std::size_t> bandwidth_sizes;
  int blocks;                // the all-blocks bandwidth: as many blocks as grma's pairs
  std::size_t all_up_to;     // the largest size a block puts in the all-blocks bandwidth
  int threads;
  int latency_iterations;    // also fetch_add round trips, barriers and allreduces
  int bandwidth_iterations;
  int adds_per_thread;       // the add rate: non-fetching adds of each of `threads`
};

// NaN (or empty) where not measured.
struct nvshmem_figures {
  double int_p_us = NAN;                    // nvshmem_int_p + wait_until round trip
  double fetch_add_us = NAN;                // nvshmem_uint64_atomic_fetch_add round trip
  double add_rate_per_s = NAN;              // nvshmem_uint64_atomic_add by one block's threads
  double barrier_us = NAN;                  // nvshmemx_barrier_block over NVSHMEM_TEAM_WORLD
  double allreduce_8b_us = NAN;             // nvshmemx_uint64_sum_reduce_block of one uint64
  std::map<std::size_t, double> signal_us;  // putmem_signal_block round trip, by bytes
  std::map<std::size_t, double> one_block_gbs, blocks_gbs;  // by bytes per block
};

// The figures, or throws std::runtime_error naming what failed (with the
// end of the processes' output).
nvshmem_figures run_nvshmem(const nvshmem_request& r);

}  // namespace bench
