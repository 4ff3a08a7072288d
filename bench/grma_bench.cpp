// grma-bench: grma's figures on this machine, for every path the job has,
// beside the floors measured in the same run. Prints a table per path, shows
// its progress on stderr, writes JSON (scripts/grma-model.py fits the
// Hockney model to it and plots it).
//
//   grma-bench [--json FILE] [--quick] [--threads N] [--only paths|host|halo|matching|collectives]
//              [--backends all|cuda|cpu]
//
// Each backend the machine has runs in turn (the CUDA backend when a GPU is
// visible, then the CPU backend); the JSON holds one run per backend.
//
// Paths come from how the job is started: the same device always (ranks 0
// and 1); a peer device when the node has two (GRMA_DEVICES=2, or mpirun
// with a GPU per process); another node when the job spans nodes (mpirun,
// GRMA_NODE_ID; processes of a node are consecutive, as mpirun places them).
// Per path: ping-pong round trips of notified put, notified get and signal
// put from 8 B up; the core's one-word operations on the same device and a
// peer device (round trips of p + wait_until, put + fence + p and fetch_add;
// the rate of one rank's threads' non-fetching atomic adds; barrier and
// 8-byte allreduce latency over team_world where the path's two ends are
// the whole job, one rank a device on the peer path, as NVSHMEM's two PEs
// are); bandwidth of one rank and of all ranks; the message rate of many
// 8-byte notified puts in flight. Host access (--only host): a host
// thread's 8-byte put, get and fetch_add round trips (issue, then wait),
// its rate of 8-byte puts in flight and its 1 MiB put bandwidth, into rank
// 0 (its own process), the node's next device's first rank and the next
// node's first rank, beside a host
// thread handing a flag to another and back (CPU), an 8-byte cudaMemcpy to
// the GPU (CUDA) and MPI between the two processes (measured after the
// job: MPI's calls are the engine's while it runs). Once per job: a halo exchange of all
// ranks (each puts a row to both neighbours and waits for theirs: the
// stage of a stencil code, for the model), notification matching
// throughput, and the world barrier, team barrier and 8-byte allreduce of
// all ranks (--only collectives). Floors: a raw flag ping-pong (on GPUs
// also the same with a data store and a release before each flag) and
// memcpy (cudaMemcpy, cudaMemcpyPeer, or host memcpy and two threads on the
// CPU backend), MPI between nodes (host buffers; on GPUs also device
// buffers staged through host buffers), and where grma has UCX, UCX's own
// puts between the two processes (8-byte put rate; bandwidth of GPU memory
// where UCX reaches it, else host memory), and on GPUs cudaMemcpyPeer
// between the two nodes' GPUs where the first process sees both. Where the build has NVSHMEM
// (GRMA_NVSHMEM_HOME) and both GPUs of the peer path are this process's,
// also NVSHMEM between them: put-with-signal round trips, int_p, the
// core's one-word operations (fetch_add round trip, add rate, barrier and
// 8-byte allreduce: a table row each, grma beside NVSHMEM with their
// ratio), one block's and as many blocks' puts as grma has pairs
// (bench/nvshmem_peer.cu, run as two processes).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <grma/grma.hpp>

#include "bench_programs.hpp"
#if defined(__CUDACC__)
#include "cuda_baselines.hpp"
#endif
#if GRMA_BENCH_MPI
#include "mpi_baselines.hpp"
#endif
#if GRMA_BENCH_UCX
#include "ucx_baselines.hpp"
#endif
#include "nvshmem_run.hpp"
#ifndef GRMA_BENCH_NVSHMEM
#define GRMA_BENCH_NVSHMEM 0
#endif

namespace {

using bench::results;

struct options {
  std::string json = "grma-bench.json";
  bool quick = false;
  int threads = 256;
  std::string only;  // paths, halo or matching; empty: all
  std::string backends = "all";  // all, cuda or cpu
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      o.json = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      o.threads = std::atoi(argv[++i]);
    } else if (a == "--backends" && i + 1 < argc &&
               (!std::strcmp(argv[i + 1], "all") || !std::strcmp(argv[i + 1], "cuda") ||
                !std::strcmp(argv[i + 1], "cpu"))) {
      o.backends = argv[++i];
    } else if (a == "--only" && i + 1 < argc &&
               (!std::strcmp(argv[i + 1], "paths") || !std::strcmp(argv[i + 1], "host") ||
                !std::strcmp(argv[i + 1], "halo") ||
                !std::strcmp(argv[i + 1], "matching") || !std::strcmp(argv[i + 1], "collectives"))) {
      o.only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: grma-bench [--json FILE] [--quick] [--threads N] [--only paths|host|halo|matching|collectives] "
                   "[--backends all|cuda|cpu]\n");
      std::exit(2);
    }
  }
  return o;
}

// One way two ranks reach each other. With `ranks` per device, rank i and
// rank i + offset(ranks) are the two ends, for i < offset(ranks): on one
// device its two halves, else devices `devices_apart` apart.
struct path {
  const char* name;
  int devices_apart;  // 0: same device; else how many devices lie between the two ends
  bool remote;
  int offset(int ranks) const { return devices_apart == 0 ? ranks / 2 : devices_apart * ranks; }
};

// ---- floors on the CPU backend ------------------------------------------------------------

// Round trip of a flag between two threads (one store, one poll each way).
double cpu_raw_flag_round_trip_us(int iterations) {
  std::atomic<int> ping{0}, pong{0};
  std::thread other([&] {
    for (int i = 1; i <= iterations + 100; ++i) {
      while (ping.load(std::memory_order_acquire) != i) {}
      pong.store(i, std::memory_order_release);
    }
  });
  auto start = std::chrono::steady_clock::now();
  for (int i = 1; i <= iterations + 100; ++i) {
    if (i == 101) start = std::chrono::steady_clock::now();
    ping.store(i, std::memory_order_release);
    while (pong.load(std::memory_order_acquire) != i) {}
  }
  const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
  other.join();
  return spent.count() / iterations;
}

double host_memcpy_gbs(std::size_t bytes, int iterations) {
  std::vector<unsigned char> from(bytes, 1), to(bytes, 0);
  std::memcpy(to.data(), from.data(), bytes);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    from[std::size_t(i) % bytes] = static_cast<unsigned char>(i);  // not a repeat of the last
    std::memcpy(to.data(), from.data(), bytes);
  }
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
  return double(bytes) * iterations / spent.count() / 1e9;
}

// ---- progress on stderr --------------------------------------------------------------------

class progress {
 public:
  progress(int steps, bool shown) : steps_(steps), shown_(shown && isatty(2)) {}
  void step(const std::string& what) {
    ++done_;
    if (shown_) std::fprintf(stderr, "\r\033[Kgrma-bench [%d/%d] %s", done_, steps_, what.c_str());
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  int steps_, done_ = 0;
  bool shown_;
};

// `v` printed with `f`, or `none` when it was not measured (NaN).
std::string format(double v, const char* f, const char* none = "-") {
  if (std::isnan(v)) return none;
  char text[32];
  std::snprintf(text, sizeof text, f, v);
  return text;
}

// The figure measured at `bytes`, NaN where none was.
double figure_at(const std::map<std::size_t, double>& by_size, std::size_t bytes) {
  const auto it = by_size.find(bytes);
  return it == by_size.end() ? NAN : it->second;
}

// Seconds per call of `f` over `iterations` (after 10 not timed).
template <class F>
double per_call_us(int iterations, F&& f) {
  for (int i = 0; i < 10; ++i) f();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) f();
  const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / iterations;
}

struct host_figures {
  int target;
  double put_us, get_us, fetch_add_us, puts_per_s, put_gbs;
};

// A host thread's operations into rank 0 (this process), the node's next
// device's first rank (this process's, or the next process's), and, where
// the job spans nodes, the next node's first rank (nodes hold equal runs of
// ranks).
std::vector<host_figures> measure_host_operations(grma::job& running, grma::window w,
                                                  const options& o, const grma::rank_info& shape) {
  constexpr std::size_t wide = std::size_t(1) << 20;
  const int latency = o.quick ? 200 : 2000, rate = o.quick ? 2000 : 20000, wide_puts = o.quick ? 8 : 64;
  std::vector<int> targets{0};
  const int per_node = shape.rank_count / shape.node_count;
  if (shape.device_count >= 2) targets.push_back(shape.ranks_per_device);
  if (shape.node_count >= 2) targets.push_back(per_node);
  std::vector<unsigned char> source(wide, 1);
  std::uint64_t word = 1, old = 0;
  std::vector<host_figures> measured;
  for (const int t : targets) {
    host_figures f{t, 0, 0, 0, 0, 0};
    f.put_us = per_call_us(latency, [&] { running.put(w, t, 0, &word, 8).wait(); });
    f.get_us = per_call_us(latency, [&] { running.get(w, t, 8, &old, 8).wait(); });
    f.fetch_add_us = per_call_us(latency, [&] { running.atomic_fetch_add(w, t, 16, 1, &old).wait(); });
    std::vector<grma::host_request> requests(static_cast<std::size_t>(rate));
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < rate; ++i) requests[std::size_t(i)] = running.put(w, t, 8 * std::size_t(i % 64), &word, 8);
    for (const grma::host_request& q : requests) q.wait();
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    f.puts_per_s = rate / spent.count();
    running.put(w, t, 0, source.data(), wide).wait();  // the pages touched first
    const auto wide_start = std::chrono::steady_clock::now();
    requests.assign(static_cast<std::size_t>(wide_puts), {});
    for (int i = 0; i < wide_puts; ++i) requests[std::size_t(i)] = running.put(w, t, 0, source.data(), wide);
    for (const grma::host_request& q : requests) q.wait();
    const std::chrono::duration<double> wide_spent = std::chrono::steady_clock::now() - wide_start;
    f.put_gbs = double(wide) * wide_puts / wide_spent.count() / 1e9;
    measured.push_back(f);
  }
  return measured;
}

// Host access (see the top of the file): the job's ranks wait while the
// first process's host thread measures; then it releases every rank.
// Returns the report (the first process's) and writes the JSON object.
std::string measure_host_access(grma::runtime& rt, const options& o, const grma::rank_info& job,
                                int threads, [[maybe_unused]] int far_process, std::FILE* json) {
  constexpr std::size_t wide = std::size_t(1) << 20;
  const bool lead = job.process_index == 0;
  const bool cuda = rt.backend() == grma::backend_kind::cuda;
  // As many ranks as fit beside the engine (on a GPU one fewer than `full`).
  const grma::launch_options host_job{.threads_per_rank = threads, .host_access = true};
  const grma::rank_info shape = rt.info(bench::host_target{wide}, host_job);  // before MPI is the engine's
  grma::job running = rt.launch(bench::host_target{wide}, host_job);
  std::vector<host_figures> measured;
  try {
    std::vector<grma::window> windows;
    while ((windows = running.world_windows()).empty()) std::this_thread::yield();
    const grma::window w = windows[0];
    if (lead) {
      // Every rank waits for its signal: released however the measuring
      // ends (an error too), since the job is waited for after.
      const auto release_ranks = [&] {
        const std::uint64_t one = 1;
        for (int t = 0; t < shape.rank_count; ++t)
          running.put_signal(w, t, 0, nullptr, 0, wide, one, grma::signal_op::set).wait();
      };
      try {
        measured = measure_host_operations(running, w, o, shape);
      } catch (...) {
        release_ranks();
        throw;
      }
      release_ranks();
    }
  } catch (const grma::error&) {
    // A host call fails once the job has ended; then the job's own error
    // (its wait()) says why, not the call's.
    running.wait();
    throw;
  }
  running.wait();
  // Baselines, after the job (MPI is the engine's while it runs).
  double local_floor_us = NAN;
  const char* local_floor = "-";
  if (lead && cuda) {
#if defined(__CUDACC__)
    bench::device_buffer device(8);
    std::uint64_t v = 1;
    local_floor_us = per_call_us(o.quick ? 200 : 2000, [&] { device.to_device(&v, 8); });
    local_floor = "cudaMemcpy 8 B to the GPU";
#endif
  } else if (lead) {
    local_floor_us = cpu_raw_flag_round_trip_us(o.quick ? 2000 : 20000);
    local_floor = "raw flag between threads";
  }
  double mpi_us = NAN, mpi_rate = NAN, mpi_gbs = NAN;
#if GRMA_BENCH_MPI
  int mpi_ready = 0;
  MPI_Initialized(&mpi_ready);
  if (mpi_ready && job.node_count >= 2 && job.process_count > 1 &&
      (job.process_index == 0 || job.process_index == far_process)) {
    mpi_us = bench::mpi_round_trip_us(8, o.quick ? 200 : 2000, far_process);
    mpi_rate = bench::mpi_message_rate(8, o.quick ? 2000 : 20000, 64, far_process);
    mpi_gbs = bench::mpi_stream_gbs(wide, o.quick ? 8 : 64, far_process);
  }
#endif
  if (!lead) return "";
  std::string report =
      "\nhost access: a host thread into rank 0 (this process), the node's next device's first "
      "rank "
      "and the next node's first rank\n";
  char line[320];
  std::snprintf(line, sizeof line, "%8s %11s %11s %13s %14s %13s %16s\n", "target", "put [us]", "get [us]",
                "fetch_add [us]", "puts per s", "1 MiB [GB/s]", "baseline");
  report += line;
  if (json) std::fprintf(json, "{\"targets\": [\n");
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const host_figures& f = measured[i];
    const bool far = f.target >= shape.rank_count / shape.node_count;  // on the next node
    std::snprintf(line, sizeof line, "%8d %11.2f %11.2f %13.2f %14.3g %13.2f %16s\n", f.target, f.put_us,
                  f.get_us, f.fetch_add_us, f.puts_per_s, f.put_gbs, far ? "MPI (below)" : local_floor);
    report += line;
    if (json)
      std::fprintf(json,
                   "%s    {\"target\": %d, \"other_node\": %s, \"put_us\": %.4f, \"get_us\": %.4f, "
                   "\"fetch_add_us\": %.4f, \"puts_per_s\": %.1f, \"put_1mib_gbs\": %.4f}",
                   i ? ",\n" : "", f.target, far ? "true" : "false", f.put_us, f.get_us, f.fetch_add_us,
                   f.puts_per_s, f.put_gbs);
  }
  std::snprintf(line, sizeof line,
                "baselines: %s %s us; MPI between the processes (host buffers): round trip 8 B %s us, "
                "rate %s per s (window 64), 1 MiB stream %s GB/s\n",
                local_floor, format(local_floor_us, "%.2f").c_str(), format(mpi_us, "%.2f").c_str(),
                format(mpi_rate, "%.3g").c_str(), format(mpi_gbs, "%.2f").c_str());
  report += line;
  if (json)
    std::fprintf(json,
                 "\n  ], \"local_floor\": \"%s\", \"local_floor_us\": %s, \"mpi_round_trip_us\": %s, "
                 "\"mpi_messages_per_s\": %s, \"mpi_1mib_gbs\": %s}",
                 local_floor, format(local_floor_us, "%.4f", "null").c_str(), format(mpi_us, "%.4f", "null").c_str(),
                 format(mpi_rate, "%.1f", "null").c_str(), format(mpi_gbs, "%.4f", "null").c_str());
  return report;
}

// Every figure of one backend: the paths of the job, the halo exchange and
// matching. Writes the run's JSON object (json is null on other processes)
// and returns the text report.
std::string measure(grma::runtime& rt, const options& o, std::FILE* json) {
  const bool cuda = rt.backend() == grma::backend_kind::cuda;
  const int threads = cuda ? o.threads : 1;
  const grma::rank_info job = rt.info(bench::matching{}, {.threads_per_rank = threads});
  const bool lead = job.process_index == 0;
  const int devices_per_node = job.device_count;
  const int full = job.ranks_per_device;  // as many as fit (GPU) or GRMA_RANKS_PER_DEVICE (CPU)

  // The paths pair ranks by position: a node's processes must come one
  // after another, and every node must have as many (mpirun's default); a
  // process that plays every node (GRMA_NODES) has them in order.
  const bool plays_nodes = job.process_count == 1;
  const int processes_per_node = plays_nodes ? 1 : job.process_count / job.node_count;
  if (!plays_nodes &&
      (job.process_count % job.node_count != 0 || job.process_index / processes_per_node != job.node_index))
    throw std::runtime_error("process " + std::to_string(job.process_index) + " is on node " +
                             std::to_string(job.node_index) + " of " + std::to_string(job.node_count) +
                             ": grma-bench needs each node's processes consecutive and equal in number");
  std::vector<path> paths{{"same device", 0, false}};
  if (devices_per_node >= 2) paths.push_back({"peer device", 1, false});
  if (job.node_count >= 2) paths.push_back({"other node", devices_per_node, true});
  // The first process of the next node: the other end of the inter-node path.
  [[maybe_unused]] const int far_process = processes_per_node;
#if GRMA_BENCH_MPI
  int mpi_ready = 0;
  MPI_Initialized(&mpi_ready);
#endif

  // Sizes: latency 8 B .. 256 KiB, quick or not: the model's fit of each
  // path then spans horizontal diffusion's halo rows up to 16384 columns (a
  // fit of a quick remote run that ended at 4 KiB missed its bend and was
  // 2-3x off there). Bandwidth 64 KiB .. 64 MiB per rank (quick: 64 KiB),
  // one rank within what half the heap holds for two, all pairs within what
  // it holds for all ranks.
  const std::size_t heap = rt.settings().heap_size;
  std::vector<std::size_t> latency_sizes, bandwidth_sizes;
  for (std::size_t b = 8; b <= std::size_t(256) << 10; b *= 8) latency_sizes.push_back(b);
  const std::size_t widest = o.quick ? std::size_t(64) << 10 : std::size_t(64) << 20;
  for (std::size_t b = std::size_t(64) << 10; b <= widest; b *= 4)
    if (4 * b <= heap / 2) bandwidth_sizes.push_back(b);
  const auto all_pairs_fit = [&](std::size_t b) { return 2 * b * std::size_t(full) <= heap / 2; };
  // The GASPI ping-pong's segment (two buffers, the notification slots)
  // and the layer's state in each rank's symmetric slice, with room to spare.
  const auto gaspi_fits = [&](std::size_t b) {
    return 2 * b + (std::size_t(256) << 10) <= rt.settings().symmetric_size / std::size_t(full) / 2;
  };
  const int message_count = o.quick ? 64 : 1024, message_batch = 16;
  const int latency_iterations = o.quick ? 200 : 5000;
  // The add rate's adds, as many in all whatever the threads: a GPU rank's
  // 256 threads each add 1000 times (100 quick), a CPU rank's one thread
  // long enough to be timed.
  const int adds_per_thread = std::max(1, (o.quick ? 25600 : 256000) / threads);
  const auto wanted = [&](const char* section) { return o.only.empty() || o.only == section; };
  if (!wanted("paths")) paths.clear();
  // NVSHMEM runs beside the peer path where both its GPUs are this process's.
  const auto with_nvshmem = [&](const path& p) {
    return GRMA_BENCH_NVSHMEM && cuda && lead && !p.remote && p.devices_apart == 1 && job.process_count == 1;
  };
  // The matching section's round trip of one notification at a time runs
  // where two ranks share a device.
  const bool times_one_at_a_time = full >= 2;
  // The same device's bandwidth is also measured both ways.
  const int steps =
      int(paths.size() * (latency_sizes.size() * 3 + bandwidth_sizes.size() * 3 + 1 + 4 + 3)) +
      int(paths.empty() ? 0 : bandwidth_sizes.size()) +
      int(std::count_if(paths.begin(), paths.end(), with_nvshmem)) + (wanted("host") ? 1 : 0) +
      (wanted("halo") ? (o.quick ? 4 : 8) : 0) +
      (wanted("matching") ? (times_one_at_a_time ? 7 : 5) : 0) + (wanted("collectives") ? 3 : 0);
  progress show(steps, lead);

  auto run = [&](const auto& program, int ranks) {
    results out{};
    rt.run(program, {.threads_per_rank = threads, .ranks_per_device = ranks, .userdata = &out,
                     .userdata_size = sizeof out});
    return out;
  };

  if (json)
    std::fprintf(json, "    {\"backend\": \"%s\", \"threads_per_rank\": %d, \"ranks_per_device\": %d,\n    \"paths\": [\n",
                 cuda ? "cuda" : "cpu", threads, full);
  std::string report;
  char line[256];
  bool first_path = true;
  for (const path& p : paths) {
    // Floors of this path, measured in this run (NaN where there is none).
    double floor_us = NAN;
    double release_floor_us = NAN;  // on GPUs: the raw flag with a data store and a release
    std::function<double(std::size_t)> floor_gbs = [](std::size_t) { return NAN; };
    const char* floor_name = "-";
    const char* copy_name = "-";
    // Measured by the first process (which prints them): between its own
    // devices, so a peer floor needs both GPUs in this process.
    if (lead && !p.remote && (job.process_count == 1 || p.devices_apart == 0)) {
#if defined(__CUDACC__)
      if (cuda) {
        floor_us = bench::raw_flag_round_trip_us(0, p.devices_apart, latency_iterations);
        release_floor_us =
            bench::release_flag_round_trip_us(0, p.devices_apart, latency_iterations);
        const int far = p.devices_apart;
        floor_gbs = [far](std::size_t b) { return bench::memcpy_gbs(0, far, b, 20); };
        floor_name = "raw flag between blocks";
        copy_name = far == 0 ? "cudaMemcpy D2D" : "cudaMemcpyPeer";
      }
#endif
      if (!cuda) {
        floor_us = cpu_raw_flag_round_trip_us(latency_iterations * 10);
        floor_gbs = [](std::size_t b) { return host_memcpy_gbs(b, 20); };
        floor_name = "raw flag between threads";
        copy_name = "memcpy";
      }
    }
    // Across nodes on GPUs, also MPI of device buffers staged through host
    // buffers (the MPI here is not CUDA-aware), as a program without grma
    // would move them.
    std::function<double(std::size_t, int)> staged_us = [](std::size_t, int) { return NAN; };
    std::function<double(std::size_t, int)> staged_gbs = [](std::size_t, int) { return NAN; };
    // Across nodes on GPUs, cudaMemcpyPeer between the two processes' GPUs
    // where they are one host's (its GPUs played as nodes, one a process):
    // what a GPU-to-GPU transport could reach.
    std::function<double(std::size_t)> peer_copy_gbs = [](std::size_t) { return NAN; };
    [[maybe_unused]] void* device_region = nullptr;  // this process's GPU buffer for the baselines
#if GRMA_BENCH_MPI
    if (p.remote && mpi_ready && !plays_nodes) {
      floor_name = "MPI ping-pong, host buffers";
      copy_name = "MPI stream, host buffers";
    }
    // MPI between the path's two processes, where it has two (not where one
    // process plays the nodes).
    const bool measures_mpi = p.remote && mpi_ready && !plays_nodes &&
                              (job.process_index == 0 || job.process_index == far_process);
#if defined(__CUDACC__)
    std::shared_ptr<bench::device_buffer> device;
    std::shared_ptr<bench::staging> staged;
    if (measures_mpi && cuda) {
      device = std::make_shared<bench::device_buffer>(std::max(latency_sizes.back(), widest));
      device_region = device->data();
      if (bench::same_host(far_process) && lead && processes_per_node == 1 &&
          bench::visible_gpus() >= 2)
        peer_copy_gbs = [](std::size_t b) { return bench::memcpy_gbs(0, 1, b, 20); };
      staged = std::make_shared<bench::staging>(bench::staging{
          [device](void* host, std::size_t bytes) { device->to_host(host, bytes); },
          [device](const void* host, std::size_t bytes) { device->to_device(host, bytes); }});
      staged_us = [staged, far_process](std::size_t bytes, int iterations) {
        return bench::mpi_round_trip_us(bytes, iterations, far_process, staged.get());
      };
      staged_gbs = [staged, far_process](std::size_t bytes, int iterations) {
        return bench::mpi_stream_gbs(bytes, iterations, far_process, staged.get());
      };
    }
#endif
#endif
    // UCX's own puts between the same two processes, where grma has UCX:
    // GB/s (of GPU memory where UCX reaches it) and 8-byte puts per second.
    std::function<double(std::size_t, int)> ucx_put_gbs = [](std::size_t, int) { return NAN; };
    std::function<double(int)> ucx_put_rate = [](int) { return NAN; };
    const char* ucx_put_memory = "-";
#if GRMA_BENCH_UCX
    if (measures_mpi) {
      auto ucx = std::make_shared<bench::ucx_puts>(far_process, widest, device_region);
      ucx_put_gbs = [ucx](std::size_t bytes, int iterations) {
        return ucx->gbs(bytes, iterations);
      };
      ucx_put_rate = [ucx](int puts) { return ucx->rate(puts, 64); };
      ucx_put_memory = ucx->on_device() ? "device" : "host";
    }
#endif
    std::optional<bench::nvshmem_figures> nvshmem;
    std::string nvshmem_failure;
#if GRMA_BENCH_NVSHMEM
    if (with_nvshmem(p)) {
      show.step(std::string(p.name) + ": NVSHMEM");
      std::size_t all_pairs_largest = 0;  // NVSHMEM's blocks put what grma's pairs put
      for (std::size_t b : bandwidth_sizes)
        if (all_pairs_fit(b)) all_pairs_largest = b;
      try {
        nvshmem = bench::run_nvshmem({latency_sizes, bandwidth_sizes, p.offset(full), all_pairs_largest, threads,
                                      latency_iterations, o.quick ? 4 : 20, adds_per_thread});
      } catch (const std::exception& e) {  // grma's figures go on; the failure is reported
        nvshmem_failure = std::string(e.what()) + "\n";
        std::fprintf(stderr, "grma-bench: %s", nvshmem_failure.c_str());
      }
    }
#endif
    // Latency: ranks 0 and the path's other end (few ranks per device).
    const int ranks_latency = p.devices_apart == 0 ? 2 : 1;
    const int partner = p.offset(ranks_latency);
    std::snprintf(line, sizeof line,
                  "\n%s: rank 0 <-> rank %d; round trip [us]\n%10s %13s %13s %13s %14s %14s %12s "
                  "%14s %14s %14s\n",
                  p.name, partner, "bytes", "notified put", "notified get", "signal put", "floor",
                  "release floor", "put/release", "NVSHMEM sig", "staged MPI", "GASPI w_notify");
    report += nvshmem_failure + line;
    if (json)
      std::fprintf(json,
                   "%s    {\"name\": \"%s\", \"floor\": \"%s\", \"copy_baseline\": \"%s\", "
                   "\"nvshmem_int_p_us\": %s,\n     \"latency\": [\n",
                   first_path ? "" : ",\n", p.name, floor_name, copy_name,
                   format(nvshmem ? nvshmem->int_p_us : NAN, "%.4f", "null").c_str());
    first_path = false;
    bool first = true;
    double gaspi_8b_us = NAN;  // the core line's GASPI figure
    for (std::size_t bytes : latency_sizes) {
      const int iterations = bytes <= 4096 ? latency_iterations : latency_iterations / 10;
      double us[3];
      const bench::mode how[3] = {bench::mode::notified_put, bench::mode::notified_get, bench::mode::signal_put};
      for (int k = 0; k < 3; ++k) {
        show.step(std::string(p.name) + ": ping-pong " + std::to_string(bytes) + " B");
        const results r = run(bench::ping_pong{bytes, iterations, how[k], partner}, ranks_latency);
        us[k] = r.seconds / iterations * 1e6;
      }
      // The GASPI layer's write_notify ping-pong (notify_waitsome and notify_reset at each end).
      const double gaspi_us =
          run(bench::gaspi_write_notify_round_trip{bytes, iterations, partner}, ranks_latency)
              .seconds /
          iterations * 1e6;
      if (bytes == 8) gaspi_8b_us = gaspi_us;
      double floor_here = floor_us;
#if GRMA_BENCH_MPI
      if (measures_mpi) floor_here = bench::mpi_round_trip_us(bytes, iterations, far_process);
#endif
      const double staged_here = staged_us(bytes, iterations);
      const double nvshmem_here = nvshmem ? figure_at(nvshmem->signal_us, bytes) : NAN;
      std::snprintf(
          line, sizeof line, "%10zu %13.3f %13.3f %13.3f %14s %14s %12s %14s %14s %14.3f\n", bytes,
          us[0], us[1], us[2], format(floor_here, "%.3f").c_str(),
          format(release_floor_us, "%.3f").c_str(),
          format(us[0] / release_floor_us, "%.2f").c_str(), format(nvshmem_here, "%.3f").c_str(),
          format(staged_here, "%.3f").c_str(), gaspi_us);
      report += line;
      if (json)
        std::fprintf(
            json,
            "%s      {\"bytes\": %zu, \"notified_put_us\": %.4f, \"notified_get_us\": %.4f, "
            "\"signal_put_us\": %.4f, \"floor_us\": %s, \"release_floor_us\": %s, "
            "\"nvshmem_signal_us\": %s, \"staged_mpi_us\": %s, \"gaspi_write_notify_us\": %.4f}",
            first ? "" : ",\n", bytes, us[0], us[1], us[2],
            format(floor_here, "%.4f", "null").c_str(),
            format(release_floor_us, "%.4f", "null").c_str(),
            format(nvshmem_here, "%.4f", "null").c_str(),
            format(staged_here, "%.4f", "null").c_str(), gaspi_us);
      first = false;
    }
    // The core's one-word operations, 8 bytes, after the notified ping-pongs.
    // [3]: the OpenSHMEM layer's put_signal; [4]: the GASPI layer's write_notify ping-pong;
    // [5]: the 8-byte value put (put_value_notify), a notified put carried in its notification.
    double core_us[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    {
      const bench::core_mode core_how[3] = {bench::core_mode::p_wait_until,
                                            bench::core_mode::put_fence_p,
                                            bench::core_mode::fetch_add};
      for (int k = 0; k < 3; ++k) {
        show.step(std::string(p.name) + ": core round trip");
        const results r = run(bench::core_round_trip{latency_iterations, core_how[k], p.offset(ranks_latency)},
                              ranks_latency);
        core_us[k] = r.seconds / latency_iterations * 1e6;
      }
      show.step(std::string(p.name) + ": OpenSHMEM put_signal round trip");
      const results r =
          run(bench::shmem_put_signal_round_trip{latency_iterations, p.offset(ranks_latency)},
              ranks_latency);
      core_us[3] = r.seconds / latency_iterations * 1e6;
      core_us[4] = gaspi_8b_us;
      show.step(std::string(p.name) + ": value put round trip");
      core_us[5] = run(bench::value_put_round_trip{latency_iterations, p.offset(ranks_latency)},
                       ranks_latency)
                       .seconds /
                   latency_iterations * 1e6;
    }
    // What NVSHMEM's two PEs measure beside fetch_add, in their shape: the
    // add rate of one rank's threads, and barrier and 8-byte allreduce over
    // team_world where the job at this path's shape is its two ends alone
    // (one rank a device on the peer path), so that team_world is the pair.
    const bool pair_job = !p.remote && job.rank_count / full * ranks_latency == 2;
    double add_rate = NAN, pair_us[2] = {NAN, NAN};
    if (!p.remote) {
      show.step(std::string(p.name) + ": add rate");
      const results r = run(bench::atomic_add_rate{adds_per_thread, partner}, ranks_latency);
      add_rate = double(adds_per_thread) * threads / r.seconds;
    }
    const bench::collective_mode pair_how[2] = {bench::collective_mode::team_barrier,
                                                bench::collective_mode::allreduce_8b};
    for (int k = 0; k < 2 && pair_job; ++k) {
      show.step(std::string(p.name) + ": collectives of the two ends");
      pair_us[k] = run(bench::collective_latency{latency_iterations, pair_how[k]}, ranks_latency).seconds /
                   latency_iterations * 1e6;
    }
    const bench::nvshmem_figures nv = nvshmem.value_or(bench::nvshmem_figures{});  // NaNs where none ran
    std::snprintf(
        line, sizeof line,
        "%s: core, 8 B [us]: p + wait_until %.3f, put + fence + p %.3f, OpenSHMEM put_signal %.3f, "
        "GASPI write_notify %.3f (%.2fx put_signal) (round trips), fetch_add %.3f\n",
        p.name, core_us[0], core_us[1], core_us[3], core_us[4], core_us[4] / core_us[3],
        core_us[2]);
    report += line;
    std::snprintf(line, sizeof line,
                  "%s: 8 B value put (put_value_notify) round trip %.3f us: %s x the release "
                  "floor, %s x NVSHMEM put_signal\n",
                  p.name, core_us[5], format(core_us[5] / release_floor_us, "%.2f").c_str(),
                  format(core_us[5] / figure_at(nv.signal_us, 8), "%.2f").c_str());
    report += line;
    if (!p.remote) {
      std::snprintf(line, sizeof line, "%s: rank 0 and rank %d %s, beside NVSHMEM's two PEs\n%-32s %12s %12s %13s\n",
                    p.name, partner,
                    pair_job ? "alone in the job" : "(barrier and allreduce need them alone in the job)", "operation",
                    "grma", "NVSHMEM", "grma/NVSHMEM");
      report += line;
      const struct {
        const char* name;
        double grma, nvshmem;
        const char* shown_as;
      } rows[5] = {
          {"put_signal 8 B round trip [us]", core_us[3], figure_at(nv.signal_us, 8), "%.3f"},
          {"fetch_add round trip [us]", core_us[2], nv.fetch_add_us, "%.3f"},
          {"add rate, one rank [per s]", add_rate, nv.add_rate_per_s, "%.3g"},
          {"barrier, team_world [us]", pair_us[0], nv.barrier_us, "%.3f"},
          {"allreduce 8 B, team_world [us]", pair_us[1], nv.allreduce_8b_us, "%.3f"}};
      for (const auto& row : rows) {
        std::snprintf(line, sizeof line, "%-32s %12s %12s %13s\n", row.name, format(row.grma, row.shown_as).c_str(),
                      format(row.nvshmem, row.shown_as).c_str(), format(row.grma / row.nvshmem, "%.2f").c_str());
        report += line;
      }
    }
    if (json)
      std::fprintf(
          json,
          "\n     ],\n     \"core\": {\"p_wait_until_us\": %s, \"put_fence_p_us\": %s, "
          "\"value_put_us\": %s, "
          "\"shmem_put_signal_us\": %s, \"gaspi_write_notify_us\": %s, \"fetch_add_us\": %s, "
          "\"nvshmem_fetch_add_us\": %s,\n      \"add_rate_per_s\": %s, "
          "\"nvshmem_add_rate_per_s\": %s, "
          "\"add_threads\": %d,\n      \"barrier_us\": %s, \"nvshmem_barrier_us\": %s, "
          "\"allreduce_8b_us\": %s, \"nvshmem_allreduce_8b_us\": %s}",
          format(core_us[0], "%.4f", "null").c_str(), format(core_us[1], "%.4f", "null").c_str(),
          format(core_us[5], "%.4f", "null").c_str(),
          format(core_us[3], "%.4f", "null").c_str(), format(core_us[4], "%.4f", "null").c_str(),
          format(core_us[2], "%.4f", "null").c_str(),
          format(nv.fetch_add_us, "%.4f", "null").c_str(), format(add_rate, "%.1f", "null").c_str(),
          format(nv.add_rate_per_s, "%.1f", "null").c_str(), threads,
          format(pair_us[0], "%.4f", "null").c_str(), format(nv.barrier_us, "%.4f", "null").c_str(),
          format(pair_us[1], "%.4f", "null").c_str(),
          format(nv.allreduce_8b_us, "%.4f", "null").c_str());
    if (nvshmem) {
      std::snprintf(line, sizeof line, "NVSHMEM int_p + int_wait_until (no ordering): %.3f us\n", nvshmem->int_p_us);
      report += line;
    }
    // Bandwidth: one rank, then all pairs of the path (the full job). With
    // one rank per device the same device has no pairs: nothing to measure.
    const int offset = p.offset(full), pairs = offset;
    if (pairs == 0) {
      report += std::string(p.name) + ": bandwidth and message rate need two ranks per device\n";
      if (json) std::fprintf(json, ",\n     \"bandwidth\": [],\n     \"message_rate\": null\n    }");
      continue;
    }
    std::snprintf(line, sizeof line,
                  "%s: bandwidth [GB/s], %d pairs\n%10s %13s %13s %14s %14s %14s %14s %14s %14s "
                  "%14s %14s %14s %14s\n",
                  p.name, pairs, "bytes/rank", "one rank", "all pairs", "copy floor", "NVSHMEM one",
                  "NVSHMEM all", "staged MPI", "UCX put", "peer copy", "both ways", "copy of both",
                  "GASPI pingpong", "GASPI lockstep");
    report += line;
    if (json) std::fprintf(json, ",\n     \"bandwidth\": [\n");
    first = true;
    for (std::size_t bytes : bandwidth_sizes) {
      const int iterations = o.quick ? 4 : 20;
      show.step(std::string(p.name) + ": bandwidth " + std::to_string(bytes) + " B, one rank");
      const results one = run(bench::bandwidth{bytes, iterations, 1, offset}, full);
      show.step(std::string(p.name) + ": bandwidth " + std::to_string(bytes) + " B, all pairs");
      const bool all_measured = all_pairs_fit(bytes);
      const double one_gbs = double(bytes) * iterations / one.seconds / 1e9;
      const double all_gbs =
          all_measured ? double(bytes) * iterations * pairs /
                             run(bench::bandwidth{bytes, iterations, pairs, offset}, full).seconds / 1e9
                       : NAN;
      // On one device the pairs' ranks are half of it: put both ways, all
      // of the device's ranks copy, as the whole device copies in its floor.
      const bool one_device = p.devices_apart == 0, both_measured = all_measured && one_device;
      if (one_device)
        show.step(std::string(p.name) + ": bandwidth " + std::to_string(bytes) + " B, both ways");
      const double both_gbs =
          both_measured
              ? double(bytes) * iterations * pairs * 2 /
                    run(bench::bandwidth{bytes, iterations, pairs, offset, true}, full).seconds /
                    1e9
              : NAN;
      const double both_copy = both_measured ? floor_gbs(bytes * std::size_t(2 * pairs)) : NAN;
      // The GASPI layer's ping-pong of all pairs (papers/002's throughput
      // ping-pong), where two buffers a rank fit its symmetric slice.
      const bool gaspi_measured = all_measured && gaspi_fits(bytes);
      if (gaspi_measured)
        show.step(std::string(p.name) + ": GASPI ping-pong " + std::to_string(bytes) + " B");
      const double gaspi_gbs =
          gaspi_measured
              ? double(bytes) * iterations * pairs * 2 /
                    run(bench::gaspi_throughput{bytes, iterations, pairs, offset}, full).seconds /
                    1e9
              : NAN;
      // The same with every rank meeting the others after each round trip.
      const double lockstep_gbs =
          gaspi_measured
              ? double(bytes) * iterations * pairs * 2 /
                    run(bench::gaspi_throughput{bytes, iterations, pairs, offset, true}, full)
                        .seconds /
                    1e9
              : NAN;
      // The copy of as much as was moved at once: all pairs' bytes, or one rank's.
      double copy = floor_gbs(bytes * std::size_t(all_measured ? pairs : 1));
#if GRMA_BENCH_MPI
      if (measures_mpi)
        copy = bench::mpi_stream_gbs(bytes, iterations, far_process, nullptr,
                                     all_measured ? pairs : 1);
#endif
      const double staged_copy = staged_gbs(bytes, iterations);
      const double ucx_put = ucx_put_gbs(bytes, iterations);
      const double peer_copy = peer_copy_gbs(bytes * std::size_t(all_measured ? pairs : 1));
      const double nvshmem_one = nvshmem ? figure_at(nvshmem->one_block_gbs, bytes) : NAN;
      const double nvshmem_all = nvshmem ? figure_at(nvshmem->blocks_gbs, bytes) : NAN;
      std::snprintf(line, sizeof line,
                    "%10zu %13.2f %13s %14s %14s %14s %14s %14s %14s %14s %14s %14s %14s\n", bytes,
                    one_gbs, format(all_gbs, "%.2f").c_str(), format(copy, "%.2f").c_str(),
                    format(nvshmem_one, "%.2f").c_str(), format(nvshmem_all, "%.2f").c_str(),
                    format(staged_copy, "%.2f").c_str(), format(ucx_put, "%.2f").c_str(),
                    format(peer_copy, "%.2f").c_str(), format(both_gbs, "%.2f").c_str(),
                    format(both_copy, "%.2f").c_str(), format(gaspi_gbs, "%.2f").c_str(),
                    format(lockstep_gbs, "%.2f").c_str());
      report += line;
      if (json)
        std::fprintf(
            json,
            "%s      {\"bytes\": %zu, \"one_rank_gbs\": %.3f, \"all_pairs_gbs\": %s, "
            "\"pairs\": %d, \"copy_floor_gbs\": %s, \"nvshmem_one_block_gbs\": %s, "
            "\"nvshmem_blocks_gbs\": %s, \"staged_mpi_gbs\": %s, \"ucx_put_gbs\": %s, "
            "\"ucx_put_memory\": \"%s\", \"peer_copy_gbs\": %s, \"both_ways_gbs\": %s, "
            "\"both_ways_copy_floor_gbs\": %s, \"gaspi_pingpong_gbs\": %s, "
            "\"gaspi_lockstep_gbs\": %s}",
            first ? "" : ",\n", bytes, one_gbs, format(all_gbs, "%.3f", "null").c_str(), pairs,
            format(copy, "%.3f", "null").c_str(), format(nvshmem_one, "%.3f", "null").c_str(),
            format(nvshmem_all, "%.3f", "null").c_str(),
            format(staged_copy, "%.3f", "null").c_str(), format(ucx_put, "%.3f", "null").c_str(),
            ucx_put_memory, format(peer_copy, "%.3f", "null").c_str(),
            format(both_gbs, "%.3f", "null").c_str(), format(both_copy, "%.3f", "null").c_str(),
            format(gaspi_gbs, "%.3f", "null").c_str(),
            format(lockstep_gbs, "%.3f", "null").c_str());
      first = false;
    }
    // Message rate: every pair, many small puts in flight.
    show.step(std::string(p.name) + ": message rate");
    const results rate = run(bench::message_rate{message_count, message_batch, pairs, offset}, full);
    const double per_second = double(message_count) * pairs / rate.seconds;
    // Across nodes, MPI's own 8-byte message rate between the same processes.
    double mpi_rate = NAN;
#if GRMA_BENCH_MPI
    if (measures_mpi) mpi_rate = bench::mpi_message_rate(8, o.quick ? 20000 : 200000, 64, far_process);
#endif
    const double ucx_rate = ucx_put_rate(o.quick ? 20000 : 200000);
    std::snprintf(line, sizeof line,
                  "%s: message rate, 8-byte notified puts: %.3g per second (%d pairs); MPI's own "
                  "(window 64): %s; UCX's 8-byte puts (window 64): %s\n",
                  p.name, per_second, pairs, format(mpi_rate, "%.3g").c_str(),
                  format(ucx_rate, "%.3g").c_str());
    report += line;
    if (json)
      std::fprintf(json,
                   "\n     ],\n     \"message_rate\": {\"messages_per_s\": %.1f, \"pairs\": %d, "
                   "\"mpi_messages_per_s\": %s, \"ucx_puts_per_s\": %s}\n    }",
                   per_second, pairs, format(mpi_rate, "%.1f", "null").c_str(),
                   format(ucx_rate, "%.1f", "null").c_str());
  }
  if (json) std::fprintf(json, "\n  ],\n  \"host\": ");
  if (wanted("host")) {
    show.step("host access");
    report += measure_host_access(rt, o, job, threads, far_process, json);
  } else if (json) {
    std::fprintf(json, "null");
  }
  // Halo exchange of all ranks of the job, rows of 8 B to 128 KiB.
  if (json) std::fprintf(json, ",\n  \"halo\": [\n");
  if (wanted("halo")) {
    std::snprintf(line, sizeof line, "\nhalo exchange, all %d ranks [us per round]\n%10s %13s\n",
                  job.rank_count, "bytes", "round");
    report += line;
    bool first = true;
    for (std::size_t bytes = 8; bytes <= (o.quick ? 512u : std::size_t(128) << 10); bytes *= 4) {
      show.step("halo exchange " + std::to_string(bytes) + " B");
      const int rounds = o.quick ? 20 : bytes <= 8192 ? 500 : 100;
      const results h = run(bench::halo_exchange{bytes, rounds}, full);
      const double us = h.seconds / rounds * 1e6;
      std::snprintf(line, sizeof line, "%10zu %13.3f\n", bytes, us);
      report += line;
      if (json)
        std::fprintf(json, "%s    {\"bytes\": %zu, \"round_us\": %.4f, \"ranks\": %d}", first ? "" : ",\n",
                     bytes, us, job.rank_count);
      first = false;
    }
  }
  // Matching throughput, once: up to 8 senders, a rank's worth of pending notifications.
  const int senders = std::min(8, job.rank_count - 1);
  const int per_sender = int(std::min<std::uint32_t>(32, rt.settings().match_capacity / std::uint32_t(std::max(1, senders))));
  const char* order_name[5] = {"oldest first", "newest first", "wildcards", "oldest first, some",
                               "wildcards, some"};
  if (wanted("matching"))
    report +=
        "\nnotification matching at rank 0 [matches per second; some: wait_some_notifications, up "
        "to " +
        std::to_string(bench::some_most) + " a call]\n";
  if (json) std::fprintf(json, "\n  ],\n  \"matching\": [\n");
  for (int order = 0; order < 5 && senders > 0 && wanted("matching"); ++order) {
    show.step(std::string("matching, ") + order_name[order]);
    const int rounds = o.quick ? 3 : 50;
    const results m = run(bench::matching{senders, per_sender, rounds, order}, full);
    const double per_second = double(senders) * per_sender * rounds / m.seconds;
    std::snprintf(line, sizeof line, "%20s: %.3g (%d senders x %d tags)\n", order_name[order],
                  per_second, senders, per_sender);
    report += line;
    if (json)
      std::fprintf(json, "%s    {\"order\": \"%s\", \"matches_per_s\": %.1f, \"senders\": %d, \"tags\": %d}",
                   order ? ",\n" : "", order_name[order], per_second, senders, per_sender);
  }
  // A call that must wait for its first match: one notification at a time
  // between ranks 0 and 1, taken by a call a match or by a call for some.
  if (json) std::fprintf(json, "\n  ],\n  \"matching_round_trip\": ");
  if (wanted("matching") && times_one_at_a_time) {
    const int iterations = o.quick ? 2000 : 20000;
    double us[2];
    for (int some = 0; some < 2; ++some) {
      show.step("matching, one at a time");
      us[some] =
          run(bench::waiting_round_trip{iterations, some == 1}, 2).seconds / iterations * 1e6;
    }
    std::snprintf(line, sizeof line,
                  "%20s: round trip %.3f us with wait_notification, %.3f with "
                  "wait_some_notifications\n",
                  "one at a time", us[0], us[1]);
    report += line;
    if (json)
      std::fprintf(json, "{\"wait_notification_us\": %.4f, \"wait_some_notifications_us\": %.4f}",
                   us[0], us[1]);
  } else if (json) {
    std::fprintf(json, "null");
  }
  // Collectives of all ranks: the world barrier (the baseline), the core's
  // team barrier (across nodes team_world's barrier is the world barrier)
  // and an 8-byte allreduce.
  if (json) std::fprintf(json, ",\n  \"collectives\": ");
  if (wanted("collectives")) {
    const int rounds = o.quick ? 20 : 500;
    double us[3] = {NAN, NAN, NAN};
    const bench::collective_mode how[3] = {bench::collective_mode::world_barrier, bench::collective_mode::team_barrier,
                                           bench::collective_mode::allreduce_8b};
    for (int k = 0; k < 3; ++k) {
      show.step("collectives");
      us[k] = run(bench::collective_latency{rounds, how[k]}, full).seconds / rounds * 1e6;
    }
    std::snprintf(line, sizeof line,
                  "\ncollectives, all %d ranks [us]: world barrier %s, team barrier %s, allreduce 8 B %s\n",
                  job.rank_count, format(us[0], "%.3f").c_str(), format(us[1], "%.3f").c_str(),
                  format(us[2], "%.3f").c_str());
    report += line;
    if (json)
      std::fprintf(json, "{\"ranks\": %d, \"world_barrier_us\": %s, \"team_barrier_us\": %s, \"allreduce_8b_us\": %s}",
                   job.rank_count, format(us[0], "%.4f", "null").c_str(), format(us[1], "%.4f", "null").c_str(),
                   format(us[2], "%.4f", "null").c_str());
  } else if (json) {
    std::fprintf(json, "null");
  }
  show.finish();
  if (json) std::fprintf(json, "}");
  char header[256];
  std::snprintf(header, sizeof header,
                "grma-bench: %s backend, %d device%s per node, %d node%s, %d threads per rank, %d ranks per device%s\n",
                cuda ? "cuda" : "cpu", devices_per_node, devices_per_node == 1 ? "" : "s", job.node_count,
                job.node_count == 1 ? "" : "s", threads, full, o.quick ? " (quick)" : "");
  return header + report;
}

}  // namespace

int main(int argc, char** argv) try {
  const options o = parse(argc, argv);
  // Each backend this build and machine have: the GPUs first, when there
  // are any, then the CPU backend (a program compiled by nvcc runs on both).
  std::vector<grma::backend_kind> backends;
  {
    const grma::runtime probe(grma::settings::from_environment());
    const bool gpu = probe.backend() == grma::backend_kind::cuda;
    if (gpu && o.backends != "cpu") backends.push_back(grma::backend_kind::cuda);
    if (o.backends != "cuda") backends.push_back(grma::backend_kind::cpu);
    if (backends.empty()) throw std::runtime_error("--backends cuda, but no GPU is visible");
  }
  std::FILE* json = nullptr;
  bool lead = false, first = true;
  std::string reports;
  for (const grma::backend_kind b : backends) {
    grma::settings s = grma::settings::from_environment();
    s.backend = b;
    // GPU ranks are many: unless GRMA_HEAP_SIZE says otherwise, give each
    // device's heap room for all ranks' bandwidth buffers.
    if (b == grma::backend_kind::cuda && std::getenv("GRMA_HEAP_SIZE") == nullptr)
      s.heap_size = std::uint64_t(6) << 30;
    // And the symmetric heap room for the GASPI ping-pong's segments.
    if (b == grma::backend_kind::cuda && std::getenv("GRMA_SYMMETRIC_SIZE") == nullptr)
      s.symmetric_size = std::uint64_t(2) << 30;
    grma::runtime rt(s);
    if (first) {
      lead = rt.info(bench::matching{}, {.threads_per_rank = 1}).process_index == 0;
      json = lead ? std::fopen(o.json.c_str(), "w") : nullptr;
      if (lead && json == nullptr) throw std::runtime_error("cannot write " + o.json);
      if (json) std::fprintf(json, "{\n  \"runs\": [\n");
    } else if (json) {
      std::fprintf(json, ",\n");
    }
    first = false;
    reports += measure(rt, o, json) + "\n";
  }
  if (json) {
    std::fprintf(json, "\n  ]\n}\n");
    const bool failed = std::ferror(json) != 0;
    if (std::fclose(json) != 0 || failed) throw std::runtime_error("cannot write " + o.json);
  }
  if (lead) std::printf("%sJSON: %s\n", reports.c_str(), o.json.c_str());
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "grma-bench: %s\n", e.what());
  return 1;
}
