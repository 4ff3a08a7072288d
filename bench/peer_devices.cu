// Two-GPU benchmark (issue 4), one process driving both GPUs (GRMA_DEVICES=2):
// round trips of notified put, signal put and notified get between a rank on
// GPU 0 and one on GPU 1, next to two floors (a raw flag ping-pong between a
// block on each GPU through peer memory, and the same with a data store and a
// system-scope release before each flag); bandwidth of one rank and of all
// ranks of GPU 0 putting to GPU 1, next to cudaMemcpyPeer. Prints a table and
// writes JSON (each figure beside its baseline from the same run).
//
//   grma-bench-peer-devices [--json FILE] [--threads N] [--ranks N]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <grma/grma.hpp>

#include "bench_programs.hpp"
#include "cuda_baselines.hpp"
#include "cuda_bench.hpp"

using bench::bandwidth;
using bench::check;
using bench::mode;
using bench::ping_pong;
using bench::results;
using bench::run;

int main(int argc, char** argv) try {
  std::string json_path = "peer_devices.json";
  int threads = 256;
  int all_ranks = 64;  // per GPU for the all-ranks bandwidth
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--json")) json_path = argv[i + 1];
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ranks")) all_ranks = std::atoi(argv[i + 1]);
  }
  int gpus = 0;
  check(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  if (gpus < 2) {
    std::fprintf(stderr, "grma-bench-peer-devices needs two GPUs\n");
    return 1;
  }
  grma::settings s = grma::settings::from_environment();
  s.devices = 2;
  s.heap_size = std::uint64_t(4) << 30;
  grma::runtime rt(s);
  if (rt.backend() != grma::backend_kind::cuda) {
    std::fprintf(stderr, "grma-bench-peer-devices needs the CUDA backend\n");
    return 1;
  }
  bench::enable_peer_access(0, 1);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");

  std::FILE* json = std::fopen(json_path.c_str(), "w");
  std::fprintf(json, "{\n  \"gpu\": \"%s\",\n  \"gpus\": 2,\n  \"threads_per_rank\": %d,\n  \"latency\": [\n",
               prop.name, threads);
  const int latency_iterations = 5000;
  const double raw_us = bench::raw_flag_round_trip_us(0, 1, latency_iterations);
  const double release_us = bench::release_flag_round_trip_us(0, 1, latency_iterations);
  std::printf("GPUs: 2 x %s, %d threads per rank\n\n", prop.name, threads);
  std::printf(
      "round trip [us]      bytes  notified put  signal put  notified get  raw flag  release flag  "
      "put/raw  put/release\n");
  bool first = true;
  for (std::size_t bytes = 8; bytes <= (std::size_t(64) << 20); bytes *= 8) {
    const int iterations = bytes <= 4096 ? latency_iterations : bytes <= (1 << 20) ? 500 : 20;
    const results put = run(rt, ping_pong{bytes, iterations, mode::notified_put}, 1, threads);
    const results sig = run(rt, ping_pong{bytes, iterations, mode::signal_put}, 1, threads);
    const results get = run(rt, ping_pong{bytes, iterations, mode::notified_get}, 1, threads);
    const double put_us = put.seconds / iterations * 1e6, sig_us = sig.seconds / iterations * 1e6,
                 get_us = get.seconds / iterations * 1e6;
    std::printf("               %10zu  %12.3f  %10.3f  %12.3f  %8.3f  %12.3f  %7.2f  %11.2f\n",
                bytes, put_us, sig_us, get_us, raw_us, release_us, put_us / raw_us,
                put_us / release_us);
    std::fprintf(json,
                 "%s    {\"bytes\": %zu, \"notified_put_us\": %.4f, \"signal_put_us\": %.4f, "
                 "\"notified_get_us\": %.4f, \"raw_flag_us\": %.4f, \"release_flag_us\": %.4f}",
                 first ? "" : ",\n", bytes, put_us, sig_us, get_us, raw_us, release_us);
    first = false;
  }
  std::fprintf(json, "\n  ],\n  \"bandwidth\": [\n");

  std::printf("\nbandwidth GPU 0 -> GPU 1 [GB/s]   bytes  one rank  all %d ranks  cudaMemcpyPeer  one/memcpy  all/memcpy\n",
              all_ranks);
  first = true;
  for (std::size_t bytes = std::size_t(64) << 10; bytes <= (std::size_t(64) << 20); bytes *= 4) {
    const int iterations = 20;
    const results one = run(rt, bandwidth{bytes, iterations, 1}, 1, threads);
    const double one_gbs = double(bytes) * iterations / one.seconds / 1e9;
    // All ranks: the same total per step split over the ranks of GPU 0.
    const std::size_t share = bytes / std::size_t(all_ranks) < 4096 ? 4096 : bytes / std::size_t(all_ranks);
    const results all = run(rt, bandwidth{share, iterations, all_ranks}, all_ranks, threads);
    const double all_gbs = double(share) * iterations * all_ranks / all.seconds / 1e9;
    const double memcpy_gbs = bench::memcpy_gbs(0, 1, bytes, 20);
    std::printf("                              %10zu  %8.1f  %12.1f  %14.1f  %10.2f  %10.2f\n", bytes,
                one_gbs, all_gbs, memcpy_gbs, one_gbs / memcpy_gbs, all_gbs / memcpy_gbs);
    std::fprintf(json,
                 "%s    {\"bytes\": %zu, \"one_rank_gbs\": %.2f, \"all_ranks_gbs\": %.2f, "
                 "\"ranks\": %d, \"memcpy_peer_gbs\": %.2f}",
                 first ? "" : ",\n", bytes, one_gbs, all_gbs, all_ranks, memcpy_gbs);
    first = false;
  }
  std::fprintf(json, "\n  ]\n}\n");
  std::fclose(json);
  std::printf("\nJSON: %s\n", json_path.c_str());
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
