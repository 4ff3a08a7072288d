#include <cuda_runtime.h>

#include <chrono>
#include <stdexcept>
#include <utility>

#include "../band_exchange.hpp"
#include "../mpi_support.hpp"
#include "baseline.hpp"

namespace hd {
namespace {

using apps::check_cuda;

// Block b computes band b of the device's block of each field.
__global__ void lap_kernel(const double* in_block, double* lap_block, int rows, int n) {
  const std::size_t band = std::size_t(blockIdx.x) * std::size_t(rows) * std::size_t(n);
  compute_lap(in_block + band, lap_block + band, rows, n, int(threadIdx.x), int(blockDim.x));
}
__global__ void fli_kernel(const double* lap_block, double* fli_block, int rows, int n) {
  const std::size_t band = std::size_t(blockIdx.x) * std::size_t(rows) * std::size_t(n);
  compute_fli(lap_block + band, fli_block + band, rows, n, int(threadIdx.x), int(blockDim.x));
}
__global__ void flj_kernel(const double* lap_block, double* flj_block, int rows, int n) {
  const std::size_t band = std::size_t(blockIdx.x) * std::size_t(rows) * std::size_t(n);
  compute_flj(lap_block + band, flj_block + band, rows, n, int(threadIdx.x), int(blockDim.x));
}
__global__ void out_kernel(const double* fli_block, const double* flj_block, double* out_block,
                           int rows, int n) {
  const std::size_t band = std::size_t(blockIdx.x) * std::size_t(rows) * std::size_t(n);
  compute_out(fli_block + band, flj_block + band, out_block + band, rows, n, int(threadIdx.x),
              int(blockDim.x));
}
// Input in the device's rows (first_row on), zero everywhere else.
__global__ void init_kernel(double* block, std::size_t elements, int set, bool input, int n,
                            std::size_t first_row, std::size_t device_rows) {
  for (std::size_t k = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; k < elements;
       k += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t row = k / std::size_t(n);
    block[k] = input && row >= 1 && row <= device_rows
                   ? input_value(set, first_row + row - 1, k % std::size_t(n))
                   : 0.0;
  }
}

apps::band_exchange::layout layout_of(const baseline_job& j, int first) {
  return {first,
          j.devices,
          std::size_t(j.n),
          std::size_t(j.bands_per_device) * std::size_t(j.rows),
          data_sets(j.how),
          j.process_above,
          j.process_below};
}

class baseline {
 public:
  explicit baseline(const baseline_job& j)
      : j_(j),
        sets_(data_sets(j.how)),
        first_(apps::current_device()),
        halos_(layout_of(j, first_)) {
    device_rows_ = std::size_t(j.bands_per_device) * std::size_t(j.rows);
    elements_ = band_elements(int(device_rows_), j.n);
    for (int d = 0; d < j.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      device& dv = dev_[d];
      for (int s = 0; s < sets_; ++s) {
        // HD-OVERLAP runs each data set on its own stream, so one set's
        // copies overlap the other's kernels; the others use one stream.
        if (s == 0 || j.how == variant::overlap)
          check_cuda(cudaStreamCreateWithFlags(&dv.stream[s], cudaStreamNonBlocking),
                     "cudaStreamCreate");
        else
          dv.stream[s] = dv.stream[0];
        for (int f = 0; f < field_count; ++f)
          check_cuda(cudaMalloc(&dv.block[s][f], elements_ * sizeof(double)), "cudaMalloc");
      }
    }
  }
  ~baseline() {
    for (int d = 0; d < j_.devices; ++d) {
      cudaSetDevice(first_ + d);
      device& dv = dev_[d];
      for (int s = 0; s < sets_; ++s) {
        for (double* b : dv.block[s]) cudaFree(b);
        if (s == 0 || j_.how == variant::overlap) cudaStreamDestroy(dv.stream[s]);
      }
    }
  }
  baseline(const baseline&) = delete;
  baseline& operator=(const baseline&) = delete;

  void initialize() {
    for (int d = 0; d < j_.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      for (int s = 0; s < sets_; ++s)
        for (int f = 0; f < field_count; ++f)
          init_kernel<<<264, 256, 0, dev_[d].stream[s]>>>(dev_[d].block[s][f], elements_, s,
                                                          f == in, j_.n,
                                                          std::size_t(j_.first_row) + d * device_rows_,
                                                          device_rows_);
    }
    synchronize();
  }

  void iterations(int count) {
    for (int it = 0; it < count; ++it) {
      if (j_.how == variant::overlap) {
        for (int s = 0; s < 2; ++s) {
          exchange(s, in, halos_of_in);
          launch_lap(s);
        }
        for (int s = 0; s < 2; ++s) {
          exchange(s, lap, halos_of_lap);
          launch_flx(s);
        }
        for (int s = 0; s < 2; ++s) {
          exchange(s, fli, halos_of_fli);
          launch_out(s);
        }
      } else {
        for (int s = 0; s < sets_; ++s) exchange(s, in, halos_of_in);
        for (int s = 0; s < sets_; ++s) launch_lap(s);
        for (int s = 0; s < sets_; ++s) exchange(s, lap, halos_of_lap);
        for (int s = 0; s < sets_; ++s) launch_flx(s);
        for (int s = 0; s < sets_; ++s) exchange(s, fli, halos_of_fli);
        for (int s = 0; s < sets_; ++s) launch_out(s);
      }
      for (int d = 0; d < j_.devices; ++d)
        for (int s = 0; s < sets_; ++s) std::swap(dev_[d].block[s][in], dev_[d].block[s][out]);
    }
  }

  void synchronize() {
    for (int d = 0; d < j_.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      check_cuda(cudaDeviceSynchronize(), "horizontal diffusion kernels");
    }
  }

  // The processes start their iterations together (one process: nothing).
  void meet_processes() const { halos_.meet_processes(); }

  void copy_out(std::vector<double>& grids) {
    const std::size_t n = std::size_t(j_.n), grid = std::size_t(j_.devices) * device_rows_ * n;
    grids.assign(std::size_t(sets_) * grid, 0.0);
    for (int d = 0; d < j_.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      for (int s = 0; s < sets_; ++s)
        check_cuda(
            cudaMemcpy(grids.data() + std::size_t(s) * grid + std::size_t(d) * device_rows_ * n,
                       dev_[d].block[s][in] + n, device_rows_ * n * sizeof(double),
                       cudaMemcpyDeviceToHost),
            "copy the result");
    }
  }

 private:
  struct device {
    double* block[2][field_count] = {};
    cudaStream_t stream[2] = {};
  };

  // Field f's halo rows of data set s (its own channel and MPI tag).
  void exchange(int s, field f, halo_rows h) {
    double* blocks[apps::band_exchange::most_devices];
    cudaStream_t streams[apps::band_exchange::most_devices];
    for (int d = 0; d < j_.devices; ++d) {
      blocks[d] = dev_[d].block[s][f];
      streams[d] = dev_[d].stream[s];
    }
    halos_.exchange(s, blocks, streams, h.above, h.below, s * field_count + int(f));
  }

  template <class Launch>
  void on_each_device(int s, Launch&& launch) {
    for (int d = 0; d < j_.devices; ++d) {
      check_cuda(cudaSetDevice(first_ + d), "cudaSetDevice");
      launch(dev_[d].block[s], dev_[d].stream[s]);
    }
  }
  void launch_lap(int s) {
    on_each_device(s, [&](double* const* b, cudaStream_t q) {
      lap_kernel<<<j_.bands_per_device, j_.threads, 0, q>>>(b[in], b[lap], j_.rows, j_.n);
    });
  }
  void launch_flx(int s) {
    on_each_device(s, [&](double* const* b, cudaStream_t q) {
      fli_kernel<<<j_.bands_per_device, j_.threads, 0, q>>>(b[lap], b[fli], j_.rows, j_.n);
      flj_kernel<<<j_.bands_per_device, j_.threads, 0, q>>>(b[lap], b[flj], j_.rows, j_.n);
    });
  }
  void launch_out(int s) {
    on_each_device(s, [&](double* const* b, cudaStream_t q) {
      out_kernel<<<j_.bands_per_device, j_.threads, 0, q>>>(b[fli], b[flj], b[out], j_.rows, j_.n);
    });
  }

  baseline_job j_;
  int sets_;
  int first_;  // this process's first GPU
  apps::band_exchange halos_;
  std::size_t device_rows_ = 0, elements_ = 0;
  device dev_[apps::band_exchange::most_devices];
};

// The run in this process (its part of the job, when the job spans several).
double run_baseline_here(const baseline_job& job, std::vector<double>* grids) {
  const apps::device_restorer keep;
  baseline b(job);
  b.initialize();
  if (grids != nullptr) {
    b.iterations(job.iterations);
    b.synchronize();
    check_cuda(cudaGetLastError(), "horizontal diffusion kernels");
    b.copy_out(*grids);
    return 0;
  }
  b.iterations(1);  // warm-up: first launches, peer mappings
  b.synchronize();
  b.meet_processes();
  const auto start = std::chrono::steady_clock::now();
  b.iterations(job.iterations);
  b.synchronize();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  check_cuda(cudaGetLastError(), "horizontal diffusion kernels");
  return elapsed.count();
}

}  // namespace

double run_baseline(const baseline_job& job, std::vector<double>* grids) {
  if (!job.across_processes()) return run_baseline_here(job, grids);
  try {
    return run_baseline_here(job, grids);
  } catch (const std::exception& e) {
    apps::abort_processes("grma-hd", e);
  }
}

}  // namespace hd
