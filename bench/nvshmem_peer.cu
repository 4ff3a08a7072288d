// NVSHMEM between two GPUs of one node: the NVSHMEM columns of grma-bench's
// peer-device path, measured in the same run. grma-bench starts this program
// twice (one process per GPU, `--pe 0` and `--pe 1`) and reads what PE 0
// writes; it is not meant to be started by hand. PE 0 makes NVSHMEM's unique
// id and leaves it in `--id-file` for PE 1 (no MPI needed).
//
// Round trips: put-with-signal (nvshmemx_putmem_signal_block, then
// nvshmem_signal_wait_until) at each `--latency` size, and nvshmem_int_p with
// nvshmem_int_wait_until (no ordering: NVSHMEM's flag). The operations of
// grma's core beside them, `--latency-iterations` times each: a fetch_add
// round trip (nvshmem_uint64_atomic_fetch_add by one thread of PE 0, its old
// values checked), barrier (nvshmemx_barrier_block over NVSHMEM_TEAM_WORLD)
// and an allreduce of one uint64 (nvshmemx_uint64_sum_reduce_block, checked)
// by one block of each PE; and the add rate: every thread of one block of
// PE 0 adding to its own word of PE 1's `--adds` times
// (nvshmem_uint64_atomic_add, nothing fetched), then nvshmem_quiet (PE 1
// checks the words). Bandwidth: one block putting each `--bandwidth` size
// to PE 1, and `--blocks` blocks each putting as much (as grma-bench's
// pairs do) where that is at most `--all-up-to` bytes a block. Each kernel
// runs once before it is timed. Output (`--out`), one figure per line:
//
//   int_p_us US
//   fetch_add_us US
//   add_rate_per_s ADDS
//   barrier_us US
//   allreduce_8b_us US
//   latency BYTES US
//   bandwidth BYTES ONE_BLOCK_GBS BLOCKS_GBS   (BLOCKS_GBS nan where not measured)
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_bench.hpp"
#include "nvshmem_bootstrap.hpp"

namespace {

using bench::check;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "grma-bench-nvshmem: %s\n", what.c_str());
  std::exit(1);
}

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

// PE 0's one thread adds 1 to PE 1's counter, `iterations` times, each
// waiting for the old value, which counts in `wrong` where it is not the
// number of adds before it (the counter starts at zero).
__global__ void fetch_add_round_trip(std::uint64_t* counter, int iterations, int* wrong) {
  if (threadIdx.x != 0) return;
  for (int i = 0; i < iterations; ++i)
    if (nvshmem_uint64_atomic_fetch_add(counter, 1, 1) != std::uint64_t(i)) ++*wrong;
}

// Every thread of PE 0's block adds 1 to its own word of PE 1's `words`,
// `adds` times, then waits for its adds to complete.
__global__ void add_rate(std::uint64_t* words, int adds) {
  for (int i = 0; i < adds; ++i) nvshmem_uint64_atomic_add(words + threadIdx.x, 1, 1);
  nvshmem_quiet();
}

// All threads of each PE's block, as all threads of a grma rank call its
// barrier.
__global__ void barrier_rounds(int rounds) {
  for (int i = 0; i < rounds; ++i) nvshmemx_barrier_block(NVSHMEM_TEAM_WORLD);
}

// PE p gives 2 i + p in round i, so every round's sum, 4 i + 1, differs
// from the one before: a round whose result is not it counts in `wrong`.
__global__ void allreduce_rounds(std::uint64_t* dest, std::uint64_t* source, int rounds, int* wrong) {
  const int me = nvshmem_my_pe();
  for (int i = 0; i < rounds; ++i) {
    if (threadIdx.x == 0) *source = 2 * std::uint64_t(i) + std::uint64_t(me);
    __syncthreads();
    nvshmemx_uint64_sum_reduce_block(NVSHMEM_TEAM_WORLD, dest, source, 1);
    if (threadIdx.x == 0 && *dest != 4 * std::uint64_t(i) + 1) ++*wrong;
  }
}

// Every block puts `bytes` of its own part of the buffer to PE 1,
// `iterations` times, then waits for them to complete.
__global__ void put_bandwidth(unsigned char* buffer, std::size_t bytes, int iterations) {
  unsigned char* mine = buffer + bytes * blockIdx.x;
  for (int i = 0; i < iterations; ++i) nvshmemx_putmem_nbi_block(mine, mine, bytes, 1);
  nvshmem_quiet();
}

// One block of `threads` running `kernel` on each PE, started by both PEs
// together as NVSHMEM asks of kernels that call its device collectives
// (its own perftest starts theirs so).
template <class... Args>
void collective_launch(void (*kernel)(Args...), int threads, std::type_identity_t<Args>... args) {
  void* arguments[] = {&args...};
  if (nvshmemx_collective_launch(reinterpret_cast<const void*>(kernel), dim3(1), dim3(threads), arguments, 0,
                                 cudaStream_t{}) != NVSHMEMX_SUCCESS)
    fail("nvshmemx_collective_launch failed");
}

// Seconds of what `launch` enqueues on this PE's stream; both PEs meet
// first. A launch that failed ends this PE at once (its peer's wait for it
// is ended by grma-bench).
template <class Launch>
double timed(Launch&& launch) {
  nvshmem_barrier_all();
  const double seconds = bench::event_seconds(launch);
  check(cudaGetLastError(), "kernel launch");
  return seconds;
}

// Ends this PE where a kernel counted a wrong result (and clears the count).
void expect_right(int* wrong, const char* what) {
  int count = 0;
  check(cudaMemcpy(&count, wrong, sizeof count, cudaMemcpyDeviceToHost), "cudaMemcpy");
  if (count != 0) fail(std::string(what) + ": " + std::to_string(count) + " wrong results");
  check(cudaMemset(wrong, 0, sizeof count), "cudaMemset");
}

// Ends PE 1 where PE 0's adds did not all land: each of `threads` words
// should hold `adds` (both PEs call it: PE 1 reads after the barrier).
void expect_adds(const std::uint64_t* words, int threads, std::uint64_t adds, int pe) {
  nvshmem_barrier_all();
  if (pe != 1) return;
  std::vector<std::uint64_t> got(std::size_t(threads), 0);
  check(cudaMemcpy(got.data(), words, got.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (int t = 0; t < threads; ++t)
    if (got[std::size_t(t)] != adds)
      fail("add rate: thread " + std::to_string(t) + "'s word holds " + std::to_string(got[std::size_t(t)]) +
           " after " + std::to_string(adds) + " adds");
}

std::vector<std::size_t> sizes(const char* list) {
  std::vector<std::size_t> out;
  for (const char* p = list; *p;) {
    char* end = nullptr;
    out.push_back(std::strtoull(p, &end, 10));
    if (end == p) fail(std::string("bad size list: ") + list);
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int pe = -1, pes = 0, threads = 256, blocks = 64, latency_iterations = 5000,
      bandwidth_iterations = 20, adds = 1000;
  std::size_t all_up_to = 0;
  std::string id_file, out_path;
  std::vector<std::size_t> latency_sizes, bandwidth_sizes;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--pe") pe = std::atoi(v);
    else if (a == "--pes") pes = std::atoi(v);
    else if (a == "--id-file") id_file = v;
    else if (a == "--out") out_path = v;
    else if (a == "--threads") threads = std::atoi(v);
    else if (a == "--blocks") blocks = std::atoi(v);
    else if (a == "--latency") latency_sizes = sizes(v);
    else if (a == "--bandwidth") bandwidth_sizes = sizes(v);
    else if (a == "--all-up-to") all_up_to = std::strtoull(v, nullptr, 10);
    else if (a == "--latency-iterations") latency_iterations = std::atoi(v);
    else if (a == "--bandwidth-iterations") bandwidth_iterations = std::atoi(v);
    else if (a == "--adds") adds = std::atoi(v);
    else fail("unknown option " + a);
  }
  if (pes != 2 || (pe != 0 && pe != 1) || id_file.empty() || (pe == 0 && out_path.empty()) ||
      threads < 1 || blocks < 1 || latency_iterations < 1 || bandwidth_iterations < 1 || adds < 1)
    fail(
        "usage: grma-bench-nvshmem --pe 0|1 --pes 2 --id-file PATH --out FILE [--latency SIZES] "
        "[--bandwidth SIZES] [--blocks N] [--all-up-to BYTES] [--threads N] "
        "[--latency-iterations N] [--bandwidth-iterations N] [--adds N]");
  // One buffer for the largest of: a round trip, one block's puts, all
  // blocks' puts; NVSHMEM's heap holds it beside its own allocations.
  std::size_t most = 8;
  for (std::size_t b : latency_sizes) most = std::max(most, b);
  for (std::size_t b : bandwidth_sizes) most = std::max(most, b <= all_up_to ? b * std::size_t(blocks) : b);
  try {
    bench::nvshmem_join(pe, pes, id_file, most + (std::size_t(256) << 20));
  } catch (const std::exception& e) {
    fail(e.what());
  }

  auto* buffer = static_cast<unsigned char*>(nvshmem_malloc(most));
  auto* signal = static_cast<std::uint64_t*>(nvshmem_calloc(1, sizeof(std::uint64_t)));
  auto* flag = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  // The fetch_add counter, the allreduce's source and result, a word per thread for the adds.
  auto* words = static_cast<std::uint64_t*>(nvshmem_calloc(3 + std::size_t(threads), sizeof(std::uint64_t)));
  if (buffer == nullptr || signal == nullptr || flag == nullptr || words == nullptr)
    fail("nvshmem_malloc of " + std::to_string(most) + " bytes failed (NVSHMEM_SYMMETRIC_SIZE)");
  std::uint64_t* counter = words;
  std::uint64_t* reduced = words + 1;
  std::uint64_t* reduce_source = words + 2;
  std::uint64_t* add_words = words + 3;
  int* wrong = nullptr;  // the checking kernels' count of wrong results, on this GPU alone
  check(cudaMalloc(&wrong, sizeof(int)), "cudaMalloc");
  check(cudaMemset(wrong, 0, sizeof(int)), "cudaMemset");
  check(cudaMemset(buffer, pe + 1, most), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  std::FILE* out = pe == 0 ? std::fopen(out_path.c_str(), "w") : nullptr;
  if (pe == 0 && out == nullptr) fail("cannot write " + out_path);
  // Each kernel once before the clock runs, as grma's programs and the copy
  // baselines warm up: loading it and the first touch of the peer's pages
  // are not what is measured. The flags start again from zero.
  timed([&] { int_ping_pong<<<1, 32>>>(flag, 20); });
  timed([&] { signal_ping_pong<<<1, threads>>>(buffer, signal, 8, 20); });
  timed([&] {
    if (pe == 0) put_bandwidth<<<blocks, threads>>>(buffer, most / std::size_t(blocks), 1);
  });
  timed([&] {
    if (pe == 0) fetch_add_round_trip<<<1, 32>>>(counter, 20, wrong);
  });
  timed([&] {
    if (pe == 0) add_rate<<<1, threads>>>(add_words, 1);
  });
  timed([&] { collective_launch(barrier_rounds, threads, 20); });
  timed([&] { collective_launch(allreduce_rounds, threads, reduced, reduce_source, 20, wrong); });
  expect_right(wrong, "warm-up of fetch_add and allreduce");
  expect_adds(add_words, threads, 1, pe);
  check(cudaMemset(flag, 0, sizeof(int)), "cudaMemset");
  check(cudaMemset(counter, 0, sizeof(std::uint64_t)), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const double int_us =
      timed([&] { int_ping_pong<<<1, 32>>>(flag, latency_iterations); }) / latency_iterations * 1e6;
  if (out) std::fprintf(out, "int_p_us %.4f\n", int_us);
  // The core's operations, in the order grma-bench measures its own.
  const double fetch_add_us = timed([&] {
    if (pe == 0) fetch_add_round_trip<<<1, 32>>>(counter, latency_iterations, wrong);
  }) / latency_iterations * 1e6;
  expect_right(wrong, "fetch_add round trip: old values not consecutive");
  const double add_seconds = timed([&] {
    if (pe == 0) add_rate<<<1, threads>>>(add_words, adds);
  });
  expect_adds(add_words, threads, std::uint64_t(adds) + 1, pe);
  const double barrier_us =
      timed([&] { collective_launch(barrier_rounds, threads, latency_iterations); }) / latency_iterations * 1e6;
  const double allreduce_us = timed([&] {
    collective_launch(allreduce_rounds, threads, reduced, reduce_source, latency_iterations, wrong);
  }) / latency_iterations * 1e6;
  expect_right(wrong, "allreduce: a sum not both PEs' values");
  if (out)
    std::fprintf(out, "fetch_add_us %.4f\nadd_rate_per_s %.1f\nbarrier_us %.4f\nallreduce_8b_us %.4f\n", fetch_add_us,
                 double(adds) * threads / add_seconds, barrier_us, allreduce_us);
  for (std::size_t bytes : latency_sizes) {
    const int n = bytes <= 4096 ? latency_iterations : std::max(1, latency_iterations / 10);
    check(cudaMemset(signal, 0, sizeof(std::uint64_t)), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const double us = timed([&] { signal_ping_pong<<<1, threads>>>(buffer, signal, bytes, n); }) / n * 1e6;
    if (out) std::fprintf(out, "latency %zu %.4f\n", bytes, us);
  }
  for (std::size_t bytes : bandwidth_sizes) {
    const int n = bandwidth_iterations;
    // Only PE 0 sends; PE 1 launches nothing and meets it at the barriers.
    const double one = timed([&] {
      if (pe == 0) put_bandwidth<<<1, threads>>>(buffer, bytes, n);
    });
    const bool all = bytes <= all_up_to;
    const double many = all ? timed([&] {
      if (pe == 0) put_bandwidth<<<blocks, threads>>>(buffer, bytes, n);
    }) : NAN;
    if (out)
      std::fprintf(out, "bandwidth %zu %.3f %.3f\n", bytes, double(bytes) * n / one / 1e9,
                   all ? double(bytes) * n * blocks / many / 1e9 : NAN);
  }
  if (out && std::fclose(out) != 0) fail("cannot write " + out_path);
  nvshmem_barrier_all();
  check(cudaFree(wrong), "cudaFree");
  nvshmem_free(words);
  nvshmem_free(flag);
  nvshmem_free(signal);
  nvshmem_free(buffer);
  nvshmem_finalize();
  return 0;
}
