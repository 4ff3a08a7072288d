#include "baseline.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <utility>
#include <stdexcept>
#include <string>

namespace hd {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

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

class baseline {
 public:
  explicit baseline(const baseline_job& j) : j_(j), sets_(data_sets(j.how)) {
    device_rows_ = std::size_t(j.bands_per_device) * std::size_t(j.rows);
    elements_ = band_elements(int(device_rows_), j.n);
    for (int d = 0; d < j.devices; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
      for (int e : {d - 1, d + 1})
        if (e >= 0 && e < j.devices) {
          const cudaError_t peer = cudaDeviceEnablePeerAccess(e, 0);
          if (peer != cudaErrorPeerAccessAlreadyEnabled) check(peer, "cudaDeviceEnablePeerAccess");
          cudaGetLastError();
        }
      device& dv = dev_[d];
      for (int s = 0; s < sets_; ++s) {
        // HD-OVERLAP runs each data set on its own stream, so one set's
        // copies overlap the other's kernels; the others use one stream.
        if (s == 0 || j.how == variant::overlap)
          check(cudaStreamCreateWithFlags(&dv.stream[s], cudaStreamNonBlocking), "cudaStreamCreate");
        else
          dv.stream[s] = dv.stream[0];
        check(cudaEventCreateWithFlags(&dv.computed[s], cudaEventDisableTiming), "cudaEventCreate");
        check(cudaEventCreateWithFlags(&dv.pushed[s], cudaEventDisableTiming), "cudaEventCreate");
        for (int f = 0; f < field_count; ++f)
          check(cudaMalloc(&dv.block[s][f], elements_ * sizeof(double)), "cudaMalloc");
      }
    }
  }
  ~baseline() {
    for (int d = 0; d < j_.devices; ++d) {
      cudaSetDevice(d);
      device& dv = dev_[d];
      for (int s = 0; s < sets_; ++s) {
        for (double* b : dv.block[s]) cudaFree(b);
        if (s == 0 || j_.how == variant::overlap) cudaStreamDestroy(dv.stream[s]);
        cudaEventDestroy(dv.computed[s]);
        cudaEventDestroy(dv.pushed[s]);
      }
    }
  }
  baseline(const baseline&) = delete;
  baseline& operator=(const baseline&) = delete;

  void initialize() {
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
      for (int s = 0; s < sets_; ++s)
        for (int f = 0; f < field_count; ++f)
          init_kernel<<<264, 256, 0, dev_[d].stream[s]>>>(dev_[d].block[s][f], elements_, s,
                                                          f == in, j_.n, d * device_rows_,
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
      check(cudaSetDevice(d), "cudaSetDevice");
      check(cudaDeviceSynchronize(), "horizontal diffusion kernels");
    }
  }

  void copy_out(std::vector<double>& grids) {
    const std::size_t n = std::size_t(j_.n), grid = std::size_t(j_.devices) * device_rows_ * n;
    grids.assign(std::size_t(sets_) * grid, 0.0);
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
      for (int s = 0; s < sets_; ++s)
        check(cudaMemcpy(grids.data() + std::size_t(s) * grid + std::size_t(d) * device_rows_ * n,
                         dev_[d].block[s][in] + n, device_rows_ * n * sizeof(double),
                         cudaMemcpyDeviceToHost),
              "copy the result");
    }
  }

 private:
  struct device {
    double* block[2][field_count] = {};
    cudaStream_t stream[2] = {};
    cudaEvent_t computed[2] = {}, pushed[2] = {};
  };

  // The halo rows between neighbouring GPUs: each pushes its edge rows into
  // the neighbour's halo rows once both have computed the field (so the
  // neighbour has also finished reading the rows it replaces), and the next
  // kernels wait for the neighbour's pushes.
  void exchange(int s, field f, halo_rows h) {
    if (j_.devices == 1) return;
    const std::size_t n = std::size_t(j_.n), bytes = n * sizeof(double);
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
      check(cudaEventRecord(dev_[d].computed[s], dev_[d].stream[s]), "cudaEventRecord");
    }
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
      cudaStream_t q = dev_[d].stream[s];
      for (int e : {d - 1, d + 1})
        if (e >= 0 && e < j_.devices) check(cudaStreamWaitEvent(q, dev_[e].computed[s]), "wait");
      if (h.above && d + 1 < j_.devices)  // my last row: the halo above the next GPU's rows
        check(cudaMemcpyPeerAsync(dev_[d + 1].block[s][f], d + 1, dev_[d].block[s][f] + device_rows_ * n,
                                  d, bytes, q),
              "cudaMemcpyPeerAsync");
      if (h.below && d > 0)  // my first row: the halo below the previous GPU's rows
        check(cudaMemcpyPeerAsync(dev_[d - 1].block[s][f] + (device_rows_ + 1) * n, d - 1,
                                  dev_[d].block[s][f] + n, d, bytes, q),
              "cudaMemcpyPeerAsync");
      check(cudaEventRecord(dev_[d].pushed[s], q), "cudaEventRecord");
    }
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
      for (int e : {d - 1, d + 1})
        if (e >= 0 && e < j_.devices)
          check(cudaStreamWaitEvent(dev_[d].stream[s], dev_[e].pushed[s]), "wait");
    }
  }

  template <class Launch>
  void on_each_device(int s, Launch&& launch) {
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
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
  std::size_t device_rows_ = 0, elements_ = 0;
  device dev_[8];
};

// Gives the caller back its current device (grma's runtime starts from it).
class device_restorer {
 public:
  device_restorer() { check(cudaGetDevice(&device_), "cudaGetDevice"); }
  ~device_restorer() { cudaSetDevice(device_); }
  device_restorer(const device_restorer&) = delete;
  device_restorer& operator=(const device_restorer&) = delete;

 private:
  int device_ = 0;
};

}  // namespace

double run_baseline(const baseline_job& job, std::vector<double>* grids) {
  if (job.devices < 1 || job.devices > 8) throw std::runtime_error("baseline: 1 to 8 GPUs");
  const device_restorer keep;
  baseline b(job);
  b.initialize();
  if (grids != nullptr) {
    b.iterations(job.iterations);
    b.synchronize();
    check(cudaGetLastError(), "horizontal diffusion kernels");
    b.copy_out(*grids);
    return 0;
  }
  b.iterations(1);  // warm-up: first launches, peer mappings
  b.synchronize();
  const auto start = std::chrono::steady_clock::now();
  b.iterations(job.iterations);
  b.synchronize();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  check(cudaGetLastError(), "horizontal diffusion kernels");
  return elapsed.count();
}

}  // namespace hd
