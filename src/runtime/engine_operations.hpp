// What a network engine does with the messages other processes' engines
// send: it receives their headers in batches and hands each to the handler
// its op names in one table. A rank's request is checked against this
// node's window table (a target trusts nothing it receives), then served;
// the engines' own messages go to the piece of the engine they are for.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "grma/error.hpp"
#include "engine_context.hpp"
#include "engine_intake.hpp"
#include "engine_windows.hpp"

namespace grma::detail {

class engine_arrivals;
class engine_completion;
class engine_host;
class engine_liveness;

// The rank's call that a request from another node carries out (for a
// strided or non-blocking form, its blocking one).
call call_of(const remote_command& c);

// The error record of request `c`'s refusal: `origin` as error.cpp shows
// it (a rank, or -1 - p for the host of process p), `rank` the target
// where it is this node's (else -1), `registered` the bytes the target has.
error_record refusal_record(const remote_command& c, refusal why, std::uint64_t registered,
                            std::int64_t origin, int rank, call where);

class engine_operations {
 public:
  engine_operations(engine_context& cx, engine_intake& intake, engine_completion& completion,
                    engine_arrivals& arrivals, engine_liveness& liveness, engine_host& host);

  // Posts the receives of header batches.
  void listen();
  // Handles a request or message from process `from` (this engine's own
  // for a host operation it serves itself), or queues it behind those of
  // `from` that wait for a window. `bytes`: its inline bytes (wire_read),
  // or null where they are in c.data.
  void receive(int from, const remote_command& c, const unsigned char* bytes = nullptr);
  // Handles what waits for a window its node has not created yet, in order.
  bool handle_waiting();
  bool waits_any() const;
  // By process: requests that wait for a window (see handle).
  std::size_t waiting(int process) const { return waiting_[std::size_t(process)].size(); }

  // A host's notified operation whose notification the target's ranks
  // returned without taking (engine_completion::drop_held): its origin's
  // request fails, as one the job ended before.
  void untaken_host_notification(int origin, std::uint32_t number);

  // Sends a get's data back (inline, or after a reply header), then runs
  // `read`, once the engine no longer reads the target's memory.
  void reply_to_get(int to, const remote_command& c, const unsigned char* at, std::function<void()> read);

 private:
  // A posted receive of a batch of headers; taken in the order posted.
  struct header_receive {
    std::vector<unsigned char> batch = std::vector<unsigned char>(batch_bytes);  // wire_format
    int from = -1;
    std::size_t bytes = 0;
    bool arrived = false;
  };

  // A header as received: its inline bytes are in the batch, or in c.data.
  struct header {
    remote_command c;
    const unsigned char* bytes;
  };
  // One that waits for a window, with a copy of its inline bytes.
  struct waiting_header {
    remote_command c;
    std::vector<unsigned char> bytes;
  };

  // What a message's op does at this engine; false: not yet (see handle).
  using handler = bool (*)(engine_operations& o, int from, const remote_command& c,
                           const unsigned char* bytes);
  using handler_table = std::array<handler, 256>;  // by op, a byte
  static const handler_table handlers_;

  enum class verdict { ok, later, refused };

  void post_header_receive(std::unique_ptr<header_receive> r);
  void take_headers();
  bool handle(int from, const remote_command& c, const unsigned char* bytes);
  bool about_to_exist(const window_slot& s, std::uint32_t generation, int from) const;
  verdict check(int from, const remote_command& c, unsigned char*& range);
  bool serve(int from, const remote_command& c, const unsigned char* bytes);
  void refuse_host_operation(int from, const remote_command& c, refusal why,
                             std::uint64_t registered);

  engine_context& cx_;
  engine_intake& intake_;
  engine_completion& completion_;
  engine_arrivals& arrivals_;
  engine_liveness& liveness_;
  engine_host& host_;
  engine_windows windows_;
  std::deque<std::unique_ptr<header_receive>> inbound_;  // posted, oldest first
  std::vector<header> decoded_;  // a batch's headers (take_headers), kept for their room
  std::vector<std::deque<waiting_header>> waiting_;  // by process: see handle()
  std::vector<unsigned char> answer_;                // a get's answer on its way into its header
  std::vector<engine_clock::time_point> waiting_since_;  // by process
};

}  // namespace grma::detail
