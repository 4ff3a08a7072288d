#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../cuda_support.hpp"
#include "../mpi_support.hpp"
#include "baseline.hpp"
#include "mmv.hpp"

namespace mmv {
namespace {

using apps::check_cuda;

// Block p multiplies pair p's `vectors` vectors: the matrix into shared
// memory first (a padded row apart, so a warp's lanes read different
// banks), then a warp per vector, lane i computing entry i.
__global__ void multiply(const float* matrix, const float* x, float* y, int vectors) {
  __shared__ float m[n][n + 1];
  for (int e = int(threadIdx.x); e < n * n; e += int(blockDim.x)) m[e / n][e % n] = matrix[e];
  __syncthreads();
  const int lane = int(threadIdx.x) % n, warp = int(threadIdx.x) / n, warps = int(blockDim.x) / n;
  const std::size_t first = std::size_t(blockIdx.x) * std::size_t(vectors) * n;
  for (int v = warp; v < vectors; v += warps) {
    const float* xv = x + first + std::size_t(v) * n;
    y[first + std::size_t(v) * n + lane] = warp_product(m[lane], xv, lane);
  }
}

// Pair p's vectors of set k, pair after pair, as grma's producers make them.
std::vector<float> vector_set(int pairs, int vectors, int k) {
  std::vector<float> set(std::size_t(pairs) * std::size_t(vectors) * n);
  for (std::size_t e = 0; e < set.size(); ++e)
    set[e] = vector_entry(int(e / (std::size_t(vectors) * n)), k, int(e / n % std::size_t(vectors)),
                          int(e % n));
  return set;
}

std::vector<float> the_matrix() {
  std::vector<float> m(n * n);
  for (int e = 0; e < n * n; ++e) m[std::size_t(e)] = matrix_entry(e / n, e % n);
  return m;
}

// Whether a product of `products` (GPU memory; set k's) differs from the
// matrix times its vector.
bool any_wrong(const float* products, int pairs, int vectors, int k) {
  const std::vector<float> x = vector_set(pairs, vectors, k), m = the_matrix();
  std::vector<float> y(x.size());
  check_cuda(cudaMemcpy(y.data(), products, y.size() * sizeof(float), cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  for (std::size_t e = 0; e < y.size(); ++e)
    if (y[e] != product_entry(&m[e % n * n], &x[e / n * n])) return true;
  return false;
}

// Both ends in this process.
double run_here(const baseline_job& j, bool* wrong) {
  const int producer_device = j.producer_device, worker_device = j.worker_device;
  const std::size_t count = std::size_t(j.pairs) * std::size_t(j.vectors) * n,
                    bytes = count * sizeof(float);
  if (producer_device != worker_device)
    for (const auto& [from, to] :
         {std::pair{producer_device, worker_device}, std::pair{worker_device, producer_device}}) {
      check_cuda(cudaSetDevice(from), "cudaSetDevice");
      apps::enable_peer_access(to);
    }
  // The producers' vector sets 0 and 1 (batch b sends set b % 2) and their
  // products, per parity, on the producers' GPU; the matrix and the
  // workers' buffers on the workers'.
  float *matrix = nullptr, *source[2] = {}, *in[2] = {}, *out[2] = {}, *products[2] = {};
  check_cuda(cudaSetDevice(worker_device), "cudaSetDevice");
  check_cuda(cudaMalloc(&matrix, n * n * sizeof(float)), "cudaMalloc");
  for (int k = 0; k < 2; ++k) {
    check_cuda(cudaSetDevice(producer_device), "cudaSetDevice");
    check_cuda(cudaMalloc(&source[k], bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&products[k], bytes), "cudaMalloc");
    check_cuda(cudaSetDevice(worker_device), "cudaSetDevice");
    check_cuda(cudaMalloc(&in[k], bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&out[k], bytes), "cudaMalloc");
    check_cuda(cudaMemcpy(source[k], vector_set(j.pairs, j.vectors, k).data(), bytes,
                          cudaMemcpyHostToDevice),
               "cudaMemcpy");
  }
  check_cuda(cudaMemcpy(matrix, the_matrix().data(), n * n * sizeof(float), cudaMemcpyHostToDevice),
             "cudaMemcpy");
  cudaStream_t streams[2];
  for (auto& s : streams) check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  auto batch = [&](int b) {
    const int k = b % 2;
    check_cuda(cudaStreamSynchronize(streams[k]), "cudaStreamSynchronize");  // batch b - 2 is done
    check_cuda(
        cudaMemcpyPeerAsync(in[k], worker_device, source[k], producer_device, bytes, streams[k]),
        "cudaMemcpyPeerAsync");
    multiply<<<j.pairs, j.threads, 0, streams[k]>>>(matrix, in[k], out[k], j.vectors);
    check_cuda(cudaGetLastError(), "multiply");
    check_cuda(
        cudaMemcpyPeerAsync(products[k], producer_device, out[k], worker_device, bytes, streams[k]),
        "cudaMemcpyPeerAsync");
  };
  batch(0);  // warm-up
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cudaEvent_t begin, end;
  check_cuda(cudaEventCreate(&begin), "cudaEventCreate");
  check_cuda(cudaEventCreate(&end), "cudaEventCreate");
  check_cuda(cudaEventRecord(begin, streams[0]), "cudaEventRecord");
  for (int b = 0; b < j.batches; ++b) batch(b);
  check_cuda(cudaStreamSynchronize(streams[0]), "cudaStreamSynchronize");
  check_cuda(cudaStreamSynchronize(streams[1]), "cudaStreamSynchronize");
  check_cuda(cudaEventRecord(end, streams[0]), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
  if (wrong != nullptr) {
    const int k = (j.batches - 1) % 2;
    *wrong = any_wrong(products[k], j.pairs, j.vectors, k);
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  for (auto& s : streams) cudaStreamDestroy(s);
  for (int k = 0; k < 2; ++k) {
    cudaFree(source[k]);
    cudaFree(in[k]);
    cudaFree(out[k]);
    cudaFree(products[k]);
  }
  cudaFree(matrix);
  return double(ms) * 1e-3;
}

#if APPS_WITH_MPI
using apps::check_mpi;

// Two buffers of pinned host memory for MPI (not CUDA-aware), one a
// parity, freed with their owner.
struct pinned_pair {
  float* p[2] = {};
  explicit pinned_pair(std::size_t bytes) {
    for (float*& b : p) check_cuda(cudaMallocHost(&b, bytes), "cudaMallocHost");
  }
  ~pinned_pair() {
    for (float* b : p) cudaFreeHost(b);
  }
  pinned_pair(const pinned_pair&) = delete;
  pinned_pair& operator=(const pinned_pair&) = delete;
};

// Seconds for run(batches), after a warm-up batch and a barrier with the
// other end.
template <class Run>
double timed(const Run& run, int batches) {
  run(1);
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  const auto start = std::chrono::steady_clock::now();
  run(batches);
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
  return spent.count();
}

// The producers' end: the vector sets and the products on this process's
// GPU. Batch b's vectors come off the GPU, travel to the workers' process
// by MPI, and its products come back the same way into the GPU; two
// batches in flight. A vector message carries tag k (its set), a product
// message 2 + k.
double run_producers(const baseline_job& j, bool* wrong) {
  const int count = j.pairs * j.vectors * n;
  const std::size_t bytes = std::size_t(count) * sizeof(float);
  float *source[2] = {}, *products[2] = {};
  for (int k = 0; k < 2; ++k) {
    check_cuda(cudaMalloc(&source[k], bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&products[k], bytes), "cudaMalloc");
    check_cuda(cudaMemcpy(source[k], vector_set(j.pairs, j.vectors, k).data(), bytes,
                          cudaMemcpyHostToDevice),
               "cudaMemcpy");
  }
  pinned_pair out_buffers(bytes), in_buffers(bytes);
  float* const* out = out_buffers.p;
  float* const* in = in_buffers.p;
  cudaStream_t stream;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  auto run = [&](int batches) {
    MPI_Request sent[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                received[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    for (int b = 0; b < batches + 2; ++b) {
      if (b >= 2) {  // batch b - 2's products into the GPU
        const int k = (b - 2) % 2;
        check_mpi(MPI_Wait(&received[k], MPI_STATUS_IGNORE), "MPI_Wait");
        check_cuda(cudaMemcpyAsync(products[k], in[k], bytes, cudaMemcpyHostToDevice, stream),
                   "cudaMemcpyAsync");
      }
      if (b >= batches) continue;
      const int k = b % 2;
      check_mpi(MPI_Wait(&sent[k], MPI_STATUS_IGNORE), "MPI_Wait");   // out[k] is free
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");  // and in[k]
      check_cuda(cudaMemcpy(out[k], source[k], bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      check_mpi(MPI_Irecv(in[k], count, MPI_FLOAT, j.partner_process, 2 + k, MPI_COMM_WORLD,
                          &received[k]),
                "MPI_Irecv");
      check_mpi(MPI_Isend(out[k], count, MPI_FLOAT, j.partner_process, k, MPI_COMM_WORLD, &sent[k]),
                "MPI_Isend");
    }
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    check_mpi(MPI_Waitall(2, sent, MPI_STATUSES_IGNORE), "MPI_Waitall");
  };
  const double seconds = timed(run, j.batches);
  if (wrong != nullptr) {
    const int k = (j.batches - 1) % 2;
    *wrong = any_wrong(products[k], j.pairs, j.vectors, k);
  }
  cudaStreamDestroy(stream);
  for (int k = 0; k < 2; ++k) {
    cudaFree(source[k]);
    cudaFree(products[k]);
  }
  return seconds;
}

// The workers' end: the matrix and the workers' buffers on this process's
// GPU; per batch the host receives the vectors, copies them in, launches
// the kernel, copies the products out and sends them back. The next
// batch's vectors are received meanwhile.
double run_workers(const baseline_job& j) {
  const int count = j.pairs * j.vectors * n;
  const std::size_t bytes = std::size_t(count) * sizeof(float);
  float *matrix = nullptr, *in[2] = {}, *out[2] = {};
  check_cuda(cudaMalloc(&matrix, n * n * sizeof(float)), "cudaMalloc");
  check_cuda(cudaMemcpy(matrix, the_matrix().data(), n * n * sizeof(float), cudaMemcpyHostToDevice),
             "cudaMemcpy");
  for (int k = 0; k < 2; ++k) {
    check_cuda(cudaMalloc(&in[k], bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&out[k], bytes), "cudaMalloc");
  }
  pinned_pair x_buffers(bytes), y_buffers(bytes);
  float* const* x = x_buffers.p;
  float* const* y = y_buffers.p;
  cudaStream_t stream;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  auto run = [&](int batches) {
    MPI_Request sent[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                received[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    for (int k = 0; k < 2 && k < batches; ++k)
      check_mpi(
          MPI_Irecv(x[k], count, MPI_FLOAT, j.partner_process, k, MPI_COMM_WORLD, &received[k]),
          "MPI_Irecv");
    for (int b = 0; b < batches; ++b) {
      const int k = b % 2;
      check_mpi(MPI_Wait(&received[k], MPI_STATUS_IGNORE), "MPI_Wait");
      check_cuda(cudaMemcpyAsync(in[k], x[k], bytes, cudaMemcpyHostToDevice, stream),
                 "cudaMemcpyAsync");
      multiply<<<j.pairs, j.threads, 0, stream>>>(matrix, in[k], out[k], j.vectors);
      check_cuda(cudaGetLastError(), "multiply");
      check_mpi(MPI_Wait(&sent[k], MPI_STATUS_IGNORE), "MPI_Wait");  // y[k] is free
      check_cuda(cudaMemcpyAsync(y[k], out[k], bytes, cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      if (b + 2 < batches)
        check_mpi(
            MPI_Irecv(x[k], count, MPI_FLOAT, j.partner_process, k, MPI_COMM_WORLD, &received[k]),
            "MPI_Irecv");
      check_mpi(
          MPI_Isend(y[k], count, MPI_FLOAT, j.partner_process, 2 + k, MPI_COMM_WORLD, &sent[k]),
          "MPI_Isend");
    }
    check_mpi(MPI_Waitall(2, sent, MPI_STATUSES_IGNORE), "MPI_Waitall");
  };
  const double seconds = timed(run, j.batches);
  cudaStreamDestroy(stream);
  for (int k = 0; k < 2; ++k) {
    cudaFree(in[k]);
    cudaFree(out[k]);
  }
  cudaFree(matrix);
  return seconds;
}
#endif

}  // namespace

double run_baseline(const baseline_job& job, bool* wrong) {
  const apps::device_restorer keep;
  if (job.partner_process < 0) return run_here(job, wrong);
#if APPS_WITH_MPI
  try {
    if (wrong != nullptr) *wrong = false;
    return job.producers_here ? run_producers(job, wrong) : run_workers(job);
  } catch (const std::exception& e) {
    apps::abort_processes("grma-mmv", e);
  }
#else
  throw std::runtime_error("mmv baseline: two processes need a build with MPI");
#endif
}

}  // namespace mmv
