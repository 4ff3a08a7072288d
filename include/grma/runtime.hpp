// The host side: start grma, ask what the job looks like, run rank programs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "grma/detail/cpu_platform.hpp"
#include "grma/detail/cuda_kernel.hpp"
#include "grma/rank.hpp"
#include "grma/settings.hpp"
#include "grma/topology.hpp"
#include "grma/types.hpp"

#if defined(__CUDACC__)
#include "grma/detail/cuda_launch.hpp"
#endif

namespace grma {

namespace detail {
class host_port;
struct host_operation;
}  // namespace detail

// The rank type the CPU backend passes to rank programs.
using cpu_rank = basic_rank<detail::cpu_platform>;

// A one-sided operation a host thread issued into a running job (job::put,
// get, ...). Once complete, a put's source may be reused, a get's
// destination (an atomic's `old`) holds the answer, and the data, signal
// or notification is in place at the target. test() says whether it is
// complete; wait() waits for it, at most GRMA_TIMEOUT seconds
// (errc::timeout). Both throw grma::error, where() its call, when the
// operation failed: the job failed first (errc::aborted), or the target's
// engine refused it or its ranks returned without taking its notification
// (errc::request_refused). A default-constructed request is complete.
class host_request {
 public:
  host_request() = default;
  bool test() const;
  void wait() const;

 private:
  friend class job;
  host_request(std::shared_ptr<detail::host_port> port, std::shared_ptr<detail::host_operation> op)
      : port_(std::move(port)), op_(std::move(op)) {}
  std::shared_ptr<detail::host_port> port_;
  std::shared_ptr<detail::host_operation> op_;
};

// A run started by runtime::launch: the calling thread goes on while the
// ranks run. wait() returns when every rank of this process has finished,
// and throws what run would have thrown; test() tells, without waiting,
// whether wait() would return at once. A job that is destroyed unfinished
// is waited for (its error, if wait() never saw it, is dropped).
// A job is waited for (or destroyed) before its runtime.
//
// Host access (papers/003): in a job launched with
// launch_options::host_access, any host thread of any process may put
// into, get from and update any rank's range of a world window while the
// ranks run, with no part taken by the target's ranks: the network engine
// of the target's process serves it (on the node through its own access to
// the devices, from another node through the network). One process's host
// operations to one target take effect in the order issued, and each
// completes on its own. A host's notified put has host_source() as its
// source (a number after every world rank), which ranks name as
// rank::host_source(process) or match with any_source. Operations are
// taken while this process's ranks run; bad arguments throw grma::error
// at once, and an offset or signal beyond the target's registered range
// (which only the target's engine knows) fails that request alone with
// errc::request_refused, writing nothing of it.
// Host threads may call these concurrently, but not while one calls wait().
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

  // The world windows alive now, in the order they were created while none
  // has been freed (the order their table slots were taken in). Empty until
  // the ranks create one. Throws, as the operations below do, once this
  // process's ranks have returned (errc::invalid_config, "the job has
  // ended"; errc::aborted where the job failed).
  std::vector<window> world_windows() const;
  // The source a rank's matching sees in this process's host notifications.
  int host_source() const;

  // One-sided operations into `target`'s (a world rank's) range of world
  // window `w`, at byte `offset`. The buffers stay the caller's until the
  // request completes.
  host_request put(window w, int target, std::size_t offset, const void* source, std::size_t bytes);
  host_request get(window w, int target, std::size_t offset, void* destination, std::size_t bytes);
  host_request put_notify(window w, int target, std::size_t offset, const void* source,
                          std::size_t bytes, int tag, std::uint64_t immediate = 0);
  // Reads, then notifies the target (its envelope as put_notify's) once the
  // bytes are read: the target may change them after it matched.
  host_request get_notify(window w, int target, std::size_t offset, void* destination,
                          std::size_t bytes, int tag, std::uint64_t immediate = 0);
  host_request put_signal(window w, int target, std::size_t offset, const void* source,
                          std::size_t bytes, std::size_t signal_offset, std::uint64_t value,
                          signal_op op);
  // Atomics on the word of T at `offset`, aligned to its size, atomic with
  // the ranks' own atomics on it; the fetching ones write the word's old
  // value to `old`. T: an integer of 4 or 8 bytes (fetch, set and swap
  // also float and double). The word's type is std::uint64_t unless named
  // or taken from `old`, never from the value: atomic_add(w, t, o, 1) adds
  // to 8 bytes, atomic_add<std::uint32_t>(w, t, o, 1) to 4.
  template <class T = std::uint64_t>
  host_request atomic_fetch(window w, int target, std::size_t offset, T* old) {
    return atomic<T>(w, target, offset, call::atomic_fetch, T{}, T{}, old);
  }
  template <class T = std::uint64_t>
  host_request atomic_set(window w, int target, std::size_t offset, std::type_identity_t<T> value) {
    return atomic<T>(w, target, offset, call::atomic_set, value, T{}, nullptr);
  }
  template <class T = std::uint64_t>
  host_request atomic_swap(window w, int target, std::size_t offset, std::type_identity_t<T> value,
                           T* old) {
    return atomic<T>(w, target, offset, call::atomic_swap, value, T{}, old);
  }
  template <class T = std::uint64_t>
  host_request atomic_compare_swap(window w, int target, std::size_t offset,
                                   std::type_identity_t<T> compare, std::type_identity_t<T> value,
                                   T* old) {
    return integer_atomic<T>(w, target, offset, call::atomic_compare_swap, value, compare, old);
  }
  template <class T = std::uint64_t>
  host_request atomic_fetch_add(window w, int target, std::size_t offset,
                                std::type_identity_t<T> value, T* old) {
    return integer_atomic<T>(w, target, offset, call::atomic_fetch_add, value, T{}, old);
  }
  template <class T = std::uint64_t>
  host_request atomic_add(window w, int target, std::size_t offset, std::type_identity_t<T> value) {
    return integer_atomic<T>(w, target, offset, call::atomic_add, value, T{}, nullptr);
  }
  // Bitwise: the word becomes word & value (| value, ^ value).
  template <class T = std::uint64_t>
  host_request atomic_fetch_and(window w, int target, std::size_t offset,
                                std::type_identity_t<T> value, T* old) {
    return integer_atomic<T>(w, target, offset, call::atomic_fetch_and, value, T{}, old);
  }
  template <class T = std::uint64_t>
  host_request atomic_and(window w, int target, std::size_t offset, std::type_identity_t<T> value) {
    return integer_atomic<T>(w, target, offset, call::atomic_and, value, T{}, nullptr);
  }
  template <class T = std::uint64_t>
  host_request atomic_fetch_or(window w, int target, std::size_t offset,
                               std::type_identity_t<T> value, T* old) {
    return integer_atomic<T>(w, target, offset, call::atomic_fetch_or, value, T{}, old);
  }
  template <class T = std::uint64_t>
  host_request atomic_or(window w, int target, std::size_t offset, std::type_identity_t<T> value) {
    return integer_atomic<T>(w, target, offset, call::atomic_or, value, T{}, nullptr);
  }
  template <class T = std::uint64_t>
  host_request atomic_fetch_xor(window w, int target, std::size_t offset,
                                std::type_identity_t<T> value, T* old) {
    return integer_atomic<T>(w, target, offset, call::atomic_fetch_xor, value, T{}, old);
  }
  template <class T = std::uint64_t>
  host_request atomic_xor(window w, int target, std::size_t offset, std::type_identity_t<T> value) {
    return integer_atomic<T>(w, target, offset, call::atomic_xor, value, T{}, nullptr);
  }
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
    std::shared_ptr<detail::host_port> port;  // null without host_access
  };
  template <class Body>
  job(std::shared_ptr<detail::host_port> port, Body&& body) : state_(std::make_shared<state>()) {
    state_->port = std::move(port);
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
  // The job's port, for call `where` (named `name` where it is no grma::call).
  detail::host_port& port(call where, const char* name = nullptr) const;
  host_request submit(detail::host_port& port, std::shared_ptr<detail::host_operation> op);
  // Every atomic: `where` names the operation, `old` (a fetching one's)
  // takes the word's `bytes`, the operands their low `bytes`.
  host_request atomic(window w, int target, std::size_t offset, call where, std::uint64_t operand,
                      std::uint64_t compare, void* old, std::size_t bytes);
  template <class T>
  host_request atomic(window w, int target, std::size_t offset, call where, T operand, T compare,
                      T* old) {
    static_assert(
        (std::is_integral_v<T> || std::is_floating_point_v<T>)&&(sizeof(T) == 4 || sizeof(T) == 8),
        "a host atomic's word is an integer or floating point type of 4 or 8 bytes");
    return atomic(w, target, offset, where, bits_of(operand), bits_of(compare), old, sizeof(T));
  }
  template <class T>
  host_request integer_atomic(window w, int target, std::size_t offset, call where, T operand,
                              T compare, T* old) {
    static_assert(std::is_integral_v<T>,
                  "arithmetic, bitwise and compare_swap atomics take integers");
    return atomic<T>(w, target, offset, where, operand, compare, old);
  }
  template <class T>
  static std::uint64_t bits_of(T value) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof value);
    return bits;
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
  // the run; userdata is copied back only after a successful run. A CPU
  // rank's program may throw: its process rethrows that exception (where no
  // rank of it failed in grma before), and where it was the job's first
  // failure the other processes throw an error naming the rank and its what().
  // A runtime runs one job at a time: run (or launch) while a launched job
  // has not been waited for is an error.
  template <class Program>
  void run(Program&& program, const launch_options& options = {}) {
    refuse_host_access_in_run(options);
    claim_run();
    const release_on_exit release{*this};
    run_claimed(program, options, nullptr);
  }

  // run in a thread of its own: returns at once with the job's handle. The
  // program is copied; options.userdata must stay valid until wait() (the
  // ranks' results are copied back there). With options.host_access, host
  // threads reach the running job through the handle (job::put, ...).
  template <class Program>
  job launch(Program program, const launch_options& options = {}) {
    claim_run();  // refused here, in the caller's thread, while a job runs
    std::shared_ptr<detail::host_port> port = options.host_access ? make_host_port() : nullptr;
    return job(port, [this, program = std::move(program), options, port]() mutable {
      const release_on_exit release{*this};
      const host_access_end end{port.get()};
      run_claimed(program, options, port);
    });
  }

 private:
  template <class Program>
  void run_claimed(Program& program, const launch_options& options,
                   const std::shared_ptr<detail::host_port>& port) {
#if defined(__CUDACC__)
    if (backend() == backend_kind::cuda) {
      run_cuda(options, detail::cuda_kernel_for<std::remove_cvref_t<Program>>(program), port);
      return;
    }
#endif
    require_cpu_allowed();
    run_cpu(options, [&program](cpu_rank& r) { program(r); }, port);
  }
  std::shared_ptr<detail::host_port> make_host_port() const;
  static void refuse_host_access_in_run(const launch_options& options);
  // However the run ends (its engine never started, too), host calls fail
  // from then on rather than wait; `failing`: the run is leaving by an
  // exception (more uncaught than when it began).
  static void end_host_access(detail::host_port* port, bool failing) noexcept;
  struct host_access_end {
    detail::host_port* port;
    int exceptions = std::uncaught_exceptions();
    ~host_access_end() { end_host_access(port, std::uncaught_exceptions() > exceptions); }
  };

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
  void run_cpu(const launch_options& options, const std::function<void(cpu_rank&)>& body,
               const std::shared_ptr<detail::host_port>& port);
  void run_cuda(const launch_options& options, const detail::cuda_kernel& kernel,
                const std::shared_ptr<detail::host_port>& port);

  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace grma
