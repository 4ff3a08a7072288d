#include "cuda_baselines.hpp"

#include <cuda_runtime.h>

#include "cuda_bench.hpp"

namespace bench {
namespace {

// One side of the ping-pong: `first` stores, then polls; the other polls,
// then stores. Thread 0 only; `first` records the time of `iterations` round
// trips after 100 for warm-up.
__device__ void raw_flag_side(volatile unsigned* mine, volatile unsigned* theirs, bool first,
                              int iterations, long long* ns) {
  long long start = 0;
  for (int i = 1; i <= iterations + 100; ++i) {
    if (i == 101) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    if (first) {
      *theirs = i;
      while (*mine != unsigned(i)) {}
    } else {
      while (*mine != unsigned(i)) {}
      *theirs = i;
    }
  }
  long long end;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end));
  if (first) *ns = end - start;
}

// Both sides as the two blocks of one kernel (one GPU).
__global__ void raw_flag_blocks(volatile unsigned* flags, int iterations, long long* ns) {
  if (threadIdx.x != 0) return;
  volatile unsigned* mine = flags + 32 * blockIdx.x;  // separate 128-byte lines
  volatile unsigned* theirs = flags + 32 * (1 - blockIdx.x);
  raw_flag_side(mine, theirs, blockIdx.x == 0, iterations, ns);
}

// One side per GPU, each polling its own memory and storing into the peer's.
__global__ void raw_flag_block(volatile unsigned* mine, volatile unsigned* theirs, bool first,
                               int iterations, long long* ns) {
  if (threadIdx.x == 0) raw_flag_side(mine, theirs, first, iterations, ns);
}

}  // namespace

void enable_peer_access(int a, int b) {
  for (int d : {a, b}) {
    check(cudaSetDevice(d), "cudaSetDevice");
    const cudaError_t e = cudaDeviceEnablePeerAccess(d == a ? b : a, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
      (void)cudaGetLastError();
    else
      check(e, "cudaDeviceEnablePeerAccess");
  }
  check(cudaSetDevice(a), "cudaSetDevice");
}

double raw_flag_round_trip_us(int a, int b, int iterations) {
  long long* ns;
  long long host_ns = 0;
  check(cudaSetDevice(a), "cudaSetDevice");
  check(cudaMalloc(&ns, sizeof(long long)), "cudaMalloc");
  if (a == b) {
    unsigned* flags;
    check(cudaMalloc(&flags, 64 * sizeof(unsigned)), "cudaMalloc");
    check(cudaMemset(flags, 0, 64 * sizeof(unsigned)), "cudaMemset");
    raw_flag_blocks<<<2, 32>>>(flags, iterations, ns);
    check(cudaGetLastError(), "raw flag launch");
    check(cudaDeviceSynchronize(), "raw flag");
    cudaFree(flags);
  } else {
    enable_peer_access(a, b);
    unsigned* flag[2];
    cudaStream_t stream[2];
    const int device[2] = {a, b};
    for (int i = 0; i < 2; ++i) {
      check(cudaSetDevice(device[i]), "cudaSetDevice");
      check(cudaMalloc(&flag[i], 128), "cudaMalloc");
      check(cudaMemset(flag[i], 0, 128), "cudaMemset");
      check(cudaDeviceSynchronize(), "cudaMemset");
      check(cudaStreamCreateWithFlags(&stream[i], cudaStreamNonBlocking), "cudaStreamCreate");
    }
    // The polling side first: the other's first store must find it running.
    check(cudaSetDevice(b), "cudaSetDevice");
    raw_flag_block<<<1, 32, 0, stream[1]>>>(flag[1], flag[0], false, iterations, nullptr);
    check(cudaSetDevice(a), "cudaSetDevice");
    raw_flag_block<<<1, 32, 0, stream[0]>>>(flag[0], flag[1], true, iterations, ns);
    check(cudaGetLastError(), "raw flag launch");
    for (int i = 0; i < 2; ++i) {
      check(cudaStreamSynchronize(stream[i]), "raw flag");
      check(cudaSetDevice(device[i]), "cudaSetDevice");
      cudaFree(flag[i]);
      cudaStreamDestroy(stream[i]);
    }
    check(cudaSetDevice(a), "cudaSetDevice");
  }
  check(cudaMemcpy(&host_ns, ns, sizeof host_ns, cudaMemcpyDeviceToHost), "raw flag");
  cudaFree(ns);
  return double(host_ns) / iterations * 1e-3;
}

double memcpy_gbs(int a, int b, std::size_t bytes, int iterations) {
  void *from, *to;
  check(cudaSetDevice(b), "cudaSetDevice");
  check(cudaMalloc(&to, bytes), "cudaMalloc");
  check(cudaSetDevice(a), "cudaSetDevice");
  check(cudaMalloc(&from, bytes), "cudaMalloc");
  check(cudaMemset(from, 1, bytes), "cudaMemset");
  check(cudaMemcpyPeer(to, b, from, a, bytes), "warm-up copy");
  const double seconds = event_seconds([&] {
    for (int i = 0; i < iterations; ++i) cudaMemcpyPeerAsync(to, b, from, a, bytes);
  });
  cudaFree(from);
  check(cudaSetDevice(b), "cudaSetDevice");
  cudaFree(to);
  check(cudaSetDevice(a), "cudaSetDevice");
  return double(bytes) * iterations / seconds / 1e9;
}

device_buffer::device_buffer(std::size_t bytes) {
  check(cudaMalloc(&memory_, bytes == 0 ? 1 : bytes), "cudaMalloc");
}

device_buffer::~device_buffer() { cudaFree(memory_); }

void device_buffer::to_host(void* host, std::size_t bytes) const {
  check(cudaMemcpy(host, memory_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

void device_buffer::to_device(const void* host, std::size_t bytes) const {
  check(cudaMemcpy(memory_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

}  // namespace bench
