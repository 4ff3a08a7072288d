#include "nvshmem_run.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "nvshmem_pes.hpp"

namespace bench {
namespace {

// Both PEs together may take this long (they measure for seconds at most).
constexpr int seconds_allowed = 300;

std::string join(const std::vector<std::size_t>& sizes) {
  std::string out;
  for (std::size_t b : sizes) {
    if (!out.empty()) out += ',';
    out += std::to_string(b);
  }
  return out;
}

}  // namespace

nvshmem_figures run_nvshmem(const nvshmem_request& r) {
  nvshmem_pes run(2, seconds_allowed);
  const std::string figures = run.file("figures");
  for (int pe = 0; pe < 2; ++pe)
    run.start(
        pe, {GRMA_BENCH_NVSHMEM_PROGRAM, "--out", figures, "--latency", join(r.latency_sizes),
             "--bandwidth", join(r.bandwidth_sizes), "--blocks", std::to_string(r.blocks),
             "--all-up-to", std::to_string(r.all_up_to), "--threads", std::to_string(r.threads),
             "--latency-iterations", std::to_string(r.latency_iterations), "--bandwidth-iterations",
             std::to_string(r.bandwidth_iterations), "--adds", std::to_string(r.adds_per_thread)});
  const std::string failure = run.wait();
  if (!failure.empty()) throw std::runtime_error("NVSHMEM: " + failure);

  nvshmem_figures out;
  std::ifstream in(figures);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string what;
    std::size_t bytes = 0;
    fields >> what;
    if (what == "int_p_us") {
      fields >> out.int_p_us;
    } else if (what == "fetch_add_us") {
      fields >> out.fetch_add_us;
    } else if (what == "add_rate_per_s") {
      fields >> out.add_rate_per_s;
    } else if (what == "barrier_us") {
      fields >> out.barrier_us;
    } else if (what == "allreduce_8b_us") {
      fields >> out.allreduce_8b_us;
    } else if (what == "latency") {
      fields >> bytes >> out.signal_us[bytes];
    } else if (what == "bandwidth") {
      std::string one, all;  // "nan" where not measured, which >> into a double refuses
      fields >> bytes >> one >> all;
      out.one_block_gbs[bytes] = std::strtod(one.c_str(), nullptr);
      out.blocks_gbs[bytes] = std::strtod(all.c_str(), nullptr);
    }
  }
  if (std::isnan(out.int_p_us)) throw std::runtime_error("NVSHMEM: no figures from PE 0" + run.output());
  return out;
}

}  // namespace bench
