// What the grma library needs from the translation unit that holds a rank
// program's kernel (cuda_launch.hpp) to run it on a GPU. Plain C++: the
// library itself is compiled without nvcc.
#pragma once

#include <cstddef>
#include <string>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

// How a launch of the rank kernel ended: `status` is the CUDA error code (0:
// the kernel ran to its end) and `message` its text. `while_running`: the
// kernel was launched and failed as it ran (a rank's trap, a fault), which
// ends CUDA's use of the GPU in the process; a launch refused at its start
// does not.
struct kernel_outcome {
  int status = 0;
  bool while_running = false;
  std::string message;
};

class cuda_kernel {
 public:
  // Both queries return the CUDA error code (0 on success).
  // Blocks of `threads` threads that fit on one multiprocessor (0 when none).
  virtual int blocks_per_sm(int threads, std::size_t shared_bytes, int& blocks) const = 0;
  // Registers per thread, the kernel's own block-size limit and its static
  // shared memory (a layer's or the program's __shared__ variables).
  virtual int attributes(int& registers, int& max_threads, std::size_t& static_shared) const = 0;
  // Launches on `stream` (a cudaStream_t) and waits for the kernel to end.
  virtual kernel_outcome launch_and_wait(const device_view& v, int ranks, int threads,
                                         std::size_t shared_bytes, void* stream) const = 0;

 protected:
  ~cuda_kernel() = default;
};

}  // namespace grma::detail
