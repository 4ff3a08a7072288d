// Liveness of the other processes of a job on this node. Each process's host
// beats in its first device's job_control; a thread here checks the others'.
// A process that exited (its pid is gone) or stopped beating for
// silence_limit_seconds ends the run: the watch raises the job's abort flag, so
// every rank leaves its wait, and keeps a message naming the process.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

// How long another process or node may stay silent before it is taken for
// lost (this watch, and the network engines between nodes): 5 s, and ten
// times that under ThreadSanitizer, whose threads run many times slower,
// so that load alone is not taken for a loss. No test of a lost process
// runs there.
#if defined(__SANITIZE_THREAD__)
inline constexpr double silence_limit_seconds = 50.0;
#else
inline constexpr double silence_limit_seconds = 5.0;
#endif

class process_watch {
 public:
  // `beats[p]` is process p's first device's own job_control (as mapped
  // here; null for processes on other nodes, which the network engine
  // watches); `job` the node's; `ranks_of` the world ranks per process.
  process_watch(std::vector<job_control*> beats, int me, job_control* job, int ranks_of);
  ~process_watch();
  process_watch(const process_watch&) = delete;
  process_watch& operator=(const process_watch&) = delete;

  void stop();
  // Why the watch ended the run, else empty.
  std::string failure() const;

 private:
  void loop();

  std::vector<job_control*> beats_;
  int me_;
  job_control* job_;
  int ranks_of_;
  mutable std::mutex mutex_;  // guards stopping_ and failure_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string failure_;
  std::thread thread_;
};

}  // namespace grma::detail
