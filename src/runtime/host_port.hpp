// Host-initiated one-sided access into a running job (papers/003): what a
// host thread's operation is while it is in flight, and the port through
// which host threads hand operations to their process's network engine.
//
// Any thread may submit; only the engine's thread takes. The port exists
// from runtime::launch (launch_options::host_access) to the end of the
// job; the engine attaches to it when it starts and closes it when it
// stops, failing whatever is still in flight, so nothing waits for ever.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"

namespace grma::detail {

// One host-issued operation. The engine's thread completes it: it writes
// the answer (a get's data, an atomic's old value) into the host's buffer,
// then stores `outcome` with release; the issuing thread loads it with
// acquire before it reads the buffer.
struct host_operation {
  enum : std::uint32_t { in_flight = 0, complete = 1, failed = 2 };
  remote_command c{};            // origin, target, window, sizes; `address`: the host's buffer
  void* old = nullptr;           // a fetching atomic's: where its old value goes (c.bytes)
  int parts_left = 0;            // engine thread only: acknowledgement, answer
  std::atomic<std::uint32_t> outcome{in_flight};
  // Written before outcome = failed: the message, and the error's code
  // (the job's end, or a refusal of this operation alone).
  std::string failure;
  errc failure_code = errc::process_failed;
};

// The job:: call an operation came from (its name in messages).
call host_call(const remote_command& c);
// An operation in messages: "job::put to rank 3 (8 bytes)".
std::string host_operation_text(const remote_command& c);
// A host call's message: "grma: job::<name>: <why>".
std::string host_call_text(const char* name, const std::string& why);
// Why host calls fail once the job failed (errc::aborted).
inline constexpr const char* job_failed_text = "the job failed (its wait() says how)";

// What job::put and the others find of a window handle.
enum class window_found { live, freed, never_created };

class host_port {
 public:
  // What the host needs to know of the running job, set when its engine
  // attaches: the node's window table (its state words are host-visible),
  // the world size and the origin number of this process's host.
  struct job_shape {
    const std::uint64_t* window_states = nullptr;
    std::uint32_t window_capacity = 0;
    int world_size = 0;
    int origin = 0;  // world_size + the engine's process: a host notification's source
    std::uint64_t heap_size = 0;  // a device's memory: no window's range is larger
    // The job spans nodes: world windows take slots from the top down
    // there, from the bottom up on one node (rank.hpp, window_create).
    bool world_from_top = false;
  };

  // `timeout_seconds`: how long a wait for one operation may take (GRMA_TIMEOUT).
  explicit host_port(double timeout_seconds) : timeout_seconds_(timeout_seconds) {}
  double timeout_seconds() const { return timeout_seconds_; }

  // Any thread. The job's shape for a call `where` about to submit;
  // throws grma::error naming the call where the job is not running
  // (before its engine attached, or once new operations are refused: how
  // the job stopped is said).
  job_shape running_shape(call where) const;
  // Throws as running_shape does once new operations are refused (the
  // caller had its shape from running_shape).
  void submit(std::shared_ptr<host_operation> op);
  // The live world windows of the job now, highest slot first; empty
  // before the engine attached. Throws once the port is closed: the state
  // words are in the job's memory, which goes after the engine stops.
  std::vector<window> world_windows() const;
  // Whether `w` is a live world window now, was one, or never was (throws
  // as world_windows does, naming `where`).
  window_found find_world_window(window w, call where) const;
  job_shape shape() const;

  // The engine's thread.
  void attach(const job_shape& shape);
  // Moves up to `most` of what was submitted into `into`; whether any.
  bool take(std::deque<std::shared_ptr<host_operation>>& into, std::size_t most);
  // Whether submitted operations wait to be taken (the engine's own view:
  // after refuse_new, no more arrive).
  bool pending() const { return any_submitted_.load(std::memory_order_relaxed); }
  // No new operations: later calls fail with `why` ("the job failed (its
  // wait() says how)") and `code`; those submitted are still taken. A
  // later errc::aborted replaces another code (the job failed after its
  // ranks returned).
  void refuse_new(const std::string& why, errc code);
  // The same, and those submitted and not taken fail with `why` and `code`.
  void close(const std::string& why, errc code);

  // Completes or fails `op` (the engine's thread), and wakes its waiters.
  void finish(host_operation& op);
  // Its message names the operation: "grma: job::put to rank 3 (8 bytes): <why>".
  void fail_operation(host_operation& op, const std::string& why, errc code);

  // Any thread: waits until `op` is no longer in flight or `seconds` have
  // passed; whether it is no longer in flight.
  bool wait(const host_operation& op, double seconds) const;

 private:
  const double timeout_seconds_;
  void throw_if_closed(call where, const char* name) const;  // under mutex_
  void refuse_new_locked(const std::string& why, errc code);

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  job_shape shape_{};
  bool attached_ = false;
  bool closed_ = false;
  std::string closed_why_;
  errc closed_code_ = errc::none;
  std::deque<std::shared_ptr<host_operation>> submitted_;
  // Whether submitted_ may hold any: the engine looks every turn, and
  // takes the mutex only when it does.
  std::atomic<bool> any_submitted_{false};
};

}  // namespace grma::detail
