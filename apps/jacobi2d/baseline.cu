#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "../band_exchange.hpp"
#include "../mpi_support.hpp"
#include "baseline.hpp"
#include "jacobi.hpp"

namespace jacobi {
namespace {

using apps::check_cuda;

// `count` rows first, first + step, ... of a plane of `stride` = cols + 2
// doubles a row, the boundary ring included: a thread a cell, a block row
// a row (gridDim.y of them at once: at most 65535).
__global__ void sweep(const double* cur, double* next, int first, int step, int count, int cols,
                      int stride) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x) + 1;
  if (j > cols) return;
  for (int y = int(blockIdx.y); y < count; y += int(gridDim.y)) {
    const std::size_t at = std::size_t(first + y * step) * std::size_t(stride) + std::size_t(j);
    const double* c = cur + at;
    next[at] = update(c[-stride], c[stride], c[-1], c[1]);
  }
}

// A launch over `count` rows.
dim3 rows_of(dim3 columns, int count) {
  return dim3(columns.x, unsigned(count < 65535 ? count : 65535));
}

// A GPU's plane at generation 0: its band's cells (grid rows first_row..),
// the halo rows as the neighbours' cells or the grid's boundary.
__global__ void initialize(double* plane, int rows, int cols, long long first_row,
                           long long grid_rows) {
  const std::size_t stride = std::size_t(cols) + 2, elements = (std::size_t(rows) + 2) * stride;
  for (std::size_t k = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; k < elements;
       k += std::size_t(gridDim.x) * blockDim.x) {
    const long long g = first_row + (long long)(k / stride) - 1;
    const std::size_t j = k % stride;
    plane[k] = g < 0                                               ? top_boundary
               : g >= grid_rows || j == 0 || j > std::size_t(cols) ? 0.0
                                                                   : initial(g, (long long)j - 1);
  }
}

apps::band_exchange::layout layout_of(const baseline_job& j, int first) {
  return {first, j.devices,       std::size_t(j.cols) + 2, std::size_t(j.rows),
          1,     j.process_above, j.process_below};
}

class baseline {
 public:
  explicit baseline(const baseline_job& j)
      : j_(j), first_(apps::current_device()), halos_(layout_of(j, first_)) {
    const std::size_t bytes = plane_elements() * sizeof(double);
    for (int d = 0; d < j.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      device& dv = dev_[d];
      for (double*& p : dv.plane) check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
      for (cudaStream_t& q : dv.stream)
        check_cuda(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking), "cudaStreamCreate");
      check_cuda(cudaEventCreateWithFlags(&dv.edges_swept, cudaEventDisableTiming),
                 "cudaEventCreate");
      check_cuda(cudaEventCreateWithFlags(&dv.interior_swept, cudaEventDisableTiming),
                 "cudaEventCreate");
    }
  }
  ~baseline() {
    for (int d = 0; d < j_.devices; ++d) {
      cudaSetDevice(first_ + d);
      device& dv = dev_[d];
      for (double* p : dv.plane) cudaFree(p);
      for (cudaStream_t q : dv.stream) cudaStreamDestroy(q);
      cudaEventDestroy(dv.edges_swept);
      cudaEventDestroy(dv.interior_swept);
    }
  }
  baseline(const baseline&) = delete;
  baseline& operator=(const baseline&) = delete;

  void start() {
    for (int d = 0; d < j_.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      for (double* p : dev_[d].plane)
        initialize<<<264, 256, 0, dev_[d].stream[edges]>>>(
            p, j_.rows, j_.cols, (long long)j_.first_row + (long long)d * j_.rows, j_.grid_rows);
      check_cuda(cudaGetLastError(), "initialize");
    }
    synchronize();
    generation_ = 0;
  }

  void iterations(int count) {
    const int r = j_.rows, stride = j_.cols + 2;
    const dim3 columns(unsigned((j_.cols + j_.threads - 1) / j_.threads));
    const int edge_rows = r > 1 ? 2 : 1;
    for (int it = 0; it < count; ++it, ++generation_) {
      double* next[apps::band_exchange::most_devices];
      cudaStream_t edge_streams[apps::band_exchange::most_devices];
      for (int d = 0; d < j_.devices; ++d) {
        check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
        device& dv = dev_[d];
        const double* cur = dv.plane[generation_ % 2];
        next[d] = dv.plane[(generation_ + 1) % 2];
        edge_streams[d] = dv.stream[edges];
        if (!j_.overlap) {
          sweep<<<rows_of(columns, r), j_.threads, 0, dv.stream[edges]>>>(cur, next[d], 1, 1, r,
                                                                          j_.cols, stride);
          continue;
        }
        // The edge rows read the interior's last rows and overwrite the
        // plane it read; the interior reads the last edge rows and
        // overwrites the plane they read (the waits take the events'
        // records of the iteration before).
        check_cuda(cudaStreamWaitEvent(dv.stream[edges], dv.interior_swept), "wait");
        check_cuda(cudaStreamWaitEvent(dv.stream[interior], dv.edges_swept), "wait");
        sweep<<<rows_of(columns, edge_rows), j_.threads, 0, dv.stream[edges]>>>(
            cur, next[d], 1, r - 1, edge_rows, j_.cols, stride);
        check_cuda(cudaEventRecord(dv.edges_swept, dv.stream[edges]), "cudaEventRecord");
        if (r > 2)
          sweep<<<rows_of(columns, r - 2), j_.threads, 0, dv.stream[interior]>>>(
              cur, next[d], 2, 1, r - 2, j_.cols, stride);
        check_cuda(cudaEventRecord(dv.interior_swept, dv.stream[interior]), "cudaEventRecord");
      }
      check_cuda(cudaGetLastError(), "sweep");
      halos_.exchange(0, next, edge_streams, true, true, 0);
    }
  }

  void synchronize() {
    for (int d = 0; d < j_.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      check_cuda(cudaDeviceSynchronize(), "jacobi baseline kernels");
    }
  }

  void meet_processes() const { halos_.meet_processes(); }

  void copy_out(std::vector<double>& grid) const {
    const std::size_t rows = std::size_t(j_.rows), cols = std::size_t(j_.cols), stride = cols + 2;
    grid.assign(std::size_t(j_.devices) * rows * cols, 0.0);
    std::vector<double> plane(plane_elements());
    for (int d = 0; d < j_.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      check_cuda(cudaMemcpy(plane.data(), dev_[d].plane[generation_ % 2],
                            plane.size() * sizeof(double), cudaMemcpyDeviceToHost),
                 "copy the result");
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t c = 0; c < cols; ++c)
          grid[(std::size_t(d) * rows + i) * cols + c] = plane[(i + 1) * stride + c + 1];
    }
  }

 private:
  enum stream_role { edges = 0, interior = 1 };  // Inter-K runs on the first only
  struct device {
    double* plane[2] = {};
    cudaStream_t stream[2] = {};
    cudaEvent_t edges_swept = nullptr, interior_swept = nullptr;
  };

  std::size_t plane_elements() const {
    return (std::size_t(j_.rows) + 2) * (std::size_t(j_.cols) + 2);
  }

  baseline_job j_;
  int first_;  // this process's first GPU
  apps::band_exchange halos_;
  int generation_ = 0;
  device dev_[apps::band_exchange::most_devices];
};

double run_here(const baseline_job& job, std::vector<double>* grid) {
  const apps::device_restorer keep;
  baseline b(job);
  b.start();
  if (grid != nullptr) {
    b.iterations(job.iterations);
    b.synchronize();
    b.copy_out(*grid);
    return 0;
  }
  b.iterations(1);  // warm-up: first launches, peer mappings
  b.synchronize();
  b.start();
  b.meet_processes();
  const auto begin = std::chrono::steady_clock::now();
  b.iterations(job.iterations);
  b.synchronize();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - begin;
  return elapsed.count();
}

}  // namespace

double run_baseline(const baseline_job& job, std::vector<double>* grid) {
  if (job.process_above < 0 && job.process_below < 0) return run_here(job, grid);
  try {
    return run_here(job, grid);
  } catch (const std::exception& e) {
    apps::abort_processes("grma-jacobi2d", e);
  }
}

}  // namespace jacobi
