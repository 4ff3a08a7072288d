#include "grma/runtime.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../backend/cpu/cpu_arena.hpp"
#include "../backend/cpu/cpu_backend.hpp"
#include "../runtime/launch.hpp"
#include "../runtime/process_group.hpp"
#include "../runtime/transport.hpp"
#include "../runtime/progress.hpp"

#if GRMA_HAVE_CUDA
#include "../backend/cuda/cuda_backend.hpp"
#endif

namespace grma {

namespace {
[[noreturn]] void host_error(errc code, const std::string& message) {
  throw error(code, -1, call::runtime, "grma: " + message);
}
}  // namespace

struct runtime::impl {
  grma::settings settings;
  backend_kind backend;  // resolved: cpu or cuda
  std::atomic<bool> running{false};  // a run or a launched job holds the runtime
};

namespace {

// The nodes this process plays (GRMA_NODES, checked). Where the processes
// first meet to tell their nodes (collective), on all of them at once: one
// that refused GRMA_NODES alone would leave the others waiting there.
int nodes_played(const grma::settings& s, int devices_per_process) {
  const detail::process_group& group = detail::process_group::get();
  if (group.count() == 1 || group.nodes_known(s.node_id))
    return detail::nodes_in_process(s, group.count(), devices_per_process);
  int played = 1;
  detail::on_all_processes(group, "while counting the nodes it plays (GRMA_NODES)", [&] {
    played = detail::nodes_in_process(s, group.count(), devices_per_process);
  });
  return played;
}

backend_kind resolve_backend(backend_kind wanted) {
#if GRMA_HAVE_CUDA
  const bool gpu = detail::cuda_device_available();
  if (wanted == backend_kind::cuda && !gpu)
    host_error(errc::backend_unavailable, "GRMA_BACKEND=cuda, but no CUDA device is visible");
  if (wanted == backend_kind::automatic) return gpu ? backend_kind::cuda : backend_kind::cpu;
#else
  if (wanted == backend_kind::cuda)
    host_error(errc::backend_unavailable,
               "GRMA_BACKEND=cuda, but this build of grma has no CUDA backend");
  if (wanted == backend_kind::automatic) return backend_kind::cpu;
#endif
  return wanted;
}
}  // namespace

runtime::runtime(int& argc, char** argv)
    : runtime(settings::from_environment(&argc, argv)) {}

runtime::runtime(const grma::settings& s)
    : impl_(std::make_unique<impl>()) {
  s.check();  // a struct built in code has not been through parse
  impl_->settings = s;
  impl_->backend = resolve_backend(s.backend);
}

runtime::~runtime() = default;

void runtime::claim_run() {
  if (impl_->running.exchange(true, std::memory_order_acq_rel))
    host_error(errc::invalid_config,
               "this runtime is running a job already: wait() for the launched job first (a "
               "runtime runs one job at a time)");
}

void runtime::release_run() { impl_->running.store(false, std::memory_order_release); }

const grma::settings& runtime::settings() const { return impl_->settings; }

backend_kind runtime::backend() const { return impl_->backend; }

void runtime::require_cpu_allowed() const {
  if (impl_->settings.backend == backend_kind::cuda)
    host_error(errc::backend_unavailable,
               "GRMA_BACKEND=cuda, but this rank program was compiled without CUDA: build its "
               "source with nvcc (a .cu file, or LANGUAGE CUDA in CMake)");
}

const char* to_string(path_kind p) {
  switch (p) {
    case path_kind::same_device: return "same device";
    case path_kind::process_memory: return "process memory";
    case path_kind::peer_nvlink: return "peer (NVLink class)";
    case path_kind::peer_pcie: return "peer (PCIe)";
    case path_kind::no_peer_access: return "no peer access";
    case path_kind::shared_memory: return "shared memory";
    case path_kind::other_node: return "other node (network)";
    case path_kind::not_visible: return "not visible here";
  }
  return "?";
}

grma::topology runtime::topology() const {
#if GRMA_HAVE_CUDA
  if (impl_->backend == backend_kind::cuda) {
    detail::cuda_select_device();
    return detail::cuda_topology(impl_->settings);
  }
#endif
  // Every process's arenas, in world order: a process's own reach each
  // other in its memory, those of its node's processes through shared
  // memory, the rest through the network engines.
  grma::topology t;
  t.backend = backend_kind::cpu;
  const int per_process = std::max(1, impl_->settings.devices);
  const detail::process_group& group = detail::process_group::get();
  const int played = nodes_played(impl_->settings, per_process);
  const std::vector<int> node_of =
      group.count() > 1 ? group.nodes(impl_->settings.node_id) : std::vector<int>{0};
  const int devices = per_process * group.count();
  for (int d = 0; d < devices; ++d) {
    const int process = d / per_process;
    const int node = played > 1 ? d / (per_process / played) : node_of[std::size_t(process)];
    t.devices.push_back({d, process, node, 0,
                         "CPU arena " + std::to_string(d), "", impl_->settings.heap_size,
                         int(std::thread::hardware_concurrency()), 0});
  }
  t.paths.assign(std::size_t(devices), std::vector<path_kind>(std::size_t(devices)));
  for (const device_description& a : t.devices)
    for (const device_description& b : t.devices)
      t.paths[std::size_t(a.index)][std::size_t(b.index)] =
          a.index == b.index       ? path_kind::same_device
          : a.node != b.node       ? path_kind::other_node
          : a.process == b.process ? path_kind::process_memory
                                   : path_kind::shared_memory;
  return t;
}

namespace {

// Which node each process of the job is on ({0} for a job of one process).
std::vector<int> job_nodes_of(const grma::settings& s) {
  const detail::process_group& group = detail::process_group::get();
  return group.count() > 1 ? group.nodes(s.node_id) : std::vector<int>{0};
}

// The node fields of a job's layout: this process's node, how many there
// are, and the devices of this node's processes.
void place_on_nodes(rank_info& info, const std::vector<int>& node_of, int devices_per_process) {
  const int me = detail::process_group::get().index();
  info.node_index = node_of[std::size_t(me)];
  info.node_count = *std::max_element(node_of.begin(), node_of.end()) + 1;
  info.device_count =
      devices_per_process * int(std::count(node_of.begin(), node_of.end(), info.node_index));
  info.device_index =  // among this node's devices: after those of its earlier processes
      devices_per_process * int(std::count(node_of.begin(), node_of.begin() + me, info.node_index));
}

}  // namespace

rank_info runtime::info_cpu(const launch_options& options) const {
  detail::check_launch_options(options);
  int ranks = options.ranks_per_device;
  if (ranks == 0) ranks = impl_->settings.ranks_per_device;
  if (ranks == 0) ranks = std::max(2, int(std::thread::hardware_concurrency()));
  // GRMA_DEVICES=all means every GPU; CPU devices are only ever asked for.
  const int devices = std::max(1, impl_->settings.devices);
  const detail::process_group& group = detail::process_group::get();
  rank_info info = detail::job_layout(ranks, /*threads_per_rank=*/1, devices, group.index(),
                                      group.count(), /*first_device=*/group.index() * devices);
  const int played = nodes_played(impl_->settings, devices);
  if (played == 1) {
    place_on_nodes(info, job_nodes_of(impl_->settings), devices);
  } else {  // the process is on every node; it describes itself as on its first
    info.node_index = 0;
    info.node_count = played;
    info.device_index = 0;
    info.device_count = devices / played;
  }
  return info;
}

void runtime::run_cpu(const launch_options& options, const std::function<void(cpu_rank&)>& body,
                      const std::shared_ptr<detail::host_port>& port) {
  detail::run_cpu_job(impl_->settings, options, info_cpu(options), body, port);
}

#if GRMA_HAVE_CUDA
rank_info runtime::info_cuda(const detail::cuda_kernel& kernel, const launch_options& options) const {
  detail::cuda_refuse_after_failed_kernel();
  detail::cuda_select_device();
  const int devices = detail::cuda_job_devices(impl_->settings);
  const std::vector<int> node_of = detail::cuda_job_nodes(impl_->settings);
  const bool across_nodes = *std::max_element(node_of.begin(), node_of.end()) > 0;
  rank_info info = detail::cuda_rank_info(
      detail::plan_cuda(impl_->settings, options, kernel, across_nodes), devices);
  place_on_nodes(info, node_of, devices);
  return info;
}

void runtime::run_cuda(const launch_options& options, const detail::cuda_kernel& kernel,
                       const std::shared_ptr<detail::host_port>& port) {
  detail::run_cuda_ranks(impl_->settings, options, kernel, port);
}
#else
rank_info runtime::info_cuda(const detail::cuda_kernel&, const launch_options&) const {
  host_error(errc::backend_unavailable, "this build of grma has no CUDA backend");
}

void runtime::run_cuda(const launch_options&, const detail::cuda_kernel&,
                       const std::shared_ptr<detail::host_port>&) {
  host_error(errc::backend_unavailable, "this build of grma has no CUDA backend");
}
#endif

}  // namespace grma
