#include "cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "../../runtime/launch.hpp"
#include "../../runtime/loopback_transport.hpp"
#include "../../runtime/transport.hpp"
#include "../../runtime/remote_engine.hpp"
#include "../../runtime/watchdog.hpp"
#include "../../runtime/process_group.hpp"
#include "../../runtime/progress.hpp"
#include "../../runtime/shared_segment.hpp"
#include "../../runtime/process_watch.hpp"
#include "cuda_arena.hpp"
#include "cuda_engine_memory.hpp"
#include "grma/error.hpp"

namespace grma::detail {
namespace {

constexpr int default_threads_per_rank = 256;

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

cuda_plan plan_cuda(const settings& s, const launch_options& o, const cuda_kernel& kernel,
                    bool across_nodes) {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");

  check_launch_options(o);
  cuda_plan plan{};
  plan.threads = o.threads_per_rank != 0 ? o.threads_per_rank : default_threads_per_rank;
  int registers = 0, kernel_max_threads = 0;
  std::size_t static_shared = 0;
  cuda_check(kernel.attributes(registers, kernel_max_threads, static_shared),
             "cudaFuncGetAttributes (the rank kernel)");
  if (plan.threads > kernel_max_threads)
    config_error("threads_per_rank " + std::to_string(plan.threads) + " exceeds the " +
                 std::to_string(kernel_max_threads) + " threads a rank of this program can have on " +
                 prop.name + " (" + std::to_string(registers) + " registers per thread)");
  // The launch's shared memory holds the matching's pending list; the
  // kernel's static shared memory (the program's and the layers' own
  // variables) comes on top, and a block gets both within one limit.
  plan.shared_bytes = std::size_t(s.match_capacity) * sizeof(notification);
  if (static_shared + plan.shared_bytes > prop.sharedMemPerBlock)
    config_error("GRMA_MATCH_CAPACITY " + std::to_string(s.match_capacity) + " needs " +
                 std::to_string(plan.shared_bytes) +
                 " bytes of shared memory per rank, and the program's own shared variables " +
                 std::to_string(static_shared) + " more; " + prop.name + " gives a block " +
                 std::to_string(prop.sharedMemPerBlock));

  int per_sm = 0;
  cuda_check(kernel.blocks_per_sm(plan.threads, plan.shared_bytes, per_sm),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor (the rank kernel)");
  // The network engine (across nodes, or serving host access) needs room
  // for its proxy or its one-thread kernels.
  const bool engine = across_nodes || o.host_access;
  const int most = per_sm * prop.multiProcessorCount - (engine ? 1 : 0);
  if (most <= 0)
    config_error("no rank of this program fits on " + std::string(prop.name) + " with " +
                 std::to_string(plan.threads) + " threads, " + std::to_string(registers) +
                 " registers per thread and " + std::to_string(static_shared + plan.shared_bytes) +
                 " bytes of shared memory");
  plan.ranks = o.ranks_per_device != 0 ? o.ranks_per_device : s.ranks_per_device;
  if (plan.ranks == 0) plan.ranks = most;
  if (plan.ranks > most)
    config_error("ranks_per_device " + std::to_string(plan.ranks) + " exceeds the " +
                 std::to_string(most) + " ranks that can be co-resident on " + prop.name + " (" +
                 std::to_string(per_sm) + " per multiprocessor x " +
                 std::to_string(prop.multiProcessorCount) + " multiprocessors at " +
                 std::to_string(plan.threads) + " threads per rank" +
                 (engine ? ", less one for the network engine" : "") + ")");
  return plan;
}

void cuda_select_device() {
  const process_group& group = process_group::get();
  if (group.count() == 1) return;
  // The host's processes take its GPUs in order (asked first: collective).
  const int mine = group.host_index();
  int visible = 0;
  cuda_check(cudaGetDeviceCount(&visible), "cudaGetDeviceCount");
  if (visible == 1) return;  // the launcher gave each process its GPU
  if (mine >= visible)
    config_error("process " + std::to_string(group.index()) + " of " +
                 std::to_string(group.count()) + " (" + std::to_string(mine + 1) +
                 " on its host) has no GPU of its own: " + std::to_string(visible) +
                 " are visible (one process per GPU)");
  cuda_check(cudaSetDevice(mine), "cudaSetDevice");
}

int cuda_job_devices(const settings& s) {
  if (s.nodes != 1)
    config_error("GRMA_NODES=" + std::to_string(s.nodes) +
                 ": nodes played by one process are the CPU backend's; give each GPU's process "
                 "its node with GRMA_NODE_ID");
  if (process_group::get().count() > 1) {
    if (s.devices != 1)
      config_error("GRMA_DEVICES=" + std::to_string(s.devices) +
                   ": under mpirun each process drives one GPU");
    return 1;
  }
  int visible = 0;
  cuda_check(cudaGetDeviceCount(&visible), "cudaGetDeviceCount");
  int first = 0;
  cuda_check(cudaGetDevice(&first), "cudaGetDevice");
  const int wanted = s.devices == 0 ? visible - first : s.devices;
  if (wanted > max_devices)
    config_error("GRMA_DEVICES: " + std::to_string(wanted) + " GPUs, but a job has at most " +
                 std::to_string(max_devices));
  if (first + wanted > visible)
    config_error("GRMA_DEVICES=" + std::to_string(wanted) + " needs GPUs " + std::to_string(first) +
                 ".." + std::to_string(first + wanted - 1) + ", but " + std::to_string(visible) +
                 " are visible");
  return wanted;
}

rank_info cuda_rank_info(const cuda_plan& plan, int devices) {
  int first = 0;
  cuda_check(cudaGetDevice(&first), "cudaGetDevice");
  const process_group& group = process_group::get();
  return job_layout(plan.ranks, plan.threads, devices, group.index(), group.count(), first);
}

namespace {

// One GPU as every process of a job sees it: plain data, for all_gather.
struct gpu_record {
  int ordinal;
  int multiprocessors;
  std::uint64_t memory_bytes;
  std::uint64_t shared_memory_per_block;
  char name[256];  // as cudaDeviceProp has it
  char bus_id[32];
};

gpu_record describe_gpu(int ordinal) {
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  gpu_record g{};
  g.ordinal = ordinal;
  g.multiprocessors = prop.multiProcessorCount;
  g.memory_bytes = prop.totalGlobalMem;
  g.shared_memory_per_block = prop.sharedMemPerBlock;
  std::snprintf(g.name, sizeof g.name, "%s", prop.name);
  cuda_check(cudaDeviceGetPCIBusId(g.bus_id, sizeof g.bus_id, ordinal), "cudaDeviceGetPCIBusId");
  return g;
}

// How GPU `from` reaches GPU `to` of the same node, asked by their bus ids:
// a launcher may give each process only its own GPU to see.
path_kind peer_path(const char* from_bus, const char* to_bus) {
  int from = 0, to = 0;
  if (cudaDeviceGetByPCIBusId(&from, from_bus) != cudaSuccess ||
      cudaDeviceGetByPCIBusId(&to, to_bus) != cudaSuccess) {
    (void)cudaGetLastError();
    return path_kind::not_visible;
  }
  int access = 0, atomics = 0;
  cuda_check(cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, from, to),
             "cudaDeviceGetP2PAttribute");
  cuda_check(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, from, to),
             "cudaDeviceGetP2PAttribute");
  return !access ? path_kind::no_peer_access : atomics ? path_kind::peer_nvlink : path_kind::peer_pcie;
}

}  // namespace

// Every process's GPUs, in job order (under mpirun one per process; every
// call is then collective), and the path of each pair.
topology cuda_topology(const settings& s) {
  const process_group& group = process_group::get();
  int devices = 0;
  std::vector<gpu_record> mine;
  // A process that fails here must not leave the others in the gathering.
  on_all_processes(group, "while describing its GPUs", [&] {
    devices = cuda_job_devices(s);
    int first = 0;
    cuda_check(cudaGetDevice(&first), "cudaGetDevice");
    for (int d = 0; d < devices; ++d) mine.push_back(describe_gpu(first + d));
  });
  std::vector<gpu_record> all(mine.size() * std::size_t(group.count()));
  std::vector<int> node_of{0};
  if (group.count() > 1) {
    group.all_gather(mine.data(), mine.size() * sizeof(gpu_record), all.data());
    node_of = group.nodes(s.node_id);
  } else {
    all = mine;
  }
  topology t;
  t.backend = backend_kind::cuda;
  for (std::size_t d = 0; d < all.size(); ++d) {
    const gpu_record& g = all[d];
    const int process = int(d) / devices;
    t.devices.push_back({int(d), process, node_of[std::size_t(process)], g.ordinal, g.name, g.bus_id,
                         g.memory_bytes, g.multiprocessors, std::size_t(g.shared_memory_per_block)});
  }
  t.paths.assign(all.size(), std::vector<path_kind>(all.size()));
  for (const device_description& a : t.devices)
    for (const device_description& b : t.devices)
      t.paths[std::size_t(a.index)][std::size_t(b.index)] =
          a.index == b.index || (a.node == b.node && a.bus_id == b.bus_id)
              ? path_kind::same_device  // two processes may share a GPU
          : a.node != b.node ? path_kind::other_node
                             : peer_path(a.bus_id.c_str(), b.bus_id.c_str());
  return t;
}

std::vector<int> cuda_job_nodes(const settings& s) {
  const process_group& group = process_group::get();
  if (group.count() == 1) return {0};
  static std::mutex mutex;
  static std::string kept_for;
  static std::vector<int> kept;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!kept.empty() && kept_for == s.node_id) return kept;
  const std::vector<int> hosts = group.nodes(s.node_id);
  char mine[32] = {};
  int gpu = 0;
  on_all_processes(group, "while describing its GPU", [&] {
    cuda_check(cudaGetDevice(&gpu), "cudaGetDevice");
    cuda_check(cudaDeviceGetPCIBusId(mine, sizeof mine, gpu), "cudaDeviceGetPCIBusId");
  });
  const std::size_t n = std::size_t(group.count());
  std::vector<char> bus(sizeof mine * n);
  group.all_gather(mine, sizeof mine, bus.data());
  auto bus_of = [&](std::size_t p) { return &bus[sizeof mine * p]; };
  // What this process sees of each pair of its host: ranks use atomics on
  // peers' memory, so peer access alone is not enough; a GPU it cannot see
  // (its launcher hid it) it trusts. Every process's view is gathered and a
  // pair reaches only where all agree, so every process splits alike.
  std::vector<unsigned char> seen(n * n, 1);
  on_all_processes(group, "while asking how its host's GPUs reach each other", [&] {
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t q = 0; q < n; ++q) {
        if (hosts[p] != hosts[q] || std::string(bus_of(p)) == bus_of(q)) continue;  // may share a GPU
        const path_kind k = peer_path(bus_of(p), bus_of(q));
        seen[p * n + q] = k == path_kind::peer_nvlink || k == path_kind::not_visible;
      }
  });
  std::vector<unsigned char> all(n * n * n);
  group.all_gather(seen.data(), seen.size(), all.data());
  kept = split_by_reach(hosts, [&](int p, int q) {
    for (std::size_t v = 0; v < n; ++v)
      if (!all[v * n * n + std::size_t(p) * n + std::size_t(q)]) return false;
    return true;
  });
  kept_for = s.node_id;
  return kept;
}

namespace {

// Every GPU of the job maps every other's memory (NVLink or PCIe peer access).
// Access stays enabled for the process, so each pair is enabled once (asking
// again is an API error, which compute-sanitizer reports).
void enable_peer_access(int first, int devices) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> enabled;
  const std::lock_guard<std::mutex> lock(mutex);
  for (int d = first; d < first + devices; ++d)
    for (int e = first; e < first + devices; ++e) {
      if (d == e || enabled.count({d, e}) != 0) continue;
      int possible = 0, atomics = 0;
      cuda_check(cudaDeviceCanAccessPeer(&possible, d, e), "cudaDeviceCanAccessPeer");
      cuda_check(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, d, e),
                 "cudaDeviceGetP2PAttribute");
      // Ranks take locks and claims in device 0's memory and add to peers'
      // signal words: peer atomics are needed, not only loads and stores.
      if (!possible || !atomics)
        config_error("GPU " + std::to_string(d) + " cannot " +
                     (possible ? "use atomics on" : "access") + " GPU " + std::to_string(e) +
                     "'s memory peer to peer (grma-info shows the paths): run one process per "
                     "GPU (mpirun), where such pairs go through the network engines, or use "
                     "fewer GRMA_DEVICES");
      cuda_check(cudaSetDevice(d), "cudaSetDevice");
      const cudaError_t status = cudaDeviceEnablePeerAccess(e, 0);
      if (status == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError();  // enabled outside grma: fine
      else
        cuda_check(status, "cudaDeviceEnablePeerAccess");
      enabled.insert({d, e});
    }
}

// Puts the caller's current GPU back however the run ends: the next run
// starts from it (GRMA_DEVICES counts from the current GPU).
class current_device_guard {
 public:
  explicit current_device_guard(int device) : device_(device) {}
  ~current_device_guard() { cudaSetDevice(device_); }
  current_device_guard(const current_device_guard&) = delete;
  current_device_guard& operator=(const current_device_guard&) = delete;

 private:
  int device_;
};

// One GPU's part of a run.
struct gpu_part {
  int device;
  std::unique_ptr<cuda_arena> arena;
  std::unique_ptr<stream_guard> stream;
  std::unique_ptr<progress_engine> progress;
  kernel_outcome outcome;
};

// A rank kernel that fails as it runs (a rank's error, or a rank leaving a
// job aborted elsewhere: both trap) ends CUDA's use of its GPU in the
// process: every later call there returns the same error. The next run says so at
// its start rather than failing in whichever CUDA call comes first. Runs of
// a process follow each other; the lock is for the GPUs' host threads of
// one run.
class failed_kernel_record {
 public:
  void note(int device, const kernel_outcome& outcome) {
    if (!outcome.while_running) return;  // refused at its launch: the GPU still works
    const std::lock_guard<std::mutex> lock(mutex_);
    if (first_.empty()) first_ = "on GPU " + std::to_string(device) + ": " + outcome.message;
  }
  void refuse_another_run() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!first_.empty())
      throw error(errc::device_error, -1, call::runtime,
                  "grma: an earlier run's rank kernel failed " + first_ +
                      ", which ends CUDA's use of the GPU in this process: run the next job in a "
                      "new process");
  }

 private:
  mutable std::mutex mutex_;
  std::string first_;
};
failed_kernel_record failed_kernels;

// After a launch on `device`: a failed kernel is remembered and raises the
// job's abort flag, so that the other GPUs' and processes' ranks leave their
// waits (a CUDA fault raises none itself).
void after_launch(int device, const kernel_outcome& outcome, job_control& control) {
  if (outcome.status == 0) return;
  failed_kernels.note(device, outcome);
  store_release<scope::system>(control.abort, 1u);
}

// The error of a kernel that failed on `device` with no rank's record or
// watchdog report to tell more.
error kernel_failure(int device, const kernel_outcome& outcome) {
  return error(
      errc::device_error, -1, call::runtime,
      "grma: the rank kernel failed on GPU " + std::to_string(device) + ": " + outcome.message);
}

}  // namespace

namespace {


// One process per GPU (mpirun): each process's arena on its GPU, exported to
// the other processes of its node with CUDA IPC handles; host-visible blocks
// in shared memory that every process of the node registers with CUDA, so
// every GPU of a node reaches its abort flag and error record (the node's
// first process's). Processes on other nodes, and on this host with a GPU
// this one cannot reach peer to peer (cuda_job_nodes), are reached through
// the network engine, as on the CPU backend.
void run_cuda_processes(const settings& s, const launch_options& o, const cuda_kernel& kernel,
                        const std::shared_ptr<host_port>& port) {
  const process_group& group = process_group::get();
  const int processes = group.count(), me = group.index();
  const std::vector<int> node_of = cuda_job_nodes(s);
  auto here = [&](int p) { return node_of[std::size_t(p)] == node_of[std::size_t(me)]; };
  const int nodes = *std::max_element(node_of.begin(), node_of.end()) + 1;
  if (processes > max_devices)
    config_error("a job has at most " + std::to_string(max_devices) + " GPUs; " +
                 std::to_string(processes) + " processes of one GPU each");
  // A process that cannot run these ranks fails with the others, not
  // before the gathering below.
  int gpu = 0;
  cuda_plan plan{};
  on_all_processes(group, "while planning its ranks", [&] {
    cuda_check(cudaGetDevice(&gpu), "cudaGetDevice");
    plan = plan_cuda(s, o, kernel, nodes > 1);
  });
  const std::uint64_t userdata_bytes = agree_on_shape(group, s, plan.ranks, 1, o.userdata_size);
  const int host_sources = o.host_access ? processes : 0;
  auto params_of = [&](int j) {
    return arena_params{
        plan.ranks,    plan.ranks * processes, j * plan.ranks, processes,        j,
        s.heap_size,   s.symmetric_size,       userdata_bytes, s.queue_capacity, s.match_capacity,
        s.max_windows, log_capacity,           host_sources};
  };
  const arena_layout layout = layout_arena(params_of(0));
  const unsigned long long tag = group.run_tag();

  // Declared in the order they may be torn down in reverse: host blocks stay
  // mapped until everything registered in them is gone.
  std::vector<shared_segment> hosts;  // mine first
  std::unique_ptr<cuda_arena> arena;
  std::unique_ptr<stream_guard> stream;
  std::vector<std::unique_ptr<cuda_peer_arena>> peers;
  std::vector<cuda_peer_arena::handles> handles(static_cast<std::size_t>(processes));
  std::vector<device_view> views(static_cast<std::size_t>(processes));
  std::vector<device_view> host_views(static_cast<std::size_t>(processes));
  on_all_processes(group, "while setting up its GPU", [&] {
    hosts.push_back(shared_segment::create(shared_segment::name(tag, "host", me), layout.host_bytes));
    arena = std::make_unique<cuda_arena>(params_of(me), hosts[0].data());
    stream = std::make_unique<stream_guard>();
  });
  const cuda_peer_arena::handles mine = cuda_peer_arena::export_handles(*arena);
  group.all_gather(&mine, sizeof mine, handles.data());
  views[std::size_t(me)] = arena->view();
  host_views[std::size_t(me)] = arena->host_view();
  on_all_processes(group, "while mapping the others' GPU memory", [&] {
    for (int p = 0; p < processes; ++p) {
      if (p == me || !here(p)) continue;
      hosts.push_back(shared_segment::open(shared_segment::name(tag, "host", p), layout.host_bytes));
      unsigned char* host = hosts.back().data();
      peers.push_back(
          std::make_unique<cuda_peer_arena>(handles[std::size_t(p)], host, layout.host_bytes));
      const cuda_peer_arena& peer = *peers.back();
      views[std::size_t(p)] =
          make_view(layout, params_of(p), peer.heap(), peer.control(), peer.host_on_device());
      host_views[std::size_t(p)] =
          make_view(layout, params_of(p), peer.heap(), peer.control(), host);
    }
  });
  hosts[0].unlink();  // every process of the node has mapped every block

  std::uint32_t node_devices = 0;
  std::vector<job_control*> beats;  // each process's own host block, null off this node
  std::vector<device_view*> linked, host_linked;
  for (int p = 0; p < processes; ++p) {
    if (here(p)) node_devices |= 1u << p;
    beats.push_back(here(p) ? host_views[std::size_t(p)].control : nullptr);
    linked.push_back(&views[std::size_t(p)]);
    host_linked.push_back(&host_views[std::size_t(p)]);
  }
  link_views(linked.data(), processes, 1, node_devices, nodes);
  link_views(host_linked.data(), processes, 1, node_devices, nodes);
  const device_view& view = views[std::size_t(me)];
  const device_view& host_view = host_views[std::size_t(me)];
  std::vector<const device_view*> job;        // what the watchdog watches: this node
  std::vector<const device_view*> reachable;  // by device, null off this node
  for (int p = 0; p < processes; ++p) {
    reachable.push_back(here(p) ? host_linked[std::size_t(p)] : nullptr);
    if (here(p)) job.push_back(host_linked[std::size_t(p)]);
  }

  if (o.userdata_size != 0)
    arena->copy_to_heap(view.userdata_offset, o.userdata, o.userdata_size, stream->get());
  std::unique_ptr<remote_engine> network;
  if (nodes > 1 || o.host_access) {
    // The engine spins, and so may this thread while it waits for the kernel:
    // asked only to warn where the process's affinity leaves too few cores.
    choose_wait_style(2, "the network engine, the thread that waits for the kernel", me, 1);
    // Its own step: the engine's constructor makes MPI calls every process must make.
    std::unique_ptr<engine_memory> memory;
    const transport_kind kind = agree_on_transport(group, s, /*nodes_in_process=*/1);
    std::unique_ptr<transport> net = make_transport(kind, nullptr, me);
    on_all_processes(group, "while starting its network engine", [&] {
      const device_view& own = arena->view();
      memory = make_cuda_engine_memory(gpu,
                                       net->reaches_cuda_memory()
                                           ? std::span<const unsigned char>(own.heap, own.heap_size)
                                           : std::span<const unsigned char>(),
                                       s.engine_proxy, false);
      network = std::make_unique<remote_engine>(job_nodes{processes, me, 1, node_of, o.host_access},
                                                reachable, std::move(memory), std::move(net), port);
    });
  }
  if (network) network->start();
  progress_engine progress(host_view, job, s.timeout_seconds, stdout,
                           network ? &network->others_progress() : nullptr);
  process_watch watch(beats, me, host_view.control, plan.ranks);
  job_control& control = *host_view.control;
  const process_group::ranks_running running;  // until the vote below is done
  const kernel_outcome run =
      kernel.launch_and_wait(view, plan.ranks, plan.threads, plan.shared_bytes, stream->get());
  after_launch(gpu, run, control);
  // The other nodes may still need this GPU's memory: the engine serves
  // them until every process is done.
  if (network) network->finish();
  progress.stop();
  std::string report = progress.watchdog_report();
  // Another process's watchdog ended the job (of this node, or of another
  // node, whose report an engine left here): report what it saw.
  if (report.empty()) report = left_report(control);
  std::string lost = watch.failure();
  if (lost.empty() && network) lost = network->failure();
  auto fail = [&] {
    if (report.empty()) report = left_report(control);  // left while this process voted
    if (control.error_claimed != 0) throw error(control.error);
    if (!lost.empty()) throw error(errc::process_failed, -1, call::runtime, lost);
    if (!report.empty()) throw error(errc::timeout, -1, call::runtime, report);
    if (run.status != 0) throw kernel_failure(gpu, run);
    throw error(errc::process_failed, -1, call::runtime,
                "grma: another process of the job failed during the run");
  };
  // Every process, failed or not, votes before it frees memory the others'
  // kernels may still use. A process that seems lost cannot stall the vote:
  // the others leave without its vote (it may only be stopped, its kernel
  // still running until it sees the abort flag raised above or by the watch).
  if (group
          .end_of_run_vote(run.status != 0 || !report.empty(), lost,
                           [&] { return watch.failure(); })
          .value_or(true))
    fail();
  watch.stop();
  if (o.userdata_size != 0)
    arena->copy_from_heap(view.userdata_offset, o.userdata, o.userdata_size, stream->get());
}

}  // namespace

void cuda_refuse_after_failed_kernel() {
  failed_kernels.refuse_another_run();
}

void run_cuda_ranks(const settings& s, const launch_options& o, const cuda_kernel& kernel,
                    const std::shared_ptr<host_port>& port) {
  const process_group& group = process_group::get();
  // Before any CUDA call (after a trap they fail): every process learns
  // that one cannot run, which the others would otherwise wait for.
  on_all_processes(group, "before the run", cuda_refuse_after_failed_kernel);
  cuda_select_device();
  if (group.count() > 1) return run_cuda_processes(s, o, kernel, port);
  const int devices = cuda_job_devices(s);
  int first = 0;
  cuda_check(cudaGetDevice(&first), "cudaGetDevice");
  const current_device_guard restore(first);
  // Every GPU must fit the same number of ranks (world ranks go device by device).
  const cuda_plan plan = plan_cuda(s, o, kernel, false);  // checks the options too
  for (int d = 1; d < devices; ++d) {
    cuda_check(cudaSetDevice(first + d), "cudaSetDevice");
    const cuda_plan other = plan_cuda(s, o, kernel, false);
    if (other.ranks < plan.ranks)
      config_error("GPU " + std::to_string(first + d) + " fits " + std::to_string(other.ranks) +
                   " ranks of this program, GPU " + std::to_string(first) + " " +
                   std::to_string(plan.ranks) + "; set ranks_per_device");
  }
  if (devices > 1) enable_peer_access(first, devices);

  std::vector<gpu_part> parts(static_cast<std::size_t>(devices));
  std::vector<device_view*> views, host_views;
  for (int d = 0; d < devices; ++d) {
    gpu_part& g = parts[std::size_t(d)];
    g.device = first + d;
    cuda_check(cudaSetDevice(g.device), "cudaSetDevice");
    g.arena = std::make_unique<cuda_arena>(arena_params{
        plan.ranks, plan.ranks * devices, d * plan.ranks, devices, d, s.heap_size, s.symmetric_size,
        o.userdata_size, s.queue_capacity, s.match_capacity, s.max_windows, log_capacity,
        o.host_access ? 1 : 0});  // the host of the one process
    g.stream = std::make_unique<stream_guard>();
    views.push_back(&g.arena->view());
    host_views.push_back(&g.arena->host_view());
  }
  link_views(views.data(), devices, devices, all_devices(devices), 1);
  link_views(host_views.data(), devices, devices, all_devices(devices), 1);

  // One userdata for the process, on its first GPU.
  if (o.userdata_size != 0) {
    cuda_check(cudaSetDevice(parts[0].device), "cudaSetDevice");
    parts[0].arena->copy_to_heap(parts[0].arena->view().userdata_offset, o.userdata,
                                 o.userdata_size, parts[0].stream->get());
  }
  for (gpu_part& g : parts) {
    cuda_check(cudaSetDevice(g.device), "cudaSetDevice");
    g.progress = std::make_unique<progress_engine>(
        g.arena->host_view(), std::vector<const device_view*>(host_views.begin(), host_views.end()),
        s.timeout_seconds, stdout);
  }
  // Host access: the engine serves the host's operations on these GPUs (a
  // job of one process: a loopback endpoint with no other end), from the
  // first, whose proxy writes the others' memory through peer access.
  std::unique_ptr<remote_engine> network;
  if (o.host_access) {
    choose_wait_style(1 + devices, "the network engine, the threads that wait for the kernels", 0,
                      1);
    network = std::make_unique<remote_engine>(
        job_nodes{1, 0, devices, {0}, true},
        std::vector<const device_view*>(host_views.begin(), host_views.end()),
        make_cuda_engine_memory(parts[0].device, {}, s.engine_proxy, devices > 1),
        make_transport(transport_kind::loopback, make_loopback_hub(1), 0), port);
    network->start();
  }
  job_control& control = *host_views[0]->control;
  auto launch = [&](gpu_part& g) {
    cudaSetDevice(g.device);
    g.outcome = kernel.launch_and_wait(g.arena->view(), plan.ranks, plan.threads, plan.shared_bytes,
                                       g.stream->get());
    after_launch(g.device, g.outcome, control);
  };
  std::vector<std::thread> host_threads;
  for (int d = 1; d < devices; ++d) host_threads.emplace_back(launch, std::ref(parts[std::size_t(d)]));
  launch(parts[0]);
  for (std::thread& t : host_threads) t.join();
  if (network) network->finish();

  std::vector<const progress_engine*> watchdogs;
  for (gpu_part& g : parts) {
    g.progress->stop();
    watchdogs.push_back(g.progress.get());
  }
  const std::string report = progress_engine::first_report(watchdogs);
  for (gpu_part& g : parts) {
    if (g.outcome.status == 0) continue;
    // A failing rank wrote its record to mapped host memory before trapping.
    if (control.error_claimed != 0) throw error(control.error);
    if (!report.empty()) throw error(errc::timeout, -1, call::runtime, report);
    throw kernel_failure(g.device, g.outcome);
  }
  cuda_check(cudaSetDevice(first), "cudaSetDevice");
  if (o.userdata_size != 0)
    parts[0].arena->copy_from_heap(parts[0].arena->view().userdata_offset, o.userdata,
                                   o.userdata_size, parts[0].stream->get());
}

}  // namespace grma::detail
