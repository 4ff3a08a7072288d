#include "progress.hpp"

#include <chrono>
#include <utility>

#include "watchdog.hpp"

namespace grma::detail {

progress_engine::progress_engine(const device_view& view, std::vector<const device_view*> job,
                                 double timeout_seconds, std::FILE* log_out,
                                 const std::atomic<std::uint64_t>* others,
                                 std::vector<const device_view*> shown,
                                 std::atomic<bool>* fired_in_process)
    : view_(view),
      job_(std::move(job)),
      shown_(shown.empty() ? job_ : std::move(shown)),
      others_(others),
      fired_in_process_(fired_in_process),
      timeout_seconds_(timeout_seconds),
      log_out_(log_out) {
  thread_ = std::thread([this] { loop(); });
}

progress_engine::~progress_engine() { stop(); }

void progress_engine::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_relaxed);
  thread_.join();
  drain_log();
}

std::string progress_engine::watchdog_report() const {
  std::lock_guard<std::mutex> lock(report_mutex_);
  return report_;
}

std::string progress_engine::first_report(const std::vector<const progress_engine*>& engines) {
  const progress_engine* first = nullptr;
  for (const progress_engine* e : engines)
    if (!e->report_.empty() && (first == nullptr || e->fired_at_ < first->fired_at_)) first = e;
  return first == nullptr ? std::string() : first->report_;
}

bool progress_engine::drain_log() {
  bool any = false;
  log_record record;
  while (ring_try_pop<scope::system>(*view_.log, record)) {
    std::fprintf(log_out_, "[rank %d] %.*s\n", record.rank, int(record.length), record.text);
    any = true;
  }
  if (any) std::fflush(log_out_);
  return any;
}

void progress_engine::loop() {
  using clock = std::chrono::steady_clock;
  // Other nodes' progress counts as this node's.
  auto signature_now = [&] {
    return progress_signature(job_) +
           (others_ ? others_->load(std::memory_order_relaxed) * 0x9e3779b97f4a7c15ull : 0);
  };
  std::uint64_t last_signature = signature_now();
  clock::time_point last_move = clock::now();
  clock::time_point next_check = last_move;
  bool fired = false;
  while (!stopping_.load(std::memory_order_relaxed)) {
    const bool printed = drain_log();
    const clock::time_point now = clock::now();
    if (timeout_seconds_ > 0 && !fired && now >= next_check) {
      next_check = now + std::chrono::milliseconds(10);
      const std::uint64_t signature = signature_now();
      if (signature != last_signature || !any_rank_blocked(job_)) {
        last_signature = signature;
        last_move = now;
      } else if (std::chrono::duration<double>(now - last_move).count() >= timeout_seconds_) {
        fired = true;
        report_and_abort(std::chrono::duration<double>(now - last_move).count());
      }
    }
    if (!printed) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void progress_engine::report_and_abort(double still_seconds) {
  // A process that plays several nodes reports once, from the first of its
  // watchdogs to fire (their reports name the same ranks); that one's abort
  // reaches the other nodes through their engines. (Relaxed: the claim
  // orders nothing else.)
  if (fired_in_process_ != nullptr && fired_in_process_->exchange(true, std::memory_order_relaxed))
    return;
  std::string report = blocked_ranks_report(shown_, still_seconds);
  const auto stamp = std::chrono::steady_clock::now();  // before any abort of this watchdog's
  // The node's devices share its control block: the watchdog that leaves
  // the report there prints it, once for the node.
  const bool left = leave_report(*view_.control, report);
  if (left) {
    std::fprintf(stderr, "%s\n", report.c_str());
    std::fflush(stderr);
  }
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    report_ = std::move(report);
    fired_at_ = stamp;
  }
  // Release: the report is stored (here and in the control block) before
  // ranks leave their waits and engines forward the abort. Where another
  // watchdog of the node left its report first, that one raises the abort
  // (after its report is complete).
  if (left) store_release<scope::system>(view_.control->abort, 1u);
}

}  // namespace grma::detail
