// grma-spts: sync-free sparse triangular solve (papers/001 §6.4) with grma's
// OpenSHMEM layer in one persistent kernel, and on GPUs of one process the
// baselines (--no-baseline leaves them out): level-set (a kernel launch per
// level, one GPU) and host helper (sync-free kernels whose rows cross GPUs
// through helper threads); each solution checked against serial forward
// substitution. Matrices: a Matrix Market file, or generated
// (the lower triangle of a 2D or 3D Laplacian, or a random matrix with one
// dependency chain through all its rows). Prints a table and writes JSON.
//
//   grma-spts [--matrix FILE] [--generate laplace2d:NX[xNY],laplace3d:N,chain:N[:EXTRA],...]
//             [--repeats K] [--threads T] [--no-baseline] [--json FILE]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <grma/grma.hpp>
#include <string>
#include <utility>
#include <vector>

#include "../app_support.hpp"
#include "matrix.hpp"
#include "spts_grma.hpp"
#if defined(__CUDACC__)
#include "baseline.hpp"
#endif

namespace {

using apps::median;
using apps::shown;

struct options {
  std::vector<std::string> matrices{"laplace2d:512", "laplace3d:48", "chain:20000:4"};
  int repeats = 3;
  int threads = 0;
  bool baseline = true;
  std::string json = "spts.json";
};

options parse(apps::command_line& line) {
  options o;
  bool chosen = false;
  while (line.next()) {
    const std::string a = line.option();
    if (a == "--matrix" || a == "--generate") {
      if (!chosen) o.matrices.clear();
      chosen = true;
      if (a == "--matrix")
        o.matrices.push_back("file:" + line.value());
      else
        for (const std::string& item : line.items()) o.matrices.push_back(item);
    } else if (a == "--repeats") {
      o.repeats = int(line.number(1, 1000));
    } else if (a == "--threads") {
      o.threads = int(line.number(0, 1024));
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

// The matrix a name gives: file:PATH, laplace2d:NX[xNY], laplace3d:N, chain:N[:EXTRA].
spts::csr make(const std::string& name, const apps::command_line& line) {
  const std::size_t colon = name.find(':');
  if (colon == std::string::npos)
    line.usage("a matrix is file:PATH, laplace2d:NX[xNY], laplace3d:N or chain:N[:EXTRA]");
  const std::string kind = name.substr(0, colon), arguments = name.substr(colon + 1);
  if (kind == "file") return spts::read_matrix_market(arguments);
  // Rows are ints: a grid of at most 2^30 cells.
  constexpr long long most_rows = 1LL << 30;
  constexpr int most = 1 << 24;  // a side, a count
  if (kind == "laplace2d") {
    const std::size_t x = arguments.find('x');
    const int nx = int(line.number(arguments.substr(0, x), "laplace2d's NX", 1, most));
    const int ny = x == std::string::npos
                       ? nx
                       : int(line.number(arguments.substr(x + 1), "laplace2d's NY", 1, most));
    if ((long long)nx * ny > most_rows) line.usage("laplace2d: at most 2^30 cells");
    return spts::laplacian_2d(nx, ny);
  }
  if (kind == "laplace3d") {
    const int n = int(line.number(arguments, "laplace3d's N", 1, most));
    if ((long long)n * n * n > most_rows) line.usage("laplace3d: at most 2^30 cells");
    return spts::laplacian_3d(n);
  }
  if (kind == "chain") {
    const std::size_t c = arguments.find(':');
    const int n = int(line.number(arguments.substr(0, c), "chain's N", 1, most));
    return spts::random_chain(n,
                              c == std::string::npos ? 4
                                                     : int(line.number(arguments.substr(c + 1),
                                                                       "chain's EXTRA", 1, most)),
                              47);
  }
  line.usage("unknown matrix '" + name + "'");
}

// What the PEs read and write in userdata: the program (with its offsets)
// and the bytes. Each PE's inbox slots are numbered in the order its rows
// first need another PE's row.
struct layout {
  spts::grma_program program{};
  std::vector<std::uint64_t> words;  // 8-byte aligned userdata
};

layout plan(const spts::csr& m, const std::vector<double>& b, int pes) {
  const std::int64_t n = m.n, nonzeros = m.nonzeros();
  std::vector<std::int64_t> where(std::size_t(nonzeros), 0);
  // Per row, the PEs (and their inbox slots) that need its x, each with the
  // place in `order` of its first row that reads it.
  std::vector<std::vector<std::pair<std::int64_t, std::uint64_t>>> sends(
      static_cast<std::size_t>(n));
  std::vector<std::int64_t> slot_of(std::size_t(n), -1);
  // The rows level by level; the k-th is PE k mod pes's, its row k / pes.
  std::vector<std::int64_t> order, place(static_cast<std::size_t>(n));
  for (const std::vector<int>& level : spts::levels(m))
    order.insert(order.end(), level.begin(), level.end());
  for (std::int64_t k = 0; k < n; ++k) place[std::size_t(order[std::size_t(k)])] = k;
  const std::int64_t max_rows = (n + pes - 1) / pes;
  std::int64_t max_slots = 1;
  for (int p = 0; p < pes; ++p) {
    std::vector<std::int64_t> taken;
    for (std::int64_t at = p; at < n; at += pes) {
      const std::int64_t i = order[std::size_t(at)];
      for (std::int64_t k = m.row_start[std::size_t(i)]; k + 1 < m.row_start[std::size_t(i) + 1];
           ++k) {
        const int j = m.col[std::size_t(k)];
        if (place[std::size_t(j)] % pes == p) {
          where[std::size_t(k)] = place[std::size_t(j)] / pes;
          continue;
        }
        if (slot_of[std::size_t(j)] < 0) {
          slot_of[std::size_t(j)] = std::int64_t(taken.size());
          sends[std::size_t(j)].push_back(
              {at, std::uint64_t(p) << 32 | std::uint64_t(taken.size())});
          taken.push_back(j);
        }
        where[std::size_t(k)] = -slot_of[std::size_t(j)] - 1;
      }
    }
    max_slots = std::max<std::int64_t>(max_slots, std::int64_t(taken.size()));
    for (const std::int64_t j : taken) slot_of[std::size_t(j)] = -1;
  }
  std::vector<std::int64_t> send_start(std::size_t(n) + 1, 0);
  std::vector<std::uint64_t> to;
  for (std::int64_t i = 0; i < n; ++i) {
    // The PE whose row comes first is sent to first: on a chain that row is
    // the next link, and each send before it would lengthen the chain.
    auto& s = sends[std::size_t(i)];
    std::sort(s.begin(), s.end());
    for (const auto& [first_reader, slot] : s) to.push_back(slot);
    send_start[std::size_t(i) + 1] = std::int64_t(to.size());
  }
  layout l;
  spts::grma_program& g = l.program;
  g.n = n;
  g.max_rows = max_rows;
  g.max_slots = max_slots;
  auto append = [&](const void* data, std::size_t bytes) {
    const std::uint64_t at = l.words.size() * 8;
    l.words.resize(l.words.size() + (bytes + 7) / 8, 0);
    if (data != nullptr && bytes != 0)
      std::memcpy(reinterpret_cast<unsigned char*>(l.words.data()) + at, data, bytes);
    return at;
  };
  spts::grma_program::header head{};
  append(&head, sizeof head);
  g.order = append(order.data(), order.size() * 8);
  g.row_start = append(m.row_start.data(), m.row_start.size() * 8);
  g.where = append(where.data(), where.size() * 8);
  g.value = append(m.value.data(), m.value.size() * 8);
  g.b = append(b.data(), b.size() * 8);
  g.consumer_start = append(send_start.data(), send_start.size() * 8);
  g.consumers = append(to.data(), to.size() * 8);
  g.x = append(nullptr, std::size_t(n) * 8);
  return l;
}

// The largest difference from the reference of the rows of PEs [first,
// first + count) (row order[k] is PE k mod pes's), relative to the
// reference's size (at least 1); NaN counts as infinitely different.
double error_of(const double* x, const std::vector<double>& expected, const std::int64_t* order,
                int pes, int first, int count) {
  double worst = 0;
  for (std::int64_t k = 0; k < std::int64_t(expected.size()); ++k) {
    if (int(k % pes) < first || int(k % pes) >= first + count) continue;
    const std::size_t i = std::size_t(order[k]);
    const double e = std::fabs(x[i] - expected[i]) / std::max(1.0, std::fabs(expected[i]));
    worst = std::isnan(e) ? INFINITY : std::max(worst, e);
  }
  return worst;
}

// The solvers add each row's products in the same order as the reference;
// a GPU may fuse a product and its addition, so not bit for bit.
constexpr double tolerance = 1e-10;

}  // namespace

int main(int argc, char** argv) try {
  grma::settings s = grma::settings::from_environment(&argc, argv);
  apps::command_line line(
      "grma-spts",
      "[--matrix FILE] [--generate laplace2d:NX[xNY],laplace3d:N,chain:N[:EXTRA],...] "
      "[--repeats K] [--threads T] [--no-baseline] [--json FILE]",
      argc, argv);
  const options o = parse(line);
  const grma::launch_options launch{.threads_per_rank = o.threads};
  // How many PEs the job has decides each PE's rows and inbox, and those
  // how much symmetric memory a PE needs: a probe asks, then the runtime
  // has room for the largest matrix.
  grma::rank_info info;
  {
    grma::runtime probe(s);
    info = probe.info(spts::grma_program{}, launch);
  }
  struct problem {
    spts::csr m;
    layout l;
  };
  std::vector<problem> problems;
  std::uint64_t slice = 0;
  for (const std::string& name : o.matrices) {
    spts::csr m = make(name, line);
    layout l = plan(m, spts::right_hand_side(m.n), info.rank_count);
    // The block, the teams' workspaces (16 KiB) and room for the allocator.
    slice = std::max<std::uint64_t>(
        slice, std::uint64_t(l.program.max_rows + l.program.max_slots) * 8 + (64 << 10));
    problems.push_back({std::move(m), std::move(l)});
  }
  slice = (slice + 4095) / 4096 * 4096;
  s.symmetric_size =
      std::max<std::uint64_t>(s.symmetric_size, slice * std::uint64_t(info.ranks_per_device));
  grma::runtime rt(s);
  const bool cuda = rt.backend() == grma::backend_kind::cuda, lead = info.process_index == 0;
  const int pes = info.rank_count;
#if defined(__CUDACC__)
  // The baselines run in one process: the level-set on its first GPU, the
  // host helper on all of its GPUs with grma's deal of rows.
  const bool baselines = o.baseline && cuda && info.process_count == 1;
#endif
  if (lead) {
    std::printf(
        "sparse triangular solve: %s backend, %d PEs x %d threads on %d GPU(s); times: median of "
        "%d runs%s\n",
        cuda ? "cuda" : "cpu", pes, info.threads_per_rank, cuda ? info.device_count : 0, o.repeats,
        cuda ? "; level-set on one GPU, host helper on as many as grma" : "");
    std::printf("%-22s %9s %10s %7s %10s %10s %11s %10s %11s %10s\n", "matrix", "rows", "nonzeros",
                "levels", "grma [us]", "level-set", "level/grma", "helper", "helper/grma",
                "worst err");
  }
  std::FILE* json = lead ? std::fopen(o.json.c_str(), "w") : nullptr;
  if (lead && json == nullptr) line.usage("cannot write " + o.json);
  if (json)
    std::fprintf(json,
                 "{\n  \"backend\": \"%s\",\n  \"pes\": %d,\n  \"threads_per_pe\": %d,\n  "
                 "\"devices\": %d,\n  \"results\": [\n",
                 cuda ? "cuda" : "cpu", pes, info.threads_per_rank, cuda ? info.device_count : 0);
  bool all_good = true;
  for (std::size_t at = 0; at < o.matrices.size(); ++at) {
    const spts::csr& m = problems[at].m;
    layout& l = problems[at].l;
    const std::vector<double> b = spts::right_hand_side(m.n), expected = spts::solve_serial(m, b);
    if (!std::all_of(expected.begin(), expected.end(), [](double v) { return std::isfinite(v); }))
      line.usage(o.matrices[at] +
                 ": the serial solution is not finite (the system overflows a "
                 "double), so no solve can be checked against it");
    const std::size_t depth = spts::levels(m).size();
    grma::launch_options run = launch;
    run.userdata = l.words.data();
    run.userdata_size = l.words.size() * 8;
    // Each solver's times (us) and its largest error over the runs (NaN: not run).
    struct solver {
      std::vector<double> runs;
      double error = NAN;
      void add(double us, double e) {
        runs.push_back(us);
        error = std::isnan(error) ? e : std::max(error, e);
      }
    } grma_solve, level_set, helper;
    auto* x =
        reinterpret_cast<double*>(reinterpret_cast<unsigned char*>(l.words.data()) + l.program.x);
    const auto* order = reinterpret_cast<const std::int64_t*>(
        reinterpret_cast<unsigned char*>(l.words.data()) + l.program.order);
    for (int k = 0; k < o.repeats; ++k) {
      std::fill_n(x, m.n, NAN);  // each run's solution is its own
      rt.run(l.program, run);
      // This process's PEs' rows: their solution is in its userdata.
      grma_solve.add(
          reinterpret_cast<const spts::grma_program::header*>(l.words.data())->seconds * 1e6,
          error_of(x, expected, order, pes, info.rank_start, info.rank_responsible));
#if defined(__CUDACC__)
      if (baselines) {
        std::vector<double> base_x;
        const double level_set_us = spts::run_level_set(m, b, info.threads_per_rank, base_x) * 1e6;
        level_set.add(level_set_us, error_of(base_x.data(), expected, order, pes, 0, pes));
        const double helper_us =
            spts::run_host_helper(m, b, info.device_count, info.ranks_per_device,
                                  info.threads_per_rank, base_x) *
            1e6;
        helper.add(helper_us, error_of(base_x.data(), expected, order, pes, 0, pes));
      }
#endif
    }
    const double worst =
        std::max({grma_solve.error, std::isnan(level_set.error) ? 0 : level_set.error,
                  std::isnan(helper.error) ? 0 : helper.error});
    all_good = all_good && worst <= tolerance;
    const double grma_us = median(grma_solve.runs), level_us = median(level_set.runs),
                 helper_us = median(helper.runs);
    if (lead)
      std::printf("%-22s %9d %10lld %7zu %10s %10s %11s %10s %11s %10s\n", o.matrices[at].c_str(),
                  m.n, (long long)m.nonzeros(), depth, shown(grma_us, "%.1f").c_str(),
                  shown(level_us, "%.1f").c_str(), shown(level_us / grma_us, "%.2f").c_str(),
                  shown(helper_us, "%.1f").c_str(), shown(helper_us / grma_us, "%.2f").c_str(),
                  shown(worst, "%.1e").c_str());
    if (json) {
      auto figure = [](double v) { return std::isnan(v) ? std::string("null") : shown(v, "%.6g"); };
      std::fprintf(json,
                   "    {\"matrix\": \"%s\", \"rows\": %d, \"nonzeros\": %lld, \"levels\": %zu, "
                   "\"grma_us\": %s, \"level_set_us\": %s, \"host_helper_us\": %s, "
                   "\"grma_error\": %s, \"level_set_error\": %s, \"host_helper_error\": %s}%s\n",
                   o.matrices[at].c_str(), m.n, (long long)m.nonzeros(), depth,
                   figure(grma_us).c_str(), figure(level_us).c_str(), figure(helper_us).c_str(),
                   figure(grma_solve.error).c_str(), figure(level_set.error).c_str(),
                   figure(helper.error).c_str(), at + 1 < o.matrices.size() ? "," : "");
    }
  }
  if (json) {
    std::fprintf(json, "  ]\n}\n");
    line.close_written(json, o.json);
  }
  if (!all_good) std::fprintf(stderr, "grma-spts: a solution differs from the serial reference\n");
  return all_good ? 0 : 1;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "grma-spts: %s\n", e.what());
  return 1;
}
