// The persistent kernel: one block per rank. Compiled in the user's
// translation unit (nvcc), where the rank program's type is known; the grma
// library allocates memory and waits, but the launch and the occupancy query
// happen here, through the CUDA runtime that registered the kernel.
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "grma/rank.hpp"
#include "grma/detail/cuda_kernel.hpp"
#include "grma/detail/cuda_platform.hpp"

namespace grma {

// The rank type the CUDA backend passes to rank programs.
using cuda_rank = basic_rank<detail::cuda_platform>;

namespace detail {

// The most threads a rank may have. The kernel is compiled for it, so the
// compiler keeps a rank program within 65536 / GRMA_MAX_THREADS_PER_RANK
// registers per thread; define it lower (before including grma) to give rank
// programs more registers.
#ifndef GRMA_MAX_THREADS_PER_RANK
#define GRMA_MAX_THREADS_PER_RANK 1024
#endif

template <class Program>
__global__ void __launch_bounds__(GRMA_MAX_THREADS_PER_RANK, 1)
    rank_kernel(const Program program, const device_view view) {
  // The rank's private state sits in shared memory: matching and credits are
  // on the fast path. Blocked ranks publish what the watchdog needs.
  // So is the device view: the fast path reads it after acquires, which
  // invalidate L1 (and with it a copy in local memory). Rank code finds
  // both at their fixed addresses (cuda_platform::view, ::local).
  extern __shared__ notification pending_items[];
  rank_local& local = cuda_platform::kernel_local();
  device_view& shared_view = cuda_platform::kernel_view();
  if (threadIdx.x == 0) {
    shared_view = view;
    rank_local_init(local, pending_items, view.match_capacity, view.queue_capacity);
  }
  __syncthreads();
  cuda_rank r(shared_view, int(blockIdx.x), local);
  program(r);
  r.finish();
}

template <class Program>
class cuda_kernel_for final : public cuda_kernel {
 public:
  explicit cuda_kernel_for(const Program& program) : program_(program) {}

  int blocks_per_sm(int threads, std::size_t shared_bytes, int& blocks) const override {
    blocks = 0;
    return int(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, rank_kernel<Program>,
                                                             threads, shared_bytes));
  }

  int attributes(int& registers, int& max_threads, std::size_t& static_shared) const override {
    cudaFuncAttributes a{};
    const cudaError_t e = cudaFuncGetAttributes(&a, rank_kernel<Program>);
    registers = a.numRegs;
    max_threads = a.maxThreadsPerBlock;
    static_shared = a.sharedSizeBytes;
    return int(e);
  }

  kernel_outcome launch_and_wait(const device_view& v, int ranks, int threads,
                                 std::size_t shared_bytes, void* stream) const override {
    // A cooperative launch refuses a grid that cannot be co-resident, so
    // blocks never wait for ranks that were not scheduled.
    Program program = program_;
    device_view view = v;
    void* args[] = {&program, &view};
    const auto s = static_cast<cudaStream_t>(stream);
    kernel_outcome outcome;
    cudaError_t e = cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(rank_kernel<Program>),
                                                dim3(unsigned(ranks)), dim3(unsigned(threads)), args,
                                                shared_bytes, s);
    if (e == cudaSuccess) {
      e = cudaStreamSynchronize(s);
      outcome.while_running = e != cudaSuccess;
    } else {
      (void)cudaGetLastError();  // refused at its start: the thread's next call starts clean
    }
    outcome.status = int(e);
    if (e != cudaSuccess)
      outcome.message = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    return outcome;
  }

 private:
  Program program_;
};

}  // namespace detail
}  // namespace grma

#endif  // __CUDACC__
