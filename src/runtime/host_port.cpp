#include "host_port.hpp"

#include <chrono>
#include <thread>
#include <utility>

#include "engine_operations.hpp"
#include "error_text.hpp"
#include "grma/error.hpp"

namespace grma::detail {

call host_call(const remote_command& c) {
  return c.op == remote_op::put ? call::put : call_of(c);  // not `p`: a host has no p
}

std::string host_operation_text(const remote_command& c) {
  return "job::" + std::string(call_name(host_call(c))) + " to rank " + std::to_string(c.target) +
         " (" + bytes_text(c.bytes) + ")";
}

std::string host_call_text(const char* name, const std::string& why) {
  return "grma: job::" + std::string(name) + ": " + why;
}

void host_port::throw_if_closed(call where, const char* name) const {
  if (closed_) throw error(closed_code_, -1, where, host_call_text(name, closed_why_));
}

void host_port::submit(std::shared_ptr<host_operation> op) {
  std::lock_guard<std::mutex> lock(mutex_);
  const call where = host_call(op->c);
  throw_if_closed(where, call_name(where));  // running_shape saw it attached
  submitted_.push_back(std::move(op));
  // Under the mutex, which the engine takes before it moves the operation.
  any_submitted_.store(true, std::memory_order_relaxed);
}

std::vector<window> host_port::world_windows() const {
  std::lock_guard<std::mutex> lock(mutex_);  // the engine closes the port before the memory goes
  throw_if_closed(call::runtime, "world_windows");
  const job_shape& s = shape_;
  std::vector<window> live;
  // In the order the slots were taken while none was freed: from the top
  // down across nodes, from the bottom up on one node.
  for (std::uint32_t k = 0; k < s.window_capacity; ++k) {
    const std::uint32_t slot = s.world_from_top ? s.window_capacity - 1 - k : k;
    const window_slot w = window_slot_of_state(load_acquire<scope::system>(s.window_states[slot]));
    if (w.active != 0 && w.generation % 2 == 1) live.push_back(window{slot, w.generation});
  }
  return live;
}

window_found host_port::find_world_window(window w, call where) const {
  std::lock_guard<std::mutex> lock(mutex_);
  throw_if_closed(where, call_name(where));
  const job_shape& s = shape_;
  // World windows' generations are odd (window_next_generation).
  if (w.slot >= s.window_capacity || w.generation % 2 == 0) return window_found::never_created;
  const window_slot now =
      window_slot_of_state(load_acquire<scope::system>(s.window_states[w.slot]));
  if (now.active != 0 && now.generation == w.generation) return window_found::live;
  // The slot's k world claims so far gave generations 1, 3, ..., 2k - 1
  // (window_next_generation; counted anew after 32767, where an old handle
  // may be called never created).
  return w.generation / 2 < now.claims[0] ? window_found::freed : window_found::never_created;
}

host_port::job_shape host_port::shape() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shape_;
}

host_port::job_shape host_port::running_shape(call where) const {
  std::lock_guard<std::mutex> lock(mutex_);
  throw_if_closed(where, call_name(where));
  if (!attached_)
    throw error(errc::invalid_config, -1, where,
                host_call_text(call_name(where),
                               "the job's network engine has not started (no world window "
                               "exists yet)"));
  return shape_;
}

void host_port::attach(const job_shape& shape) {
  std::lock_guard<std::mutex> lock(mutex_);
  shape_ = shape;
  attached_ = true;
}

bool host_port::take(std::deque<std::shared_ptr<host_operation>>& into, std::size_t most) {
  // Relaxed: a submission it misses is taken at the next turn; the mutex
  // orders the operation itself.
  if (!any_submitted_.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (submitted_.empty()) return false;
  for (; most != 0 && !submitted_.empty(); --most) {
    into.push_back(std::move(submitted_.front()));
    submitted_.pop_front();
  }
  any_submitted_.store(!submitted_.empty(), std::memory_order_relaxed);
  return true;
}

void host_port::refuse_new_locked(const std::string& why, errc code) {
  // A failure found later is what later calls say (an end said first).
  if (closed_ && (closed_code_ == errc::aborted || code != errc::aborted)) return;
  closed_ = true;
  closed_why_ = why;
  closed_code_ = code;
}

void host_port::refuse_new(const std::string& why, errc code) {
  std::lock_guard<std::mutex> lock(mutex_);
  refuse_new_locked(why, code);
}

void host_port::close(const std::string& why, errc code) {
  std::deque<std::shared_ptr<host_operation>> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    refuse_new_locked(why, code);
    left.swap(submitted_);
    any_submitted_.store(false, std::memory_order_relaxed);
  }
  for (auto& op : left) fail_operation(*op, why, code);
}

void host_port::finish(host_operation& op) {
  // Release: the answer written into the host's buffer before it.
  op.outcome.store(host_operation::complete, std::memory_order_release);
  { std::lock_guard<std::mutex> lock(mutex_); }  // a waiter is in wait_for, or sees the outcome
  changed_.notify_all();
}

void host_port::fail_operation(host_operation& op, const std::string& why, errc code) {
  op.failure = "grma: " + host_operation_text(op.c) + ": " + why;
  op.failure_code = code;
  op.outcome.store(host_operation::failed, std::memory_order_release);
  { std::lock_guard<std::mutex> lock(mutex_); }
  changed_.notify_all();
}

bool host_port::wait(const host_operation& op, double seconds) const {
  // A short spin first: an operation on the node completes in microseconds,
  // and a sleep and wakeup cost more than that.
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + std::chrono::microseconds(50);
  while (op.outcome.load(std::memory_order_acquire) == host_operation::in_flight) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= spin_until) break;
    std::this_thread::yield();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, std::chrono::duration<double>(seconds), [&] {
    return op.outcome.load(std::memory_order_acquire) != host_operation::in_flight;
  });
}

}  // namespace grma::detail
