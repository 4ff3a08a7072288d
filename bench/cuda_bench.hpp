// What the CUDA baselines and grma-bench-nvshmem share: one way to stop at a
// failed CUDA call, and one way to time work on the current device's default
// stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace bench {

inline void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

// Seconds between events recorded before and after what `launch` enqueues.
template <class Launch>
double event_seconds(Launch&& launch) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  cudaEventRecord(start);
  launch();
  cudaEventRecord(stop);
  check(cudaEventSynchronize(stop), "timed work");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms * 1e-3;
}

}  // namespace bench
