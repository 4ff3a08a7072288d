// A network engine's intake: the commands its process's ranks queue for
// other nodes, taken from their devices' command rings and sent, a put's
// bytes after its header; and the batches of headers every piece of the
// engine sends through.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "engine_context.hpp"
#include "grma/detail/device_state.hpp"
#include "wire_format.hpp"

namespace grma::detail {

class engine_arrivals;
class engine_completion;

// Headers for one process travel together, up to this many bytes in a
// message (under Open MPI's shared-memory eager limit of 4 KiB, so a batch
// costs the receiver one copy and no handshake): 32 of the longest headers
// (wire_format), 60 of the shortest.
inline constexpr std::size_t batch_bytes = 32 * wire_header_most;
// Messages of headers in flight to one process at most, and headers queued
// (for all processes, replies and acknowledgements too) beyond which the
// engine takes no more commands: under load the ranks wait for room in
// their rings, not the transport's queues for the engine (with thousands
// of sends in flight each poll of an MPI transport scans them all). One
// slow process thus holds up the commands for every process, as a full
// ring would.
inline constexpr int header_messages_in_flight = 4;
inline constexpr std::size_t headers_queued_at_most = 1024;

class engine_intake {
 public:
  engine_intake(engine_context& cx, engine_completion& completion, engine_arrivals& arrivals);

  // Takes and starts the commands queued in the rings; whether there were any.
  bool take_commands();

  // Headers wait in a queue per process until the engine flushes them
  // (after taking its ranks' commands, after each poll that completed
  // something, and at the end of each turn). A lone header, which finds no
  // message in flight to its process, goes in the same turn; while one is
  // in flight, only full batches (batch_bytes) go, up to
  // header_messages_in_flight, so under load many operations share a
  // message. Their data and records follow on channels of their own,
  // which the receiver takes in header order.
  void send_header(int to, const remote_command& c);
  // The same for a header that may wait for company: an acknowledgement
  // goes with the next header for its process (a ping-pong's answer, which
  // the target's rank issues within a turn of the notification that the
  // acknowledgement is for), or alone at the next turn's first flush. One
  // message then carries both (a message is a send and a receive to poll
  // at either end, most of an engine's time in a round trip over MPI).
  void send_header_soon(int to, const remote_command& c);
  void flush_headers();
  // The same without waiting for messages in flight: the engine's last.
  void flush_all_headers();
  // As many headers queued as the engine lets wait: it takes no more
  // commands (nor host operations) until some have gone.
  bool full() const { return queued_ >= headers_queued_at_most; }

 private:
  void queue_header(int to, const remote_command& c, bool soon);
  void flush_headers(int to, bool now);
  void start(const remote_command& c, const unsigned char* payload);
  void send_source(int to, const remote_command& c);
  void send_payload(int to, const remote_command& c, const unsigned char* payload);

  engine_context& cx_;
  engine_completion& completion_;
  engine_arrivals& arrivals_;
  std::vector<ring_reader> readers_;                    // of this process's command rings
  struct outgoing_header {
    remote_command c;
    bool soon;  // send_header_soon's
  };
  std::vector<std::deque<outgoing_header>> outgoing_;  // by process: headers not sent yet
  std::vector<std::size_t> outgoing_bytes_;           // by process: theirs on the wire
  std::size_t queued_ = 0;                             // in outgoing_, all processes
  std::vector<int> in_flight_;                         // by process: messages of headers
  // By process: headers in outgoing_ that go at once (not send_header_soon's),
  // and the turn (engine_context::now) the oldest of the others was queued in.
  std::vector<std::size_t> urgent_;
  std::vector<engine_clock::time_point> waiting_since_;
};

}  // namespace grma::detail
