// The floors grma-bench measures grma against on GPUs, in the same run: a raw
// flag ping-pong (one store, one poll), the same with a data store and a
// release before each flag (the ordering a notified put needs), and
// cudaMemcpy, on one GPU or between two (peer memory).
#pragma once

#include <cstddef>

namespace bench {

// Round trip of a flag between a block on GPU a and one on GPU b (the same
// GPU when a == b), in microseconds.
double raw_flag_round_trip_us(int a, int b, int iterations);

// The same with 8 bytes of data stored into the other side's memory and a
// release fence before each flag store, and acquiring polls: no notified put
// can take less, whatever its queue.
double release_flag_round_trip_us(int a, int b, int iterations);

// cudaMemcpy (a == b) or cudaMemcpyPeer bandwidth from GPU a to GPU b (peer
// access on), GB/s.
double memcpy_gbs(int a, int b, std::size_t bytes, int iterations);

// The GPUs this process sees.
int visible_gpus();

// A buffer on the current GPU and copies between it and host memory: the
// device side of the staged MPI baselines (mpi_baselines.hpp).
class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes);
  ~device_buffer();
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  void to_host(void* host, std::size_t bytes) const;
  void to_device(const void* host, std::size_t bytes) const;
  void* data() const { return memory_; }

 private:
  void* memory_ = nullptr;
};

}  // namespace bench
