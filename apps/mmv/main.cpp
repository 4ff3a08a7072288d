// grma-mmv: the streaming multi-matrix-vector product (papers/002 §7,
// Table 3) with grma's GASPI layer in one persistent kernel, and on GPUs
// the kernel-boundary baseline (across processes through MPI); throughput in millions of vector
// products per second against the batch size (all pairs' vectors of one batch), each result checked
// against the matrix times its vector. The job's ranks form `pairs` producer-worker pairs
// (producers first: on a job of two devices, producers on one and workers on the other). Prints a
// table and writes JSON.
//
//   grma-mmv [--batches-kb 60,120,...] [--pairs P] [--vectors N] [--repeats K]
//            [--threads T] [--no-check] [--no-baseline] [--json FILE]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <grma/grma.hpp>
#include <string>
#include <vector>

#include "../app_support.hpp"
#include "mmv.hpp"
#include "mmv_grma.hpp"
#if defined(__CUDACC__)
#include "../cuda_support.hpp"
#include "../mpi_support.hpp"
#include "baseline.hpp"
#endif

namespace {

using apps::median;
using apps::shown;

struct options {
  std::vector<int> batches_kb{60, 120, 240, 480, 960, 1920};  // papers/002 Table 3
  int pairs = 30;                                             // the paper's 30 blocks
  long long vectors = 1 << 22;  // per figure: batches enough for about this many
  int repeats = 3;
  int threads = 0;  // per rank; 0: 1024 on a GPU, as the paper's
  bool check = true;
  bool baseline = true;
  std::string json = "mmv.json";
};

options parse(apps::command_line& line) {
  options o;
  while (line.next()) {
    const std::string a = line.option();
    if (a == "--batches-kb") {
      o.batches_kb = line.numbers("a batch size", 1, 1 << 20);
    } else if (a == "--pairs") {
      o.pairs = int(line.number(1, 1 << 16));
    } else if (a == "--vectors") {
      o.vectors = line.number(1, (1ll << 31) - 1);  // batches count in an int
    } else if (a == "--repeats") {
      o.repeats = int(line.number(1, 1000));
    } else if (a == "--threads") {
      o.threads = int(line.number(0, 1024));
    } else if (a == "--no-check") {
      o.check = false;
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

// Vectors of one pair in a batch of `kb` KiB over all pairs (at least one).
int vectors_per_pair(int kb, int pairs) {
  return std::max(1, int(std::int64_t(kb) * 1024 / std::int64_t(mmv::vector_bytes) / pairs));
}

}  // namespace

int main(int argc, char** argv) try {
  grma::settings s = grma::settings::from_environment(&argc, argv);
  apps::command_line line("grma-mmv",
                          "[--batches-kb K,K,...] [--pairs P] [--vectors N] [--repeats K] "
                          "[--threads T] [--no-check] [--no-baseline] [--json FILE]",
                          argc, argv);
  const options o = parse(line);
  grma::launch_options launch{.threads_per_rank = o.threads};
  grma::rank_info info;
  {
    grma::runtime probe(s);
    if (probe.backend() == grma::backend_kind::cuda && o.threads == 0)
      launch.threads_per_rank = 1024;
    info = probe.info(mmv::grma_program{}, launch);
  }
  const int devices = info.device_count * info.node_count;
  launch.ranks_per_device = (2 * o.pairs + devices - 1) / devices;
  std::size_t largest = 0;
  for (const int kb : o.batches_kb)
    largest = std::max(largest, std::size_t(vectors_per_pair(kb, o.pairs)) * mmv::vector_bytes);
  // A rank's segment (four buffers and the notification slots), the GASPI
  // layer's state, the teams' workspaces and room for the allocator.
  const std::uint64_t slice = (4 * largest + (256 << 10) + 4095) / 4096 * 4096;
  s.symmetric_size =
      std::max<std::uint64_t>(s.symmetric_size, slice * std::uint64_t(launch.ranks_per_device));
  grma::runtime rt(s);
  info = rt.info(mmv::grma_program{}, launch);
  const bool cuda = rt.backend() == grma::backend_kind::cuda, lead = info.process_index == 0;
  if (cuda && (info.threads_per_rank % mmv::n != 0))
    line.usage("on a GPU a rank's threads are whole warps (--threads a multiple of 32)");
  if (info.rank_count < 2 * o.pairs)
    line.usage("the job has " + std::to_string(info.rank_count) + " ranks, fewer than 2 x " +
               std::to_string(o.pairs) + " pairs");
#if defined(__CUDACC__)
  // The baseline's producers and workers where grma's are: on this
  // process's one or two GPUs, or in two processes of one GPU each (the
  // producers in the first), through MPI when built with it.
  const bool across = info.process_count == 2 && info.rank_responsible / info.ranks_per_device == 1;
  const bool baseline =
      o.baseline && cuda && devices <= 2 && (info.process_count == 1 || (across && apps::with_mpi));
  mmv::baseline_job base{o.pairs, 0, 0, info.threads_per_rank};
  if (baseline) {
    apps::check_cuda(cudaGetDevice(&base.producer_device), "cudaGetDevice");
    base.worker_device = base.producer_device + (across ? 0 : devices - 1);
    if (across) {
      base.partner_process = 1 - info.process_index;
      base.producers_here = info.process_index == 0;
    }
  }
#endif
  if (lead) {
    std::printf(
        "mmv: %s backend, %d device%s, %d pairs of ranks x %d threads, about %lld vectors per "
        "figure; "
        "throughput [million vectors/s]: median of %d runs\n",
        cuda ? "cuda" : "cpu", devices, devices == 1 ? "" : "s", o.pairs, info.threads_per_rank,
        o.vectors, o.repeats);
    std::printf("%10s %12s %9s %12s %12s %14s %8s %8s\n", "batch [KB]", "vectors/pair", "batches",
                "grma [M/s]", "baseline [M/s]", "grma/baseline", "grma ok", "base ok");
  }
  std::FILE* json = lead ? std::fopen(o.json.c_str(), "w") : nullptr;
  if (lead && json == nullptr) line.usage("cannot write " + o.json);
  if (json)
    std::fprintf(
        json,
        "{\n  \"backend\": \"%s\",\n  \"devices\": %d,\n  \"nodes\": %d,\n  \"processes\": %d,\n"
        "  \"pairs\": %d,\n  \"threads_per_rank\": %d,\n  \"results\": [\n",
        cuda ? "cuda" : "cpu", devices, info.node_count, info.process_count, o.pairs,
        info.threads_per_rank);
  bool all_good = true;
  std::vector<mmv::producer_record> records(std::size_t(o.pairs));
  grma::launch_options timed = launch;
  timed.userdata = records.data();
  timed.userdata_size = records.size() * sizeof(mmv::producer_record);
  for (std::size_t at = 0; at < o.batches_kb.size(); ++at) {
    const int kb = o.batches_kb[at], vectors = vectors_per_pair(kb, o.pairs);
    const int batches = int(std::max<long long>(4, o.vectors / (std::int64_t(vectors) * o.pairs)));
    const double products = double(vectors) * o.pairs * batches;
    std::vector<double> grma_runs, base_runs;
    bool grma_ok = true, base_ok = true;
    for (int k = 0; k < o.repeats; ++k) {
      std::fill(records.begin(), records.end(), mmv::producer_record{});
      rt.run(mmv::grma_program{o.pairs, vectors, batches, false}, timed);
      double slowest = 0;
      for (const auto& rec : records) slowest = std::max(slowest, rec.seconds);
      grma_runs.push_back(products / slowest / 1e6);
#if defined(__CUDACC__)
      if (baseline) {
        base.vectors = vectors;
        base.batches = batches;
        base_runs.push_back(products / mmv::run_baseline(base, nullptr) / 1e6);
      }
#endif
    }
    if (o.check) {  // a few batches, every product compared
      std::fill(records.begin(), records.end(), mmv::producer_record{});
      rt.run(mmv::grma_program{o.pairs, vectors, 5, true}, timed);
      for (int p = info.rank_start; p < std::min(o.pairs, info.rank_start + info.rank_responsible);
           ++p)
        grma_ok = grma_ok && records[std::size_t(p)].wrong == 0;
#if defined(__CUDACC__)
      if (baseline) {
        bool wrong = true;
        base.vectors = vectors;
        base.batches = 5;
        mmv::run_baseline(base, &wrong);
        base_ok = !wrong;
      }
#endif
      all_good = all_good && grma_ok && base_ok;
    }
    const double grma_rate = median(grma_runs), base_rate = median(base_runs);
    if (lead)
      std::printf("%10d %12d %9d %12s %12s %14s %8s %8s\n", kb, vectors, batches,
                  shown(grma_rate, "%.2f").c_str(), shown(base_rate, "%.2f").c_str(),
                  shown(grma_rate / base_rate, "%.2f").c_str(),
                  o.check ? (grma_ok ? "yes" : "NO") : "-",
                  o.check && !base_runs.empty() ? (base_ok ? "yes" : "NO") : "-");
    if (json) {
      auto figure = [](double v) { return std::isnan(v) ? std::string("null") : shown(v, "%.6g"); };
      std::fprintf(json,
                   "    {\"batch_kb\": %d, \"vectors_per_pair\": %d, \"batches\": %d, "
                   "\"grma_million_per_s\": %s, \"baseline_million_per_s\": %s, \"checked\": %s, "
                   "\"grma_ok\": %s, \"baseline_ok\": %s}%s\n",
                   kb, vectors, batches, figure(grma_rate).c_str(), figure(base_rate).c_str(),
                   o.check ? "true" : "false", grma_ok ? "true" : "false",
                   base_ok ? "true" : "false", at + 1 < o.batches_kb.size() ? "," : "");
    }
  }
  if (json) {
    std::fprintf(json, "  ]\n}\n");
    line.close_written(json, o.json);
  }
  if (!all_good)
    std::fprintf(stderr, "grma-mmv: a product differs from the matrix times its vector\n");
  return all_good ? 0 : 1;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "grma-mmv: %s\n", e.what());
  return 1;
}
