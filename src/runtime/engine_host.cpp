#include "engine_host.hpp"

#include <cstring>
#include <utility>

#include "engine_intake.hpp"
#include "engine_liveness.hpp"
#include "engine_operations.hpp"
#include "error_text.hpp"

namespace grma::detail {

engine_host::engine_host(engine_context& cx, std::shared_ptr<host_port> port, engine_intake& intake,
                         engine_operations& operations, engine_liveness& liveness)
    : cx_(cx),
      port_(std::move(port)),
      intake_(intake),
      operations_(operations),
      liveness_(liveness) {}

void engine_host::attach() {
  if (!port_) return;
  host_port::job_shape shape;
  shape.window_states = cx_.first->windows.states;
  shape.window_capacity = cx_.first->windows.capacity;
  shape.world_size = cx_.world_size;
  shape.origin = cx_.host_origin(cx_.nodes.process);
  shape.heap_size = cx_.first->heap_size;
  shape.world_from_top = cx_.first->nodes > 1;
  port_->attach(shape);
}

namespace {
// Host operations taken a turn: as many headers as full batches of the
// longest fill in all the messages a process may have in flight.
constexpr std::size_t host_operations_per_turn =
    std::size_t(header_messages_in_flight) * (batch_bytes / wire_header_most);
}  // namespace

bool engine_host::take() {
  if (!port_ || intake_.full() || !port_->take(taken_, host_operations_per_turn)) return false;
  for (const operation& op : taken_) start(op);
  taken_.clear();
  return true;
}

// The issuing thread filled the command and checked what it could (a live
// world window, a world rank, sizes); the target's engine checks the rest.
void engine_host::start(const operation& op) {
  remote_command& c = op->c;
  // A number of 24 bits, not 0 (a rank's), not one in flight.
  constexpr std::uint32_t numbers = std::uint32_t{1} << (32 - remote_flag_bits);
  std::uint32_t number = 0;
  do number = next_number_++ % numbers;
  while (number == 0 || in_flight_.count(number) != 0);
  c.origin = cx_.host_origin(cx_.nodes.process);
  c.flags |= number << remote_flag_bits;
  op->parts_left = remote_answered(c) ? 2 : 1;
  in_flight_.emplace(number, op);
  const int to = cx_.process_of_rank(c.target);
  if (to == cx_.nodes.process) return operations_.receive(to, c);
  // A put's bytes from the host's buffer, which the operation holds until
  // its acknowledgement: in its header where they fit (wire_format), else
  // after it.
  if (remote_sends_source(c) &&
      intake_.send_carrying(to, c, reinterpret_cast<const unsigned char*>(c.address)))
    return;
  intake_.send_header(to, c);
  if (remote_sends_source(c))
    cx_.send_data(
        to, reinterpret_cast<const unsigned char*>(c.address), c.bytes, [] {},
        engine_context::memory_kind::host);
}

engine_host::operation engine_host::find(std::uint32_t number) const {
  const auto it = in_flight_.find(number);
  return it == in_flight_.end() ? nullptr : it->second;
}

void engine_host::fail(const operation& op, const std::string& why, errc code) {
  port_->fail_operation(*op, why, code);
}

void engine_host::part_done(std::uint32_t number) {
  const auto it = in_flight_.find(number);
  if (it == in_flight_.end() || --it->second->parts_left != 0) return;
  port_->finish(*it->second);
  in_flight_.erase(it);
}

void engine_host::answer(int from, const remote_command& reply, const unsigned char* bytes) {
  const std::uint32_t number = host_operation_number(reply);
  const operation op = find(number);
  if (!op) return;
  // Inline bytes are all of the answer; a fetching atomic's comes only inline.
  if (reply.bytes != op->c.bytes ||
      (reply.inline_bytes != reply.bytes && (reply.inline_bytes != 0 || op->old != nullptr))) {
    fail(op, "process " + std::to_string(from) + " answered it with a bad size");
    in_flight_.erase(number);
    // Its data channel is out of step now: nothing more of it is used.
    return liveness_.malformed(from, -1, host_call(op->c),
                               "answered a host operation with a bad size");
  }
  if (op->old != nullptr) {  // a fetching atomic's old value: its word's bytes
    std::memcpy(op->old, bytes, op->c.bytes);
    return part_done(number);
  }
  auto* destination = reinterpret_cast<unsigned char*>(op->c.address);
  if (reply.inline_bytes != 0 || reply.bytes == 0) {
    std::memcpy(destination, bytes, reply.inline_bytes);
    return part_done(number);
  }
  cx_.receive_data(
      from, destination, reply.bytes, [this, number] { part_done(number); },
      engine_context::memory_kind::host);
}

void engine_host::answer_here(const remote_command& c, const unsigned char* at) {
  const std::uint32_t number = host_operation_number(c);
  const operation op = find(number);
  if (!op) return;
  // A device's memory read into the host's buffer; done when read() returns.
  cx_.memory->read(reinterpret_cast<void*>(op->c.address), at, op->c.bytes);
  part_done(number);
}

void engine_host::answer_here(const remote_command& c, std::uint64_t old) {
  const std::uint32_t number = host_operation_number(c);
  const operation op = find(number);
  if (!op) return;
  // The word's bytes: the low ones of `old` (little-endian hosts).
  std::memcpy(op->old, &old, op->c.bytes);
  part_done(number);
}

void engine_host::refused(int from, const remote_command& refused) {
  const std::uint32_t number = host_operation_number(refused);
  const operation op = find(number);
  if (!op) return;
  // Only the target's engine answers for it (an operation's bytes may still
  // be on their way to it).
  if (cx_.process_of_rank(op->c.target) != from)
    return liveness_.malformed(from, -1, call::runtime, "refused a host operation sent elsewhere");
  // The target's ranks returned without taking its notification: where
  // the job failed (as the target saw it, signal_value 1, or as this
  // engine does), that is what the request says. The target's word counts
  // too: the failure's record may reach this process after the refusal.
  if (static_cast<refusal>(refused.tag) == refusal::untaken &&
      (refused.signal_value != 0 || job_failed())) {
    fail(op, job_failed_text, errc::aborted);
    in_flight_.erase(number);
    return;
  }
  // The refusal's record names the target rank, as a rank's refused
  // request does; the host's request is named by its own call and target.
  const error_record r =
      refusal_record(op->c, static_cast<refusal>(refused.tag), refused.signal_value,
                     -1 - cx_.nodes.process, op->c.target, host_call(op->c));
  fail(op, describe_values(r), errc::request_refused);
  in_flight_.erase(number);
}

bool engine_host::job_failed() const {
  return load_acquire<scope::system>(cx_.first->control->abort) != 0;
}

// Why host calls fail from the ranks' return on: the job failed, or its
// ranks returned.
engine_host::end_reason engine_host::ended() const {
  if (job_failed()) return {job_failed_text, errc::aborted};
  return {
      "this process's ranks have returned (host operations go into a job while its ranks "
      "run)",
      errc::invalid_config};
}

void engine_host::stop_taking() {
  if (!port_) return;
  const end_reason r = ended();
  port_->refuse_new(r.why, r.code);
}

// The engine stops where everything is answered, or where the job failed
// (a process lost too): what is left then fails with it. A get's data may
// still be on its way into the host's buffer: the engine stops polling the
// network, or abandons it.
void engine_host::close() {
  if (!port_) return;
  const end_reason r = ended();
  port_->close(r.why, r.code);
  for (const auto& [number, op] : in_flight_) fail(op, r.why, r.code);
  in_flight_.clear();
}

}  // namespace grma::detail
