#include "engine_completion.hpp"

#include <cstring>

#include "engine_host.hpp"
#include "engine_intake.hpp"
#include "engine_liveness.hpp"
#include "engine_operations.hpp"

namespace grma::detail {

engine_completion::engine_completion(engine_context& cx, engine_intake& intake,
                                     engine_operations& operations, engine_liveness& liveness,
                                     engine_host& host)
    : cx_(cx),
      intake_(intake),
      operations_(operations),
      liveness_(liveness),
      host_(host),
      completing_(std::size_t(cx.origins())),
      landed_(cx.own.size() * std::size_t(cx.ranks_per_device), 0),
      delivered_(cx.own.size() * std::size_t(cx.ranks_per_device), 0) {}

void engine_completion::sent(const remote_command& c) {
  ++unacknowledged_;
  if (remote_answered(c)) gets_.emplace(std::pair{c.origin, c.address}, c.bytes);
}

void engine_completion::acknowledged(const remote_command& c) {
  if (!cx_.mine(c.origin)) return;
  unacknowledged_ -= c.bytes;
  store_count(delivered_, c.origin, false, c.bytes);
}

void engine_completion::land_get(int from, const remote_command& c, const unsigned char* bytes) {
  // Of the answers due into this destination (a program may get into one
  // buffer twice before its quiet), one of this size if there is one.
  const auto [begin, end] = gets_.equal_range({c.origin, c.address});
  if (begin == end || !cx_.mine(c.origin)) return;
  auto it = begin;
  while (it != end && it->second != c.bytes) ++it;
  if (it == end) it = begin;
  auto* destination = reinterpret_cast<unsigned char*>(c.address);
  const std::uint64_t asked = it->second;
  const int origin = c.origin;
  gets_.erase(it);
  if (c.bytes != asked || (c.inline_bytes != 0 && c.inline_bytes != c.bytes)) {
    return liveness_.malformed(from, origin, call::get_notify, "answered a get with a bad size");
  }
  if (c.inline_bytes != 0 || c.bytes == 0) {
    cx_.memory->write(destination, bytes, c.inline_bytes);
    return count_landed(origin);
  }
  cx_.receive_data(from, destination, c.bytes, [this, origin] { count_landed(origin); });
}

void engine_completion::store_count(std::vector<std::uint64_t>& counts, int rank, bool is_landed,
                                    std::uint64_t n) {
  std::uint64_t& mine_count = counts[std::size_t(rank - cx_.first_rank())];
  mine_count += n;
  const device_view& v = cx_.view_of(rank);
  remote_completion& c = v.completion[rank - v.first_rank];
  // Release, after the writes before it: a get's data (landed) is visible
  // to the rank that sees the count (the target's acknowledgement, and
  // thereby its data, for delivered).
  cx_.memory->signal(is_landed ? c.landed : c.delivered, signal_op::set, mine_count);
}

bool engine_completion::overlaps_earlier_write(int origin, const unsigned char* at,
                                               std::uint64_t bytes) const {
  const auto overlaps = [&](const unsigned char* start, std::uint64_t n) {
    return n != 0 && at < start + n && start < at + bytes;
  };
  for (const in_order& r : completing_[std::size_t(origin)]) {
    if ((remote_is_put(r.c.op) || r.c.op == remote_op::atomic) &&
        overlaps(r.range + r.c.offset, r.c.bytes))
      return true;
    if (r.c.op == remote_op::put_signal && overlaps(r.range + r.c.signal_offset, 8)) return true;
  }
  return false;
}

// A rank's requests end in the order it issued them, whichever of their
// data arrived first: its notifications keep their order, and a signal
// never overtakes an earlier put's notification. Other ranks' requests,
// of the same process too, never wait behind them (a small put behind
// another rank's large one).
void engine_completion::complete_in_order(int origin) {
  std::deque<in_order>& queue = completing_[std::size_t(origin)];
  while (!queue.empty() && queue.front().ready) {
    complete(queue.front());
    queue.pop_front();
  }
}

// The data is in place (or read): publish the notification or signal, then
// acknowledge.
void engine_completion::complete(const in_order& r) {
  const remote_command& c = r.c;
  unsigned char* const range = r.range;
  const std::uint32_t number = host_operation_number(c);  // 0 for a rank
  if (r.held) {
    unsigned char* at = range + c.offset;
    // An aligned word of 4 or 8 bytes (a p) is one store: ranks may poll it
    // with wait_until while it lands.
    const bool word = c.op == remote_op::put && (c.inline_bytes == 4 || c.inline_bytes == 8) &&
                      reinterpret_cast<std::uintptr_t>(at) % c.inline_bytes == 0;
    if (word) {
      std::uint64_t value = 0;
      std::memcpy(&value, c.data, c.inline_bytes);
      cx_.memory->store_word(at, c.inline_bytes, value);
    } else {
      cx_.memory->write(at, r.bytes.empty() ? c.data : r.bytes.data(), c.bytes);
    }
  }
  if (c.op == remote_op::atomic) {
    void* word = range + c.offset;
    const auto op = remote_atomic(c.signal_op);
    if (c.tag == 0) {  // no answer: the acknowledgement waits for it to land (send_acks)
      cx_.memory->atomic_unanswered(word, std::uint32_t(c.bytes), op, c.signal_value,
                                    c.signal_offset);
      return acknowledge(c.origin, number);
    }
    const std::uint64_t old =
        cx_.memory->atomic(word, std::uint32_t(c.bytes), op, c.signal_value, c.signal_offset);
    const int to = cx_.process_of_origin(c.origin);
    if (to == cx_.nodes.process) {  // a host operation served here
      host_.answer_here(c, old);
    } else {  // the old value, as a get's inline data
      remote_command reply = c;
      reply.op = wire_get_reply;
      reply.inline_bytes = std::uint16_t(c.bytes);
      std::memcpy(reply.data, &old, c.bytes);
      intake_.send_header(to, reply);
    }
    acknowledge(c.origin, number);
    return;
  }
  if (c.op == remote_op::put) {
    acknowledge(c.origin, number);
    return;
  }
  if (c.op == remote_op::get) {
    // The data is read when the get is served, in the origin's order; an
    // origin's later put to the same bytes before its quiet may be seen in
    // a large get's data (a program's race, as in OpenSHMEM).
    const int origin = c.origin;
    operations_.reply_to_get(cx_.process_of_origin(origin), c, range + c.offset,
                             [this, origin, number] { acknowledge(origin, number); });
    return;
  }
  if (c.op == remote_op::put_signal) {
    cx_.memory->signal(*reinterpret_cast<std::uint64_t*>(range + c.signal_offset),
                       signal_op(c.signal_op), c.signal_value);
    acknowledge(c.origin, number);
    return;
  }
  const bool host = cx_.is_host_origin(c.origin);
  const int ring_device = cx_.device_of(host ? c.target : c.origin);
  const auto at = outboxes_.try_emplace({c.target, ring_device}).first;
  outbox& o = at->second;
  std::uint64_t ticket = 0;
  if (host) {  // as the device's ranks take theirs (relaxed: it publishes nothing)
    o.shared = true;
    ticket = cx_.memory->atomic(&cx_.views[std::size_t(ring_device)]->tickets[c.target], 8,
                                remote_atomic::add, 1, 0);
  }
  // A put_notify's or get_notify's immediate travels as its signal_value.
  o.held.push_back(
      {notification{c.window, c.origin, c.tag, 0, c.signal_value}, c.origin, ticket, number});
  ++held_;
  publish(at);
  if (!o.held.empty() && !o.listed) {
    o.listed = true;
    holding_.push_back(at);
  }
}

// Publishes what the ring has room for, in order.
bool engine_completion::publish(outbox_map::iterator at) {
  bool any = false;
  const auto [target, origin_device] = at->first;
  outbox& o = at->second;
  const device_view& v = cx_.view_of(target);
  notification_ring& q = v.queue(target, origin_device);
  const auto ticket = [&] { return o.shared ? o.held.front().ticket : o.next; };
  while (!o.held.empty() && ring_has_credit(v.queue_capacity, ticket(), o.known_consumed,
                                            [&] { return cx_.memory->consumed(q); })) {
    // The data is visible before the notification (engine_memory).
    cx_.memory->publish(q, v.queue_capacity, ticket(), o.held.front().n);
    ++o.next;
    acknowledge(o.held.front().origin, o.held.front().ack);
    o.held.pop_front();
    --held_;
    any = true;
  }
  return any;
}

bool engine_completion::publish_held() {
  bool any = false;
  // An outbox leaves the list once it is empty (publish may not empty it).
  std::size_t kept = 0;
  for (const auto at : holding_) {
    any |= publish(at);
    if (!at->second.held.empty())
      holding_[kept++] = at;
    else
      at->second.listed = false;
  }
  holding_.resize(kept);
  return any;
}

void engine_completion::drop_held() {
  for (const auto at : holding_) {
    outbox& o = at->second;
    // A rank's operation is done (its data is in place, and its quiet waits
    // for no more); a host's completes only with its notification in place,
    // so it fails.
    for (const held_notification& h : o.held)
      if (cx_.is_host_origin(h.origin))
        operations_.untaken_host_notification(h.origin, h.ack);
      else
        acknowledge(h.origin, h.ack);
    held_ -= o.held.size();
    o.held.clear();
    o.listed = false;
  }
  holding_.clear();
}

bool engine_completion::send_acks() {
  if (!acks_.empty()) {
    acks_waiting_.emplace_back(cx_.memory->mark(), std::move(acks_));
    acks_.clear();
  }
  bool any = false;
  while (!acks_waiting_.empty() && cx_.memory->landed(acks_waiting_.front().first)) {
    for (auto& [key, count] : acks_waiting_.front().second) {
      const auto [origin, number] = key;
      const int to = cx_.process_of_origin(origin);
      if (to == cx_.nodes.process) {  // a host operation served here
        host_.acknowledged(number);
        continue;
      }
      remote_command a{};
      a.op = wire_ack;
      a.origin = origin;
      a.bytes = count;
      a.flags = number << remote_flag_bits;
      intake_.send_header_soon(to, a);
    }
    acks_waiting_.pop_front();
    any = true;
  }
  return any;
}

}  // namespace grma::detail
