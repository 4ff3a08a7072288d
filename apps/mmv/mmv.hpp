// The streaming multi-matrix-vector product (papers/002 §7, Table 3): a
// stream of 32-element float vectors, each multiplied by one constant
// 32 x 32 matrix. What grma's version and the kernel-boundary baseline
// share: the matrix, the vectors of each batch and the product.
//
// Entries are small multiples of powers of two (k / 8 in the matrix, k / 16
// in the vectors), so every product and every partial sum is exact in
// float: results compare equal whatever order they were summed in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <grma/config.hpp>

namespace mmv {

inline constexpr int n = 32;  // the matrix is n x n, a vector n floats
inline constexpr std::size_t vector_bytes = n * sizeof(float);

GRMA_HOST_DEVICE inline float matrix_entry(int i, int j) {
  return float((i * 37 + j * 11) % 17 - 8) / 8.0f;
}

// Element j of vector v of set k of stream s (a producer's stream; its
// batches alternate between sets 0 and 1).
GRMA_HOST_DEVICE inline float vector_entry(int s, int k, int v, int j) {
  return float(int((unsigned(s) * 131u + unsigned(k) * 7u + unsigned(v) * 3u + unsigned(j)) % 23u) -
               11) /
         16.0f;
}

// Row i of the matrix times vector x.
GRMA_HOST_DEVICE inline float product_entry(const float* row, const float* x) {
  float y = 0;
  for (int j = 0; j < n; ++j) y += row[j] * x[j];
  return y;
}

#if defined(__CUDACC__)
// The same by a whole warp, lane i holding row i: each lane loads one
// element of x (one coalesced load a vector) and takes the others from its
// neighbours by shuffles, rather than every lane loading all of x.
__device__ inline float warp_product(const float* row, const float* x, int lane) {
  const float mine = x[lane];
  float y = 0;
  for (int j = 0; j < n; ++j) y += row[j] * __shfl_sync(0xffffffffu, mine, j);
  return y;
}
#endif

}  // namespace mmv
