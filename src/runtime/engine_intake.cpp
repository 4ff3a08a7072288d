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
  if (send_carrying(to, header, payload)) return;
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

void engine_intake::send_header(int to, const remote_command& c, const unsigned char* bytes) {
  queue_header(to, c, bytes, false);
}

bool engine_intake::send_carrying(int to, remote_command c, const unsigned char* bytes) {
  if (c.bytes > wire_carried_most) return false;
  c.inline_bytes = std::uint16_t(c.bytes);
  send_header(to, c, bytes);
  return true;
}

void engine_intake::send_header_soon(int to, const remote_command& c) {
  queue_header(to, c, nullptr, true);
}

void engine_intake::queue_header(int to, const remote_command& c, const unsigned char* bytes,
                                 bool soon) {
  outgoing& o = outgoing_[std::size_t(to)];
  if (o.headers.empty()) o.waiting_since = cx_.now;
  const std::size_t before = o.wire.size();
  wire_append(o.wire, c, bytes);
  o.headers.push_back({o.wire.size() - before, soon});
  ++queued_;
  if (!soon) ++o.urgent;
  if (o.bytes() >= batch_bytes) flush_headers(to, false);
}

void engine_intake::flush_headers(int to, bool now) {
  outgoing& o = outgoing_[std::size_t(to)];
  // Headers that may wait go once something must, a batch is full, or
  // they were queued in an earlier turn.
  const bool due = now || o.urgent != 0 || o.bytes() >= batch_bytes || o.waiting_since != cx_.now;
  while (!o.headers.empty() && due &&
         (now || o.in_flight == 0 ||
          (o.bytes() >= batch_bytes && o.in_flight < header_messages_in_flight))) {
    std::size_t n = 0;
    while (!o.headers.empty() && n + o.headers.front().bytes <= batch_bytes) {
      n += o.headers.front().bytes;
      if (!o.headers.front().soon) --o.urgent;
      o.headers.pop_front();
      --queued_;
    }
    const auto first = o.wire.begin() + std::ptrdiff_t(o.sent);
    auto message = std::make_shared<std::vector<unsigned char>>(first, first + std::ptrdiff_t(n));
    o.sent += n;
    ++o.in_flight;
    cx_.net->send(to, channel::header, message->data(), message->size(), memory_place::host,
                  [message, this, to] { --outgoing_[std::size_t(to)].in_flight; });
  }
  // The encoded headers move to the buffer's front once half of it is sent.
  if (o.sent == o.wire.size()) {
    o.wire.clear();
    o.sent = 0;
  } else if (o.sent > o.wire.size() / 2) {
    o.wire.erase(o.wire.begin(), o.wire.begin() + std::ptrdiff_t(o.sent));
    o.sent = 0;
  }
}

void engine_intake::flush_headers() {
  for (int p = 0; p < cx_.nodes.processes; ++p) flush_headers(p, false);
}

void engine_intake::flush_all_headers() {
  for (int p = 0; p < cx_.nodes.processes; ++p) flush_headers(p, true);
}

}  // namespace grma::detail
