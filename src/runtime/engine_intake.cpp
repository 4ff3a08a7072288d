#include "engine_intake.hpp"

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
}

bool engine_intake::take_commands() {
  bool any = false;
  for (std::size_t d = 0; d < cx_.own.size(); ++d) {
    const device_view& v = *cx_.own[d];
    ring_reader& reader = readers_[d];
    // The ring's consumed count is in the device's memory
    // (device_words::commands_consumed), released through `memory`: after
    // the batch, so a rank that waits for room sees every slot taken, and
    // every quarter ring, so a long batch (large puts' reads) hands room
    // back as it goes.
    auto release = [&] {
      cx_.memory->signal(v.words->commands_consumed, signal_op::set, reader.head);
      reader.released = reader.head;
    };
    remote_command c;
    while (!full() && ring_try_pop<scope::system>(*v.commands, reader, c)) {
      start(c);
      any = true;
      if (reader.head - reader.released > reader.mask / 4) release();
    }
    if (reader.released != reader.head) release();
  }
  return any;
}

void engine_intake::start(const remote_command& c) {
  if (c.op == remote_op::arrive) return arrivals_.forward(c.offset);
  const int to = cx_.process_of_rank(c.target);
  completion_.sent(c);
  send_header(to, c);
  if (remote_sends_source(c)) send_source(to, c);
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

void engine_intake::send_header(int to, const remote_command& c) {
  std::deque<remote_command>& queue = outgoing_[std::size_t(to)];
  queue.push_back(c);
  ++queued_;
  outgoing_bytes_[std::size_t(to)] += wire_bytes(c);
  if (outgoing_bytes_[std::size_t(to)] >= batch_bytes) flush_headers(to, false);
}

void engine_intake::flush_headers(int to, bool now) {
  std::deque<remote_command>& queue = outgoing_[std::size_t(to)];
  int& in_flight = in_flight_[std::size_t(to)];
  std::size_t& bytes = outgoing_bytes_[std::size_t(to)];
  while (!queue.empty() && (now || in_flight == 0 ||
                            (bytes >= batch_bytes && in_flight < header_messages_in_flight))) {
    auto message = std::make_shared<std::vector<unsigned char>>();
    message->reserve(batch_bytes);
    while (!queue.empty() && message->size() + wire_bytes(queue.front()) <= batch_bytes) {
      wire_append(*message, queue.front());
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
