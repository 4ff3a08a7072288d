#include "engine_operations.hpp"

#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "engine_arrivals.hpp"
#include "engine_completion.hpp"
#include "engine_host.hpp"
#include "engine_liveness.hpp"
#include "process_watch.hpp"
#include "wire_format.hpp"

namespace grma::detail {
namespace {

// Header receives posted at once: a poll can take as many batches.
constexpr int header_receives = 4;

// The core's operations on the symmetric heap (no window); a host's put,
// get and atomic name a window (remote_flag_in_window).
bool on_symmetric_heap(const remote_command& c) {
  return (c.op == remote_op::put || c.op == remote_op::get || c.op == remote_op::atomic) &&
         (c.flags & remote_flag_in_window) == 0;
}

}  // namespace

call call_of(const remote_command& c) {
  switch (c.op) {
    case remote_op::get_notify: return call::get_notify;
    case remote_op::put_signal: return call::put_signal;
    case remote_op::put: return c.inline_bytes != 0 && c.bytes <= 8 ? call::p : call::put;
    case remote_op::get: return call::get;
    case remote_op::atomic: {
      const bool fetch = c.tag != 0;
      switch (remote_atomic(c.signal_op)) {
        case remote_atomic::fetch: return call::atomic_fetch;
        case remote_atomic::set: return call::atomic_set;
        case remote_atomic::swap: return call::atomic_swap;
        case remote_atomic::compare_swap: return call::atomic_compare_swap;
        case remote_atomic::add: return fetch ? call::atomic_fetch_add : call::atomic_add;
        case remote_atomic::bit_and: return fetch ? call::atomic_fetch_and : call::atomic_and;
        case remote_atomic::bit_or: return fetch ? call::atomic_fetch_or : call::atomic_or;
        case remote_atomic::bit_xor: return fetch ? call::atomic_fetch_xor : call::atomic_xor;
        case remote_atomic::count_: break;
      }
      return call::atomic_fetch;
    }
    default: return call::put_notify;
  }
}

// Every op a message may carry: the ranks' requests, served once checked; a
// node's arrivals at a world collective; the engines' own messages, for the
// piece of the engine that deals with each. Any other op is ignored.
const engine_operations::handler_table engine_operations::handlers_ = [] {
  handler_table h{};
  using bytes_at = const unsigned char*;
  h.fill([](engine_operations&, int, const remote_command&, bytes_at) { return true; });
  for (const remote_op op : {remote_op::put_notify, remote_op::put_signal, remote_op::get_notify,
                             remote_op::put, remote_op::get, remote_op::atomic})
    h[std::size_t(op)] = [](engine_operations& o, int from, const remote_command& c,
                            bytes_at bytes) { return o.serve(from, c, bytes); };
  h[std::size_t(remote_op::arrive)] = [](engine_operations& o, int from, const remote_command& c,
                                         bytes_at) {
    o.arrivals_.receive(from, c);
    return true;
  };
  h[std::size_t(wire_get_reply)] = [](engine_operations& o, int from, const remote_command& c,
                                      bytes_at bytes) {
    if (o.cx_.is_host_origin(c.origin))
      o.host_.answer(from, c, bytes);
    else
      o.completion_.land_get(from, c, bytes);
    return true;
  };
  h[std::size_t(wire_ack)] = [](engine_operations& o, int, const remote_command& c, bytes_at) {
    if (o.cx_.is_host_origin(c.origin))
      o.host_.acknowledged(host_operation_number(c));
    else
      o.completion_.acknowledged(c);
    return true;
  };
  h[std::size_t(wire_refused)] = [](engine_operations& o, int from, const remote_command& c,
                                    bytes_at) {
    if (o.cx_.is_host_origin(c.origin) && o.cx_.process_of_origin(c.origin) == o.cx_.nodes.process)
      o.host_.refused(from, c);
    else
      o.liveness_.malformed(from, -1, call::runtime,
                            "refused an operation this process did not send");
    return true;
  };
  h[std::size_t(wire_abort)] = [](engine_operations& o, int from, const remote_command& c,
                                  bytes_at) {
    o.liveness_.receive_abort(from, c.bytes);
    return true;
  };
  h[std::size_t(wire_done)] = [](engine_operations& o, int from, const remote_command&, bytes_at) {
    o.liveness_.receive_done(from);
    return true;
  };
  h[std::size_t(wire_beat)] = [](engine_operations& o, int from, const remote_command& c,
                                 bytes_at) {
    o.liveness_.receive_beat(from, c.offset);
    return true;
  };
  return h;
}();

engine_operations::engine_operations(engine_context& cx, engine_intake& intake,
                                     engine_completion& completion, engine_arrivals& arrivals,
                                     engine_liveness& liveness, engine_host& host)
    : cx_(cx),
      intake_(intake),
      completion_(completion),
      arrivals_(arrivals),
      liveness_(liveness),
      host_(host),
      windows_(*cx.memory),
      waiting_(std::size_t(cx.nodes.processes)),
      waiting_since_(std::size_t(cx.nodes.processes), engine_clock::now()) {}

void engine_operations::listen() {
  for (int i = 0; i < header_receives; ++i) post_header_receive(std::make_unique<header_receive>());
}

void engine_operations::post_header_receive(std::unique_ptr<header_receive> r) {
  header_receive* at = r.get();
  at->arrived = false;
  inbound_.push_back(std::move(r));
  cx_.net->receive(-1, channel::header, at->batch.data(), at->batch.size(), memory_place::host,
                   [this, at](int from, std::size_t bytes) {
                     at->from = from;
                     at->bytes = bytes;
                     at->arrived = true;
                     take_headers();
                   });
}

// Handles the batches that arrived, in the order their receives were
// posted (which is the order of one sender's messages, however the
// transport completes them), each header in order.
void engine_operations::take_headers() {
  while (!inbound_.empty() && inbound_.front()->arrived) {
    std::unique_ptr<header_receive> r = std::move(inbound_.front());
    inbound_.pop_front();
    const int from = r->from;
    liveness_.heard_from(from);
    // Decoded whole before any is handled: a batch is good or refused.
    std::vector<header>& headers = decoded_;
    headers.clear();
    std::size_t at = 0;
    for (std::size_t n = 0; at < r->bytes; at += n) {
      header h;
      n = wire_read(r->batch.data() + at, r->bytes - at, h.c, h.bytes);
      if (n == 0) break;
      headers.push_back(h);
    }
    if (headers.empty() || at != r->bytes) {
      liveness_.malformed(from, -1, call::runtime, "sent a malformed batch of headers");
    } else {
      for (const header& h : headers) receive(from, h.c, h.bytes);
    }
    post_header_receive(std::move(r));
  }
}

void engine_operations::receive(int from, const remote_command& c, const unsigned char* bytes) {
  if (bytes == nullptr) bytes = c.data;
  std::deque<waiting_header>& queue = waiting_[std::size_t(from)];
  if (!queue.empty() || !handle(from, c, bytes)) {
    if (queue.empty()) waiting_since_[std::size_t(from)] = cx_.now;
    // Its bytes are the batch's, whose receive is posted again.
    queue.push_back({c, std::vector<unsigned char>(bytes, bytes + c.inline_bytes)});
  }
}

bool engine_operations::handle_waiting() {
  bool any = false;
  for (int p = 0; p < cx_.nodes.processes; ++p) {
    std::deque<waiting_header>& queue = waiting_[std::size_t(p)];
    while (!queue.empty()) {
      const waiting_header& w = queue.front();
      if (!handle(p, w.c, w.bytes.empty() ? w.c.data : w.bytes.data())) break;
      queue.pop_front();
      waiting_since_[std::size_t(p)] = cx_.now;
      any = true;
    }
  }
  return any;
}

bool engine_operations::waits_any() const {
  for (const auto& queue : waiting_)
    if (!queue.empty()) return true;
  return false;
}

// False: the request names a window this node is about to create (its
// collective ended on the origin's node first); it must wait, and so must
// everything after it from that process (their data follows in order).
bool engine_operations::handle(int from, const remote_command& c, const unsigned char* bytes) {
  if (!liveness_.trusts(from)) return true;  // nothing more of it is used
  return handlers_[std::size_t(c.op)](*this, from, c, bytes);
}

// Whether window (slot, generation) is the next this node will create in
// that slot: the origin's node finished the collective first. Not forever:
// after the job's silence limit the request is refused.
bool engine_operations::about_to_exist(const window_slot& s, std::uint32_t generation, int from) const {
  const bool next = !s.active && window_next_generation(s, 0) == generation;
  const double waited =
      std::chrono::duration<double>(cx_.now - waiting_since_[std::size_t(from)]).count();
  return next && (waiting_[std::size_t(from)].empty() || waited < silence_limit_seconds);
}

error_record refusal_record(const remote_command& c, refusal why, std::uint64_t registered,
                            std::int64_t origin, int rank, call where) {
  error_record r{};
  r.code = std::int32_t(errc::request_refused);
  r.rank = rank;
  r.where = std::int32_t(where);
  r.values[0] = origin;
  r.values[1] = std::int64_t(why);
  const bool signal = why == refusal::signal_misaligned || why == refusal::signal_outside_range;
  r.values[2] = std::int64_t(signal ? c.signal_offset : c.offset);
  r.values[3] = std::int64_t(signal ? sizeof(std::uint64_t) : c.bytes);
  r.values[4] = std::int64_t(registered);
  r.values[5] = c.window & 0xffffu;
  return r;
}

// Checks a request against this node's window table; on success sets
// `range` to where the target's range starts (the window, target, range
// and signal are all as the request says). A refused request fails the
// job, but a host's that names a range, signal or word its target does not
// have fails alone (refuse_host_operation): the host could not check those
// (the target's range is its engine's to know, and its ranks may free a
// window meanwhile), where a rank's request that fails them, or a host's
// that fails the other checks, was never made by grma.
engine_operations::verdict engine_operations::check(int from, const remote_command& c,
                                                    unsigned char*& range) {
  const window_table& t = cx_.first->windows;
  const std::uint32_t slot = c.window & 0xffffu, generation = c.window >> 16;
  const bool host = cx_.is_host_origin(c.origin);
  // `alone`: a mistake a host can make (for a host's request).
  auto refuse = [&](refusal why, std::uint64_t registered, bool alone = false) {
    if (host && alone) {
      refuse_host_operation(from, c, why, registered);
      return verdict::refused;
    }
    // A host origin as -1 - its process (error.cpp says "the host of process p").
    liveness_.stop_trusting(
        from,
        refusal_record(c, why, registered, host ? -1 - cx_.process_of_origin(c.origin) : c.origin,
                       cx_.mine(c.target) ? c.target : -1, host ? host_call(c) : call_of(c)));
    return verdict::refused;
  };
  const int origins = cx_.nodes.host_access ? cx_.origins() : cx_.world_size;
  if (!(c.origin >= 0 && c.origin < origins && cx_.process_of_origin(c.origin) == from) ||
      !cx_.mine(c.target))
    return refuse(refusal::wrong_process, 0);
  // A host's operations: puts (plain, notified or signalled), gets (plain
  // or notified) and atomics, each on a window.
  if (host && (c.op == remote_op::arrive ||
               ((c.op == remote_op::put || c.op == remote_op::get || c.op == remote_op::atomic) &&
                (c.flags & remote_flag_in_window) == 0)))
    return refuse(refusal::not_for_hosts, 0);
  if (on_symmetric_heap(c)) {  // the target's slice: every node's has the same size
    const device_view& v = cx_.view_of(c.target);
    const std::uint64_t slice = v.symmetric_slice;
    if (c.offset > slice || c.bytes > slice - c.offset ||
        (c.inline_bytes != 0 && c.inline_bytes != c.bytes))
      return refuse(refusal::outside_slice, slice);
    if (c.op == remote_op::atomic &&
        ((c.bytes != 4 && c.bytes != 8) || c.offset % c.bytes != 0 ||
         c.signal_op >= std::uint8_t(remote_atomic::count_)))
      return refuse(refusal::bad_atomic, slice);
    range = v.heap + v.symmetric_offset + std::uint64_t(c.target - v.first_rank) * slice;
    return verdict::ok;
  }
  // A consistent copy of the slot and the target's entry (engine_windows).
  window_slot s{};
  window_entry e{};
  bool live = false;
  if (slot < t.capacity) {
    windows_.read(t, slot, c.target, s, e);
    live = window_lookup(s, generation) == window_check::ok;
  }
  if (slot < t.capacity && about_to_exist(s, generation, from)) return verdict::later;
  if (!live || s.comm != 0 || std::uint32_t(c.target) >= s.comm_size)
    return refuse(refusal::no_window, 0, true);  // freed while the request travelled
  const bool here = int(e.device) / cx_.nodes.devices_per_process == cx_.nodes.process;
  if (!here) return refuse(refusal::wrong_process, 0);
  if (c.inline_bytes != 0 && c.inline_bytes != c.bytes)
    return refuse(refusal::outside_range, e.size);
  // No larger than the target's whole heap: the bytes dropped after a
  // refused put are bounded by it.
  if (c.offset > e.size || c.bytes > e.size - c.offset)
    return refuse(refusal::outside_range, e.size, c.bytes <= cx_.views[e.device]->heap_size);
  if (c.op == remote_op::put_signal) {
    if (c.signal_offset > e.size || e.size - c.signal_offset < sizeof(std::uint64_t))
      return refuse(refusal::signal_outside_range, e.size, true);
    if ((e.offset + c.signal_offset) % sizeof(std::uint64_t) != 0)
      return refuse(refusal::signal_misaligned, e.size, true);
  }
  if (c.op == remote_op::atomic) {
    if ((c.bytes != 4 && c.bytes != 8) || c.signal_op >= std::uint8_t(remote_atomic::count_))
      return refuse(refusal::bad_atomic, e.size);
    if ((e.offset + c.offset) % c.bytes != 0)
      return refuse(refusal::atomic_misaligned, e.size, true);
  }
  range = cx_.views[e.device]->heap + e.offset;
  return verdict::ok;
}

// False: not yet (see handle).
bool engine_operations::serve(int from, const remote_command& c, const unsigned char* bytes) {
  unsigned char* range = nullptr;
  const verdict v = check(from, c, range);
  if (v != verdict::ok) return v == verdict::refused;
  // What changes the target's memory or notifies it is progress for the
  // watchdog; a plain read (a host polling with gets while the ranks are
  // stuck) is not.
  if (c.op != remote_op::get &&
      !(c.op == remote_op::atomic && c.signal_op == std::uint8_t(remote_atomic::fetch)))
    liveness_.served_request();
  unsigned char* at = range + c.offset;
  // The core's operations change or read the target's memory in one
  // rank's order (fence is only a memory fence at the origin), so their
  // writes wait for their turn (complete) where an earlier one may still
  // change the same bytes: a put's inline bytes always (a p's word is one
  // store then), a put's following data where an earlier put, atomic or
  // signal of its origin that writes any of the same bytes is still in
  // progress (two receives in flight into the same bytes may land in
  // either order, over MPI and UCX alike).
  // Held bytes wait in the request's entry. Other data lands on arrival: a
  // notified put's (its notification, not its data, keeps the order).
  const bool ordered_put = c.op == remote_op::put || c.op == remote_op::put_signal;
  const bool held = ordered_put && c.bytes != 0 &&
                    ((c.op == remote_op::put && c.inline_bytes != 0) ||
                     completion_.overlaps_earlier_write(c.origin, at, c.bytes));
  // c.origin checked: a rank of process `from`.
  engine_completion::in_order& request = completion_.queue_request(c, range, held);
  auto done = completion_.mark_ready(request);
  if (c.op == remote_op::get_notify) {
    reply_to_get(from, c, at, done);
    return true;
  }
  if (c.op == remote_op::atomic || c.op == remote_op::get || c.bytes == 0) {
    done();
    return true;
  }
  const auto* source = c.inline_bytes != 0 ? bytes
                       : from == cx_.nodes.process  // this process's host: its buffer is here
                           ? reinterpret_cast<const unsigned char*>(c.address)
                           : nullptr;  // the data follows
  if (held) {
    // In c.data where they fit there, else kept.
    if (c.inline_bytes == 0 || c.inline_bytes > remote_inline_bytes) request.bytes.resize(c.bytes);
    if (source == nullptr) {
      cx_.receive_data(from, request.bytes.data(), c.bytes, done,
                       engine_context::memory_kind::host);
      return true;
    }
    if (!request.bytes.empty()) std::memcpy(request.bytes.data(), source, c.bytes);
    done();
    return true;
  }
  if (source == nullptr) {
    cx_.receive_data(from, at, c.bytes, done);
    return true;
  }
  cx_.memory->write(at, source, c.bytes);
  done();
  return true;
}

// A host's operation refused alone (check). The bytes of a put that follow
// its header are received and dropped, so the data from that process stay
// in step; only then is the origin told, so that once its request fails,
// nothing reads the host's buffer any more.
void engine_operations::refuse_host_operation(int from, const remote_command& c, refusal why,
                                              std::uint64_t registered) {
  remote_command answer = c;
  answer.op = wire_refused;
  answer.inline_bytes = 0;
  answer.tag = std::int32_t(why);
  answer.signal_value = registered;
  if (from == cx_.nodes.process) return host_.refused(from, answer);  // its bytes were never sent
  auto tell = [this, from, answer] { intake_.send_header(from, answer); };
  if (!remote_sends_source(c)) return tell();
  cx_.drop_data(from, c.bytes, tell);
}

void engine_operations::untaken_host_notification(int origin, std::uint32_t number) {
  remote_command answer{};
  answer.op = wire_refused;
  answer.origin = origin;
  answer.flags = number << remote_flag_bits;
  answer.tag = std::int32_t(refusal::untaken);
  // Whether the ranks returned as the job failed: the origin may learn of
  // the failure only after this answer (another channel).
  answer.signal_value = load_acquire<scope::system>(cx_.first->control->abort) != 0 ? 1 : 0;
  const int to = cx_.process_of_origin(origin);
  if (to == cx_.nodes.process) return host_.refused(to, answer);
  intake_.send_header(to, answer);
}

void engine_operations::reply_to_get(int to, const remote_command& c, const unsigned char* at,
                                     std::function<void()> read) {
  if (to == cx_.nodes.process) {  // a host operation this engine served itself
    host_.answer_here(c, at);
    return read();
  }
  remote_command reply = c;
  reply.op = wire_get_reply;
  if (c.bytes <= wire_carried_most) {  // in the reply's header (wire_format)
    reply.inline_bytes = std::uint16_t(c.bytes);
    const unsigned char* answer = nullptr;  // none: the header's own data
    if (c.bytes != 0) {
      answer_.resize(c.bytes);
      cx_.memory->read(answer_.data(), at, c.bytes);
      answer = answer_.data();
    }
    intake_.send_header(to, reply, answer);
    return read();
  }
  reply.inline_bytes = 0;
  intake_.send_header(to, reply);
  cx_.send_data(to, at, c.bytes, std::move(read));
}

}  // namespace grma::detail
