#include "engine_host.hpp"

#include <cstring>
#include <utility>

#include "engine_intake.hpp"
#include "engine_operations.hpp"

namespace grma::detail {

engine_host::engine_host(engine_context& cx, std::shared_ptr<host_port> port, engine_intake& intake,
                         engine_operations& operations)
    : cx_(cx),
      port_(std::move(port)),
      intake_(intake),
      operations_(operations),
      acks_due_(std::size_t(cx.nodes.processes)),
      answers_due_(std::size_t(cx.nodes.processes)) {}

void engine_host::attach() {
  if (!port_) return;
  host_port::job_shape shape;
  shape.window_states = cx_.first->windows.states;
  shape.window_capacity = cx_.first->windows.capacity;
  shape.world_size = cx_.world_size;
  shape.origin = cx_.host_origin(cx_.nodes.process);
  port_->attach(shape);
}

bool engine_host::take() {
  if (!port_ || !port_->take(taken_)) return false;
  while (!taken_.empty()) {
    start(taken_.front());
    taken_.pop_front();
  }
  return true;
}

// The issuing thread filled the command and checked what it could (a live
// world window, a world rank, sizes); the target's engine checks the rest.
void engine_host::start(const operation& op) {
  remote_command& c = op->c;
  c.origin = cx_.host_origin(cx_.nodes.process);
  const int to = cx_.process_of_rank(c.target);
  op->parts_left = remote_answered(c) ? 2 : 1;
  ++in_flight_;
  acks_due_[std::size_t(to)].push_back(op);
  if (remote_answered(c)) answers_due_[std::size_t(to)].push_back(op);
  if (to == cx_.nodes.process) return operations_.receive(to, c);
  intake_.send_header(to, c);
  // A put's bytes from the host's buffer, which the operation holds until
  // its acknowledgement (after they were sent).
  if (remote_sends_source(c))
    cx_.send_data(
        to, reinterpret_cast<const unsigned char*>(c.address), c.bytes, [] {},
        engine_context::memory_kind::host);
}

void engine_host::part_done(const operation& op) {
  if (--op->parts_left != 0 ||
      op->outcome.load(std::memory_order_relaxed) != host_operation::in_flight)
    return;
  --in_flight_;
  port_->finish(*op);
}

void engine_host::acknowledged(int from, std::uint64_t count) {
  std::deque<operation>& due = acks_due_[std::size_t(from)];
  for (; count != 0 && !due.empty(); --count) {
    const operation op = std::move(due.front());
    due.pop_front();
    part_done(op);
  }
}

engine_host::operation engine_host::oldest_unanswered(int from) {
  std::deque<operation>& due = answers_due_[std::size_t(from)];
  if (due.empty()) return nullptr;
  operation op = std::move(due.front());
  due.pop_front();
  return op;
}

void engine_host::answer(int from, const remote_command& reply) {
  const operation op = oldest_unanswered(from);
  if (!op) return;
  if (reply.bytes != op->c.bytes ||
      (reply.inline_bytes != 0 && reply.inline_bytes != reply.bytes)) {
    --in_flight_;
    return port_->fail(*op, "grma: process " + std::to_string(from) +
                                " answered a host operation with a bad size");
  }
  if (op->old != nullptr) {  // a fetching atomic's old value: a word of 8 bytes
    std::memcpy(op->old, reply.data, sizeof *op->old);
    return part_done(op);
  }
  auto* destination = reinterpret_cast<unsigned char*>(op->c.address);
  if (reply.inline_bytes != 0 || reply.bytes == 0) {
    std::memcpy(destination, reply.data, reply.inline_bytes);
    return part_done(op);
  }
  cx_.receive_data(
      from, destination, reply.bytes, [this, op] { part_done(op); },
      engine_context::memory_kind::host);
}

void engine_host::answer_here(const unsigned char* at) {
  const operation op = oldest_unanswered(cx_.nodes.process);
  if (!op) return;
  // A device's memory read into the host's buffer; done when read() returns.
  cx_.memory->read(reinterpret_cast<void*>(op->c.address), at, op->c.bytes);
  part_done(op);
}

void engine_host::answer_here(std::uint64_t old) {
  const operation op = oldest_unanswered(cx_.nodes.process);
  if (!op) return;
  *op->old = old;
  part_done(op);
}

void engine_host::stop_taking() {
  if (!port_) return;
  take();  // what came before is served
  port_->close(
      "grma: host operation after this process's ranks returned (the job has ended "
      "here; issue host operations while job.test() is false)");
}

void engine_host::close(const std::string& why) {
  if (!port_) return;
  port_->close(why);
  for (auto* lists : {&acks_due_, &answers_due_})
    for (std::deque<operation>& due : *lists) {
      for (const operation& op : due)
        if (op->outcome.load(std::memory_order_relaxed) == host_operation::in_flight) {
          --in_flight_;
          port_->fail(*op, why);
        }
      due.clear();
    }
}

}  // namespace grma::detail
