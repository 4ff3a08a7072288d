#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "baseline.hpp"

namespace spts {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("spts baseline: ") + what + ": " + cudaGetErrorString(e));
}

// The rows of one level, rows[first, first + count): their dependencies are
// all of earlier levels, solved by earlier launches.
__global__ void solve_level(const std::int64_t* row_start, const int* col, const double* value,
                            const double* b, const int* rows, int first, int count, double* x) {
  const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= count) return;
  const int i = rows[first + t];
  const std::int64_t diagonal = row_start[i + 1] - 1;
  double sum = 0;
  for (std::int64_t k = row_start[i]; k < diagonal; ++k) sum += value[k] * x[col[k]];
  x[i] = (b[i] - sum) / value[diagonal];
}

template <class T>
T* to_device(const std::vector<T>& host) {
  T* p = nullptr;
  check(cudaMalloc(&p, host.size() * sizeof(T) + 1), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return p;
}

}  // namespace

double run_baseline(const csr& m, const std::vector<double>& b, int threads,
                    std::vector<double>& x) {
  const std::vector<std::vector<int>> by_level = levels(m);
  std::vector<int> rows;
  for (const auto& level : by_level) rows.insert(rows.end(), level.begin(), level.end());
  std::int64_t* row_start = to_device(m.row_start);
  int* col = to_device(m.col);
  double* value = to_device(m.value);
  double* rhs = to_device(b);
  int* ordered = to_device(rows);
  double* solution = to_device(std::vector<double>(std::size_t(m.n), 0.0));
  auto solve = [&] {
    int first = 0;
    for (const auto& level : by_level) {
      const int count = int(level.size());
      solve_level<<<unsigned((count + threads - 1) / threads), unsigned(threads)>>>(
          row_start, col, value, rhs, ordered, first, count, solution);
      first += count;
    }
    check(cudaGetLastError(), "solve_level");
  };
  solve();  // warm-up
  // The timed solve's x from NaN: a row it does not write shows in the check.
  check(cudaMemset(solution, 0xff, std::size_t(m.n) * sizeof(double)), "cudaMemset");
  cudaEvent_t begin, end;
  check(cudaEventCreate(&begin), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  check(cudaEventRecord(begin), "cudaEventRecord");
  solve();
  check(cudaEventRecord(end), "cudaEventRecord");
  check(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
  x.assign(std::size_t(m.n), 0.0);
  check(cudaMemcpy(x.data(), solution, x.size() * sizeof(double), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  for (void* p :
       {static_cast<void*>(row_start), static_cast<void*>(col), static_cast<void*>(value),
        static_cast<void*>(rhs), static_cast<void*>(ordered), static_cast<void*>(solution)})
    cudaFree(p);
  return double(ms) * 1e-3;
}

}  // namespace spts
