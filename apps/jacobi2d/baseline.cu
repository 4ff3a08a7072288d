#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "baseline.hpp"
#include "jacobi.hpp"

namespace jacobi {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("jacobi baseline: ") + what + ": " +
                             cudaGetErrorString(e));
}

// One sweep: cell (i, j) of the rows x cols grid, stored with its boundary
// ring in rows of `stride` = cols + 2 doubles.
__global__ void sweep(const double* cur, double* next, int rows, int cols, int stride) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x) + 1, i = int(blockIdx.y) + 1;
  if (j > cols || i > rows) return;
  const double* c = cur + std::size_t(i) * std::size_t(stride) + std::size_t(j);
  next[std::size_t(i) * std::size_t(stride) + std::size_t(j)] =
      update(c[-stride], c[stride], c[-1], c[1]);
}

// Both planes at generation 0: the cells' first values inside the boundary
// ring (the top row 1, the other sides 0).
void reset(double* planes[2], int rows, int cols) {
  const std::size_t stride = std::size_t(cols) + 2;
  std::vector<double> plane((std::size_t(rows) + 2) * stride, 0.0);
  for (std::size_t j = 0; j < stride; ++j) plane[j] = top_boundary;
  for (std::size_t i = 1; i <= std::size_t(rows); ++i)
    for (std::size_t j = 1; j <= std::size_t(cols); ++j)
      plane[i * stride + j] = initial((long long)i - 1, (long long)j - 1);
  for (int p = 0; p < 2; ++p)
    check(
        cudaMemcpy(planes[p], plane.data(), plane.size() * sizeof(double), cudaMemcpyHostToDevice),
        "cudaMemcpy");
}

}  // namespace

double run_baseline(int rows, int cols, int iterations, int threads, std::vector<double>* grid) {
  const int stride = cols + 2;
  const std::size_t plane_bytes = std::size_t(rows + 2) * std::size_t(stride) * sizeof(double);
  double* planes[2] = {nullptr, nullptr};
  check(cudaMalloc(&planes[0], plane_bytes), "cudaMalloc");
  check(cudaMalloc(&planes[1], plane_bytes), "cudaMalloc");
  const dim3 blocks(unsigned((cols + threads - 1) / threads), unsigned(rows));
  auto sweeps = [&](int n) {
    for (int k = 0; k < n; ++k)
      sweep<<<blocks, threads>>>(planes[k % 2], planes[(k + 1) % 2], rows, cols, stride);
    check(cudaGetLastError(), "sweep");
  };
  reset(planes, rows, cols);
  sweeps(1);  // warm-up
  reset(planes, rows, cols);
  cudaEvent_t begin, end;
  check(cudaEventCreate(&begin), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  check(cudaEventRecord(begin), "cudaEventRecord");
  sweeps(iterations);
  check(cudaEventRecord(end), "cudaEventRecord");
  check(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
  if (grid != nullptr) {
    std::vector<double> whole(plane_bytes / sizeof(double));
    check(cudaMemcpy(whole.data(), planes[iterations % 2], plane_bytes, cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    grid->assign(std::size_t(rows) * std::size_t(cols), 0);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        (*grid)[std::size_t(i) * std::size_t(cols) + std::size_t(j)] =
            whole[std::size_t(i + 1) * std::size_t(stride) + std::size_t(j + 1)];
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  cudaFree(planes[0]);
  cudaFree(planes[1]);
  return double(ms) * 1e-3;
}

}  // namespace jacobi
