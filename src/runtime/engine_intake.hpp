// A network engine's intake: the commands its process's ranks queue for
// other nodes, taken from their devices' command rings and sent (a put's
// bytes in its header where they fit, else after it); and the batches of
// headers every piece of the engine sends through.
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
  // `bytes`: a header's inline bytes where they are more than c.data
  // holds (wire_format), copied before the call returns.
  void send_header(int to, const remote_command& c, const unsigned char* bytes = nullptr);
  // Sends put `c`'s header with its c.bytes of data from `bytes` inside it,
  // where they fit one (wire_carried_most); false where they do not, and
  // nothing is sent.
  bool send_carrying(int to, remote_command c, const unsigned char* bytes);
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
  // The headers for one process that are not sent yet, encoded.
  struct outgoing {
    std::vector<unsigned char> wire;  // from `sent` on
    std::size_t sent = 0;
    struct header {
      std::size_t bytes;  // on the wire
      bool soon;          // send_header_soon's
    };
    std::deque<header> headers;
    // Headers that go at once (not send_header_soon's), and the turn
    // (engine_context::now) the oldest of the others was queued in.
    std::size_t urgent = 0;
    engine_clock::time_point waiting_since;
    int in_flight = 0;  // messages of headers
    std::size_t bytes() const { return wire.size() - sent; }
  };

  void queue_header(int to, const remote_command& c, const unsigned char* bytes, bool soon);
  void flush_headers(int to, bool now);
  void start(const remote_command& c, const unsigned char* payload);
  void send_source(int to, const remote_command& c);
  void send_payload(int to, const remote_command& c, const unsigned char* payload);

  engine_context& cx_;
  engine_completion& completion_;
  engine_arrivals& arrivals_;
  std::vector<ring_reader> readers_;  // of this process's command rings
  std::vector<outgoing> outgoing_;    // by process
  std::size_t queued_ = 0;            // headers in outgoing_, all processes
};

}  // namespace grma::detail
