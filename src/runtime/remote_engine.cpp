#include "remote_engine.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "grma/error.hpp"
#include "grma/types.hpp"
#include "data_lanes.hpp"
#include "engine_memory.hpp"
#include "transport.hpp"
#include "watchdog.hpp"

namespace grma::detail {
namespace {

using clock = std::chrono::steady_clock;

// Messages only engines exchange, beside the ranks' remote_op (same header).
constexpr auto wire_get_reply = remote_op(16);  // a get's data (inline or following)
constexpr auto wire_ack = remote_op(17);        // `bytes` operations of `origin` are in place
constexpr auto wire_abort = remote_op(18);      // an error_record and `bytes` of report follow
constexpr auto wire_done = remote_op(19);       // the sender's ranks are done and acknowledged
constexpr auto wire_beat = remote_op(20);       // the sender is alive

constexpr double beat_seconds = 0.1;
// Completions the loop takes from the network at a time. Under a steady
// inflow a drain without a bound ran for as long as the inflow did, and with
// it held up this engine's beats, acknowledgements and its own ranks'
// commands (up to 9340 completions and 0.3 s at a time in the conformance
// suite, four processes as two nodes on an idle two-core machine; 64: at
// most 32 ms, and the suite no slower).
constexpr int drain_polls = 64;

// Staging memory each lane (process and direction) may hold: 16 chunks in
// flight keep the network and the copies busy (data_lanes).
constexpr std::uint64_t staging_per_lane = std::uint64_t{16} << 20;

// Headers for one process travel together, up to this many in a message
// (3840 bytes: under Open MPI's shared-memory eager limit of 4 KiB, so a
// batch costs the receiver one copy and no handshake).
constexpr std::size_t batch_headers = 32;
// Header receives posted at once: a poll can take as many batches.
constexpr int header_receives = 4;

// A posted receive of a batch of headers; taken in the order posted.
struct header_receive {
  std::vector<remote_command> batch = std::vector<remote_command>(batch_headers);
  int from = -1;
  std::size_t bytes = 0;
  bool arrived = false;
};

// A notification for a ring that was full, with whom to acknowledge after.
struct held_notification {
  notification n;
  int origin;
};

// This engine's side of one ring it produces into: ring (target, origin
// device) for an origin device on another node has no other producer, so
// the engine keeps its tickets privately.
struct outbox {
  std::uint64_t next = 0;
  std::uint64_t known_consumed = 0;
  std::deque<held_notification> held;  // in order, behind a full ring
};

// A request from another node whose data is in place (or read) once `ready`.
struct in_order {
  remote_command c;
  unsigned char* range;
  bool ready;
};

// The rank's call that a request from another node carries out (for a
// strided or non-blocking form, its blocking one).
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

// The core's operations on the symmetric heap (no window).
bool on_symmetric_heap(remote_op op) {
  return op == remote_op::put || op == remote_op::get || op == remote_op::atomic;
}

struct arrivals_of_node {
  std::uint64_t epoch;
  std::vector<int> ranks;
  std::vector<collective_arrival> arrivals;
};

}  // namespace

struct remote_engine::state {
  job_nodes nodes;
  std::vector<const device_view*> views;  // by device; null off this node
  const device_view* first = nullptr;     // this node's first device: what the node shares
  double silence_seconds;
  int ranks_per_device = 0;
  int world_size = 0;
  // Before `memory` and `net`: staging buffers that copies and sends in
  // flight hold return their room to it, and their memory to `memory`.
  data_lanes lanes;
  std::unique_ptr<engine_memory> memory;
  std::unique_ptr<transport> net;

  std::vector<ring_reader> readers;  // of this process's command rings
  std::map<std::pair<int, int>, outbox> outboxes;
  std::map<int, std::pair<unsigned char*, std::uint64_t>> gets;  // origin -> destination
  std::vector<std::uint64_t> landed, delivered;  // by world rank of this process
  std::map<int, std::uint64_t> acks;             // to send: origin -> count
  std::deque<std::pair<std::uint64_t, std::map<int, std::uint64_t>>> acks_waiting;  // acks, after a mark
  std::vector<arrivals_of_node> early;           // arrivals of a later collective
  std::uint64_t unacknowledged = 0;              // operations sent, not yet acknowledged
  std::uint64_t forwarded = 0;                   // the last world collective forwarded
  std::vector<std::vector<remote_command>> outgoing;  // by process: headers not sent yet
  std::deque<std::unique_ptr<header_receive>> inbound;  // posted, oldest first
  std::vector<bool> done_from, refused_from;     // by process
  std::vector<std::deque<remote_command>> waiting;  // by process: see handle()
  std::vector<std::deque<in_order>> completing;     // by origin world rank: see complete_in_order()
  std::vector<clock::time_point> waiting_since;     // by process
  std::vector<clock::time_point> heard;          // by process
  std::vector<std::uint64_t> signatures;         // by process: the progress it last reported
  std::vector<const device_view*> own;           // this process's devices
  std::atomic<std::uint64_t> others_progress{0};
  clock::time_point next_beat{};
  bool said_done = false, abort_seen = false;
  std::atomic<bool> local_done{false};
  mutable std::mutex failure_mutex;
  std::string failure;

  state(const job_nodes& n, std::vector<const device_view*> v, double silence,
        std::unique_ptr<engine_memory> m, std::unique_ptr<transport> t)
      : nodes(n),
        views(std::move(v)),
        silence_seconds(silence),
        lanes(n.processes, staging_per_lane, [this](std::size_t bytes) { return memory->staging(bytes); }),
        memory(std::move(m)),
        net(std::move(t)) {}

  int device_of(int rank) const { return rank / ranks_per_device; }
  int process_of_rank(int rank) const { return device_of(rank) / nodes.devices_per_process; }
  bool remote_process(int p) const {
    return nodes.node_of[std::size_t(p)] != nodes.node_of[std::size_t(nodes.process)];
  }
  bool mine(int rank) const {
    return rank >= 0 && rank < world_size && process_of_rank(rank) == nodes.process;
  }
  const device_view& view_of(int rank) const { return *views[std::size_t(device_of(rank))]; }
  int first_rank() const { return nodes.process * nodes.devices_per_process * ranks_per_device; }
  // World ranks on `node`, ascending.
  std::vector<int> ranks_on(int node) const {
    std::vector<int> r;
    for (int w = 0; w < world_size; ++w)
      if (nodes.node_of[std::size_t(process_of_rank(w))] == node) r.push_back(w);
    return r;
  }
  // Calls f(at, count) for each run of consecutive world ranks in `ranks`
  // (ascending): a node's arrivals move a run at a time.
  template <class F>
  static void for_each_run(const std::vector<int>& ranks, F&& f) {
    for (std::size_t at = 0, end = 0; at < ranks.size(); at = end) {
      end = at + 1;
      while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) ++end;
      f(at, end - at);
    }
  }

  // The process that gathers `node` for world collectives: its lowest.
  int leader_process(int node) const {
    int p = 0;
    while (nodes.node_of[std::size_t(p)] != node) ++p;
    return p;
  }

  // ---- sending -------------------------------------------------------------

  // Headers wait in `outgoing` until the engine flushes them (after taking
  // its ranks' commands, and at the end of each turn), so all those ready
  // for one process in a turn go in one message; a lone one goes in the
  // same turn. Their data and records follow on channels of their own,
  // which the receiver takes in header order.
  void send_header(int to, const remote_command& c) {
    std::vector<remote_command>& batch = outgoing[std::size_t(to)];
    batch.push_back(c);
    if (batch.size() == batch_headers) flush_headers(to);
  }

  void flush_headers(int to) {
    std::vector<remote_command>& batch = outgoing[std::size_t(to)];
    if (batch.empty()) return;
    auto message = std::make_shared<std::vector<remote_command>>(std::move(batch));
    batch.clear();
    batch.reserve(batch_headers);
    net->send(to, channel::header, message->data(), message->size() * sizeof(remote_command),
              [message] {});
  }

  void flush_headers() {
    for (int p = 0; p < nodes.processes; ++p) flush_headers(p);
  }

  void store_count(std::vector<std::uint64_t>& counts, int rank, bool is_landed, std::uint64_t n) {
    std::uint64_t& mine_count = counts[std::size_t(rank - first_rank())];
    mine_count += n;
    const device_view& v = view_of(rank);
    remote_completion& c = v.completion[rank - v.first_rank];
    // Release, after the writes before it: a get's data (landed) is visible
    // to the rank that sees the count (the target's acknowledgement, and
    // thereby its data, for delivered).
    memory->signal(is_landed ? c.landed : c.delivered, signal_op::set, mine_count);
  }

  // ---- the process's ranks' commands ------------------------------------------

  bool take_commands() {
    bool any = false;
    for (int d = 0; d < nodes.devices_per_process; ++d) {
      const device_view& v = *views[std::size_t(nodes.process * nodes.devices_per_process + d)];
      ring_reader& reader = readers[std::size_t(d)];
      // The ring's consumed count is in the device's memory
      // (device_words::commands_consumed), released through `memory`: after
      // the batch, so a rank that waits for room sees every slot taken, and
      // every quarter ring, so a long batch (large puts' reads) hands room
      // back as it goes.
      auto release = [&] {
        memory->signal(v.words->commands_consumed, signal_op::set, reader.head);
        reader.released = reader.head;
      };
      remote_command c;
      while (ring_try_pop<scope::system>(*v.commands, reader, c)) {
        start(c);
        any = true;
        if (reader.head - reader.released > reader.mask / 4) release();
      }
      if (reader.released != reader.head) release();
    }
    return any;
  }

  void start(const remote_command& c) {
    if (c.op == remote_op::arrive) return forward_arrivals(c.offset);
    const int to = process_of_rank(c.target);
    ++unacknowledged;
    send_header(to, c);
    // A rank waits for its answer before it issues anything more.
    if (remote_answered(c)) gets[c.origin] = {reinterpret_cast<unsigned char*>(c.address), c.bytes};
    if (remote_sends_source(c)) send_source(to, c);
  }

  // A put's bytes. Where the network reaches the device, sent from the
  // rank's own buffer, which the rank gets back when the send completes.
  // (Staging copies that let the rank go on at once measured slower on the
  // CPU backend: the many sends in flight cost the transport's polling more
  // than the waits they saved.) Else from a staging copy: the rank's buffer
  // is free once the copy is made.
  void send_source(int to, const remote_command& c) {
    const int origin = c.origin;
    send_data(to, reinterpret_cast<const unsigned char*>(c.address), c.bytes,
              [this, origin] { store_count(landed, origin, true, 1); });
  }

  // Data moves in chunks, each its own message (both sides split alike):
  // where it is staged, the copy of one chunk overlaps the network's moving
  // of the one before, and the receiver's copy of it.
  static constexpr std::uint64_t chunk_bytes = std::uint64_t{1} << 20;

  // Calls chunk(offset, bytes, chunk_done) for each chunk of `bytes`; `done`
  // runs once every chunk_done has (at once when there are none).
  template <class F>
  static void for_each_chunk(std::uint64_t bytes, std::function<void()> done, F&& chunk) {
    if (bytes == 0) return done();
    auto left = std::make_shared<std::uint64_t>((bytes + chunk_bytes - 1) / chunk_bytes);
    const std::function<void()> chunk_done = [left, done] {
      if (--*left == 0) done();
    };
    for (std::uint64_t at = 0; at < bytes; at += chunk_bytes)
      chunk(at, bytes - at < chunk_bytes ? bytes - at : chunk_bytes, chunk_done);
  }

  // Sends `bytes` of device memory at `at`; `released` runs once the engine
  // no longer reads them (every chunk sent, or staged).
  void send_data(int to, const unsigned char* at, std::uint64_t bytes, std::function<void()> released) {
    for_each_chunk(bytes, std::move(released), [&](std::uint64_t offset, std::uint64_t n, auto chunk_done) {
      lanes.enqueue(to, lane_direction::out, n, [this, to, from = at + offset, n, chunk_done](auto stage) {
        if (!stage) {
          memory->flush();  // the network reads the device itself: earlier writes first
          return net->send(to, channel::data, from, n, chunk_done);
        }
        memory->read(stage.get(), from, n);  // sees every earlier write
        net->send(to, channel::data, stage.get(), n, [stage] {});
        chunk_done();
      });
    });
  }

  // Receives `bytes` into device memory at `at`, then runs `done`.
  void receive_data(int from, unsigned char* at, std::uint64_t bytes, std::function<void()> done) {
    for_each_chunk(bytes, std::move(done), [&](std::uint64_t offset, std::uint64_t n, auto chunk_done) {
      lanes.enqueue(from, lane_direction::in, n, [this, from, to = at + offset, n, chunk_done](auto stage) {
        if (!stage) {
          memory->flush();  // the network writes the device itself: no earlier write lands over it
          return net->receive(from, channel::data, to, n, [chunk_done](int, std::size_t) { chunk_done(); });
        }
        net->receive(from, channel::data, stage.get(), n, [this, stage, to, n, chunk_done](int, std::size_t) {
          // Lands before anything written after it (engine_memory); the
          // stage returns to its lane when the copy is done.
          memory->write_staged(to, stage, n);
          chunk_done();
        });
      });
    });
  }

  // The node's arrivals at world collective `epoch`, to every other node's leader.
  void forward_arrivals(std::uint64_t epoch) {
    const std::vector<int> ranks = ranks_on(nodes.node_of[std::size_t(nodes.process)]);
    auto data = std::make_shared<std::vector<collective_arrival>>();
    data->resize(ranks.size());
    for_each_run(ranks, [&](std::size_t at, std::size_t count) {
      memory->load_arrivals(&first->arrivals[0][ranks[at]], count, data->data() + at);
    });
    forwarded = epoch;
    remote_command c{};
    c.op = remote_op::arrive;
    c.offset = epoch;
    c.bytes = data->size() * sizeof(collective_arrival);
    for (int p = 0; p < nodes.processes; ++p) {
      if (!remote_process(p) || leader_process(nodes.node_of[std::size_t(p)]) != p) continue;
      send_header(p, c);
      net->send(p, channel::record, data->data(), c.bytes, [data] {});
    }
  }

  // ---- requests from other nodes ---------------------------------------------

  void listen() {
    for (int i = 0; i < header_receives; ++i) post_header_receive(std::make_unique<header_receive>());
  }

  void post_header_receive(std::unique_ptr<header_receive> r) {
    header_receive* at = r.get();
    at->arrived = false;
    inbound.push_back(std::move(r));
    net->receive(-1, channel::header, at->batch.data(), batch_headers * sizeof(remote_command),
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
  void take_headers() {
    while (!inbound.empty() && inbound.front()->arrived) {
      std::unique_ptr<header_receive> r = std::move(inbound.front());
      inbound.pop_front();
      const int from = r->from;
      heard[std::size_t(from)] = clock::now();
      if (r->bytes == 0 || r->bytes % sizeof(remote_command) != 0) {
        malformed(from, -1, call::runtime, "sent a malformed batch of headers");
      } else {
        for (std::size_t i = 0; i < r->bytes / sizeof(remote_command); ++i) {
          const remote_command& c = r->batch[i];
          std::deque<remote_command>& queue = waiting[std::size_t(from)];
          if (!queue.empty() || !handle(from, c)) {
            if (queue.empty()) waiting_since[std::size_t(from)] = clock::now();
            queue.push_back(c);
          }
        }
      }
      post_header_receive(std::move(r));
    }
  }

  // Handles what waits for a window its node has not created yet, in order.
  bool handle_waiting() {
    bool any = false;
    for (int p = 0; p < nodes.processes; ++p) {
      std::deque<remote_command>& queue = waiting[std::size_t(p)];
      while (!queue.empty() && handle(p, queue.front())) {
        queue.pop_front();
        waiting_since[std::size_t(p)] = clock::now();
        any = true;
      }
    }
    return any;
  }

  // False: the request names a window this node is about to create (its
  // collective ended on the origin's node first); it must wait, and so must
  // everything after it from that process (their data follows in order).
  bool handle(int from, const remote_command& c) {
    if (refused_from[std::size_t(from)]) return true;  // nothing more of it is used
    switch (c.op) {
      case remote_op::put_notify:
      case remote_op::put_signal:
      case remote_op::get_notify:
      case remote_op::put:
      case remote_op::get:
      case remote_op::atomic: return serve(from, c);
      case remote_op::arrive: receive_arrivals(from, c); return true;
      default: break;
    }
    if (c.op == wire_get_reply) land_get(from, c);
    if (c.op == wire_ack && mine(c.origin)) {
      unacknowledged -= c.bytes;
      store_count(delivered, c.origin, false, c.bytes);
    }
    if (c.op == wire_abort) receive_abort(from, c.bytes);
    if (c.op == wire_done) done_from[std::size_t(from)] = true;
    if (c.op == wire_beat && c.offset != signatures[std::size_t(from)]) {
      signatures[std::size_t(from)] = c.offset;
      others_progress.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
  }

  // Whether window (slot, generation) is the next this node will create in
  // that slot: the origin's node finished the collective first. Not forever:
  // after the job's silence limit the request is refused.
  bool about_to_exist(const window_slot& s, std::uint32_t generation, int from) const {
    const bool next = !s.active && window_next_generation(s, 0) == generation;
    const double waited =
        std::chrono::duration<double>(clock::now() - waiting_since[std::size_t(from)]).count();
    return next && (waiting[std::size_t(from)].empty() || waited < silence_seconds);
  }

  enum class verdict { ok, later, refused };

  // Checks a request against this node's window table; on success sets
  // `range` to where the target's range starts (the window, target, range
  // and signal are all as the request says); a refused request fails the job.
  verdict check(int from, const remote_command& c, unsigned char*& range) {
    const window_table& t = first->windows;
    const std::uint32_t slot = c.window & 0xffffu, generation = c.window >> 16;
    const call where = call_of(c);
    auto refuse = [&](refusal why, std::uint64_t registered) {
      error_record r{};
      r.code = std::int32_t(errc::request_refused);
      r.rank = mine(c.target) ? c.target : -1;
      r.where = std::int32_t(where);
      r.values[0] = c.origin;
      r.values[1] = std::int64_t(why);
      r.values[2] = std::int64_t(why == refusal::signal_misaligned ? c.signal_offset : c.offset);
      r.values[3] = std::int64_t(c.bytes);
      r.values[4] = std::int64_t(registered);
      r.values[5] = slot;
      stop_trusting(from, r);
      return verdict::refused;
    };
    if (!(c.origin >= 0 && c.origin < world_size && process_of_rank(c.origin) == from) || !mine(c.target))
      return refuse(refusal::wrong_process, 0);
    if (on_symmetric_heap(c.op)) {  // the target's slice: every node's has the same size
      const device_view& v = view_of(c.target);
      const std::uint64_t slice = v.symmetric_slice;
      if (c.offset > slice || c.bytes > slice - c.offset ||
          (c.inline_bytes != 0 && (c.inline_bytes != c.bytes || c.bytes > remote_inline_bytes)))
        return refuse(refusal::outside_slice, slice);
      if (c.op == remote_op::atomic &&
          ((c.bytes != 4 && c.bytes != 8) || c.offset % c.bytes != 0 ||
           c.signal_op >= std::uint8_t(remote_atomic::count_)))
        return refuse(refusal::bad_atomic, slice);
      range = v.heap + v.symmetric_offset + std::uint64_t(c.target - v.first_rank) * slice;
      return verdict::ok;
    }
    // A consistent copy of the slot and the target's entry (engine_memory).
    window_slot s{};
    window_entry e{};
    bool live = false;
    if (slot < t.capacity) {
      memory->read_window(t, slot, c.target, s, e);
      live = window_lookup(s, generation) == window_check::ok;
    }
    if (slot < t.capacity && about_to_exist(s, generation, from)) return verdict::later;
    if (!live || s.comm != 0 || std::uint32_t(c.target) >= s.comm_size)
      return refuse(refusal::no_window, 0);
    const bool here = int(e.device) / nodes.devices_per_process == nodes.process;
    if (!here) return refuse(refusal::wrong_process, 0);
    if (c.offset > e.size || c.bytes > e.size - c.offset ||
        (c.inline_bytes != 0 && (c.inline_bytes != c.bytes || c.bytes > remote_inline_bytes)))
      return refuse(refusal::outside_range, e.size);
    if (c.op == remote_op::put_signal) {
      if (c.signal_offset > e.size || e.size - c.signal_offset < sizeof(std::uint64_t))
        return refuse(refusal::outside_range, e.size);
      if ((e.offset + c.signal_offset) % sizeof(std::uint64_t) != 0)
        return refuse(refusal::signal_misaligned, e.size);
    }
    range = views[e.device]->heap + e.offset;
    return verdict::ok;
  }

  // False: not yet (see handle).
  bool serve(int from, const remote_command& c) {
    unsigned char* range = nullptr;
    const verdict v = check(from, c, range);
    if (v != verdict::ok) return v == verdict::refused;
    unsigned char* at = range + c.offset;
    const int origin = c.origin;  // checked: a rank of process `from`
    std::deque<in_order>& queue = completing[std::size_t(origin)];
    queue.push_back({c, range, false});
    bool* ready = &queue.back().ready;  // deque elements stay put while others come and go
    auto done = [this, origin, ready] {
      *ready = true;
      complete_in_order(origin);
    };
    // The core's operations change or read the target's memory itself, so
    // they do it in order (complete): after the origin's requests before
    // them, a small put's bytes after an earlier large put's (fence), an
    // atomic or get after both. Only a large put's data lands on arrival:
    // its receives are posted, and complete, in order.
    if (c.op == remote_op::atomic || c.op == remote_op::get ||
        (c.op == remote_op::put && (c.inline_bytes != 0 || c.bytes == 0))) {
      done();
      return true;
    }
    if (c.op == remote_op::get_notify) {
      reply_to_get(from, c, at, done);
      return true;
    }
    if (c.inline_bytes != 0 || c.bytes == 0) {
      memory->write(at, c.data, c.inline_bytes);
      done();
      return true;
    }
    receive_data(from, at, c.bytes, done);
    return true;
  }

  // Sends a get's data back (inline, or after a reply header), then runs
  // `read`, once the engine no longer reads the target's memory.
  void reply_to_get(int to, const remote_command& c, const unsigned char* at, std::function<void()> read) {
    remote_command reply = c;
    reply.op = wire_get_reply;
    if (c.bytes <= remote_inline_bytes) {
      memory->read(reply.data, at, c.bytes);
      reply.inline_bytes = std::uint16_t(c.bytes);
      send_header(to, reply);
      return read();
    }
    reply.inline_bytes = 0;
    send_header(to, reply);
    send_data(to, at, c.bytes, std::move(read));
  }

  // A rank's requests end in the order it issued them, whichever of their
  // data arrived first: its notifications keep their order, and a signal
  // never overtakes an earlier put's notification. Other ranks' requests,
  // of the same process too, never wait behind them (a small put behind
  // another rank's large one).
  void complete_in_order(int origin) {
    std::deque<in_order>& queue = completing[std::size_t(origin)];
    while (!queue.empty() && queue.front().ready) {
      complete(queue.front().c, queue.front().range);
      queue.pop_front();
    }
  }

  // The data is in place (or read): publish the notification or signal, then
  // acknowledge.
  void complete(const remote_command& c, unsigned char* range) {
    if (c.op == remote_op::atomic) {
      const std::uint64_t old = memory->atomic(range + c.offset, std::uint32_t(c.bytes),
                                               remote_atomic(c.signal_op), c.signal_value, c.signal_offset);
      if (c.tag != 0) {  // the old value, as a get's inline data
        remote_command reply = c;
        reply.op = wire_get_reply;
        reply.inline_bytes = std::uint16_t(c.bytes);
        std::memcpy(reply.data, &old, c.bytes);
        send_header(process_of_rank(c.origin), reply);
      }
      ++acks[c.origin];
      return;
    }
    if (c.op == remote_op::put) {
      if (c.inline_bytes != 0) memory->write(range + c.offset, c.data, c.inline_bytes);
      ++acks[c.origin];
      return;
    }
    if (c.op == remote_op::get) {
      // The origin waits for the data before it issues more: nothing of
      // its own overwrites the range while a large get's data is read.
      const int origin = c.origin;
      reply_to_get(process_of_rank(origin), c, range + c.offset, [this, origin] { ++acks[origin]; });
      return;
    }
    if (c.op == remote_op::put_signal) {
      memory->signal(*reinterpret_cast<std::uint64_t*>(range + c.signal_offset),
                     signal_op(c.signal_op), c.signal_value);
      ++acks[c.origin];
      return;
    }
    outbox& o = outboxes[{c.target, device_of(c.origin)}];
    // A put_notify's or get_notify's immediate travels as its signal_value.
    o.held.push_back({notification{c.window, c.origin, c.tag, 0, c.signal_value}, c.origin});
    publish(c.target, device_of(c.origin), o);
  }

  // Publishes what the ring has room for, in order.
  bool publish(int target, int origin_device, outbox& o) {
    bool any = false;
    const device_view& v = view_of(target);
    notification_ring& q = v.queue(target, origin_device);
    while (!o.held.empty() &&
           ring_has_credit(v.queue_capacity, o.next, o.known_consumed, [&] { return memory->consumed(q); })) {
      // The data is visible before the notification (engine_memory).
      memory->publish(q, v.queue_capacity, o.next++, o.held.front().n);
      ++acks[o.held.front().origin];
      o.held.pop_front();
      any = true;
    }
    return any;
  }

  bool publish_held() {
    bool any = false;
    for (auto& [key, o] : outboxes)
      if (!o.held.empty()) any |= publish(key.first, key.second, o);
    return any;
  }

  void land_get(int from, const remote_command& c) {
    auto it = gets.find(c.origin);
    if (it == gets.end() || !mine(c.origin)) return;
    unsigned char* destination = it->second.first;
    const std::uint64_t asked = it->second.second;
    const int origin = c.origin;
    gets.erase(it);
    if (c.bytes != asked || (c.inline_bytes != 0 && c.inline_bytes != c.bytes)) {
      return malformed(from, origin, call::get_notify, "answered a get with a bad size");
    }
    if (c.inline_bytes != 0 || c.bytes == 0) {
      memory->write(destination, c.data, c.inline_bytes);
      return store_count(landed, origin, true, 1);
    }
    receive_data(from, destination, c.bytes, [this, origin] { store_count(landed, origin, true, 1); });
  }

  // Acknowledges once the data, notifications and signals acknowledged are
  // in place; meanwhile the engine goes on (a GPU's proxy takes a few us).
  bool send_acks() {
    if (!acks.empty()) {
      acks_waiting.emplace_back(memory->mark(), std::move(acks));
      acks.clear();
    }
    bool any = false;
    while (!acks_waiting.empty() && memory->landed(acks_waiting.front().first)) {
      for (auto& [origin, count] : acks_waiting.front().second) {
        remote_command a{};
        a.op = wire_ack;
        a.origin = origin;
        a.bytes = count;
        send_header(process_of_rank(origin), a);
      }
      acks_waiting.pop_front();
      any = true;
    }
    return any;
  }

  // ---- world collectives -----------------------------------------------------

  void receive_arrivals(int from, const remote_command& c) {
    auto batch = std::make_shared<arrivals_of_node>();
    batch->epoch = c.offset;
    batch->ranks = ranks_on(nodes.node_of[std::size_t(from)]);
    if (c.bytes != batch->ranks.size() * sizeof(collective_arrival)) {
      return malformed(from, -1, call::runtime, "sent a malformed arrival");
    }
    batch->arrivals.resize(batch->ranks.size());
    net->receive(from, channel::record, batch->arrivals.data(), c.bytes,
                [this, batch](int, std::size_t) { early.push_back(std::move(*batch)); });
  }

  // Writes other nodes' arrivals at a collective once this node's are
  // forwarded: until then this node's ranks cannot pass it, so neither the
  // arrivals forwarded nor the previous collective's, which its gatherer may
  // still read, are overwritten too soon.
  bool apply_arrivals() {
    bool any = false;
    collective_arrival* arrivals = first->arrivals[0];
    for (std::size_t i = 0; i < early.size();) {
      arrivals_of_node& b = early[i];
      if (b.epoch > forwarded) {
        ++i;
        continue;
      }
      for_each_run(b.ranks, [&](std::size_t at, std::size_t count) {
        memory->store_arrivals(&arrivals[b.ranks[at]], b.arrivals.data() + at, count);
      });
      early.erase(early.begin() + std::ptrdiff_t(i));
      any = true;
    }
    return any;
  }

  // ---- failures ----------------------------------------------------------------

  // Records the job's error (unless one is recorded) and aborts the node.
  void fail_job(const error_record& r) {
    job_control& control = *first->control;
    if (memory->claim_error(*first->error_claim)) {
      control.error = r;
      store_release<scope::system>(control.error_claimed, 1u);
    }
    // Release: the record is complete before anyone sees the abort.
    store_release<scope::system>(control.abort, 1u);
  }

  // Nothing more from process `from` is used; the job fails with `r`.
  void stop_trusting(int from, const error_record& r) {
    refused_from[std::size_t(from)] = true;
    fail_job(r);
  }

  // Another engine sent what this one never asks for.
  void malformed(int from, int rank, call where, const char* what) {
    error_record r{};
    r.code = std::int32_t(errc::process_failed);
    r.rank = rank;
    r.where = std::int32_t(where);
    std::snprintf(r.text, sizeof r.text, "grma: process %d %s", from, what);
    stop_trusting(from, r);
  }

  // An abort from another node: its error record and, when a watchdog there
  // ended the job, the watchdog's report, which this process then reports.
  void receive_abort(int from, std::uint64_t report_bytes) {
    abort_seen = true;  // no need to forward what another node sent
    if (report_bytes > sizeof(job_control::report)) {
      malformed(from, -1, call::runtime, "sent an abort with an oversized report");
      return;
    }
    auto message = std::make_shared<std::vector<unsigned char>>(sizeof(error_record) + report_bytes);
    net->receive(from, channel::record, message->data(), message->size(), [this, message, from](int, std::size_t) {
      error_record record;
      std::memcpy(&record, message->data(), sizeof record);
      // Left for every process of this node (one of them may see the abort
      // and stop before its own engine has received this), with what this
      // node's ranks wait for: they have not seen the abort yet, and the
      // other node's watchdog could not see them.
      if (message->size() > sizeof record)
        leave_report(
            *first->control,
            report_with(
                "grma: process " + std::to_string(from) + " (node " +
                    std::to_string(nodes.node_of[std::size_t(from)]) + ") reports: " +
                    std::string(reinterpret_cast<const char*>(message->data()) + sizeof record,
                                message->size() - sizeof record),
                blocked_here() + in_flight()));
      if (record.code != 0) {
        fail_job(record);
      } else {
        // Release: the report is left before anyone sees the abort.
        store_release<scope::system>(first->control->abort, 1u);
      }
    });
  }

  // What this engine holds that an operation between nodes may wait for,
  // for the report of a job a watchdog ends: its sends not yet
  // acknowledged, its gets without their data, requests from other
  // processes that wait for a window or complete in order behind an
  // earlier one, notifications behind a full ring.
  std::string in_flight() const {
    std::ostringstream s;
    s << "\ngrma: network engine of process " << nodes.process << ":";
    const std::size_t before = s.tellp();
    if (unacknowledged != 0) s << " " << unacknowledged << " operations sent and not acknowledged;";
    if (!gets.empty()) {
      s << " gets waiting for their data, of rank";
      for (const auto& entry : gets) s << " " << entry.first;
      s << ";";
    }
    for (int p = 0; p < nodes.processes; ++p)
      if (!waiting[std::size_t(p)].empty())
        s << " " << waiting[std::size_t(p)].size() << " requests of process " << p
          << " wait for a window;";
    for (int origin = 0; origin < world_size; ++origin) {
      const std::deque<in_order>& queue = completing[std::size_t(origin)];
      if (queue.empty()) continue;
      const remote_command& first_one = queue.front().c;
      s << " " << queue.size() << " requests of rank " << origin << " in progress, the first ("
        << call_name(call_of(first_one)) << " to rank " << first_one.target << ", "
        << first_one.bytes << " bytes) " << (queue.front().ready ? "done;" : "still moving its data;");
    }
    std::size_t held = 0;
    for (const auto& entry : outboxes) held += entry.second.held.size();
    if (held != 0) s << " " << held << " notifications wait for room in their targets' queues;";
    if (!lanes.idle()) s << " data waits for staging room;";
    if (std::size_t(s.tellp()) == before) s << " nothing in flight";
    return s.str();
  }

  // This node's blocked ranks, under a line that names the node, or empty.
  std::string blocked_here() const {
    std::vector<const device_view*> node;
    for (const device_view* v : views)
      if (v != nullptr) node.push_back(v);
    const std::string ranks = blocked_ranks(node);
    if (ranks.empty()) return ranks;
    return "\ngrma: on node " + std::to_string(nodes.node_of[std::size_t(nodes.process)]) +
           " when that abort came, blocked ranks:" + ranks;
  }

  // Sends this node's abort to the other nodes: its error record, or the
  // report that a watchdog of this node left before it raised the abort.
  void forward_abort() {
    const job_control& control = *first->control;
    error_record record{};
    std::string report;
    if (load_acquire<scope::system>(control.error_claimed) != 0)
      record = control.error;
    else if (std::string left = left_report(control); !left.empty())
      report = report_with(std::move(left), in_flight());
    auto message = std::make_shared<std::vector<unsigned char>>(sizeof record + report.size());
    std::memcpy(message->data(), &record, sizeof record);
    std::memcpy(message->data() + sizeof record, report.data(), report.size());
    remote_command c{};
    c.op = wire_abort;
    c.bytes = report.size();
    for (int p = 0; p < nodes.processes; ++p)
      if (remote_process(p)) {  // done ones too: they wait for the others
        send_header(p, c);
        net->send(p, channel::record, message->data(), message->size(), [message] {});
      }
  }

  void lose(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (failure.empty()) failure = why;
    }
    store_release<scope::system>(first->control->abort, 1u);
  }

  // Forwards this node's abort, beats, and looks for silent processes.
  // `listened`: when this engine last took everything that had arrived. A
  // process is silent for as long before that as it was last heard: were
  // it measured up to now, a pause of this engine's own loop (a slow step,
  // a busy machine, a backlog of arrivals) would count as the others'
  // silence.
  void watch(clock::time_point listened) {
    if (!abort_seen && load_acquire<scope::system>(first->control->abort) != 0) {
      abort_seen = true;
      forward_abort();
    }
    const clock::time_point now = clock::now();
    if (now < next_beat) return;
    next_beat = now + std::chrono::duration_cast<clock::duration>(
                          std::chrono::duration<double>(beat_seconds));
    remote_command beat{};
    beat.op = wire_beat;
    beat.offset = progress_signature(own);
    for (int p = 0; p < nodes.processes; ++p) {
      if (!remote_process(p)) continue;
      send_header(p, beat);  // until this engine stops: others may still watch it
      if (done_from[std::size_t(p)]) continue;
      const double silent = std::chrono::duration<double>(listened - heard[std::size_t(p)]).count();
      if (silent > silence_seconds) {
        const int ranks = nodes.devices_per_process * ranks_per_device;
        lose("grma: process " + std::to_string(p) + " (world ranks " + std::to_string(p * ranks) +
             ".." + std::to_string(p * ranks + ranks - 1) + ", node " +
             std::to_string(nodes.node_of[std::size_t(p)]) + ") stopped responding for " +
             std::to_string(int(silent)) + " s");
      }
    }
  }

  // ---- the loop ------------------------------------------------------------------

  bool everyone_done() const {
    for (int p = 0; p < nodes.processes; ++p)
      if (remote_process(p) && !done_from[std::size_t(p)]) return false;
    return true;
  }

  bool waits_any() const {
    for (const auto& queue : waiting)
      if (!queue.empty()) return true;
    return false;
  }

  void drop_held() {
    for (auto& entry : outboxes) {
      for (const held_notification& h : entry.second.held) ++acks[h.origin];
      entry.second.held.clear();
    }
  }

  bool held_any() const {
    for (const auto& entry : outboxes)
      if (!entry.second.held.empty()) return true;
    return false;
  }

  void loop() {
    std::uint32_t idle = 0;
    clock::time_point listened = clock::now();  // for watch()
    const bool spin = memory->spin_when_idle();
    try {
      memory->bind();
      listen();
      while (true) {
        bool busy = take_commands();
        flush_headers();  // what the ranks asked for goes at once
        int polls = 0;
        while (polls < drain_polls && net->poll()) ++polls;
        busy |= polls > 0;
        if (polls < drain_polls) listened = clock::now();  // it took all there was
        busy |= memory->progress();  // returns the staging of copies done
        busy |= lanes.pump();
        busy |= handle_waiting();
        busy |= publish_held();
        busy |= apply_arrivals();
        const bool local = local_done.load(std::memory_order_acquire);
        // Read before watch(), which forwards an abort it sees: one seen
        // here has been forwarded when the loop ends on it.
        const bool aborted = load_acquire<scope::system>(first->control->abort) != 0;
        // This process's ranks have returned: notifications held for their
        // full rings will never be taken (as locally, the run's end drops
        // them); acknowledge them, so that their origins may finish.
        if (local) drop_held();
        busy |= send_acks();
        watch(listened);
        if (local && !aborted && !said_done && unacknowledged == 0 && gets.empty()) {
          said_done = true;
          remote_command c{};
          c.op = wire_done;
          for (int p = 0; p < nodes.processes; ++p)
            if (remote_process(p)) send_header(p, c);
        }
        flush_headers();  // replies, acknowledgements, beats, an abort
        if (local && aborted) break;
        if (said_done && everyone_done() && net->idle() && lanes.idle() && !held_any() && early.empty() &&
            !waits_any() && acks_waiting.empty())
          break;
        if (busy) {
          idle = 0;
        } else if (++idle > 4096) {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        } else if (!spin) {
          std::this_thread::yield();
        }
      }
    } catch (const error& e) {
      lose(e.what());
    }
    memory->unbind();
    // Ending in failure: nothing more will complete.
    if (load_acquire<scope::system>(first->control->abort) != 0) net->abandon();
  }
};

remote_engine::remote_engine(const job_nodes& nodes, std::vector<const device_view*> views,
                             std::unique_ptr<engine_memory> memory, std::unique_ptr<transport> net,
                             double silence_seconds)
    : s_(std::make_unique<state>(nodes, std::move(views), silence_seconds, std::move(memory),
                                 std::move(net))) {
  state& s = *s_;
  const device_view& own = *s.views[std::size_t(nodes.process * nodes.devices_per_process)];
  s.ranks_per_device = own.ranks;
  s.world_size = own.world_size;
  for (const device_view* v : s.views)
    if (v != nullptr) {
      s.first = v;
      break;
    }
  s.readers.resize(std::size_t(nodes.devices_per_process));
  for (int d = 0; d < nodes.devices_per_process; ++d) {
    const device_view& v = *s.views[std::size_t(nodes.process * nodes.devices_per_process + d)];
    s.readers[std::size_t(d)] = ring_reader{0, 0, v.commands->mask};
  }
  const std::size_t mine = std::size_t(nodes.devices_per_process * s.ranks_per_device);
  s.landed.assign(mine, 0);
  s.delivered.assign(mine, 0);
  s.done_from.assign(std::size_t(nodes.processes), false);
  s.refused_from.assign(std::size_t(nodes.processes), false);
  s.heard.assign(std::size_t(nodes.processes), clock::now());
  s.signatures.assign(std::size_t(nodes.processes), 0);
  for (int d = 0; d < nodes.devices_per_process; ++d)
    s.own.push_back(s.views[std::size_t(nodes.process * nodes.devices_per_process + d)]);
  s.waiting.resize(std::size_t(nodes.processes));
  s.outgoing.resize(std::size_t(nodes.processes));
  s.completing.resize(std::size_t(s.world_size));
  s.waiting_since.assign(std::size_t(nodes.processes), clock::now());
}

void remote_engine::start() {
  s_->heard.assign(s_->heard.size(), clock::now());
  thread_ = std::thread([this] { s_->loop(); });
}

remote_engine::~remote_engine() { finish(); }

void remote_engine::ranks_done() { s_->local_done.store(true, std::memory_order_release); }

void remote_engine::finish() {
  if (!thread_.joinable()) return;
  ranks_done();
  thread_.join();
}

const std::atomic<std::uint64_t>& remote_engine::others_progress() const {
  return s_->others_progress;
}

std::string remote_engine::failure() const {
  std::lock_guard<std::mutex> lock(s_->failure_mutex);
  return s_->failure;
}

}  // namespace grma::detail
