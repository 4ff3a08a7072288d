// A network engine's part in host-issued operations (papers/003; the port
// is host_port.hpp). It takes what its process's host threads submitted,
// serves an operation on its own process's ranks itself (through its
// device access, no network), and sends the others to the engine of their
// target's process, which serves them as it serves ranks' requests from
// other nodes: checked, in order per origin, acknowledged once in place.
// An operation completes once acknowledged and, for a get or a fetching
// atomic, answered: the answer written into the host's buffer.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "engine_context.hpp"
#include "grma/detail/device_state.hpp"
#include "host_port.hpp"

namespace grma::detail {

class engine_intake;
class engine_operations;

class engine_host {
 public:
  engine_host(engine_context& cx, std::shared_ptr<host_port> port, engine_intake& intake,
              engine_operations& operations);

  // The engine's thread starts: the port learns the job's shape.
  void attach();
  // Takes and starts what host threads submitted; whether there was any.
  bool take();

  // At the origin. `count` host operations that process `from` served are
  // in place (`from` may be this engine's own process).
  void acknowledged(int from, std::uint64_t count);
  // The answer of process `from` to the oldest unanswered host operation
  // sent there: inline (a get's data, an atomic's old value), or a get's
  // data following on the data channel.
  void answer(int from, const remote_command& reply);
  // The answer to the oldest unanswered host operation this engine served
  // itself: a get's data read from `at`, or an atomic's old value.
  void answer_here(const unsigned char* at);
  void answer_here(std::uint64_t old);

  // Every operation taken is complete.
  bool answered() const { return in_flight_ == 0; }
  // The process's ranks have returned: host threads may submit no more.
  void stop_taking();
  // The engine stops: what is still in flight fails with `why`.
  void close(const std::string& why);
  std::size_t in_flight() const { return in_flight_; }

 private:
  using operation = std::shared_ptr<host_operation>;
  void start(const operation& op);
  void part_done(const operation& op);
  operation oldest_unanswered(int from);

  engine_context& cx_;
  std::shared_ptr<host_port> port_;
  engine_intake& intake_;
  engine_operations& operations_;
  std::deque<operation> taken_;
  // By the target's process: operations sent there (or served here) that
  // wait for their acknowledgement, and for their answer; each process
  // serves a host origin's operations in order, so both come in order.
  std::vector<std::deque<operation>> acks_due_, answers_due_;
  std::size_t in_flight_ = 0;
};

}  // namespace grma::detail
