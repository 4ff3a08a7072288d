// Notified access between two nodes (issue 5): round trip of notified put and
// notified get, and one rank's put bandwidth, 8 B to 64 MiB, beside a plain
// MPI ping-pong and MPI stream of host buffers of the same sizes, measured in
// the same run. Two processes, each its own node (on one machine, say so
// with GRMA_NODE_ID); the CPU backend, one rank per process:
//
//   mpirun -np 2 --bind-to none sh -c 'GRMA_NODE_ID=n$OMPI_COMM_WORLD_RANK exec grma-bench-remote [--json FILE]'
//
// (--bind-to none: each process's network engine needs a core beside its rank.)
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <grma/grma.hpp>

#include "bench_programs.hpp"
#include "mpi_baselines.hpp"

namespace {

using bench::bandwidth;
using bench::mpi_round_trip_us;
using bench::mpi_stream_gbs;
using bench::process;
using bench::mode;
using bench::ping_pong;
using bench::results;

results run(grma::runtime& rt, const auto& program) {
  results out{};
  rt.run(program, {.threads_per_rank = 1, .ranks_per_device = 1, .userdata = &out,
                   .userdata_size = sizeof out});
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  // MPI is this program's too (the baselines): it initializes it for both.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  std::string json_path = "remote.json";
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--json")) json_path = argv[i + 1];
  grma::settings s = grma::settings::from_environment();
  s.backend = grma::backend_kind::cpu;
  s.heap_size = std::uint64_t(512) << 20;
  grma::runtime rt(s);
  int processes = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  if (processes != 2) {
    std::fprintf(stderr, "grma-bench-remote runs as two processes on two nodes (see its header)\n");
    return 1;
  }
  const bool speaker = process() == 0;
  std::FILE* json = speaker ? std::fopen(json_path.c_str(), "w") : nullptr;
  if (json) std::fprintf(json, "{\n  \"backend\": \"cpu\",\n  \"latency\": [\n");
  if (speaker)
    std::printf("round trip [us]      bytes  notified put  notified get  MPI host  put - MPI\n");
  bool first = true;
  for (std::size_t bytes = 8; bytes <= (std::size_t(64) << 20); bytes *= 8) {
    const int iterations = bytes <= 4096 ? 2000 : bytes <= (1 << 20) ? 200 : 10;
    const results put = run(rt, ping_pong{bytes, iterations, mode::notified_put});
    const results get = run(rt, ping_pong{bytes, iterations, mode::notified_get});
    const double mpi_us = mpi_round_trip_us(bytes, iterations);
    if (!speaker) continue;
    const double put_us = put.seconds / iterations * 1e6, get_us = get.seconds / iterations * 1e6;
    std::printf("               %10zu  %12.2f  %12.2f  %8.2f  %9.2f\n", bytes, put_us, get_us,
                mpi_us, put_us - mpi_us);
    std::fprintf(json,
                 "%s    {\"bytes\": %zu, \"notified_put_us\": %.3f, \"notified_get_us\": %.3f, "
                 "\"mpi_host_us\": %.3f}",
                 first ? "" : ",\n", bytes, put_us, get_us, mpi_us);
    first = false;
  }
  if (json) std::fprintf(json, "\n  ],\n  \"bandwidth\": [\n");
  if (speaker)
    std::printf("\nbandwidth [GB/s]     bytes  notified put  notified get  MPI host  put/MPI\n");
  first = true;
  for (std::size_t bytes = std::size_t(64) << 10; bytes <= (std::size_t(64) << 20); bytes *= 4) {
    const int iterations = bytes <= (std::size_t(1) << 20) ? 100 : 10;
    const results put = run(rt, bandwidth{bytes, iterations, 1});
    // A get is a round trip that carries `bytes` one way.
    const results get = run(rt, ping_pong{bytes, iterations, mode::notified_get});
    const double mpi_gbs = mpi_stream_gbs(bytes, iterations);
    if (!speaker) continue;
    const double put_gbs = double(bytes) * iterations / put.seconds / 1e9;
    const double get_gbs = double(bytes) * 2 * iterations / get.seconds / 1e9;
    std::printf("               %10zu  %12.2f  %12.2f  %8.2f  %7.2f\n", bytes, put_gbs, get_gbs,
                mpi_gbs, put_gbs / mpi_gbs);
    std::fprintf(json,
                 "%s    {\"bytes\": %zu, \"notified_put_gbs\": %.3f, \"notified_get_gbs\": %.3f, "
                 "\"mpi_host_gbs\": %.3f}",
                 first ? "" : ",\n", bytes, put_gbs, get_gbs, mpi_gbs);
    first = false;
  }
  if (json) {
    std::fprintf(json, "\n  ]\n}\n");
    std::fclose(json);
    std::printf("\nJSON: %s\n", json_path.c_str());
  }
  MPI_Finalize();
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
