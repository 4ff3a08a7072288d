// A network engine's part in host-issued operations (papers/003; the port
// is host_port.hpp). It takes what its process's host threads submitted,
// serves an operation on its own process's ranks itself (through its
// device access, no network), and sends the others to the engine of their
// target's process, which serves them as it serves ranks' requests from
// other nodes: checked, in order per origin, acknowledged once in place.
// Each operation has a number its acknowledgement and answer carry back,
// and completes once acknowledged and, for a get or a fetching atomic,
// answered: the answer written into the host's buffer.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "engine_context.hpp"
#include "grma/detail/device_state.hpp"
#include "host_port.hpp"

namespace grma::detail {

class engine_intake;
class engine_liveness;
class engine_operations;

class engine_host {
 public:
  engine_host(engine_context& cx, std::shared_ptr<host_port> port, engine_intake& intake,
              engine_operations& operations, engine_liveness& liveness);

  // The engine's thread starts: the port learns the job's shape.
  void attach();
  // Takes and starts what host threads submitted (a turn's worth: the
  // headers they send count toward the intake's bound); whether any.
  bool take();

  // At the origin. Operation `number` is in place at its target (served
  // by another process's engine, or by this one).
  void acknowledged(std::uint32_t number) { part_done(number); }
  // Process `from`'s answer to an operation (the number in its flags):
  // inline at `bytes` (a get's data, an atomic's old value), or a get's
  // data following on the data channel.
  void answer(int from, const remote_command& reply, const unsigned char* bytes);
  // The answer to operation `c` this engine served itself: a get's data
  // read from `at`, or an atomic's old value.
  void answer_here(const remote_command& c, const unsigned char* at);
  void answer_here(const remote_command& c, std::uint64_t old);
  // The target's engine (of process `from`, this one's too) refused the
  // operation in `refused` (wire_refused): it fails alone, with the refusal.
  void refused(int from, const remote_command& refused);

  // Every operation submitted is taken and complete.
  bool answered() const { return in_flight_.empty() && !(port_ && port_->pending()); }
  std::size_t in_flight() const { return in_flight_.size(); }
  // The process's ranks have returned: host threads may submit no more
  // (what they submitted before is still taken).
  void stop_taking();
  // The engine stops: what is still in flight or submitted fails.
  void close();

 private:
  using operation = std::shared_ptr<host_operation>;
  void start(const operation& op);
  void part_done(std::uint32_t number);
  void fail(const operation& op, const std::string& why, errc code = errc::process_failed);
  // Whether the job failed (its abort word is set): host calls say so.
  bool job_failed() const;
  struct end_reason {
    const char* why;
    errc code;
  };
  end_reason ended() const;
  // Operation `number`, or null (one that failed or completed already).
  operation find(std::uint32_t number) const;

  engine_context& cx_;
  std::shared_ptr<host_port> port_;
  engine_intake& intake_;
  engine_operations& operations_;
  engine_liveness& liveness_;
  std::map<std::uint32_t, operation> in_flight_;  // by number
  std::deque<operation> taken_;                   // a turn's, kept for its room
  std::uint32_t next_number_ = 1;
};

}  // namespace grma::detail
