// The floors the CUDA benchmarks measure grma against, in the same run: a raw
// flag ping-pong (one store, one poll) and cudaMemcpy, on one GPU or between
// two (peer memory).
#pragma once

#include <cstddef>

namespace bench {

// Enables peer access both ways between GPUs a and b (a != b).
void enable_peer_access(int a, int b);

// Round trip of a flag between a block on GPU a and one on GPU b (the same
// GPU when a == b), in microseconds.
double raw_flag_round_trip_us(int a, int b, int iterations);

// cudaMemcpy (a == b) or cudaMemcpyPeer bandwidth from GPU a to GPU b, GB/s.
double memcpy_gbs(int a, int b, std::size_t bytes, int iterations);

}  // namespace bench
