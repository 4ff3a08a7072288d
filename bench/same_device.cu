// Same-GPU benchmark (issue 3): round-trip latency of notified put and of
// signal put between two ranks, next to two floors: a raw flag ping-pong
// between two blocks (one store, one poll) and the same with a data store and
// a release fence before each flag (the ordering any notified put needs);
// copy bandwidth of one rank and of
// all ranks, next to cudaMemcpy device-to-device. Prints a table and writes
// JSON (each figure beside its baseline from the same run).
//
//   grma-bench-same-device [--json FILE] [--threads N]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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
  std::string json_path = "same_device.json";
  int threads = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--json")) json_path = argv[i + 1];
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  grma::settings s = grma::settings::from_environment();
  s.heap_size = std::uint64_t(6) << 30;  // 2 x 4 MiB for each of up to ~700 ranks
  grma::runtime rt(s);
  if (rt.backend() != grma::backend_kind::cuda) {
    std::fprintf(stderr, "grma-bench-same-device needs the CUDA backend and a GPU\n");
    return 1;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const int max_ranks = rt.info(bandwidth{}, {.threads_per_rank = threads}).rank_count;

  std::FILE* json = std::fopen(json_path.c_str(), "w");
  std::fprintf(json, "{\n  \"gpu\": \"%s\",\n  \"threads_per_rank\": %d,\n  \"latency\": [\n",
               prop.name, threads);

  const int latency_iterations = 10000;
  const double raw_us = bench::raw_flag_round_trip_us(0, 0, latency_iterations);
  const double release_us = bench::release_flag_round_trip_us(0, 0, latency_iterations);
  std::printf("GPU: %s, %d threads per rank, %d ranks co-resident\n\n", prop.name, threads,
              max_ranks);
  std::printf(
      "round trip [us]      bytes  notified put  signal put  raw flag  release flag  put/raw  "
      "put/release\n");
  bool first = true;
  for (std::size_t bytes = 8; bytes <= (std::size_t(1) << 20); bytes *= 4) {
    const int iterations = bytes <= 4096 ? latency_iterations : 1000;
    const results put = run(rt, ping_pong{bytes, iterations, mode::notified_put}, 2, threads);
    const results sig = run(rt, ping_pong{bytes, iterations, mode::signal_put}, 2, threads);
    const double put_us = put.seconds / iterations * 1e6, sig_us = sig.seconds / iterations * 1e6;
    std::printf("               %10zu  %12.3f  %10.3f  %8.3f  %12.3f  %7.2f  %11.2f\n", bytes,
                put_us, sig_us, raw_us, release_us, put_us / raw_us, put_us / release_us);
    std::fprintf(json,
                 "%s    {\"bytes\": %zu, \"notified_put_us\": %.4f, \"signal_put_us\": %.4f, "
                 "\"raw_flag_us\": %.4f, \"release_flag_us\": %.4f}",
                 first ? "" : ",\n", bytes, put_us, sig_us, raw_us, release_us);
    first = false;
  }
  std::fprintf(json, "\n  ],\n  \"bandwidth\": [\n");

  std::printf("\nbandwidth [GB/s]     bytes  one rank  all %d ranks  cudaMemcpy D2D  all/memcpy\n",
              max_ranks);
  first = true;
  for (std::size_t bytes = std::size_t(64) << 10; bytes <= (std::size_t(4) << 20); bytes *= 4) {
    const int iterations = 50;
    const results one = run(rt, bandwidth{bytes, iterations, 1}, 2, threads);
    const results all = run(rt, bandwidth{bytes, iterations, max_ranks}, max_ranks, threads);
    const double one_gbs = double(bytes) * iterations / one.seconds / 1e9;
    const double all_gbs = double(bytes) * iterations * max_ranks / all.seconds / 1e9;
    const double memcpy_gbs = bench::memcpy_gbs(0, 0, bytes * max_ranks, 20);
    std::printf("               %10zu  %8.1f  %12.1f  %14.1f  %10.2f\n", bytes, one_gbs, all_gbs,
                memcpy_gbs, all_gbs / memcpy_gbs);
    std::fprintf(json,
                 "%s    {\"bytes_per_rank\": %zu, \"one_rank_gbs\": %.2f, \"all_ranks_gbs\": %.2f, "
                 "\"ranks\": %d, \"memcpy_d2d_gbs\": %.2f}",
                 first ? "" : ",\n", bytes, one_gbs, all_gbs, max_ranks, memcpy_gbs);
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
