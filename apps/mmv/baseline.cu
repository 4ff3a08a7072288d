#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../cuda_support.hpp"
#include "baseline.hpp"
#include "mmv.hpp"

namespace mmv {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("mmv baseline: ") + what + ": " + cudaGetErrorString(e));
}

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

}  // namespace

double run_baseline(int pairs, int vectors, int batches, int threads, int producer_device,
                    int worker_device, bool* wrong) {
  const apps::device_restorer keep;
  const std::size_t count = std::size_t(pairs) * std::size_t(vectors) * n,
                    bytes = count * sizeof(float);
  if (producer_device != worker_device)
    for (const auto& [from, to] :
         {std::pair{producer_device, worker_device}, std::pair{worker_device, producer_device}}) {
      check(cudaSetDevice(from), "cudaSetDevice");
      // grma's runtime in this process may have enabled it already.
      const cudaError_t peer = cudaDeviceEnablePeerAccess(to, 0);
      if (peer != cudaErrorPeerAccessAlreadyEnabled) check(peer, "cudaDeviceEnablePeerAccess");
      cudaGetLastError();
    }
  // The producers' vector sets 0 and 1 (batch b sends set b % 2) and their
  // products, per parity, on the producers' GPU; the matrix and the
  // workers' buffers on the workers'.
  float *matrix = nullptr, *source[2] = {}, *in[2] = {}, *out[2] = {}, *products[2] = {};
  check(cudaSetDevice(worker_device), "cudaSetDevice");
  check(cudaMalloc(&matrix, n * n * sizeof(float)), "cudaMalloc");
  std::vector<float> host(count);
  for (int k = 0; k < 2; ++k) {
    check(cudaSetDevice(producer_device), "cudaSetDevice");
    check(cudaMalloc(&source[k], bytes), "cudaMalloc");
    check(cudaMalloc(&products[k], bytes), "cudaMalloc");
    check(cudaSetDevice(worker_device), "cudaSetDevice");
    check(cudaMalloc(&in[k], bytes), "cudaMalloc");
    check(cudaMalloc(&out[k], bytes), "cudaMalloc");
    for (std::size_t e = 0; e < count; ++e)
      host[e] = vector_entry(int(e / (std::size_t(vectors) * n)), k,
                             int(e / n % std::size_t(vectors)), int(e % n));
    check(cudaMemcpy(source[k], host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  std::vector<float> m(n * n);
  for (int e = 0; e < n * n; ++e) m[std::size_t(e)] = matrix_entry(e / n, e % n);
  check(cudaMemcpy(matrix, m.data(), m.size() * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy");
  cudaStream_t streams[2];
  for (auto& s : streams) check(cudaStreamCreate(&s), "cudaStreamCreate");
  auto batch = [&](int b) {
    const int k = b % 2;
    check(cudaStreamSynchronize(streams[k]), "cudaStreamSynchronize");  // batch b - 2 is done
    check(cudaMemcpyPeerAsync(in[k], worker_device, source[k], producer_device, bytes, streams[k]),
          "cudaMemcpyPeerAsync");
    multiply<<<pairs, threads, 0, streams[k]>>>(matrix, in[k], out[k], vectors);
    check(cudaGetLastError(), "multiply");
    check(
        cudaMemcpyPeerAsync(products[k], producer_device, out[k], worker_device, bytes, streams[k]),
        "cudaMemcpyPeerAsync");
  };
  batch(0);  // warm-up
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cudaEvent_t begin, end;
  check(cudaEventCreate(&begin), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  check(cudaEventRecord(begin, streams[0]), "cudaEventRecord");
  for (int b = 0; b < batches; ++b) batch(b);
  check(cudaStreamSynchronize(streams[0]), "cudaStreamSynchronize");
  check(cudaStreamSynchronize(streams[1]), "cudaStreamSynchronize");
  check(cudaEventRecord(end, streams[0]), "cudaEventRecord");
  check(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
  if (wrong != nullptr) {
    const int k = (batches - 1) % 2;
    check(cudaMemcpy(host.data(), products[k], bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    *wrong = false;
    for (std::size_t e = 0; e < count; ++e) {
      float x[n];
      for (int j = 0; j < n; ++j)
        x[j] = vector_entry(int(e / (std::size_t(vectors) * n)), k,
                            int(e / n % std::size_t(vectors)), j);
      *wrong = *wrong || host[e] != product_entry(&m[e % n * n], x);
    }
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

}  // namespace mmv
