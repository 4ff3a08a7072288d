// The host side: start grma, ask what the job looks like, run rank programs.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

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

// A run started by runtime::launch: the calling thread goes on while the
// ranks run. wait() returns when every rank of this process has finished,
// and throws what run would have thrown; test() tells, without waiting,
// whether wait() would return at once. A job that is destroyed unfinished
// is waited for (its error, if wait() never saw it, is dropped).
//
// Host threads will issue one-sided operations into a running job through
// this handle (papers/003's host-initiated access: the network engine's
// intake takes them from a host ring next to the ranks' command rings);
// until then a job's memory is the ranks' alone while it runs.
// A job is waited for (or destroyed) before its runtime.
class job {
 public:
  job() = default;
  job(job&&) noexcept = default;
  job& operator=(job&& other) noexcept {
    if (this != &other) {
      finish();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  job(const job&) = delete;
  job& operator=(const job&) = delete;
  ~job() { finish(); }

  // Whether this handle holds a run (launched, not yet waited for).
  bool valid() const { return state_ != nullptr; }
  bool test() const { return state_ == nullptr || state_->finished.load(std::memory_order_acquire); }
  void wait() {
    if (state_ == nullptr) return;
    const std::shared_ptr<state> s = std::move(state_);
    s->thread.join();
    if (s->error) std::rethrow_exception(s->error);
  }

 private:
  friend class runtime;
  struct state {
    std::thread thread;
    std::atomic<bool> finished{false};
    std::exception_ptr error;
  };
  template <class Body>
  explicit job(Body&& body) : state_(std::make_shared<state>()) {
    state_->thread = std::thread([s = state_.get(), body = std::forward<Body>(body)]() mutable {
      try {
        body();
      } catch (...) {
        s->error = std::current_exception();
      }
      s->finished.store(true, std::memory_order_release);
    });
  }
  void finish() {
    if (state_ != nullptr && state_->thread.joinable()) state_->thread.join();
    state_.reset();
  }
  std::shared_ptr<state> state_;
};

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
  // A runtime runs one job at a time: run (or launch) while a launched job
  // has not been waited for is an error.
  template <class Program>
  void run(Program&& program, const launch_options& options = {}) {
    claim_run();
    const release_on_exit release{*this};
    run_claimed(program, options);
  }

  // run in a thread of its own: returns at once with the job's handle. The
  // program is copied; options.userdata must stay valid until wait() (the
  // ranks' results are copied back there).
  template <class Program>
  job launch(Program program, const launch_options& options = {}) {
    claim_run();  // refused here, in the caller's thread, while a job runs
    return job([this, program = std::move(program), options]() mutable {
      const release_on_exit release{*this};
      run_claimed(program, options);
    });
  }

 private:
  template <class Program>
  void run_claimed(Program& program, const launch_options& options) {
#if defined(__CUDACC__)
    if (backend() == backend_kind::cuda) {
      run_cuda(options, detail::cuda_kernel_for<std::remove_cvref_t<Program>>(program));
      return;
    }
#endif
    require_cpu_allowed();
    run_cpu(options, [&program](cpu_rank& r) { program(r); });
  }

  // Marks the runtime busy for a run; throws when it already is.
  void claim_run();
  void release_run();
  struct release_on_exit {
    runtime& rt;
    ~release_on_exit() { rt.release_run(); }
  };

  void require_cpu_allowed() const;
  rank_info info_cpu(const launch_options& options) const;
  rank_info info_cuda(const detail::cuda_kernel& kernel, const launch_options& options) const;
  void run_cpu(const launch_options& options, const std::function<void(cpu_rank&)>& body);
  void run_cuda(const launch_options& options, const detail::cuda_kernel& kernel);

  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace grma
