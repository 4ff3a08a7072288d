// NVSHMEM on two GPUs of one node, the comparison for grma-bench-peer-devices
// (issue 4): round trip of put-with-signal (nvshmemx_putmem_signal_block +
// nvshmem_signal_wait_until) and of nvshmem_int_p + nvshmem_int_wait_until;
// bandwidth of nvshmemx_putmem_nbi_block from one block and from many. One
// process per GPU, started by mpirun; MPI only passes NVSHMEM's unique id.
//
//   mpirun -np 2 grma-bench-nvshmem [--json FILE] [--threads N] [--blocks N]
#include <cuda_runtime.h>
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_bench.hpp"

namespace {

using bench::check;

// PE 0 sends first; each half is one put with its signal, then a wait.
__global__ void signal_ping_pong(unsigned char* buffer, std::uint64_t* signal, std::size_t bytes,
                                 int iterations) {
  const int me = nvshmem_my_pe(), peer = 1 - me;
  for (int i = 1; i <= iterations; ++i) {
    if (me == 0) {
      nvshmemx_putmem_signal_block(buffer, buffer, bytes, signal, std::uint64_t(i),
                                   NVSHMEM_SIGNAL_SET, peer);
      if (threadIdx.x == 0) nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, std::uint64_t(i));
    } else {
      if (threadIdx.x == 0) nvshmem_signal_wait_until(signal, NVSHMEM_CMP_GE, std::uint64_t(i));
      __syncthreads();
      nvshmemx_putmem_signal_block(buffer, buffer, bytes, signal, std::uint64_t(i),
                                   NVSHMEM_SIGNAL_SET, peer);
    }
    __syncthreads();
  }
}

__global__ void int_ping_pong(int* flag, int iterations) {
  if (threadIdx.x != 0) return;
  const int me = nvshmem_my_pe(), peer = 1 - me;
  for (int i = 1; i <= iterations; ++i) {
    if (me == 0) {
      nvshmem_int_p(flag, i, peer);
      nvshmem_int_wait_until(flag, NVSHMEM_CMP_GE, i);
    } else {
      nvshmem_int_wait_until(flag, NVSHMEM_CMP_GE, i);
      nvshmem_int_p(flag, i, peer);
    }
  }
}

// Every block puts its share of `bytes` to PE 1, `iterations` times.
__global__ void put_bandwidth(unsigned char* buffer, std::size_t bytes, int iterations) {
  const std::size_t share = bytes / gridDim.x;
  unsigned char* mine = buffer + share * blockIdx.x;
  for (int i = 0; i < iterations; ++i) nvshmemx_putmem_nbi_block(mine, mine, share, 1);
  nvshmem_quiet();
}

// Seconds one launch of a kernel takes here (both PEs start it together).
template <class Launch>
double timed(Launch&& launch) {
  nvshmem_barrier_all();
  return bench::event_seconds(launch);
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "nvshmem_peer.json";
  int threads = 256, blocks = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--json")) json_path = argv[i + 1];
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--blocks")) blocks = std::atoi(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "grma-bench-nvshmem runs as two processes (mpirun -np 2)\n");
    MPI_Finalize();
    return 1;
  }
  check(cudaSetDevice(rank), "cudaSetDevice");
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0) nvshmemx_get_uniqueid(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr);
  nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);

  constexpr std::size_t most = std::size_t(64) << 20;
  auto* buffer = static_cast<unsigned char*>(nvshmem_malloc(most));
  auto* signal = static_cast<std::uint64_t*>(nvshmem_calloc(1, sizeof(std::uint64_t)));
  auto* flag = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  check(cudaMemset(buffer, rank + 1, most), "cudaMemset");
  check(cudaDeviceSynchronize(), "sync");

  std::FILE* json = rank == 0 ? std::fopen(json_path.c_str(), "w") : nullptr;
  const int iterations = 5000;
  cudaMemset(flag, 0, sizeof(int));
  nvshmem_barrier_all();
  const double int_us = timed([&] { int_ping_pong<<<1, 32>>>(flag, iterations); }) / iterations * 1e6;
  if (rank == 0) {
    std::printf("NVSHMEM %d.%d, 2 PEs, %d threads per block\n\n", NVSHMEM_VENDOR_MAJOR_VERSION,
                NVSHMEM_VENDOR_MINOR_VERSION, threads);
    std::printf("round trip [us]      bytes  putmem_signal_block  int_p + wait_until\n");
    std::fprintf(json, "{\n  \"threads_per_block\": %d,\n  \"int_p_us\": %.4f,\n  \"latency\": [\n",
                 threads, int_us);
  }
  bool first = true;
  for (std::size_t bytes = 8; bytes <= most; bytes *= 8) {
    const int n = bytes <= 4096 ? iterations : bytes <= (1 << 20) ? 500 : 20;
    cudaMemset(signal, 0, sizeof(std::uint64_t));
    check(cudaDeviceSynchronize(), "sync");
    const double us =
        timed([&] { signal_ping_pong<<<1, threads>>>(buffer, signal, bytes, n); }) / n * 1e6;
    if (rank == 0) {
      std::printf("               %10zu  %19.3f  %18.3f\n", bytes, us, int_us);
      std::fprintf(json, "%s    {\"bytes\": %zu, \"putmem_signal_us\": %.4f}", first ? "" : ",\n",
                   bytes, us);
    }
    first = false;
  }
  if (rank == 0) {
    std::printf("\nbandwidth PE 0 -> PE 1 [GB/s]   bytes  one block  %d blocks\n", blocks);
    std::fprintf(json, "\n  ],\n  \"bandwidth\": [\n");
  }
  first = true;
  for (std::size_t bytes = std::size_t(64) << 10; bytes <= most; bytes *= 4) {
    const int n = 20;
    // Only PE 0 sends; PE 1 launches nothing and waits at the barriers.
    const double one = timed([&] {
      if (rank == 0) put_bandwidth<<<1, threads>>>(buffer, bytes, n);
    });
    const double many = timed([&] {
      if (rank == 0) put_bandwidth<<<blocks, threads>>>(buffer, bytes, n);
    });
    if (rank == 0) {
      const double one_gbs = double(bytes) * n / one / 1e9, many_gbs = double(bytes) * n / many / 1e9;
      std::printf("                              %10zu  %9.1f  %9.1f\n", bytes, one_gbs, many_gbs);
      std::fprintf(json, "%s    {\"bytes\": %zu, \"one_block_gbs\": %.2f, \"blocks_gbs\": %.2f}",
                   first ? "" : ",\n", bytes, one_gbs, many_gbs);
    }
    first = false;
  }
  if (rank == 0) {
    std::fprintf(json, "\n  ]\n}\n");
    std::fclose(json);
    std::printf("\nJSON: %s\n", json_path.c_str());
  }
  nvshmem_free(flag);
  nvshmem_free(signal);
  nvshmem_free(buffer);
  nvshmem_finalize();
  MPI_Finalize();
  return 0;
}
