#include "engine_intake.hpp"

#include <cstring>
#include <memory>
#include <utility>

#include "engine_arrivals.hpp"
#include "engine_completion.hpp"

namespace grma::detail {

engine_intake::engine_intake(engine_context& cx, engine_completion& completion, engine_arrivals& arrivals)
    : cx_(cx), completion_(completion), arrivals_(arrivals) {
  for (const device_view* v : cx_.own) readers_.push_back(ring_reader{0, 0, v->commands->mask});
  outgoing_.resize(std::size_t(cx_.nodes.processes));
  outgoing_bytes_.resize(std::size_t(cx_.nodes.processes), 0);
  in_flight_.resize(std::size_t(cx_.nodes.processes), 0);
  urgent_.resize(std::size_t(cx_.nodes.processes), 0);
  waiting_since_.resize(std::size_t(cx_.nodes.processes));
}

bool engine_intake::take_commands() {
  bool any = false;
  for (std::size_t d = 0; d < cx_.own.size(); ++d) {
    const device_view& v = *cx_.own[d];
    ring_reader& reader = readers_[d];
    // The ring's consumed count is in the device's memory
    // (device_words::commands_consumed), released through `memory` every
    // quarter ring: a rank waits for room only with a ticket a whole ring
    // past the last release, and the quarter ring of commands before it,
    // whose ranks have room, come and release it. Not after every batch:
    // on a GPU a release is an operation of the proxy, and commands that
    // come one a turn (small puts across nodes) cost it one each.
    auto release = [&] {
      cx_.memory->signal(v.words->commands_consumed, signal_op::set, reader.head);
      reader.released = reader.head;
    };
    remote_command c;
    for (std::uint64_t ticket = reader.head;
         !full() && ring_try_pop<scope::system>(*v.commands, reader, c); ticket = reader.head) {
      start(c, v.payload(ticket));
      any = true;
      if (reader.head - reader.released > reader.mask / 4) release();
    }
  }
  return any;
}

void engine_intake::start(const remote_command& c, const unsigned char* payload) {
  if (c.op == remote_op::arrive) return arrivals_.forward(c.offset);
  const int to = cx_.process_of_rank(c.target);
  completion_.sent(c);
  if ((c.flags & remote_flag_payload) == 0) {
    send_header(to, c);
    if (remote_sends_source(c)) send_source(to, c);
    return;
  }
  remote_command header = c;
  header.flags &= ~remote_flag_payload;
  send_header(to, header);
  send_payload(to, c, payload);
}

// A put's bytes. Where the network reaches the device, sent from the
// rank's own buffer, which the rank gets back when the send completes.
// (Staging copies that let the rank go on at once measured slower on the
// CPU backend: the many sends in flight cost the transport's polling more
// than the waits they saved.) Else from a staging copy: the rank's buffer
// is free once the copy is made.
void engine_intake::send_source(int to, const remote_command& c) {
  const int origin = c.origin;
  cx_.send_data(to, reinterpret_cast<const unsigned char*>(c.address), c.bytes,
                [this, origin] { completion_.count_landed(origin); });
}

// A put's bytes from its command's payload slot (the ring's acquire made
// them visible), copied out at once: the slot is the ranks' again once the
// engine releases the ring's consumed count past it. The rank counts
// nothing landed for it (remote_lands).
void engine_intake::send_payload(int to, const remote_command& c, const unsigned char* payload) {
  std::shared_ptr<unsigned char[]> copy(new unsigned char[c.bytes]);
  std::memcpy(copy.get(), payload, c.bytes);
  cx_.send_data(
      to, copy.get(), c.bytes, [copy] {}, engine_context::memory_kind::host);
}

void engine_intake::send_header(int to, const remote_command& c) {
  queue_header(to, c, false);
}

void engine_intake::send_header_soon(int to, const remote_command& c) {
  queue_header(to, c, true);
}

void engine_intake::queue_header(int to, const remote_command& c, bool soon) {
  std::deque<outgoing_header>& queue = outgoing_[std::size_t(to)];
  if (queue.empty()) waiting_since_[std::size_t(to)] = cx_.now;
  queue.push_back({c, soon});
  ++queued_;
  if (!soon) ++urgent_[std::size_t(to)];
  outgoing_bytes_[std::size_t(to)] += wire_bytes(c);
  if (outgoing_bytes_[std::size_t(to)] >= batch_bytes) flush_headers(to, false);
}

void engine_intake::flush_headers(int to, bool now) {
  std::deque<outgoing_header>& queue = outgoing_[std::size_t(to)];
  int& in_flight = in_flight_[std::size_t(to)];
  std::size_t& bytes = outgoing_bytes_[std::size_t(to)];
  std::size_t& urgent = urgent_[std::size_t(to)];
  // Headers that may wait go once something must, a batch is full, or
  // they were queued in an earlier turn.
  const bool due =
      now || urgent != 0 || bytes >= batch_bytes || waiting_since_[std::size_t(to)] != cx_.now;
  while (
      !queue.empty() && due &&
      (now || in_flight == 0 || (bytes >= batch_bytes && in_flight < header_messages_in_flight))) {
    auto message = std::make_shared<std::vector<unsigned char>>();
    message->reserve(batch_bytes);
    while (!queue.empty() && message->size() + wire_bytes(queue.front().c) <= batch_bytes) {
      wire_append(*message, queue.front().c);
      if (!queue.front().soon) --urgent;
      queue.pop_front();
      --queued_;
    }
    bytes -= message->size();
    ++in_flight;
    cx_.net->send(to, channel::header, message->data(), message->size(), memory_place::host,
                  [message, this, to] { --in_flight_[std::size_t(to)]; });
  }
}

void engine_intake::flush_headers() {
  for (int p = 0; p < cx_.nodes.processes; ++p) flush_headers(p, false);
}

void engine_intake::flush_all_headers() {
  for (int p = 0; p < cx_.nodes.processes; ++p) flush_headers(p, true);
}

}  // namespace grma::detail
