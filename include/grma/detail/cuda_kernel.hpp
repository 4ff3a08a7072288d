// What the grma library needs from the translation unit that holds a rank
// program's kernel (cuda_launch.hpp) to run it on a GPU. Plain C++: the
// library itself is compiled without nvcc.
#pragma once

#include <cstddef>
#include <string>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

class cuda_kernel {
 public:
  // Both queries return the CUDA error code (0 on success).
  // Blocks of `threads` threads that fit on one multiprocessor (0 when none).
  virtual int blocks_per_sm(int threads, std::size_t shared_bytes, int& blocks) const = 0;
  // Registers per thread and the kernel's own block-size limit, for messages.
  virtual int attributes(int& registers, int& max_threads) const = 0;
  // Launches on `stream` (a cudaStream_t) and waits for the kernel to end.
  // Returns the CUDA error code (0 on success) and its text in `message`.
  virtual int launch_and_wait(const device_view& v, int ranks, int threads,
                              std::size_t shared_bytes, void* stream,
                              std::string& message) const = 0;

 protected:
  ~cuda_kernel() = default;
};

}  // namespace grma::detail
