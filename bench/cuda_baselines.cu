#include "cuda_baselines.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include "cuda_bench.hpp"

namespace bench {
namespace {

// Enables peer access both ways between GPUs a and b (a != b).
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

// One side of the ping-pong: `first` stores, then polls; the other polls,
// then stores. Thread 0 only; `first` records the time of `iterations` round
// trips after 100 for warm-up. Released (the least a notified put must do):
// each side stores 8 bytes of data into the other's memory, then a release
// fence, then the flag; the poll acquires, so the data is visible once the
// flag is seen, at the scope grma uses (device on one GPU, system between
// GPUs). Raw: the flag store and a plain poll, no ordering.
template <bool Released, bool Peer>
__device__ void flag_side(volatile unsigned* mine, volatile unsigned* theirs, bool first,
                          int iterations, long long* ns) {
  // The other side's data word: the 128-byte line after its flag.
  auto* their_data = reinterpret_cast<unsigned long long*>(const_cast<unsigned*>(theirs) + 32);
  long long start = 0;
  auto store = [&](unsigned i) {
    if constexpr (Released) {
      *their_data = i;
      if constexpr (Peer)
        asm volatile("fence.acq_rel.sys;" ::: "memory");
      else
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
    }
    *theirs = i;
  };
  auto poll = [&](unsigned i) {
    if constexpr (Released) {
      unsigned seen;
      do {
        if constexpr (Peer)
          asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(seen) : "l"(mine) : "memory");
        else
          asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(seen) : "l"(mine) : "memory");
      } while (seen != i);
    } else {
      while (*mine != i) continue;
    }
  };
  for (int i = 1; i <= iterations + 100; ++i) {
    if (i == 101) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    if (first) {
      store(unsigned(i));
      poll(unsigned(i));
    } else {
      poll(unsigned(i));
      store(unsigned(i));
    }
  }
  long long end;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end));
  if (first) *ns = end - start;
}

// Both sides as the two blocks of one kernel (one GPU), each with a flag line
// and a data line.
template <bool Released>
__global__ void flag_blocks(unsigned* flags, int iterations, long long* ns) {
  if (threadIdx.x != 0) return;
  unsigned* mine = flags + 64 * blockIdx.x;
  unsigned* theirs = flags + 64 * (1 - blockIdx.x);
  flag_side<Released, false>(mine, theirs, blockIdx.x == 0, iterations, ns);
}

// One side per GPU, each polling its own memory and storing into the peer's.
template <bool Released>
__global__ void flag_block(unsigned* mine, unsigned* theirs, bool first, int iterations,
                           long long* ns) {
  if (threadIdx.x == 0) flag_side<Released, true>(mine, theirs, first, iterations, ns);
}

template <bool Released>
double flag_round_trip_us(int a, int b, int iterations) {
  long long* ns;
  long long host_ns = 0;
  check(cudaSetDevice(a), "cudaSetDevice");
  check(cudaMalloc(&ns, sizeof(long long)), "cudaMalloc");
  if (a == b) {
    unsigned* flags;
    check(cudaMalloc(&flags, 128 * sizeof(unsigned)), "cudaMalloc");
    check(cudaMemset(flags, 0, 128 * sizeof(unsigned)), "cudaMemset");
    flag_blocks<Released><<<2, 32>>>(flags, iterations, ns);
    check(cudaGetLastError(), "flag launch");
    check(cudaDeviceSynchronize(), "flag ping-pong");
    cudaFree(flags);
  } else {
    enable_peer_access(a, b);
    unsigned* flag[2];
    cudaStream_t stream[2];
    const int device[2] = {a, b};
    for (int i = 0; i < 2; ++i) {
      check(cudaSetDevice(device[i]), "cudaSetDevice");
      check(cudaMalloc(&flag[i], 256), "cudaMalloc");
      check(cudaMemset(flag[i], 0, 256), "cudaMemset");
      check(cudaDeviceSynchronize(), "cudaMemset");
      check(cudaStreamCreateWithFlags(&stream[i], cudaStreamNonBlocking), "cudaStreamCreate");
    }
    // The polling side first: the other's first store must find it running.
    check(cudaSetDevice(b), "cudaSetDevice");
    flag_block<Released><<<1, 32, 0, stream[1]>>>(flag[1], flag[0], false, iterations, nullptr);
    check(cudaSetDevice(a), "cudaSetDevice");
    flag_block<Released><<<1, 32, 0, stream[0]>>>(flag[0], flag[1], true, iterations, ns);
    check(cudaGetLastError(), "flag launch");
    for (int i = 0; i < 2; ++i) {
      check(cudaStreamSynchronize(stream[i]), "flag ping-pong");
      check(cudaSetDevice(device[i]), "cudaSetDevice");
      cudaFree(flag[i]);
      cudaStreamDestroy(stream[i]);
    }
    check(cudaSetDevice(a), "cudaSetDevice");
  }
  check(cudaMemcpy(&host_ns, ns, sizeof host_ns, cudaMemcpyDeviceToHost), "flag ping-pong");
  cudaFree(ns);
  return double(host_ns) / iterations * 1e-3;
}

}  // namespace

double raw_flag_round_trip_us(int a, int b, int iterations) {
  return flag_round_trip_us<false>(a, b, iterations);
}

double release_flag_round_trip_us(int a, int b, int iterations) {
  return flag_round_trip_us<true>(a, b, iterations);
}

double memcpy_gbs(int a, int b, std::size_t bytes, int iterations) {
  void *from, *to;
  check(cudaSetDevice(b), "cudaSetDevice");
  check(cudaMalloc(&to, bytes), "cudaMalloc");
  check(cudaSetDevice(a), "cudaSetDevice");
  check(cudaMalloc(&from, bytes), "cudaMalloc");
  check(cudaMemset(from, 1, bytes), "cudaMemset");
  // Without peer access the copy goes through host memory. Left on: UCX's
  // CUDA IPC turns it on by itself, and turning it off after each copy cut
  // UCX's own 1 MiB puts from 38 to 12 GB/s (decision 026).
  if (a != b) {
    const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
      cudaGetLastError();  // clears it
    else
      check(e, "cudaDeviceEnablePeerAccess");
  }
  check(cudaMemcpyPeer(to, b, from, a, bytes), "warm-up copy");
  // For up to 20 ms after a grma run ends, a copy on an H200 measured 10 %
  // slower; the floor is the undisturbed device's (decision 030).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double seconds = event_seconds([&] {
    for (int i = 0; i < iterations; ++i) cudaMemcpyPeerAsync(to, b, from, a, bytes);
  });
  cudaFree(from);
  check(cudaSetDevice(b), "cudaSetDevice");
  cudaFree(to);
  check(cudaSetDevice(a), "cudaSetDevice");
  return double(bytes) * iterations / seconds / 1e9;
}

int visible_gpus() {
  int n = 0;
  check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  return n;
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
