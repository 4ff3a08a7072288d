#include "process_watch.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <utility>

namespace grma::detail {
namespace {

std::uint64_t now_ns() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

void beat(job_control& c) {
  store_relaxed<scope::system>(c.heartbeat_ns, now_ns());
}

}  // namespace

process_watch::process_watch(std::vector<job_control*> beats, int me, job_control* job,
                             int ranks_of)
    : beats_(std::move(beats)), me_(me), job_(job), ranks_of_(ranks_of) {
  store_relaxed<scope::system>(beats_[std::size_t(me_)]->pid, std::int64_t(getpid()));
  beat(*beats_[std::size_t(me_)]);
  thread_ = std::thread([this] { loop(); });
}

process_watch::~process_watch() { stop(); }

void process_watch::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  // A run ends at once, not after the watch's next look.
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string process_watch::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void process_watch::loop() {
  const auto silence = std::uint64_t(silence_limit_seconds * 1e9);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; }))
        return;
    }
    beat(*beats_[std::size_t(me_)]);
    for (std::size_t p = 0; p < beats_.size(); ++p) {
      if (int(p) == me_ || beats_[p] == nullptr) continue;  // null: another node's
      const auto pid = pid_t(load_relaxed<scope::system>(beats_[p]->pid));
      const std::uint64_t last = load_relaxed<scope::system>(beats_[p]->heartbeat_ns);
      const bool gone = pid != 0 && kill(pid, 0) != 0 && errno == ESRCH;
      const bool silent = last != 0 && now_ns() - last > silence;
      if (!gone && !silent) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_.empty()) continue;
      failure_ = "grma: process " + std::to_string(p) + " (pid " + std::to_string(pid) +
                 ", world ranks " + std::to_string(int(p) * ranks_of_) + ".." +
                 std::to_string(int(p + 1) * ranks_of_ - 1) + ") " +
                 (gone ? "exited" : "stopped responding") + " while the job ran";
      store_release<scope::system>(job_->abort, 1u);
    }
  }
}

}  // namespace grma::detail
