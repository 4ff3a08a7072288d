// The host side: start grma, ask what the job looks like, run rank programs.
#pragma once

#include <functional>
#include <memory>

#include "grma/rank.hpp"
#include "grma/settings.hpp"
#include "grma/types.hpp"
#include "grma/detail/cpu_platform.hpp"

namespace grma {

// The rank type the CPU backend passes to rank programs.
using cpu_rank = basic_rank<detail::cpu_platform>;

class runtime {
 public:
  // Settings from GRMA_* variables and --grma-* arguments (removed from argv).
  runtime(int& argc, char** argv);
  explicit runtime(const settings& s = settings::from_environment());
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  const grma::settings& settings() const;
  backend_kind backend() const;

  // The layout a run with these options would have (papers/000 Listing 2.1).
  rank_info info(const launch_options& options = {}) const;

  // Runs `program(rank)` on every rank of this process and returns when all
  // have finished. Throws grma::error when a rank fails or the watchdog ends
  // the run; userdata is copied back only after a successful run.
  template <class Program>
  void run(Program&& program, const launch_options& options = {}) {
    run_cpu(options, [&program](cpu_rank& r) { program(r); });
  }

 private:
  void run_cpu(const launch_options& options, const std::function<void(cpu_rank&)>& body);

  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace grma
