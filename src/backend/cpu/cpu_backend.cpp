#include "cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../../runtime/arena_layout.hpp"
#include "../../runtime/launch.hpp"
#include "../../runtime/loopback_transport.hpp"
#include "../../runtime/process_group.hpp"
#include "../../runtime/process_watch.hpp"
#include "../../runtime/progress.hpp"
#include "../../runtime/remote_engine.hpp"
#include "../../runtime/shared_segment.hpp"
#include "../../runtime/watchdog.hpp"
#include "cpu_arena.hpp"

namespace grma::detail {

namespace {

// The record of the exception being handled, thrown by the program of
// world rank `rank`: its what(), cut to the record's text.
error_record exception_record(int rank) {
  error_record record{};
  record.code = std::int32_t(errc::rank_exception);
  record.rank = rank;
  record.where = std::int32_t(call::runtime);  // no grma call: the program's own
  std::string what = "an exception that is not a std::exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  const std::size_t n = std::min(what.size(), sizeof record.text - 1);
  std::memcpy(record.text, what.data(), n);
  return record;
}

}  // namespace

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
        {
          std::lock_guard<std::mutex> lock(failure_mutex);
          if (!cause) cause = std::current_exception();
        }
        // This process rethrows it; the job's record names it for the other
        // ranks' errors and the other processes', where it is the job's first
        // failure (not an abort the program caught and threw as its own).
        if (load_acquire<scope::system>(view.control->abort) == 0)
          cpu_platform::record_failure(*view.error_claim, *view.control,
                                       exception_record(view.first_rank + r));
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

// Where a process plays several nodes (GRMA_NODES), each node's ranks get
// their own copy of the userdata; afterwards a byte comes back from the
// last node that changed it, so that ranks writing their own parts (as a
// process's ranks do) all have them back.
void merge_userdata(const launch_options& o, const std::vector<const unsigned char*>& copies) {
  if (copies.size() == 1) return void(std::memcpy(o.userdata, copies[0], o.userdata_size));
  auto* out = static_cast<unsigned char*>(o.userdata);
  const std::vector<unsigned char> before(out, out + o.userdata_size);
  for (const unsigned char* copy : copies)
    for (std::size_t i = 0; i < o.userdata_size; ++i)
      if (copy[i] != before[i]) out[i] = copy[i];
}

}  // namespace

void run_cpu_job(const settings& s, const launch_options& o, const rank_info& info,
                 const std::function<void(cpu_rank&)>& body, const std::shared_ptr<host_port>& port) {
  const process_group& group = process_group::get();
  const int processes = group.count(), me = group.index();
  const int per_process = info.rank_responsible / info.ranks_per_device;
  const int devices = per_process * processes;
  // The job's parts that each have their node and network engine: its
  // processes, or the nodes that this one process plays (GRMA_NODES),
  // which are joined by the loopback transport.
  const int played = nodes_in_process(s, processes, per_process);
  const int parts = played > 1 ? played : processes;
  const int per_part = per_process / played;
  std::vector<int> node_of(static_cast<std::size_t>(parts));  // by part
  if (played > 1)
    for (int n = 0; n < played; ++n) node_of[std::size_t(n)] = n;
  else
    node_of = processes > 1 ? group.nodes(s.node_id) : std::vector<int>{0};
  std::vector<int> mine_parts;  // the parts this process runs
  for (int n = 0; n < parts; ++n)
    if (played > 1 || n == me) mine_parts.push_back(n);
  const auto node_of_device = [&](int j) { return node_of[std::size_t(j / per_part)]; };
  // Processes on a node of this one map each other's arenas; the other
  // nodes are reached through the network engines.
  const auto here = [&](int j) {
    return played > 1 || node_of_device(j) == node_of[std::size_t(me)];
  };
  int nodes = 0;
  for (int n : node_of) nodes = std::max(nodes, n + 1);
  const std::uint64_t userdata_bytes =
      agree_on_shape(group, s, info.ranks_per_device, per_process, o.userdata_size);
  if (devices > max_devices)
    throw error(errc::invalid_config, -1, call::runtime,
                "grma: a job has at most " + std::to_string(max_devices) + " devices; " +
                    std::to_string(processes) + " processes x " + std::to_string(per_process) +
                    " (GRMA_DEVICES) make " + std::to_string(devices));
  // A process's host threads are one source (a process that plays every
  // node serves them from its first node's engine).
  const int host_sources = o.host_access ? processes : 0;
  auto params_of = [&](int j) {
    return arena_params{info.ranks_per_device,
                        info.rank_count,
                        j * info.ranks_per_device,
                        devices,
                        j,
                        s.heap_size,
                        s.symmetric_size,
                        userdata_bytes,
                        s.queue_capacity,
                        s.match_capacity,
                        s.max_windows,
                        log_capacity,
                        host_sources};
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
        if (j / per_process != me && here(j)) {
          segments.push_back(shared_segment::open(shared_segment::name(tag, "device", j), bytes));
          base[std::size_t(j)] = segments.back().data();
        }
    });
    // Every process has mapped every segment: the names can go.
    for (shared_segment& segment : segments) segment.unlink();
    on_all_processes(group, "while initializing its devices", [&] {
      for (int j = 0; j < devices; ++j) {
        if (!here(j)) continue;
        unsigned char* heap = base[std::size_t(j)];
        unsigned char* control = heap + layout.heap_bytes;
        unsigned char* host = control + layout.control_bytes;
        views[std::size_t(j)] = j / per_process == me
                                    ? build_arena(layout, params_of(j), heap, control, host)
                                    : make_view(layout, params_of(j), heap, control, host);
      }
    });
  }
  // A network engine per part where nodes are several, or where host
  // threads issue operations (it serves them).
  const bool networked = nodes > 1 || o.host_access;
  const int engines = networked ? int(mine_parts.size()) : 0;
  const int ranks = per_process * info.ranks_per_device;
  // The processes of this one's node, whose threads share the machine when unbound.
  const int node_processes = int(std::count(node_of.begin(), node_of.end(), node_of[std::size_t(me)]));
  // Chosen even where GRMA_WAITS says: it warns of a narrow affinity.
  const waits_kind chosen = choose_wait_style(
      ranks + engines,
      std::to_string(ranks) + " ranks, " + std::to_string(engines) + " network engines", me,
      node_processes);
  const waits_kind waits = s.waits == waits_kind::automatic ? chosen : s.waits;
  for (device_view& v : views) v.waits = waits;
  std::vector<job_control*> beats;  // each process's first device's own block
  for (int p = 0; p < processes; ++p)
    beats.push_back(here(p * per_process) ? views[std::size_t(p * per_process)].control : nullptr);
  std::vector<device_view*> all;
  for (int j = 0; j < devices; ++j) all.push_back(&views[std::size_t(j)]);
  // Per node this process is on: its devices (what its watchdogs watch),
  // and every device as its engine reaches them (null off the node).
  struct node_here {
    int part;  // the part its engine serves
    std::vector<const device_view*> job, reachable;
    std::unique_ptr<remote_engine> network;
  };
  std::vector<node_here> on;
  for (int part : mine_parts) {
    const int node = node_of[std::size_t(part)];
    node_here n{part, {}, {}, nullptr};
    std::uint32_t node_devices = 0;
    for (int j = 0; j < devices; ++j) {
      const bool there = here(j) && node_of_device(j) == node;
      if (there) node_devices |= 1u << j;
      n.reachable.push_back(there ? all[std::size_t(j)] : nullptr);
      if (there) n.job.push_back(all[std::size_t(j)]);
    }
    link_views(all.data(), devices, per_part, node_devices, nodes);
    on.push_back(std::move(n));
  }
  const auto node_here_of = [&](int j) -> node_here& {
    for (node_here& n : on)
      if (node_of[std::size_t(n.part)] == node_of_device(j)) return n;
    return on[0];
  };

  std::vector<const device_view*> mine;
  for (int d = 0; d < per_process; ++d) mine.push_back(&views[std::size_t(me * per_process + d)]);
  std::vector<const unsigned char*> userdata;  // each part's copy
  for (const node_here& n : on) {
    const device_view& first = views[std::size_t(n.part * per_part)];
    unsigned char* u = first.heap + first.userdata_offset;
    if (o.userdata_size != 0) std::memcpy(u, o.userdata, o.userdata_size);
    userdata.push_back(u);
  }

  if (networked) {
    // A job of one process on one node has no other engine to reach: its
    // engine gets a loopback endpoint of its own.
    const bool alone = parts == 1;
    const transport_kind kind =
        alone ? transport_kind::loopback : agree_on_transport(group, s, played);
    std::shared_ptr<loopback_hub> hub = played > 1 || alone ? make_loopback_hub(parts) : nullptr;
    // Collective where the transport joins processes (MPI).
    on_all_processes(group, "while starting its network engine", [&] {
      for (node_here& n : on)
        n.network = std::make_unique<remote_engine>(
            job_nodes{parts, n.part, per_part, node_of, o.host_access}, n.reachable,
            make_host_engine_memory(waits == waits_kind::spin), make_transport(kind, hub, n.part),
            n.part == mine_parts[0] ? port : nullptr);
    });
    for (node_here& n : on) n.network->start();
  }
  std::vector<std::unique_ptr<progress_engine>> progress;
  std::atomic<bool> fired_here{false};  // the nodes this process plays report once
  for (int d = 0; d < per_process; ++d) {
    const int j = me * per_process + d;
    node_here& n = node_here_of(j);
    const bool several = on.size() > 1;
    progress.push_back(std::make_unique<progress_engine>(
        views[std::size_t(j)], n.job, s.timeout_seconds, stdout,
        n.network ? &n.network->others_progress() : nullptr,
        several ? mine : std::vector<const device_view*>{}, several ? &fired_here : nullptr));
  }
  std::unique_ptr<process_watch> watch;
  if (processes > 1)
    watch = std::make_unique<process_watch>(beats, me, mine[0]->control, info.rank_responsible);

  const process_group::ranks_running running;  // until the vote below is done
  const std::exception_ptr failure = run_cpu_ranks(mine, body);
  // The other nodes may still need this process's memory: the engines
  // serve them until every part is done.
  for (node_here& n : on)
    if (n.network) n.network->ranks_done();
  for (node_here& n : on)
    if (n.network) n.network->finish();
  std::vector<const progress_engine*> watchdogs;
  for (auto& p : progress) {
    p->stop();
    watchdogs.push_back(p.get());
  }
  std::string report = progress_engine::first_report(watchdogs);
  // The control block of the node whose error the job ends with (each
  // node records the first error it sees), else of this process's first;
  // and where another process's watchdog ended the job (of this node, or
  // of another node, whose report an engine left here), what it saw.
  const job_control* control = mine[0]->control;
  const auto look_at_nodes = [&] {
    for (const node_here& n : on)
      if (load_acquire<scope::system>(n.job[0]->control->error_claimed) != 0) {
        control = n.job[0]->control;
        break;
      }
    for (const node_here& n : on)
      if (report.empty()) report = left_report(*n.job[0]->control);
  };
  look_at_nodes();
  // A process this node's watch takes for lost (the network engines, which
  // see those of other nodes, have stopped: what they saw is in `lost`).
  const auto lost_now = [&] { return watch ? watch->failure() : std::string(); };
  std::string lost = lost_now();
  for (const node_here& n : on)
    if (lost.empty() && n.network) lost = n.network->failure();
  // Every process, failed or not, votes before any unmaps its memory
  // (others' ranks may still use it). A process that seems lost (to this
  // node's watch, or to the network engine before the vote) cannot stall
  // the vote: leaving without a vote made the others wait for ever, in MPI,
  // where no watchdog reaches, when it was only slow.
  const std::optional<bool> failed_somewhere =
      group.end_of_run_vote(failure || !report.empty(), lost, lost_now);
  if (failed_somewhere.value_or(true)) {
    // Another process of the node may have left its error or its report
    // while this one's ranks had returned: it voted after leaving them.
    look_at_nodes();
    throw_failure(failure, report, lost, *control);
  }
  if (o.userdata_size != 0) merge_userdata(o, userdata);
}

}  // namespace grma::detail
