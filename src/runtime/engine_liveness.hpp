// Whether the job goes on, as a network engine sees it: it beats to the
// other processes and takes a silent one for lost; it forwards its node's
// abort (with the report a watchdog left in the node's control block) and
// raises the others' aborts here, adding what it holds to the report; and it
// ends the job when another engine sends what it never asks for.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "grma/error.hpp"
#include "grma/types.hpp"
#include "engine_context.hpp"

namespace grma::detail {

class engine_completion;
class engine_host;
class engine_intake;
class engine_operations;

class engine_liveness {
 public:
  engine_liveness(engine_context& cx, engine_intake& intake, const engine_operations& operations,
                  const engine_completion& completion, const engine_host& host);

  // Every process counts as heard from now: the engine's thread starts.
  void hear_all();
  void heard_from(int p) { heard_[std::size_t(p)] = cx_.now; }
  // Whether anything more of process `p` is used.
  bool trusts(int p) const { return !refused_from_[std::size_t(p)]; }

  // wire_done, wire_beat, wire_abort from process `from`.
  void receive_done(int from) { done_from_[std::size_t(from)] = true; }
  void receive_beat(int from, std::uint64_t signature);
  void receive_abort(int from, std::uint64_t report_bytes);
  // Every other node's process said it is done.
  bool everyone_done() const;

  void watch(engine_clock::time_point listened);

  // Ends the job with `why` (a lost process, a network error).
  void lose(const std::string& why);
  void stop_trusting(int from, const error_record& r);
  void malformed(int from, int rank, call where, const char* what);

  std::string failure() const;
  // Progress from outside this process's ranks, which its watchdog counts:
  // another process's beat with a new signature, or a request of another
  // node's rank or of a host served here that writes (what a rank waiting
  // on a word or for a count may be waiting for).
  const std::atomic<std::uint64_t>& others_progress() const { return others_progress_; }
  void served_request() { others_progress_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void fail_job(const error_record& r);
  void forward_abort();
  std::string in_flight() const;
  std::string blocked_here() const;

  engine_context& cx_;
  engine_intake& intake_;
  const engine_operations& operations_;
  const engine_completion& completion_;
  const engine_host& host_;
  std::vector<engine_clock::time_point> heard_;  // by process
  std::vector<std::uint64_t> signatures_;        // by process: the progress it last reported
  std::vector<bool> done_from_, refused_from_;   // by process
  const bool in_process_;  // the other "processes" are nodes this process plays (loopback)
  std::atomic<std::uint64_t> others_progress_{0};
  engine_clock::time_point next_beat_{};
  bool abort_seen_ = false;
  mutable std::mutex failure_mutex_;
  std::string failure_;
};

}  // namespace grma::detail
