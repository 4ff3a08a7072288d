// Same-GPU benchmark (issue 3): round-trip latency of notified put and of
// signal put between two ranks, next to the floor (a raw flag ping-pong
// between two blocks: one store, one poll); copy bandwidth of one rank and of
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

namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

// ---- the floor: raw flag ping-pong between two blocks ---------------------

__global__ void raw_flag_ping_pong(volatile unsigned* flags, int iterations, long long* ns) {
  if (threadIdx.x != 0) return;
  volatile unsigned* mine = flags + 32 * blockIdx.x;  // separate 128-byte lines
  volatile unsigned* theirs = flags + 32 * (1 - blockIdx.x);
  long long start = 0;
  for (int i = 1; i <= iterations + 100; ++i) {
    if (i == 101) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    if (blockIdx.x == 0) {
      *mine = i;
      while (*theirs != unsigned(i)) {}
    } else {
      while (*theirs != unsigned(i)) {}
      *mine = i;
    }
  }
  long long end;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end));
  if (blockIdx.x == 0) *ns = end - start;
}

double raw_flag_round_trip_us(int iterations) {
  unsigned* flags;
  long long* ns;
  check(cudaMalloc(&flags, 64 * sizeof(unsigned)), "cudaMalloc");
  check(cudaMalloc(&ns, sizeof(long long)), "cudaMalloc");
  check(cudaMemset(flags, 0, 64 * sizeof(unsigned)), "cudaMemset");
  raw_flag_ping_pong<<<2, 32>>>(flags, iterations, ns);
  check(cudaGetLastError(), "raw flag launch");
  long long host_ns = 0;
  check(cudaMemcpy(&host_ns, ns, sizeof host_ns, cudaMemcpyDeviceToHost), "raw flag");
  cudaFree(flags);
  cudaFree(ns);
  return double(host_ns) / iterations * 1e-3;
}

double memcpy_bandwidth_gbs(std::size_t bytes, int iterations) {
  void *a, *b;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMemset(a, 1, bytes), "cudaMemset");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "warm-up copy");
  cudaEventRecord(start);
  for (int i = 0; i < iterations; ++i) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(stop);
  check(cudaEventSynchronize(stop), "memcpy");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaFree(a);
  cudaFree(b);
  return double(bytes) * iterations / (ms * 1e-3) / 1e9;
}

// ---- grma programs ------------------------------------------------------------

struct results {
  double seconds;  // measured by rank 0
  int mismatches;
};

enum class mode { notified_put, signal_put };

// Ranks 0 and 1 ping-pong `bytes`; other ranks wait at the final barrier.
struct ping_pong {
  std::size_t bytes;
  int iterations;
  mode how;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    const std::size_t area = bytes < 64 ? 64 : bytes;
    auto* inbox = static_cast<unsigned char*>(r.alloc(area + 64));  // data, then the signal word
    auto* outbox = static_cast<unsigned char*>(r.alloc(area));
    for (std::size_t i = r.thread(); i < area + 64; i += r.threads()) inbox[i] = 0;
    for (std::size_t i = r.thread(); i < area; i += r.threads()) outbox[i] = (unsigned char)(i + me);
    grma::window w = r.window_create(grma::world, inbox, area + 64);
    if (me < 2) {
      const int peer = 1 - me;
      double start = 0;
      for (int it = -20; it < iterations; ++it) {
        if (it == 0) start = r.wtime();
        const std::uint64_t round = std::uint64_t(it + 21);
        const bool sender_first = me == 0;
        for (int half = 0; half < 2; ++half) {
          if ((half == 0) == sender_first) {
            if (how == mode::notified_put)
              r.put_notify(w, peer, 0, bytes, outbox, 0);
            else
              r.put_signal(w, peer, 0, bytes, outbox, area, round, grma::signal_op::set);
          } else {
            if (how == mode::notified_put)
              r.wait_notifications(w, peer, 0, 1);
            else
              r.wait_signal(w, area, grma::cmp::ge, round);
          }
        }
      }
      if (me == 0) {
        const double seconds = r.wtime() - start;
        int bad = 0;
        for (std::size_t i = r.thread(); i < bytes; i += r.threads())
          bad += r.read(&inbox[i]) != (unsigned char)(i + peer);
        if (r.thread() == 0) {
          auto* out = r.template userdata<results>();
          out->seconds = seconds;
          out->mismatches = bad;
        }
      }
    }
    r.barrier(grma::world);
    r.window_free(w);
    r.free(outbox);
    r.free(inbox);
  }
};

// `active` ranks each put `bytes` to the rank half the job away, `iterations`
// times, with one notification per put; rank 0 times the whole exchange.
struct bandwidth {
  std::size_t bytes;
  int iterations;
  int active;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    const int n = r.size(grma::world);
    auto* buffer = static_cast<unsigned char*>(r.alloc(2 * bytes));
    grma::window w = r.window_create(grma::world, buffer, bytes);
    const bool sends = me < active;
    const int target = (me + n / 2) % n;
    r.barrier(grma::world);
    const double start = r.wtime();
    if (sends)
      for (int it = 0; it < iterations; ++it) r.put_notify(w, target, 0, bytes, buffer + bytes, 1);
    r.barrier(grma::world);
    if (me == 0 && r.thread() == 0) r.template userdata<results>()->seconds = r.wtime() - start;
    // Take the notifications so the queues end empty.
    const int source = (me + n - n / 2) % n;
    if (source < active) r.wait_notifications(w, source, 1, iterations);
    r.window_free(w);
    r.free(buffer);
  }
};

template <class Program>
results run(grma::runtime& rt, const Program& p, int ranks, int threads) {
  results out{};
  rt.run(p, {.threads_per_rank = threads, .ranks_per_device = ranks, .userdata = &out,
             .userdata_size = sizeof out});
  return out;
}

}  // namespace

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
  const double raw_us = raw_flag_round_trip_us(latency_iterations);
  std::printf("GPU: %s, %d threads per rank, %d ranks co-resident\n\n", prop.name, threads,
              max_ranks);
  std::printf("round trip [us]      bytes  notified put  signal put  raw flag (floor)  put/floor\n");
  bool first = true;
  for (std::size_t bytes = 8; bytes <= (std::size_t(1) << 20); bytes *= 4) {
    const int iterations = bytes <= 4096 ? latency_iterations : 1000;
    const results put = run(rt, ping_pong{bytes, iterations, mode::notified_put}, 2, threads);
    const results sig = run(rt, ping_pong{bytes, iterations, mode::signal_put}, 2, threads);
    const double put_us = put.seconds / iterations * 1e6, sig_us = sig.seconds / iterations * 1e6;
    std::printf("               %10zu  %12.3f  %10.3f  %16.3f  %9.2f%s\n", bytes, put_us, sig_us,
                raw_us, put_us / raw_us, put.mismatches + sig.mismatches ? "  DATA MISMATCH" : "");
    std::fprintf(json,
                 "%s    {\"bytes\": %zu, \"notified_put_us\": %.4f, \"signal_put_us\": %.4f, "
                 "\"raw_flag_us\": %.4f, \"mismatches\": %d}",
                 first ? "" : ",\n", bytes, put_us, sig_us, raw_us, put.mismatches + sig.mismatches);
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
    const double memcpy_gbs = memcpy_bandwidth_gbs(bytes * max_ranks, 20);
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
