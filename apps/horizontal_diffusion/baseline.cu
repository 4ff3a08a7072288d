#include "baseline.hpp"

#include <cuda_runtime.h>
#if HD_WITH_MPI
#include <mpi.h>
#endif

#include <chrono>
#include <cstdio>
#include <utility>
#include <stdexcept>
#include <string>

namespace hd {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

#if HD_WITH_MPI
void check_mpi(int status, const char* what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw std::runtime_error(std::string("baseline: ") + what + ": " + std::string(text, std::size_t(length)));
}
#endif

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
    check(cudaGetDevice(&first_), "cudaGetDevice");
    device_rows_ = std::size_t(j.bands_per_device) * std::size_t(j.rows);
    elements_ = band_elements(int(device_rows_), j.n);
    if (j.across_processes())
      for (int s = 0; s < sets_; ++s)
        check(cudaMallocHost(&edges_[s], 4 * std::size_t(j.n) * sizeof(double)), "cudaMallocHost");
    for (int d = 0; d < j.devices; ++d) {
      check(cudaSetDevice(first_ + d), "cudaSetDevice");
      for (int e : {d - 1, d + 1})
        if (e >= 0 && e < j.devices) {
          const cudaError_t peer = cudaDeviceEnablePeerAccess(first_ + e, 0);
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
    for (double* e : edges_) cudaFreeHost(e);
    for (int d = 0; d < j_.devices; ++d) {
      cudaSetDevice(first_ + d);
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
      check(cudaSetDevice(first_ + d), "cudaSetDevice");
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
      check(cudaSetDevice(first_ + d), "cudaSetDevice");
      check(cudaDeviceSynchronize(), "horizontal diffusion kernels");
    }
  }

  // The processes start their iterations together (one process: nothing).
  void meet_processes() {
#if HD_WITH_MPI
    if (j_.across_processes())
      check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
  }

  void copy_out(std::vector<double>& grids) {
    const std::size_t n = std::size_t(j_.n), grid = std::size_t(j_.devices) * device_rows_ * n;
    grids.assign(std::size_t(sets_) * grid, 0.0);
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(first_ + d), "cudaSetDevice");
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

  void exchange(int s, field f, halo_rows h) {
    exchange_between_devices(s, f, h);
    exchange_between_processes(s, f, h);
  }

  // The halo rows between neighbouring GPUs: each pushes its edge rows into
  // the neighbour's halo rows once both have computed the field (so the
  // neighbour has also finished reading the rows it replaces), and the next
  // kernels wait for the neighbour's pushes.
  void exchange_between_devices(int s, field f, halo_rows h) {
    if (j_.devices == 1) return;
    const std::size_t n = std::size_t(j_.n), bytes = n * sizeof(double);
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(first_ + d), "cudaSetDevice");
      check(cudaEventRecord(dev_[d].computed[s], dev_[d].stream[s]), "cudaEventRecord");
    }
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(first_ + d), "cudaSetDevice");
      cudaStream_t q = dev_[d].stream[s];
      for (int e : {d - 1, d + 1})
        if (e >= 0 && e < j_.devices) check(cudaStreamWaitEvent(q, dev_[e].computed[s]), "wait");
      if (h.above && d + 1 < j_.devices)  // my last row: the halo above the next GPU's rows
        check(cudaMemcpyPeerAsync(dev_[d + 1].block[s][f], first_ + d + 1,
                                  dev_[d].block[s][f] + device_rows_ * n, first_ + d, bytes, q),
              "cudaMemcpyPeerAsync");
      if (h.below && d > 0)  // my first row: the halo below the previous GPU's rows
        check(cudaMemcpyPeerAsync(dev_[d - 1].block[s][f] + (device_rows_ + 1) * n, first_ + d - 1,
                                  dev_[d].block[s][f] + n, first_ + d, bytes, q),
              "cudaMemcpyPeerAsync");
      check(cudaEventRecord(dev_[d].pushed[s], q), "cudaEventRecord");
    }
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(first_ + d), "cudaSetDevice");
      for (int e : {d - 1, d + 1})
        if (e >= 0 && e < j_.devices)
          check(cudaStreamWaitEvent(dev_[d].stream[s], dev_[e].pushed[s]), "wait");
    }
  }

  // The halo rows between neighbouring processes, through the host: the
  // edge rows come to the host once the kernels that computed them are done
  // (the host waits on the set's streams), travel by MPI, and are copied
  // into the halo rows on the set's streams (after the kernels that still
  // read the rows they replace, which the streams enqueued earlier). In
  // HD-OVERLAP the other set's kernels run meanwhile, on their own streams.
  // edges_[s] holds four rows: the row sent up, the row sent down, the row
  // from above, the row from below.
  void exchange_between_processes(int s, field f, halo_rows h) {
#if HD_WITH_MPI
    const bool up = j_.process_above >= 0, down = j_.process_below >= 0;
    const bool send_up = h.below && up, send_down = h.above && down;
    const bool from_above = h.above && up, from_below = h.below && down;
    if (!send_up && !send_down && !from_above && !from_below) return;
    const std::size_t n = std::size_t(j_.n), bytes = n * sizeof(double);
    double* const rows = edges_[s];
    device& top = dev_[0];
    device& bottom = dev_[j_.devices - 1];
    const int top_device = first_, bottom_device = first_ + j_.devices - 1;
    if (send_up) {  // my first row: the halo below the upper process's rows
      check(cudaSetDevice(top_device), "cudaSetDevice");
      check(cudaMemcpyAsync(rows, top.block[s][f] + n, bytes, cudaMemcpyDeviceToHost, top.stream[s]),
            "cudaMemcpyAsync (edge row to the host)");
    }
    if (send_down) {  // my last row: the halo above the lower process's rows
      check(cudaSetDevice(bottom_device), "cudaSetDevice");
      check(cudaMemcpyAsync(rows + n, bottom.block[s][f] + device_rows_ * n, bytes,
                            cudaMemcpyDeviceToHost, bottom.stream[s]),
            "cudaMemcpyAsync (edge row to the host)");
    }
    // Every earlier copy out of rows + 2n.. (the last exchange's halos) is
    // also done: it was enqueued on these streams before.
    check(cudaStreamSynchronize(top.stream[s]), "edge rows to the host");
    check(cudaStreamSynchronize(bottom.stream[s]), "edge rows to the host");
    // A row travelling down carries tag t, one travelling up t + 1.
    const int t = (s * field_count + int(f)) * 2;
    MPI_Request requests[4];
    int count = 0;
    if (from_above)
      check_mpi(MPI_Irecv(rows + 2 * n, int(n), MPI_DOUBLE, j_.process_above, t, MPI_COMM_WORLD,
                          &requests[count++]), "MPI_Irecv");
    if (from_below)
      check_mpi(MPI_Irecv(rows + 3 * n, int(n), MPI_DOUBLE, j_.process_below, t + 1, MPI_COMM_WORLD,
                          &requests[count++]), "MPI_Irecv");
    if (send_down)
      check_mpi(MPI_Isend(rows + n, int(n), MPI_DOUBLE, j_.process_below, t, MPI_COMM_WORLD,
                          &requests[count++]), "MPI_Isend");
    if (send_up)
      check_mpi(MPI_Isend(rows, int(n), MPI_DOUBLE, j_.process_above, t + 1, MPI_COMM_WORLD,
                          &requests[count++]), "MPI_Isend");
    check_mpi(MPI_Waitall(count, requests, MPI_STATUSES_IGNORE), "MPI_Waitall");
    if (from_above) {
      check(cudaSetDevice(top_device), "cudaSetDevice");
      check(cudaMemcpyAsync(top.block[s][f], rows + 2 * n, bytes, cudaMemcpyHostToDevice, top.stream[s]),
            "cudaMemcpyAsync (halo row to the device)");
    }
    if (from_below) {
      check(cudaSetDevice(bottom_device), "cudaSetDevice");
      check(cudaMemcpyAsync(bottom.block[s][f] + (device_rows_ + 1) * n, rows + 3 * n, bytes,
                            cudaMemcpyHostToDevice, bottom.stream[s]),
            "cudaMemcpyAsync (halo row to the device)");
    }
#else
    (void)s;
    (void)f;
    (void)h;
#endif
  }

  template <class Launch>
  void on_each_device(int s, Launch&& launch) {
    for (int d = 0; d < j_.devices; ++d) {
      check(cudaSetDevice(first_ + d), "cudaSetDevice");
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
  int first_ = 0;  // this process's first GPU
  std::size_t device_rows_ = 0, elements_ = 0;
  device dev_[8];
  double* edges_[2] = {};  // pinned rows for the exchange between processes, per data set
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

// The run in this process (its part of the job, when the job spans several).
double run_baseline_here(const baseline_job& job, std::vector<double>* grids) {
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
  b.meet_processes();
  const auto start = std::chrono::steady_clock::now();
  b.iterations(job.iterations);
  b.synchronize();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  check(cudaGetLastError(), "horizontal diffusion kernels");
  return elapsed.count();
}

}  // namespace

double run_baseline(const baseline_job& job, std::vector<double>* grids) {
  if (job.devices < 1 || job.devices > 8) throw std::runtime_error("baseline: 1 to 8 GPUs");
  if (!job.across_processes()) return run_baseline_here(job, grids);
#if HD_WITH_MPI
  // A process that fails here leaves its neighbours waiting in MPI for rows
  // that never come (and MPI_Finalize waiting for them): end the job.
  try {
    return run_baseline_here(job, grids);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grma-hd: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#endif
  throw std::runtime_error("baseline: exchanging halos between processes needs grma-hd built with MPI");
}

}  // namespace hd
