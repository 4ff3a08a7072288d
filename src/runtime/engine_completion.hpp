// How operations between nodes end. At the target: a rank's requests
// complete in the order it issued them, publish their notifications into
// the target's rings (held in order behind a full one) or set their signals,
// and are acknowledged once in place. At the origin: what a rank waits on
// (remote_completion: landed, delivered) counts its sent sources, its gets'
// data and the acknowledgements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "engine_context.hpp"

namespace grma::detail {

class engine_host;
class engine_intake;
class engine_liveness;
class engine_operations;

class engine_completion {
 public:
  // A request from another node whose data is in place (or read) once `ready`.
  struct in_order {
    remote_command c;
    unsigned char* range;
    bool ready;
    // A put whose bytes it writes when it completes: from `bytes`, or from
    // c.data where they are inline and fit there.
    bool held;
    std::vector<unsigned char> bytes;
  };

  engine_completion(engine_context& cx, engine_intake& intake, engine_operations& operations,
                    engine_liveness& liveness, engine_host& host);

  // ---- at the origin ----

  // A command of this process's ranks is sent: it waits for its
  // acknowledgement, and for its answer if one comes back.
  void sent(const remote_command& c);
  // A put's source was sent (or staged), or a get's data is in place.
  void count_landed(int origin) { store_count(landed_, origin, true, 1); }
  // wire_ack: the target has `c.bytes` operations of `c.origin` in place.
  void acknowledged(const remote_command& c);
  // wire_get_reply: a get's data (or a fetching atomic's old value), its
  // inline bytes at `bytes`.
  void land_get(int from, const remote_command& c, const unsigned char* bytes);

  // ---- at the target ----

  // Queues request `c` (its origin checked) behind its origin's earlier
  // ones; `range`: where its target's range starts; `held`: a put whose
  // bytes the caller puts in the entry returned (its `bytes`, or c.data),
  // to be written when it completes.
  in_order& queue_request(const remote_command& c, unsigned char* range, bool held) {
    std::deque<in_order>& q = completing_[std::size_t(c.origin)];
    q.push_back({c, range, false, held, {}});
    return q.back();  // deque elements stay put while others come and go
  }
  // The callable that marks request `r` (queued above) in place, or read,
  // and completes what may complete then.
  auto mark_ready(in_order& r) {
    return [this, origin = r.c.origin, ready = &r.ready] {
      *ready = true;
      complete_in_order(origin);
    };
  }
  // Whether a request of `origin` in progress (queued, not yet complete)
  // may still change any of the `bytes` at `at`: a put's data, an
  // atomic's word, a put_signal's signal word.
  bool overlaps_earlier_write(int origin, const unsigned char* at, std::uint64_t bytes) const;
  bool publish_held();
  // This process's ranks have returned: notifications held for their full
  // rings will never be taken (as locally, the run's end drops them);
  // acknowledge them, so that their origins may finish.
  void drop_held();
  // Acknowledges once the data, notifications and signals acknowledged are
  // in place; meanwhile the engine goes on (a GPU's proxy takes a few us).
  bool send_acks();

  // Every operation sent is acknowledged, every get answered.
  bool answered() const { return unacknowledged_ == 0 && gets_.empty(); }
  // Nothing held for a full ring, no acknowledgement waiting to be sent.
  bool settled() const { return held() == 0 && acks_waiting_.empty(); }

  // For the watchdog's report (engine_liveness::in_flight).
  std::uint64_t unacknowledged() const { return unacknowledged_; }
  const std::multimap<std::pair<int, std::uint64_t>, std::uint64_t>& gets() const { return gets_; }
  const std::vector<std::deque<in_order>>& completing() const { return completing_; }
  // Notifications behind full rings.
  std::size_t held() const { return held_; }

 private:
  // A notification for a ring that was full, with whom to acknowledge after.
  struct held_notification {
    notification n;
    int origin;
    std::uint64_t ticket;  // in a shared ring (outbox::shared)
    std::uint32_t ack;     // acknowledge's key
  };

  // This engine's side of one ring it produces into. Ring (target, origin
  // device) for an origin device on another node has no other producer,
  // so the engine keeps its tickets privately. A host's notifications go
  // into ring (target, target's device), which that device's ranks share:
  // the engine takes a ticket for each as they do (shared).
  struct outbox {
    std::uint64_t next = 0;
    std::uint64_t known_consumed = 0;
    std::deque<held_notification> held;  // in ticket order, behind a full ring
    bool listed = false;                  // in holding_
    bool shared = false;
  };

  void store_count(std::vector<std::uint64_t>& counts, int rank, bool is_landed, std::uint64_t n);
  // Request `c` is in place: acknowledged by count for a rank (it waits
  // until all it issued are), one by one for a host (each operation
  // completes on its own: one held behind a full ring does not complete
  // a later one, nor hold it back).
  void acknowledge(int origin, std::uint32_t key) { ++acks_[{origin, key}]; }
  void complete_in_order(int origin);
  void complete(const in_order& r);
  using outbox_map = std::map<std::pair<int, int>, outbox>;  // by (target, origin device)
  bool publish(outbox_map::iterator at);

  engine_context& cx_;
  engine_intake& intake_;
  engine_operations& operations_;
  engine_liveness& liveness_;
  engine_host& host_;
  std::vector<std::deque<in_order>> completing_;  // by origin (engine_context): see complete_in_order()
  outbox_map outboxes_;
  // The outboxes that hold notifications, and how many: the loop looks at
  // these alone (a GPU job may have a thousand outboxes).
  std::vector<outbox_map::iterator> holding_;
  std::size_t held_ = 0;
  // To send: (origin, host operation's number or 0) -> count.
  using ack_counts = std::map<std::pair<int, std::uint32_t>, std::uint64_t>;
  ack_counts acks_;
  std::deque<std::pair<std::uint64_t, ack_counts>> acks_waiting_;  // acks, after a mark
  // Answers to come: (origin, destination) -> bytes. A rank may have many
  // (get_nbi), each into its own destination; replies echo the command.
  std::multimap<std::pair<int, std::uint64_t>, std::uint64_t> gets_;
  std::vector<std::uint64_t> landed_, delivered_;  // by world rank of this process
  std::uint64_t unacknowledged_ = 0;               // operations sent, not yet acknowledged
};

}  // namespace grma::detail
