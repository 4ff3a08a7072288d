// grma-jacobi2d: Jacobi 2D (papers/001 §6.3) with grma's OpenSHMEM layer in
// one persistent kernel, beside the kernel-boundary baselines (Inter-K and
// Inter-K-Overlap, halos between GPUs by cudaMemcpyPeerAsync and between
// processes by MPI); time per iteration against the grid size, each result
// checked against the serial reference. Weak scaling: each device of the job brings an N x N
// part of the grid (the grid is N x devices rows of N cells). Prints a table
// and writes JSON.
//
// Where built with NVSHMEM (GRMA_NVSHMEM_HOME), a job of one process on one
// node also runs the same algorithm with NVSHMEM (nvshmem.cu: a PE per GPU,
// a tile per thread block) in the same run, checked alike.
//
//   grma-jacobi2d [--sizes 1024,2048,...] [--iterations N] [--repeats K]
//                 [--check-iterations K] [--threads T] [--no-baseline]
//                 [--no-nvshmem] [--json FILE]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <grma/grma.hpp>
#include <string>
#include <vector>

#include "../app_support.hpp"
#include "jacobi.hpp"
#include "jacobi_grma.hpp"
#if defined(__CUDACC__)
#include "../mpi_support.hpp"
#include "baseline.hpp"
#endif
#if defined(APPS_NVSHMEM_PROGRAM)
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "nvshmem_pes.hpp"
#endif

namespace {

using apps::median;
using apps::shown;

struct options {
  std::vector<int> sizes{1024, 2048};
  int iterations = 100;
  int repeats = 3;           // timed runs of each figure; the median is reported
  int check_iterations = 5;  // 0: no check
  int threads = 0;           // per rank; 0: the backend's default
  bool baseline = true;
  bool nvshmem = true;
  std::string json = "jacobi2d.json";
};

options parse(apps::command_line& line) {
  options o;
  constexpr int most = 1 << 20;
  while (line.next()) {
    const std::string a = line.option();
    if (a == "--sizes") {
      o.sizes = line.numbers("a size", 1, most);
    } else if (a == "--iterations") {
      o.iterations = int(line.number(1, most));
    } else if (a == "--repeats") {
      o.repeats = int(line.number(1, 1000));
    } else if (a == "--check-iterations") {
      o.check_iterations = int(line.number(0, most));
    } else if (a == "--threads") {
      o.threads = int(line.number(0, 1024));
    } else if (a == "--no-baseline") {
      o.baseline = false;
    } else if (a == "--no-nvshmem") {
      o.nvshmem = false;
    } else if (a == "--json") {
      o.json = line.value();
    } else {
      line.unknown();
    }
  }
  return o;
}

#if defined(__CUDACC__)
// The largest difference between the rows of the grid from `first_row` on
// (`piece`, whole rows) and the reference's.
double error_of_rows(const std::vector<double>& piece, const std::vector<double>& expected,
                     int first_row, int cols) {
  double worst = 0;
  const std::size_t at = std::size_t(first_row) * std::size_t(cols);
  for (std::size_t k = 0; k < piece.size(); ++k) {
    const double e = std::fabs(piece[k] - expected[at + k]);
    worst = std::isnan(e) ? INFINITY : std::max(worst, e);
  }
  return worst;
}
#endif

#if defined(APPS_NVSHMEM_PROGRAM)
struct nvshmem_result {
  double us = NAN;     // per iteration
  double error = NAN;  // the largest over the PEs
};

// The same grid and tiles relaxed by grma-jacobi2d-nvshmem, one process per
// GPU of this process (PE i on GPU i), each GPU's tiles as many thread
// blocks of `threads`; throws std::runtime_error naming what failed.
nvshmem_result run_nvshmem(int rows, int cols, int pes, int blocks, int threads, const options& o) {
  bench::nvshmem_pes run(pes, 600);
  std::vector<std::string> outs;
  for (int pe = 0; pe < pes; ++pe) outs.push_back(run.file("out" + std::to_string(pe)));
  for (int pe = 0; pe < pes; ++pe)
    run.start(
        pe, {APPS_NVSHMEM_PROGRAM, "--out", outs[std::size_t(pe)], "--rows", std::to_string(rows),
             "--cols", std::to_string(cols), "--blocks", std::to_string(blocks), "--threads",
             std::to_string(threads), "--iterations", std::to_string(o.iterations), "--repeats",
             std::to_string(o.repeats), "--check-iterations", std::to_string(o.check_iterations)});
  const std::string failure = run.wait();
  if (!failure.empty()) throw std::runtime_error("NVSHMEM: " + failure);
  nvshmem_result r;
  bool errors_read = true;
  for (int pe = 0; pe < pes; ++pe) {
    std::ifstream in(outs[std::size_t(pe)]);
    bool error_read = false;
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string what, value;
      fields >> what >> value;
      const double v = std::strtod(value.c_str(), nullptr);  // "nan" where not checked
      if (what == "us_per_iteration" && pe == 0) r.us = v;
      if (what == "error") {
        error_read = true;
        r.error = std::isnan(r.error) ? v : std::fmax(r.error, v);
      }
    }
    errors_read = errors_read && error_read;
  }
  if (std::isnan(r.us) || !errors_read)
    throw std::runtime_error("NVSHMEM: no figures from the PEs" + run.output());
  return r;
}
#endif

}  // namespace

int main(int argc, char** argv) try {
  grma::settings s = grma::settings::from_environment(&argc, argv);
  apps::command_line line("grma-jacobi2d",
                          "[--sizes N,N,...] [--iterations N] [--repeats K] [--check-iterations K] "
                          "[--threads T] [--no-baseline] [--no-nvshmem] [--json FILE]",
                          argc, argv);
  const options o = parse(line);
  const grma::launch_options launch{.threads_per_rank = o.threads};
  // How many PEs the job has decides the tiles, and the tiles how much
  // symmetric memory each PE needs: a probe asks, then the runtime has room.
  grma::rank_info info;
  {
    grma::runtime probe(s);
    info = probe.info(jacobi::grma_program{}, launch);
  }
  const int devices = info.device_count * info.node_count;
  std::uint64_t slice = 0;
  for (const int n : o.sizes) {
    const jacobi::decomposition d = jacobi::split(n * devices, n, info.rank_count);
    if (d.max_height() < 1 || d.height(d.py - 1) < 1 || d.width(d.px - 1) < 1)
      line.usage("a grid of " + std::to_string(n * devices) + " x " + std::to_string(n) +
                 " has fewer cells than the " + std::to_string(info.rank_count) + " PEs");
    // The block, the teams' workspaces (16 KiB) and room for the allocator.
    slice = std::max<std::uint64_t>(slice, jacobi::tile_bytes(d) + (64 << 10));
  }
  slice = (slice + 4095) / 4096 * 4096;
  constexpr std::uint64_t symmetric_most = std::uint64_t(1) << 40;  // GRMA_SYMMETRIC_SIZE's
  if (slice * std::uint64_t(info.ranks_per_device) > symmetric_most)
    line.usage("the largest size's tiles need " +
               std::to_string(slice * std::uint64_t(info.ranks_per_device)) +
               " bytes of symmetric heap a device, more than GRMA_SYMMETRIC_SIZE takes (1024G)");
  s.symmetric_size =
      std::max<std::uint64_t>(s.symmetric_size, slice * std::uint64_t(info.ranks_per_device));
  grma::runtime rt(s);
  const bool cuda = rt.backend() == grma::backend_kind::cuda, lead = info.process_index == 0;
#if defined(__CUDACC__)
  // The baselines give each GPU n rows of the grid, in the order of the
  // world's ranks (process by process), and copy halos between this
  // process's GPUs, and through MPI between processes when built with it.
  const bool baseline = o.baseline && cuda && (info.process_count == 1 || apps::with_mpi);
  const int devices_here = info.rank_responsible / info.ranks_per_device;
  const int first_device = info.rank_start / info.ranks_per_device;
  const int process_above = info.process_index - 1;
  const int process_below =
      info.process_index + 1 < info.process_count ? info.process_index + 1 : -1;
#endif
  // NVSHMEM beside grma: its PEs are this process's GPUs, so only in a job of
  // one process; its kernel has at most 256 threads a block.
#if defined(APPS_NVSHMEM_PROGRAM)
  const bool nvshmem = o.nvshmem && cuda && info.process_count == 1 && info.threads_per_rank <= 256;
#endif
  if (lead) {
    std::printf(
        "jacobi 2d: %s backend, %d device%s, %d PEs (%d per device) x %d threads, %d iterations; "
        "times: median of %d runs\n",
        cuda ? "cuda" : "cpu", devices, devices == 1 ? "" : "s", info.rank_count,
        info.ranks_per_device, info.threads_per_rank, o.iterations, o.repeats);
    std::printf("%8s %13s %9s %14s %15s %15s %14s %16s %14s %12s %12s %12s\n", "size", "grid",
                "PEs", "grma [us/it]", "inter-k [us/it]", "overlap [us/it]", "baseline/grma",
                "nvshmem [us/it]", "nvshmem/grma", "grma error", "base error", "nvshmem err");
  }
  std::FILE* json = lead ? std::fopen(o.json.c_str(), "w") : nullptr;
  if (lead && json == nullptr) line.usage("cannot write " + o.json);
  if (json)
    std::fprintf(
        json,
        "{\n  \"backend\": \"%s\",\n  \"devices\": %d,\n  \"nodes\": %d,\n  \"processes\": %d,\n  "
        "\"pes\": %d,\n  \"pes_per_device\": %d,\n  \"threads_per_pe\": %d,\n  \"iterations\": "
        "%d,\n  "
        "\"results\": [\n",
        cuda ? "cuda" : "cpu", devices, info.node_count, info.process_count, info.rank_count,
        info.ranks_per_device, info.threads_per_rank, o.iterations);
  bool all_good = true;
  for (std::size_t at = 0; at < o.sizes.size(); ++at) {
    const int n = o.sizes[at], rows = n * devices;
    const jacobi::decomposition d = jacobi::split(rows, n, info.rank_count);
#if defined(__CUDACC__)
    const auto job_of = [&](bool overlap, int iterations) {
      return jacobi::baseline_job{overlap,
                                  devices_here,
                                  n,
                                  n,
                                  iterations,
                                  info.threads_per_rank,
                                  first_device * n,
                                  rows,
                                  process_above,
                                  process_below};
    };
#endif
    // grma and the baselines take turns, so that all see the machine alike.
    std::vector<double> grma_runs, base_runs, overlap_runs;
    for (int k = 0; k < o.repeats; ++k) {
      jacobi::result_header header{};
      grma::launch_options timed = launch;
      timed.userdata = &header;
      timed.userdata_size = sizeof header;
      rt.run(jacobi::grma_program{d, o.iterations, false}, timed);
      grma_runs.push_back(header.seconds / o.iterations * 1e6);
#if defined(__CUDACC__)
      if (baseline) {
        base_runs.push_back(jacobi::run_baseline(job_of(false, o.iterations), nullptr) /
                            o.iterations * 1e6);
        overlap_runs.push_back(jacobi::run_baseline(job_of(true, o.iterations), nullptr) /
                               o.iterations * 1e6);
      }
#endif
    }
    const double grma_us = median(grma_runs), base_us = median(base_runs),
                 overlap_us = median(overlap_runs);
    double grma_error = NAN, base_error = NAN;
    if (o.check_iterations > 0) {
      const std::vector<double> expected = jacobi::reference(rows, n, o.check_iterations);
      std::vector<double> area(sizeof(jacobi::result_header) / sizeof(double) + expected.size(),
                               0.0);
      grma::launch_options checking = launch;
      checking.userdata = area.data();
      checking.userdata_size = area.size() * sizeof(double);
      rt.run(jacobi::grma_program{d, o.check_iterations, true}, checking);
      const std::vector<double> grid(area.begin() + sizeof(jacobi::result_header) / sizeof(double),
                                     area.end());
      grma_error = jacobi::error_of(grid, expected, d, info.rank_start, info.rank_responsible);
      all_good = all_good && grma_error <= jacobi::tolerance;
#if defined(__CUDACC__)
      if (baseline) {
        base_error = 0;
        for (const bool overlap : {false, true}) {
          std::vector<double> piece;  // this process's rows
          jacobi::run_baseline(job_of(overlap, o.check_iterations), &piece);
          base_error = std::max(base_error, error_of_rows(piece, expected, first_device * n, n));
        }
        all_good = all_good && base_error <= jacobi::tolerance;
      }
#endif
    }
    double nvshmem_us = NAN, nvshmem_error = NAN;
#if defined(APPS_NVSHMEM_PROGRAM)
    if (nvshmem) {
      const nvshmem_result r =
          run_nvshmem(rows, n, devices, info.ranks_per_device, info.threads_per_rank, o);
      nvshmem_us = r.us;
      nvshmem_error = r.error;
      all_good = all_good && (o.check_iterations == 0 || nvshmem_error <= jacobi::tolerance);
    }
#endif
    if (lead) {
      const std::string grid = std::to_string(rows) + "x" + std::to_string(n);
      const std::string pes = std::to_string(d.py) + "x" + std::to_string(d.px);
      std::printf("%8d %13s %9s %14s %15s %15s %14s %16s %14s %12s %12s %12s\n", n, grid.c_str(),
                  pes.c_str(), shown(grma_us, "%.2f").c_str(), shown(base_us, "%.2f").c_str(),
                  shown(overlap_us, "%.2f").c_str(),
                  shown(std::fmin(base_us, overlap_us) / grma_us, "%.2f").c_str(),
                  shown(nvshmem_us, "%.2f").c_str(), shown(nvshmem_us / grma_us, "%.2f").c_str(),
                  shown(grma_error, "%.1e").c_str(), shown(base_error, "%.1e").c_str(),
                  shown(nvshmem_error, "%.1e").c_str());
    }
    if (json) {
      auto figure = [](double v) { return std::isnan(v) ? std::string("null") : shown(v, "%.6g"); };
      std::fprintf(
          json,
          "    {\"size\": %d, \"rows\": %d, \"cols\": %d, \"pe_rows\": %d, \"pe_cols\": %d, "
          "\"grma_us_per_iteration\": %s, \"baseline_us_per_iteration\": %s, "
          "\"baseline_overlap_us_per_iteration\": %s, \"nvshmem_us_per_iteration\": %s, "
          "\"grma_error\": %s, \"baseline_error\": %s, \"nvshmem_error\": %s}%s\n",
          n, rows, n, d.py, d.px, figure(grma_us).c_str(), figure(base_us).c_str(),
          figure(overlap_us).c_str(), figure(nvshmem_us).c_str(), figure(grma_error).c_str(),
          figure(base_error).c_str(), figure(nvshmem_error).c_str(),
          at + 1 < o.sizes.size() ? "," : "");
    }
  }
  if (json) {
    std::fprintf(json, "  ]\n}\n");
    line.close_written(json, o.json);
  }
  if (!all_good)
    std::fprintf(stderr, "grma-jacobi2d: a result differs from the serial reference\n");
  return all_good ? 0 : 1;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "grma-jacobi2d: %s\n", e.what());
  return 1;
}
