#include "cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "../../runtime/launch.hpp"
#include "../../runtime/progress.hpp"
#include "cuda_arena.hpp"
#include "grma/error.hpp"

namespace grma::detail {
namespace {

constexpr int default_threads_per_rank = 256;
constexpr std::uint32_t log_capacity = 256;

[[noreturn]] void config_error(const std::string& message) {
  throw error(errc::invalid_config, -1, call::runtime, "grma: " + message);
}

// Creates a non-blocking stream: copies the host makes while the persistent
// kernel runs must never wait for it on the legacy default stream.
class stream_guard {
 public:
  stream_guard() { cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~stream_guard() { cudaStreamDestroy(stream_); }
  stream_guard(const stream_guard&) = delete;
  stream_guard& operator=(const stream_guard&) = delete;
  void* get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace

bool cuda_device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

cuda_plan plan_cuda(const settings& s, const launch_options& o, const cuda_kernel& kernel) {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");

  check_launch_options(o);
  cuda_plan plan{};
  plan.threads = o.threads_per_rank != 0 ? o.threads_per_rank : default_threads_per_rank;
  int registers = 0, kernel_max_threads = 0;
  kernel.attributes(registers, kernel_max_threads);
  if (plan.threads > kernel_max_threads)
    config_error("threads_per_rank " + std::to_string(plan.threads) + " exceeds the " +
                 std::to_string(kernel_max_threads) + " threads a rank of this program can have on " +
                 prop.name + " (" + std::to_string(registers) + " registers per thread)");
  plan.shared_bytes = std::size_t(s.match_capacity) * sizeof(notification);
  if (plan.shared_bytes > prop.sharedMemPerBlock)
    config_error("GRMA_MATCH_CAPACITY " + std::to_string(s.match_capacity) + " needs " +
                 std::to_string(plan.shared_bytes) + " bytes of shared memory per rank; " +
                 prop.name + " gives a block " + std::to_string(prop.sharedMemPerBlock));

  const int per_sm = kernel.blocks_per_sm(plan.threads, plan.shared_bytes);
  const int most = per_sm * prop.multiProcessorCount;
  if (most == 0)
    config_error("no rank of this program fits on " + std::string(prop.name) + " with " +
                 std::to_string(plan.threads) + " threads, " + std::to_string(registers) +
                 " registers per thread and " + std::to_string(plan.shared_bytes) +
                 " bytes of shared memory");
  plan.ranks = o.ranks_per_device != 0 ? o.ranks_per_device : s.ranks_per_device;
  if (plan.ranks == 0) plan.ranks = most;
  if (plan.ranks > most)
    config_error("ranks_per_device " + std::to_string(plan.ranks) + " exceeds the " +
                 std::to_string(most) + " ranks that can be co-resident on " + prop.name + " (" +
                 std::to_string(per_sm) + " per multiprocessor x " +
                 std::to_string(prop.multiProcessorCount) + " multiprocessors at " +
                 std::to_string(plan.threads) + " threads per rank)");
  return plan;
}

rank_info cuda_rank_info(const cuda_plan& plan) {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  return one_device_job(plan.ranks, plan.threads, device);  // one GPU per job so far
}

void run_cuda_ranks(const settings& s, const launch_options& o, const cuda_kernel& kernel) {
  const cuda_plan plan = plan_cuda(s, o, kernel);  // checks the options too
  const arena_params params{plan.ranks,      plan.ranks,       0,
                            s.heap_size,      o.userdata_size,
                            s.queue_capacity, s.match_capacity, s.max_windows,
                            log_capacity};
  cuda_arena arena(params);
  stream_guard stream;
  if (o.userdata_size != 0)
    arena.copy_to_heap(arena.view().userdata_offset, o.userdata, o.userdata_size, stream.get());

  progress_engine progress(arena.host_view(), s.timeout_seconds, stdout);
  std::string message;
  const int status = kernel.launch_and_wait(arena.view(), plan.ranks, plan.threads,
                                            plan.shared_bytes, stream.get(), message);
  progress.stop();

  const job_control& control = *arena.host_view().control;
  if (status != 0) {
    // A failing rank wrote its record to mapped host memory before trapping.
    if (control.error_claimed != 0) throw error(control.error);
    const std::string report = progress.watchdog_report();
    if (!report.empty()) throw error(errc::timeout, -1, call::runtime, report);
    throw error(errc::device_error, -1, call::runtime, "grma: the rank kernel failed: " + message);
  }
  if (o.userdata_size != 0)
    arena.copy_from_heap(arena.view().userdata_offset, o.userdata, o.userdata_size, stream.get());
}

}  // namespace grma::detail
