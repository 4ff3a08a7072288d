#include "engine_liveness.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "engine_completion.hpp"
#include "engine_host.hpp"
#include "engine_intake.hpp"
#include "engine_operations.hpp"
#include "error_text.hpp"
#include "process_watch.hpp"
#include "watchdog.hpp"

namespace grma::detail {
namespace {

constexpr double beat_seconds = 0.1;

}  // namespace

engine_liveness::engine_liveness(engine_context& cx, engine_intake& intake,
                                 const engine_operations& operations,
                                 const engine_completion& completion, const engine_host& host)
    : cx_(cx),
      intake_(intake),
      operations_(operations),
      completion_(completion),
      host_(host),
      heard_(std::size_t(cx.nodes.processes), engine_clock::now()),
      signatures_(std::size_t(cx.nodes.processes), 0),
      done_from_(std::size_t(cx.nodes.processes), false),
      refused_from_(std::size_t(cx.nodes.processes), false),
      in_process_(cx.net->in_one_process()) {}

void engine_liveness::hear_all() { heard_.assign(heard_.size(), engine_clock::now()); }

void engine_liveness::receive_beat(int from, std::uint64_t signature) {
  if (signature == signatures_[std::size_t(from)]) return;
  signatures_[std::size_t(from)] = signature;
  others_progress_.fetch_add(1, std::memory_order_relaxed);
}

bool engine_liveness::everyone_done() const {
  for (int p = 0; p < cx_.nodes.processes; ++p)
    if (cx_.peer(p) && !done_from_[std::size_t(p)]) return false;
  return true;
}

// Records the job's error (unless one is recorded) and aborts the node.
void engine_liveness::fail_job(const error_record& r) {
  job_control& control = *cx_.first->control;
  if (cx_.memory->claim_error(*cx_.first->error_claim)) {
    control.error = r;
    store_release<scope::system>(control.error_claimed, 1u);
  }
  // Release: the record is complete before anyone sees the abort.
  store_release<scope::system>(control.abort, 1u);
}

// Nothing more from process `from` is used; the job fails with `r`.
void engine_liveness::stop_trusting(int from, const error_record& r) {
  refused_from_[std::size_t(from)] = true;
  fail_job(r);
}

// Another engine sent what this one never asks for.
void engine_liveness::malformed(int from, int rank, call where, const char* what) {
  error_record r{};
  r.code = std::int32_t(errc::process_failed);
  r.rank = rank;
  r.where = std::int32_t(where);
  std::snprintf(r.text, sizeof r.text, "grma: process %d %s", from, what);
  stop_trusting(from, r);
}

// An abort from another node: its error record and, when a watchdog there
// ended the job, the watchdog's report, which this process then reports.
void engine_liveness::receive_abort(int from, std::uint64_t report_bytes) {
  abort_seen_ = true;  // no need to forward what another node sent
  if (report_bytes > sizeof(job_control::report)) {
    malformed(from, -1, call::runtime, "sent an abort with an oversized report");
    return;
  }
  auto message = std::make_shared<std::vector<unsigned char>>(sizeof(error_record) + report_bytes);
  const auto received = [this, message, from](int, std::size_t) {
    error_record record;
    std::memcpy(&record, message->data(), sizeof record);
    // Left for every process of this node (one of them may see the abort
    // and stop before its own engine has received this), with what this
    // node's ranks wait for: they have not seen the abort yet, and the
    // other node's watchdog could not see them.
    if (message->size() > sizeof record)
      leave_report(
          *cx_.first->control,
          report_with(
              "grma: process " + std::to_string(from) + " (node " +
                  std::to_string(cx_.nodes.node_of[std::size_t(from)]) + ") reports: " +
                  std::string(reinterpret_cast<const char*>(message->data()) + sizeof record,
                              message->size() - sizeof record),
              blocked_here() + in_flight()));
    if (record.code != 0) {
      fail_job(record);
    } else {
      // Release: the report is left before anyone sees the abort.
      store_release<scope::system>(cx_.first->control->abort, 1u);
    }
  };
  cx_.net->receive(from, channel::record, message->data(), message->size(), memory_place::host,
                   received);
}

// What this engine holds that an operation between nodes may wait for,
// for the report of a job a watchdog ends: its sends not yet
// acknowledged, its gets without their data, requests from other
// processes that wait for a window or complete in order behind an
// earlier one, notifications behind a full ring.
std::string engine_liveness::in_flight() const {
  std::ostringstream s;
  s << "\ngrma: network engine of process " << cx_.nodes.process << ":";
  const std::size_t before = s.tellp();
  if (completion_.unacknowledged() != 0)
    s << " " << completion_.unacknowledged() << " operations sent and not acknowledged;";
  if (!completion_.gets().empty()) {
    s << " gets waiting for their data, of rank";
    int last = -1;  // by origin, then destination: each rank once
    for (const auto& entry : completion_.gets())
      if (entry.first.first != last) s << " " << (last = entry.first.first);
    s << ";";
  }
  for (int p = 0; p < cx_.nodes.processes; ++p)
    if (const std::size_t waiting = operations_.waiting(p); waiting != 0)
      s << " " << waiting << " requests of process " << p << " wait for a window;";
  for (int origin = 0; origin < cx_.origins(); ++origin) {
    const std::deque<engine_completion::in_order>& queue = completion_.completing()[std::size_t(origin)];
    if (queue.empty()) continue;
    const remote_command& first_one = queue.front().c;
    s << " " << queue.size() << " requests of ";
    if (cx_.is_host_origin(origin))
      s << "the host of process " << cx_.process_of_origin(origin);
    else
      s << "rank " << origin;
    s << " in progress, the first (" << call_name(call_of(first_one)) << " to rank "
      << first_one.target << ", " << bytes_text(first_one.bytes) << ") "
      << (queue.front().ready ? "done;" : "still moving its data;");
  }
  if (const std::size_t held = completion_.held(); held != 0)
    s << " " << held << " notifications wait for room in their targets' queues;";
  if (!cx_.lanes.idle()) s << " data waits for staging room;";
  if (const std::size_t host = host_.in_flight(); host != 0)
    s << " " << host << " operations of this process's host threads in flight;";
  if (std::size_t(s.tellp()) == before) s << " nothing in flight";
  return s.str();
}

// This node's blocked ranks, under a line that names the node, or empty.
std::string engine_liveness::blocked_here() const {
  std::vector<const device_view*> node;
  for (const device_view* v : cx_.views)
    if (v != nullptr) node.push_back(v);
  const std::string ranks = blocked_ranks(node);
  if (ranks.empty()) return ranks;
  return "\ngrma: on node " + std::to_string(cx_.nodes.node_of[std::size_t(cx_.nodes.process)]) +
         " when that abort came, blocked ranks:" + ranks;
}

// Sends this node's abort to the other nodes: its error record, or the
// report that a watchdog of this node left before it raised the abort.
void engine_liveness::forward_abort() {
  const job_control& control = *cx_.first->control;
  error_record record{};
  std::string report;
  if (load_acquire<scope::system>(control.error_claimed) != 0)
    record = control.error;
  else if (std::string left = left_report(control); !left.empty())
    report = report_with(std::move(left), in_flight());
  auto message = std::make_shared<std::vector<unsigned char>>(sizeof record + report.size());
  std::memcpy(message->data(), &record, sizeof record);
  std::memcpy(message->data() + sizeof record, report.data(), report.size());
  remote_command c{};
  c.op = wire_abort;
  c.bytes = report.size();
  for (int p = 0; p < cx_.nodes.processes; ++p)
    if (cx_.peer(p)) {  // done ones too: they wait for the others
      intake_.send_header(p, c);
      cx_.net->send(p, channel::record, message->data(), message->size(), memory_place::host,
                    [message] {});
    }
}

void engine_liveness::lose(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_.empty()) failure_ = why;
  }
  store_release<scope::system>(cx_.first->control->abort, 1u);
}

std::string engine_liveness::failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

// Forwards this node's abort, beats, and looks for silent processes.
// `listened`: when this engine last took everything that had arrived. A
// process is silent for as long before that as it was last heard: were
// it measured up to now, a pause of this engine's own loop (a slow step,
// a busy machine, a backlog of arrivals) would count as the others'
// silence.
void engine_liveness::watch(engine_clock::time_point listened) {
  if (!abort_seen_ && load_acquire<scope::system>(cx_.first->control->abort) != 0) {
    abort_seen_ = true;
    forward_abort();
  }
  const engine_clock::time_point now = cx_.now;
  if (now < next_beat_) return;
  next_beat_ = now + std::chrono::duration_cast<engine_clock::duration>(
                         std::chrono::duration<double>(beat_seconds));
  remote_command beat{};
  beat.op = wire_beat;
  beat.offset = progress_signature(cx_.own);
  for (int p = 0; p < cx_.nodes.processes; ++p) {
    if (!cx_.peer(p)) continue;
    intake_.send_header(p, beat);  // until this engine stops: others may still watch it
    if (done_from_[std::size_t(p)]) continue;
    // The nodes one process plays (loopback) live and die with it: a
    // silence there is a busy machine's, or an engine that ended without a
    // word (an error of its own), which only a far longer silence tells.
    const double limit = in_process_ ? 12 * silence_limit_seconds : silence_limit_seconds;
    const double silent = std::chrono::duration<double>(listened - heard_[std::size_t(p)]).count();
    if (silent > limit) {
      const int ranks = cx_.nodes.devices_per_process * cx_.ranks_per_device;
      lose("grma: process " + std::to_string(p) + " (world ranks " + std::to_string(p * ranks) +
           ".." + std::to_string(p * ranks + ranks - 1) + ", node " +
           std::to_string(cx_.nodes.node_of[std::size_t(p)]) + ") stopped responding for " +
           std::to_string(int(silent)) + " s");
    }
  }
}

}  // namespace grma::detail
