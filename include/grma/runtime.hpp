// The host side: start grma, ask what the job looks like, run rank programs.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>

#include "grma/rank.hpp"
#include "grma/settings.hpp"
#include "grma/topology.hpp"
#include "grma/types.hpp"
#include "grma/detail/cpu_platform.hpp"
#include "grma/detail/cuda_kernel.hpp"

#if defined(__CUDACC__)
#include "grma/detail/cuda_launch.hpp"
#endif

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

  // Where rank programs compiled with nvcc run: cuda when GRMA_BACKEND says
  // so, or by default when grma has the CUDA backend and a GPU is visible;
  // else cpu. A program compiled without nvcc runs on the CPU (and is an error
  // when GRMA_BACKEND=cuda).
  backend_kind backend() const;

  // The devices a run uses (GRMA_DEVICES) and the path between each pair.
  grma::topology topology() const;

  // The layout a run of `program` with these options would have (papers/000
  // Listing 2.1). On a GPU the rank count depends on the program's kernel.
  // In a job of several processes the first call is collective (the
  // processes tell each other their nodes): call it on every process.
  template <class Program>
  rank_info info(const Program& program, const launch_options& options = {}) const {
#if defined(__CUDACC__)
    if (backend() == backend_kind::cuda)
      return info_cuda(detail::cuda_kernel_for<std::remove_cvref_t<Program>>(program), options);
#else
    (void)program;
#endif
    require_cpu_allowed();
    return info_cpu(options);
  }

  // Runs `program(rank)` on every rank of this process and returns when all
  // have finished. Throws grma::error when a rank fails or the watchdog ends
  // the run; userdata is copied back only after a successful run.
  template <class Program>
  void run(Program&& program, const launch_options& options = {}) {
#if defined(__CUDACC__)
    if (backend() == backend_kind::cuda) {
      run_cuda(options, detail::cuda_kernel_for<std::remove_cvref_t<Program>>(program));
      return;
    }
#endif
    require_cpu_allowed();
    run_cpu(options, [&program](cpu_rank& r) { program(r); });
  }

 private:
  void require_cpu_allowed() const;
  rank_info info_cpu(const launch_options& options) const;
  rank_info info_cuda(const detail::cuda_kernel& kernel, const launch_options& options) const;
  void run_cpu(const launch_options& options, const std::function<void(cpu_rank&)>& body);
  void run_cuda(const launch_options& options, const detail::cuda_kernel& kernel);

  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace grma
