#include "cpu_backend.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../../runtime/arena_layout.hpp"
#include "../../runtime/launch.hpp"
#include "../../runtime/process_group.hpp"
#include "../../runtime/process_watch.hpp"
#include "../../runtime/progress.hpp"
#include "../../runtime/watchdog.hpp"
#include "../../runtime/remote_engine.hpp"
#include "cpu_arena.hpp"
#include "../../runtime/shared_segment.hpp"

namespace grma::detail {

std::exception_ptr run_cpu_ranks(const std::vector<const device_view*>& views,
                                 const std::function<void(cpu_rank&)>& body) {
  std::mutex failure_mutex;
  std::exception_ptr cause;    // first real failure
  std::exception_ptr aborted;  // first rank that only left because of an abort
  const int per_device = views[0]->ranks;
  const std::size_t total = views.size() * std::size_t(per_device);
  const std::uint32_t match_capacity = views[0]->match_capacity;
  auto set_state = [&](const device_view& view, int r, rank_state s) {
    store_relaxed<scope::system>(view.status[r].state, std::int32_t(s));
  };

  // Each rank's private state (index: world rank); the rank thread alone
  // touches its entry.
  std::vector<rank_local> locals(total);
  std::vector<notification> pending(total * match_capacity);
  for (std::size_t r = 0; r < total; ++r)
    rank_local_init(locals[r], pending.data() + r * match_capacity, match_capacity,
                    views[0]->queue_capacity);

  std::vector<std::thread> threads;
  threads.reserve(total);
  for (std::size_t w = 0; w < total; ++w) {
    const device_view* device = views[w / std::size_t(per_device)];
    const int r = int(w % std::size_t(per_device));
    threads.emplace_back([&, w, r, device] {
      const device_view& view = *device;
      set_state(view, r, rank_state::running);
      try {
        cpu_rank rank(view, r, locals[w]);
        body(rank);
        rank.finish();
        return;
      } catch (const error& e) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        std::exception_ptr& slot = e.code() == errc::aborted ? aborted : cause;
        if (!slot) slot = std::current_exception();
      } catch (...) {  // the rank program's own exception
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!cause) cause = std::current_exception();
      }
      set_state(view, r, rank_state::failed);
      // Release: whatever this rank recorded is visible to ranks that leave
      // their waits because of the abort.
      store_release<scope::system>(view.control->abort, 1u);
    });
  }
  for (std::thread& t : threads) t.join();
  return cause ? cause : aborted;
}

}  // namespace grma::detail

namespace grma::detail {
namespace {

// Throws the run's error: the rank program's own failure first; when a rank
// only left because the job was aborted, what aborted it (a rank of another
// device or process whose record is in the job's control block, a lost
// process, or the watchdog).
void throw_failure(std::exception_ptr failure, const std::string& watchdog,
                   const std::string& lost, const job_control& job) {
  bool caused_by_abort = false;
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const error& e) {
      caused_by_abort = e.code() == errc::aborted;
    } catch (...) {
    }
  }
  if (failure && !caused_by_abort) std::rethrow_exception(failure);
  if (load_acquire<scope::system>(job.error_claimed) != 0) throw error(job.error);
  if (!lost.empty()) throw error(errc::process_failed, -1, call::runtime, lost);
  if (!watchdog.empty()) throw error(errc::timeout, -1, call::runtime, watchdog);
  if (failure) std::rethrow_exception(failure);
  throw error(errc::process_failed, -1, call::runtime,
              "grma: another process of the job failed during the run");
}

}  // namespace

void run_cpu_job(const settings& s, const launch_options& o, const rank_info& info,
                 const std::function<void(cpu_rank&)>& body) {
  const process_group& group = process_group::get();
  const int processes = group.count(), me = group.index();
  // Processes on this node map each other's arenas; the others are reached
  // through the network engine.
  const std::vector<int> node_of = processes > 1 ? group.nodes(s.node_id) : std::vector<int>{0};
  auto here = [&](int p) { return node_of[std::size_t(p)] == node_of[std::size_t(me)]; };
  int nodes = 0;
  for (int n : node_of) nodes = std::max(nodes, n + 1);
  const int per_process = info.rank_responsible / info.ranks_per_device;
  const int devices = per_process * processes;
  const std::uint64_t userdata_bytes =
      agree_on_shape(group, s, info.ranks_per_device, per_process, o.userdata_size);
  if (devices > max_devices)
    throw error(errc::invalid_config, -1, call::runtime,
                "grma: a job has at most " + std::to_string(max_devices) + " devices; " +
                    std::to_string(processes) + " processes x " + std::to_string(per_process) +
                    " (GRMA_DEVICES) make " + std::to_string(devices));
  auto params_of = [&](int j) {
    return arena_params{info.ranks_per_device, info.rank_count, j * info.ranks_per_device,
                        devices, j, s.heap_size, s.symmetric_size, userdata_bytes, s.queue_capacity,
                        s.match_capacity, s.max_windows, log_capacity};
  };
  const arena_layout layout = layout_arena(params_of(0));

  // Every device of the job, as this process addresses it.
  std::vector<device_view> views(static_cast<std::size_t>(devices));
  std::vector<std::unique_ptr<cpu_arena>> arenas;  // one process: private memory
  std::vector<shared_segment> segments;            // several: shared memory
  if (processes == 1) {
    for (int j = 0; j < devices; ++j) {
      arenas.push_back(std::make_unique<cpu_arena>(params_of(j)));
      views[std::size_t(j)] = arenas.back()->view();
    }
  } else {
    const unsigned long long tag = group.run_tag();
    const std::size_t bytes = layout.heap_bytes + layout.control_bytes + layout.host_bytes;
    std::vector<unsigned char*> base(static_cast<std::size_t>(devices));
    on_all_processes(group, "while creating its shared memory", [&] {
      for (int d = 0; d < per_process; ++d) {
        const int j = me * per_process + d;
        segments.push_back(shared_segment::create(shared_segment::name(tag, "device", j), bytes));
        base[std::size_t(j)] = segments.back().data();
      }
    });
    on_all_processes(group, "while mapping the others' shared memory", [&] {
      for (int j = 0; j < devices; ++j)
        if (j / per_process != me && here(j / per_process)) {
          segments.push_back(shared_segment::open(shared_segment::name(tag, "device", j), bytes));
          base[std::size_t(j)] = segments.back().data();
        }
    });
    // Every process has mapped every segment: the names can go.
    for (shared_segment& segment : segments) segment.unlink();
    on_all_processes(group, "while initializing its devices", [&] {
      for (int j = 0; j < devices; ++j) {
        if (!here(j / per_process)) continue;
        unsigned char* heap = base[std::size_t(j)];
        unsigned char* control = heap + layout.heap_bytes;
        unsigned char* host = control + layout.control_bytes;
        views[std::size_t(j)] = j / per_process == me
                                    ? build_arena(layout, params_of(j), heap, control, host)
                                    : make_view(layout, params_of(j), heap, control, host);
      }
    });
  }
  std::vector<job_control*> beats;  // each process's first device's own block
  for (int p = 0; p < processes; ++p)
    beats.push_back(here(p) ? views[std::size_t(p * per_process)].control : nullptr);
  std::uint32_t node_devices = 0;
  std::vector<device_view*> all;
  for (int j = 0; j < devices; ++j) {
    if (here(j / per_process)) node_devices |= 1u << j;
    all.push_back(&views[std::size_t(j)]);
  }
  link_views(all.data(), devices, per_process, node_devices, nodes);
  std::vector<const device_view*> job;  // what the watchdog watches: this node
  std::vector<const device_view*> reachable;  // by device, null off this node
  for (int j = 0; j < devices; ++j) {
    reachable.push_back(here(j / per_process) ? all[std::size_t(j)] : nullptr);
    if (here(j / per_process)) job.push_back(all[std::size_t(j)]);
  }

  std::vector<const device_view*> mine;
  for (int d = 0; d < per_process; ++d) mine.push_back(&views[std::size_t(me * per_process + d)]);
  unsigned char* userdata = mine[0]->heap + mine[0]->userdata_offset;
  if (o.userdata_size != 0) std::memcpy(userdata, o.userdata, o.userdata_size);

  std::unique_ptr<remote_engine> network;
  if (nodes > 1)
    on_all_processes(group, "while starting its network engine", [&] {
      network = std::make_unique<remote_engine>(job_nodes{processes, me, per_process, node_of},
                                                reachable, make_host_engine_memory(),
                                                /*silence_seconds=*/5.0);
    });
  if (network) network->start();
  std::vector<std::unique_ptr<progress_engine>> progress;
  for (const device_view* v : mine)
    progress.push_back(std::make_unique<progress_engine>(
        *v, job, s.timeout_seconds, stdout, network ? &network->others_progress() : nullptr));
  std::unique_ptr<process_watch> watch;
  if (processes > 1)
    watch = std::make_unique<process_watch>(beats, me, mine[0]->control, info.rank_responsible,
                                            /*silence_seconds=*/5.0);

  const std::exception_ptr failure = run_cpu_ranks(mine, body);
  // The other nodes may still need this process's memory: the engine serves
  // them until every process is done.
  if (network) network->finish();
  std::string report;
  for (auto& p : progress) {
    p->stop();
    if (report.empty()) report = p->watchdog_report();
  }
  const job_control& control = *mine[0]->control;
  // Another process's watchdog ended the job (of this node, or of another
  // node, whose report an engine left here): report what it saw.
  if (report.empty()) report = left_report(control);
  const auto watch_failure = [&] { return watch ? watch->failure() : std::string(); };
  std::string lost = watch_failure();
  if (lost.empty() && network) lost = network->failure();
  // Every process, failed or not, votes before any unmaps its memory
  // (others' ranks may still use it). A process that seems lost (to this
  // node's watch, or to the network engine before the vote) cannot stall
  // the vote: leaving without a vote made the others wait for ever, in MPI,
  // where no watchdog reaches, when it was only slow.
  const std::optional<bool> failed_somewhere =
      group.end_of_run_vote(failure || !report.empty(), lost, watch_failure);
  if (failed_somewhere.value_or(true)) throw_failure(failure, report, lost, control);
  if (o.userdata_size != 0) std::memcpy(o.userdata, userdata, o.userdata_size);
}

}  // namespace grma::detail
