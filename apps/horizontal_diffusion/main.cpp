// grma-hd: horizontal diffusion (papers/000 §4.3) with grma and, on GPUs,
// the kernel-boundary baseline; iteration time against grid width, each
// result checked against the serial reference. Prints a table and writes
// JSON (scripts/grma-model.py predicts the times from grma-bench's figures).
//
//   grma-hd [--widths 64,256,...] [--variants hd,overlap,nooverlap,compute]
//           [--rows R] [--threads T] [--iterations N] [--repeats K]
//           [--check-iterations K] [--no-baseline] [--json FILE]
//
// --threads sets the threads of a rank (0: the backend's default); the
// baseline's kernels take as many per block, one block per band.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <grma/grma.hpp>
#include <string>
#include <vector>

#include "../app_support.hpp"
#include "hd_grma.hpp"
#include "reference.hpp"
#if defined(__CUDACC__)
#include "../mpi_support.hpp"
#include "baseline.hpp"
#endif

namespace {

using apps::median;

struct options {
  std::vector<int> widths{16, 40};
  std::vector<hd::variant> variants{hd::variant::hd, hd::variant::overlap, hd::variant::nooverlap,
                                    hd::variant::compute};
  int rows = 4;
  int threads = 0;  // per rank; 0: the backend's default
  int iterations = 20;
  int repeats = 5;           // timed runs of each figure; the median is reported
  int check_iterations = 3;  // 0: no check
  bool baseline = true;
  std::string json = "hd.json";
};

const char* name_of(hd::variant v) {
  switch (v) {
    case hd::variant::hd: return "hd";
    case hd::variant::overlap: return "overlap";
    case hd::variant::nooverlap: return "nooverlap";
    case hd::variant::compute: return "compute";
  }
  return "?";
}

options parse(apps::command_line& line) {
  options o;
  constexpr int most = 1 << 24;
  while (line.next()) {
    const std::string a = line.option();
    if (a == "--widths") {
      o.widths = line.numbers("a width", 1, most);
    } else if (a == "--variants") {
      o.variants.clear();
      for (const std::string& item : line.items()) {
        bool known = false;
        for (hd::variant v : {hd::variant::hd, hd::variant::overlap, hd::variant::nooverlap,
                              hd::variant::compute})
          if (item == name_of(v)) o.variants.push_back(v), known = true;
        if (!known) line.usage("unknown variant '" + item + "'");
      }
    } else if (a == "--rows") {
      o.rows = int(line.number(3, most));  // the compute variant works on rows 2..r-1
    } else if (a == "--threads") {
      o.threads = int(line.number(0, 1024));
    } else if (a == "--iterations") {
      o.iterations = int(line.number(1, most));
    } else if (a == "--repeats") {
      o.repeats = int(line.number(1, 1000));
    } else if (a == "--check-iterations") {
      o.check_iterations = int(line.number(0, most));
    } else if (a == "--no-baseline") {
      o.baseline = false;
    } else if (a == "--json") {
      o.json = line.value();
    } else {
      line.unknown();
    }
  }
  return o;
}

// The largest difference between `grids` (this process's rows of each data
// set) and the reference; NaN counts as infinitely different.
double check_against_reference(const std::vector<double>& grids, int sets, int m, int n,
                               int first_row, int row_count, int iterations) {
  double worst = 0;
  const std::size_t grid = std::size_t(m) * std::size_t(n);
  for (int s = 0; s < sets; ++s) {
    const std::vector<double> expected = hd::reference_grid(s, m, n, iterations);
    for (std::size_t k = std::size_t(first_row) * std::size_t(n);
         k < std::size_t(first_row + row_count) * std::size_t(n); ++k) {
      const double d = std::fabs(grids[std::size_t(s) * grid + k] - expected[k]);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
  }
  return worst;
}

// `x` printed with `f`, or `none` where there is no figure: not measured
// (NaN), or no match at all (infinity; JSON has neither).
std::string format(double x, const char* f, const char* none = "-") {
  if (!std::isfinite(x)) return none;
  char text[32];
  std::snprintf(text, sizeof text, f, x);
  return text;
}

// `runs` as a JSON array.
std::string json_list(const std::vector<double>& runs) {
  std::string out = "[";
  for (std::size_t i = 0; i < runs.size(); ++i) out += (i == 0 ? "" : ", ") + format(runs[i], "%.6g", "null");
  return out + "]";
}

// Results must match the reference up to rounding (the GPU fuses
// multiply-adds): values are below 1, differences below 1e-12.
constexpr double tolerance = 1e-12;

}  // namespace

int main(int argc, char** argv) try {
  grma::runtime rt(argc, argv);
  apps::command_line line("grma-hd",
                          "[--widths N,N,...] [--variants hd,overlap,nooverlap,compute] [--rows R] "
                          "[--threads T] [--iterations N] [--repeats K] [--check-iterations K] "
                          "[--no-baseline] [--json FILE]",
                          argc, argv);
  const options o = parse(line);
  const hd::grma_program probe{hd::variant::hd, o.rows, 1, 1, false};
  const grma::launch_options launch{.threads_per_rank = o.threads};
  const grma::rank_info info = rt.info(probe, launch);
  const bool cuda = rt.backend() == grma::backend_kind::cuda;
  const int m = info.rank_count * o.rows;
  const bool lead = info.process_index == 0;
#if defined(__CUDACC__)
  // The baseline copies halos between this process's GPUs, and through MPI
  // between processes when built with it. grma numbers world ranks process
  // by process, so the processes' rows follow their index.
  const bool baseline = o.baseline && cuda && (info.process_count == 1 || apps::with_mpi);
  const int devices_here = info.rank_responsible / info.ranks_per_device;
  const int process_above = info.process_index - 1;
  const int process_below = info.process_index + 1 < info.process_count ? info.process_index + 1 : -1;
#endif
  // Each device holds 5 fields (x 2 data sets) of its ranks' bands.
  const int widest = *std::max_element(o.widths.begin(), o.widths.end());
  const std::uint64_t heap_needed =
      2 * hd::field_count * hd::band_elements(info.ranks_per_device * o.rows, widest) * sizeof(double) +
      (std::uint64_t(1) << 20);
  if (rt.settings().heap_size < heap_needed)
    line.usage("width " + std::to_string(widest) + " needs a heap of " +
               std::to_string(heap_needed >> 20) + " MiB per device: set GRMA_HEAP_SIZE=" +
               std::to_string((heap_needed >> 20) + 1) + "M");
  if (lead) {
    std::printf("horizontal diffusion: %s backend, %d device%s, %d ranks per device x %d threads, "
                "%d rows per rank (grid %d x width), %d iterations; times: median of %d runs\n",
                cuda ? "cuda" : "cpu", info.device_count * info.node_count,
                info.device_count * info.node_count == 1 ? "" : "s", info.ranks_per_device, info.threads_per_rank,
                o.rows, m, o.iterations, o.repeats);
    std::printf("%8s %10s %14s %18s %14s %12s %12s\n", "width", "variant", "grma [us/it]",
                "baseline [us/it]", "baseline/grma", "grma error", "base error");
  }
  std::FILE* json = lead ? std::fopen(o.json.c_str(), "w") : nullptr;
  if (lead && json == nullptr) line.usage("cannot write " + o.json);
  if (json)
    std::fprintf(json,
                 "{\n  \"backend\": \"%s\",\n  \"devices\": %d,\n  \"nodes\": %d,\n  \"processes\": %d,\n  "
                 "\"ranks\": %d,\n  \"ranks_per_device\": %d,\n  \"threads_per_rank\": %d,\n  "
                 "\"rows_per_rank\": %d,\n  \"iterations\": %d,\n  \"results\": [\n",
                 cuda ? "cuda" : "cpu", info.device_count * info.node_count, info.node_count,
                 info.process_count, info.rank_count,
                 info.ranks_per_device, info.threads_per_rank, o.rows, o.iterations);
  bool all_good = true, first = true;
  for (const int n : o.widths) {
    for (const hd::variant v : o.variants) {
      const int sets = hd::data_sets(v);
      const bool checked = o.check_iterations > 0 && v != hd::variant::compute;
      // Timed runs of grma and the baseline, taking turns so that both see
      // the machine alike; each figure is their median (the first run's
      // warm-up and a disturbed run do not decide it).
#if defined(__CUDACC__)
      const bool with_baseline = baseline && v != hd::variant::compute;
      const hd::baseline_job job{v, devices_here, info.ranks_per_device, info.threads_per_rank,
                                 o.rows, n, o.iterations, info.rank_start * o.rows,
                                 process_above, process_below};
#endif
      std::vector<double> grma_runs, base_runs;
      for (int k = 0; k < o.repeats; ++k) {
        hd::result_header header{};
        grma::launch_options timed = launch;
        timed.userdata = &header;
        timed.userdata_size = sizeof header;
        rt.run(hd::grma_program{v, o.rows, n, o.iterations, false}, timed);
        grma_runs.push_back(header.seconds / o.iterations * 1e6);
#if defined(__CUDACC__)
        if (with_baseline) base_runs.push_back(hd::run_baseline(job, nullptr) / o.iterations * 1e6);
#endif
      }
      const double grma_us = median(grma_runs), base_us = median(base_runs);
      double grma_error = NAN, base_error = NAN;
      if (checked) {
        std::vector<double> area(sizeof(hd::result_header) / sizeof(double) +
                                 std::size_t(sets) * std::size_t(m) * std::size_t(n));
        grma::launch_options checking = launch;
        checking.userdata = area.data();
        checking.userdata_size = area.size() * sizeof(double);
        rt.run(hd::grma_program{v, o.rows, n, o.check_iterations, true}, checking);
        area.erase(area.begin(), area.begin() + sizeof(hd::result_header) / sizeof(double));
        grma_error = check_against_reference(area, sets, m, n, info.rank_start * o.rows,
                                             info.rank_responsible * o.rows, o.check_iterations);
        all_good = all_good && grma_error <= tolerance;
      }
#if defined(__CUDACC__)
      if (with_baseline && checked) {
        std::vector<double> mine;  // this process's rows of each set, placed in the grids
        hd::baseline_job check_job = job;
        check_job.iterations = o.check_iterations;
        hd::run_baseline(check_job, &mine);
        const std::size_t grid = std::size_t(m) * std::size_t(n), part = mine.size() / std::size_t(sets);
        std::vector<double> grids(std::size_t(sets) * grid);
        for (int s = 0; s < sets; ++s)
          std::copy_n(mine.begin() + std::ptrdiff_t(std::size_t(s) * part), part,
                      grids.begin() + std::ptrdiff_t(std::size_t(s) * grid +
                                                     std::size_t(job.first_row) * std::size_t(n)));
        base_error = check_against_reference(grids, sets, m, n, job.first_row,
                                             info.rank_responsible * o.rows, o.check_iterations);
        all_good = all_good && base_error <= tolerance;
      }
#endif
      if (!lead) continue;
      // The compute variant moves 9 band buffers of rows-2 rows per rank and
      // iteration (lap, fli, flj: read one, write one; out: read two, write one).
      const double memory_gbs = 9.0 * 8.0 * (o.rows - 2) * double(n) * info.ranks_per_device /
                                (grma_us * 1e-6) / 1e9;
      std::printf("%8d %10s %14s %18s %14s %12s %12s%s\n", n, name_of(v), format(grma_us, "%.2f").c_str(),
                  format(base_us, "%.2f").c_str(), format(base_us / grma_us, "%.2f").c_str(),
                  format(grma_error, "%.1e").c_str(), format(base_error, "%.1e").c_str(),
                  grma_error > tolerance || base_error > tolerance ? "  WRONG" : "");
      if (v == hd::variant::compute)
        std::printf("%8s %10s memory bandwidth per device %.1f GB/s\n", "", "", memory_gbs);
      std::fprintf(json,
                   "%s    {\"width\": %d, \"variant\": \"%s\", \"grma_us\": %s, \"baseline_us\": %s, "
                   "\"grma_us_runs\": %s, \"baseline_us_runs\": %s, "
                   "\"grma_error\": %s, \"baseline_error\": %s%s}",
                   first ? "" : ",\n", n, name_of(v), format(grma_us, "%.6g", "null").c_str(),
                   format(base_us, "%.6g", "null").c_str(), json_list(grma_runs).c_str(),
                   json_list(base_runs).c_str(),
                   format(grma_error, "%.6g", "null").c_str(),
                   format(base_error, "%.6g", "null").c_str(),
                   v == hd::variant::compute
                       ? (", \"memory_gbs_per_device\": " + format(memory_gbs, "%.6g", "null")).c_str()
                       : "");
      first = false;
    }
  }
  if (json) {
    std::fprintf(json, "\n  ]\n}\n");
    line.close_written(json, o.json);
    std::printf("JSON: %s\n", o.json.c_str());
  }
  if (!all_good) {
    std::fprintf(stderr, "grma-hd: process %d: a result differs from the serial reference\n",
                 info.process_index);
    return 1;
  }
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "grma-hd: %s\n", e.what());
  return 1;
}
