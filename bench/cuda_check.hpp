// The CUDA benchmarks' one way to stop at a failed CUDA call.
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

}  // namespace bench
