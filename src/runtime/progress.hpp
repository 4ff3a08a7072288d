// The host's progress thread for one device: prints the ranks' log lines and
// runs the watchdog. (The inter-node issue adds command queues and the network.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

class progress_engine {
 public:
  // Prints `view`'s log and watches the whole job (`job`: host-addressed
  // views of all its node's devices, `view`'s among them; `others`, when
  // the job spans nodes, a count that grows while other nodes' ranks move):
  // it ends the run only when no rank anywhere moved. timeout_seconds == 0
  // disables it. Its report names the ranks of `shown` (empty: of `job`):
  // a process that plays several nodes names all of its ranks, whichever
  // node's watchdog fires first, and its watchdogs share `fired_in_process`
  // so that only that one reports.
  progress_engine(const device_view& view, std::vector<const device_view*> job,
                  double timeout_seconds, std::FILE* log_out,
                  const std::atomic<std::uint64_t>* others = nullptr,
                  std::vector<const device_view*> shown = {},
                  std::atomic<bool>* fired_in_process = nullptr);
  ~progress_engine();
  progress_engine(const progress_engine&) = delete;
  progress_engine& operator=(const progress_engine&) = delete;

  // Ends the thread after printing every log line still queued.
  void stop();

  // The watchdog's report when it ended the run, else empty.
  std::string watchdog_report() const;

  // Of `engines` (stopped) whose watchdogs fired, the report of the first to
  // fire, else empty. A later one may have built its report after the first
  // one's abort had let ranks leave their waits: the first saw them all.
  static std::string first_report(const std::vector<const progress_engine*>& engines);

 private:
  void loop();
  bool drain_log();
  // The watchdog fired, no rank having moved for `still_seconds`.
  void report_and_abort(double still_seconds);

  device_view view_;
  std::vector<const device_view*> job_;
  std::vector<const device_view*> shown_;
  const std::atomic<std::uint64_t>* others_;
  std::atomic<bool>* fired_in_process_;
  double timeout_seconds_;
  std::FILE* log_out_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex report_mutex_;
  std::string report_;
  // When the watchdog fired: after its report was built, before its abort.
  std::chrono::steady_clock::time_point fired_at_;
  std::thread thread_;
};

}  // namespace grma::detail
