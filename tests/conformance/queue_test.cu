// The notification queue's contract, portable: with capacity C, the senders
// of a target can together have C notifications outstanding at it while it
// makes progress in its own test and wait calls, whatever else it does
// between them (a slot whose entry the target has taken is free again at
// once), and while it waits for room at a ring itself (it takes its own
// arrivals then); and a notification whose put_notify has returned is
// matchable at the target whatever other origins are doing (a ticket is
// never held across a copy).
#include <cstddef>
#include <cstdint>

#include "support.hpp"

namespace conformance {
namespace {

class Queue : public testing::TestWithParam<config> {};

grma::settings with_queue_capacity(std::uint32_t capacity) {
  grma::settings s = suite_settings();
  s.queue_capacity = capacity;
  return s;
}

// The partner of the pair cases: me ^ 1, or itself for the odd last rank.
GRMA_HOST_DEVICE inline int pair_partner(int me, int n) {
  return (me ^ 1) < n ? (me ^ 1) : me;
}

// Sends `count` notifications of `tag` to `target`, then matches `count`
// of `tag` from `source` one test_notifications at a time (each must match:
// they were all sent before the barrier that precedes the tests).
template <class Rank>
GRMA_HOST_DEVICE void send_then_test(Rank& r, rank_record& rec, grma::window w, int target,
                                     int source, int count, int tag, int step) {
  for (int i = 0; i < count; ++i) r.put_notify(w, target, 0, 0, nullptr, tag);
  r.barrier(grma::world);
  for (int i = 0; i < count; ++i) {
    const bool matched = r.test_notifications(w, source, tag, 1);
    CONF_EXPECT(r, rec, matched, step, i, count);
    if (matched) tally(r, rec, 0);
  }
}

// The three smallest cases that deadlocked while a rank handed slots back
// only once half its ring was held or a match failed (capacity 4 for the
// first two, the default 1024 for the third):
//   self:     a notification to itself, matched; then 4 more to itself;
//   exchange: pairs exchange one each, barrier, then send each other 4;
//   many:     pairs send each other 500 and match them, then 600 more.
// Each ends with its notifications matched and nothing left over.
enum class freed_case { self, exchange, many };

struct freed_slots {
  freed_case which;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* word = static_cast<std::uint64_t*>(r.alloc(64));
    grma::window w = r.window_create(grma::world, word, 64);
    switch (which) {
      case freed_case::self:
        send_then_test(r, rec, w, me, me, 1, 1, 0);
        send_then_test(r, rec, w, me, me, 4, 2, 1);
        break;
      case freed_case::exchange: {
        const int peer = pair_partner(me, n);
        send_then_test(r, rec, w, peer, peer, 1, 1, 0);
        send_then_test(r, rec, w, peer, peer, 4, 2, 1);
        break;
      }
      case freed_case::many: {
        const int peer = pair_partner(me, n);
        send_then_test(r, rec, w, peer, peer, 500, 1, 0);
        send_then_test(r, rec, w, peer, peer, 600, 2, 1);
        break;
      }
    }
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), -1, 0, 0);
    r.window_free(w);
    r.free(word);
  }
};

void expect_freed_slots(config c, freed_case which, std::uint32_t capacity, unsigned per_rank) {
  grma::runtime rt(with_queue_capacity(capacity));
  job j(rt, c);
  j.resolve(freed_slots{which});
  j.prepare();
  if (j.run(freed_slots{which})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(0, [&](int) { return per_rank; }, "notifications matched");
  }
}

TEST_P(Queue, AMatchedSlotIsFreeAtOnceForTheRankItself) {
  expect_freed_slots(GetParam(), freed_case::self, 4, 5);
}

TEST_P(Queue, PairsBlockedInTheirPutsHoldNoMatchedSlots) {
  expect_freed_slots(GetParam(), freed_case::exchange, 4, 5);
}

TEST_P(Queue, PairsSendAndMatchMoreThanHalfTheRingTwice) {
  expect_freed_slots(GetParam(), freed_case::many, 1024, 1100);
}

// ---- every rank sends and receives at once, at the capacity's limit -----------------

constexpr int flow_group = 8;    // ranks that exchange notifications with each other
constexpr int flow_max = 6;      // notifications from one source to one target, at most
constexpr int flow_tags = 3;
constexpr int flow_forms = 4;    // how receivers match: see `flow::match_some`
constexpr double flow_seconds = 20;  // a lost notification fails the test after this long

// Notifications from `source` to `target` in phase `form`, and the tag of the k-th.
GRMA_HOST_DEVICE inline int flow_count(int source, int target, int form) {
  return int(mix(std::uint64_t(source), std::uint64_t(target), std::uint64_t(form)) %
             (flow_max + 1));
}
GRMA_HOST_DEVICE inline int flow_tag(int source, int target, int form, int k) {
  return int(mix(std::uint64_t(source) + 1000, std::uint64_t(target), std::uint64_t(form * 64 + k)) %
             flow_tags);
}

// Every member of a group sends a random number of notifications to every
// member, itself included, while it matches what it receives, with no
// barrier between. Flow control keeps each target's outstanding total (sent
// and not matched) within the queue's capacity: a target grants its sources
// permission one notification at a time (a signal add on the source's grant
// word for that target) while what it granted and has not matched is below
// the capacity, and a source sends only what it was granted. So a put never
// has to wait for room (it would, for good, if a rank held slots it had
// taken while it sends). Four phases match in four ways: by source and tag,
// any source with a tag, source with any tag, any with any; counts up to
// the capacity, and 1 where a larger count finds too few. Every
// notification is matched exactly once: the counts add up and nothing is
// left after the barrier.
struct flow {
  int capacity;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const group g(me, n, flow_group);
    // The window: grant words, one per group member (that target's grants
    // to me, over all phases). After it, private: the uniform-value cell.
    auto* grants = static_cast<std::uint64_t*>(r.alloc(flow_group * 8 + 64));
    std::uint64_t* cell = grants + flow_group;
    for (int i = r.thread(); i < flow_group; i += r.threads()) grants[i] = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, grants, flow_group * 8);
    int grants_before[flow_group] = {};  // from member i, in the phases before this one
    for (int form = 0; form < flow_forms; ++form) {
      progress p{};
      for (int i = 0; i < g.size; ++i) {
        const int other = g.member(i);
        p.expected += flow_count(other, me, form);
        p.to_send += flow_count(me, other, form);
        for (int k = 0; k < flow_count(other, me, form); ++k)
          ++p.expected_tag[flow_tag(other, me, form, k)];
      }
      const double deadline = r.wtime() + flow_seconds;
      bool late = false;
      while ((p.matched_total < p.expected || p.sent_total < p.to_send) && !late) {
        const int before = p.granted_total + p.sent_total + p.matched_total;
        grant(r, w, g, form, p);
        for (int i = 0; i < g.size; ++i) {  // send what the targets granted
          const int target = g.member(i);
          const int allowed = int(uniform(r, r.read(&grants[i]), cell)) - grants_before[i];
          for (; p.sent[i] < allowed; ++p.sent[i], ++p.sent_total)
            r.put_notify(w, target, 0, 0, nullptr, flow_tag(me, target, form, p.sent[i]));
        }
        match_some(r, w, g, form, p);
        // Nothing moved: leave the core (CPU ranks outnumber cores) or the
        // issue slots (GPU) to the ranks this one waits for.
        if (p.granted_total + p.sent_total + p.matched_total == before) relax();
        late = uniform(r, std::uint64_t(r.wtime() > deadline ? 1 : 0), cell) != 0;
      }
      CONF_EXPECT(r, rec, !late, form, p.matched_total, p.sent_total);
      CONF_EXPECT(r, rec, p.matched_total == p.expected && p.sent_total == p.to_send, form,
                  p.matched_total, p.expected);
      tally(r, rec, 0, unsigned(p.matched_total));
      for (int i = 0; i < g.size; ++i) grants_before[i] += flow_count(me, g.member(i), form);
      r.barrier(grma::world);  // the next phase's grants come after this one's
      CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), form, -1, 0);
    }
    r.window_free(w);
    r.free(grants);
  }

  struct progress {
    int sent[flow_group];     // to member i
    int granted[flow_group];  // to member i, as its target
    int matched[flow_group];  // from member i (phases by source)
    int matched_tag[flow_tags];
    int expected_tag[flow_tags];
    int expected, matched_total, granted_total, to_send, sent_total, next_grant;
  };

  // Grants sources one notification each, round robin, while what is
  // granted and not matched is below the capacity.
  template <class Rank>
  GRMA_HOST_DEVICE void grant(Rank& r, grma::window w, const group& g, int form, progress& p) const {
    for (int tries = 0; tries < g.size && p.granted_total - p.matched_total < capacity; ++tries) {
      const int i = p.next_grant;
      p.next_grant = (p.next_grant + 1) % g.size;
      if (p.granted[i] == flow_count(g.member(i), r.rank(grma::world), form)) continue;
      r.put_signal(w, g.member(i), 0, 0, nullptr, std::size_t(g.index) * 8, 1, grma::signal_op::add);
      ++p.granted[i];
      ++p.granted_total;
    }
  }

  // A count for the next test: up to 3, at most `left` and the capacity.
  GRMA_HOST_DEVICE int count_for(int left, const progress& p) const {
    return min_of(min_of(left, capacity), 1 + p.matched_total % 3);
  }

  // test_notifications with `count`, and with 1 if that finds too few:
  // flow control may keep fewer than `count` at the target.
  template <class Rank>
  GRMA_HOST_DEVICE int take(Rank& r, grma::window w, int source, int tag, int count) const {
    if (r.test_notifications(w, source, tag, count)) return count;
    if (count > 1 && r.test_notifications(w, source, tag, 1)) return 1;
    return 0;
  }

  template <class Rank>
  GRMA_HOST_DEVICE void match_some(Rank& r, grma::window w, const group& g, int form,
                                   progress& p) const {
    const int me = r.rank(grma::world);
    switch (form) {
      case 0:  // by source and tag: the source's next tag, as many as repeat it
        for (int i = 0; i < g.size; ++i) {
          const int source = g.member(i), all = flow_count(source, me, form);
          if (p.matched[i] == all) continue;
          const int tag = flow_tag(source, me, form, p.matched[i]);
          int run = 1;
          while (p.matched[i] + run < all && flow_tag(source, me, form, p.matched[i] + run) == tag) ++run;
          const int got = take(r, w, source, tag, count_for(run, p));
          p.matched[i] += got;
          p.matched_total += got;
        }
        break;
      case 1:  // any source, by tag
        for (int tag = 0; tag < flow_tags; ++tag) {
          const int left = p.expected_tag[tag] - p.matched_tag[tag];
          if (left == 0) continue;
          const int got = take(r, w, grma::any_source, tag, count_for(left, p));
          p.matched_tag[tag] += got;
          p.matched_total += got;
        }
        break;
      case 2:  // by source, any tag
        for (int i = 0; i < g.size; ++i) {
          const int left = flow_count(g.member(i), me, form) - p.matched[i];
          if (left == 0) continue;
          const int got = take(r, w, g.member(i), grma::any_tag, count_for(left, p));
          p.matched[i] += got;
          p.matched_total += got;
        }
        break;
      default:  // any with any
        if (p.matched_total < p.expected)
          p.matched_total += take(r, w, grma::any_source, grma::any_tag,
                                  count_for(p.expected - p.matched_total, p));
        break;
    }
  }
};

// The number of notifications a rank of a group of `size` receives in all phases.
unsigned flow_received(int rank, int n) {
  const group g(rank, n, flow_group);
  unsigned total = 0;
  for (int form = 0; form < flow_forms; ++form)
    for (int i = 0; i < g.size; ++i) total += unsigned(flow_count(g.member(i), rank, form));
  return total;
}

TEST_P(Queue, EveryRankSendsAndReceivesAtTheCapacitysLimit) {
  for (std::uint32_t capacity : {1u, 2u, 4u, 1024u}) {
    SCOPED_TRACE("queue capacity " + std::to_string(capacity));
    grma::runtime rt(with_queue_capacity(capacity));
    job j(rt, GetParam());
    const flow program{int(capacity)};
    const int n = j.resolve(program);
    j.prepare();
    if (j.run(program)) {
      j.expect_no_failures(__FILE__);
      j.expect_counts(0, [&](int rank) { return flow_received(rank, n); }, "notifications matched");
    }
  }
}

// ---- senders blocked on each other's full rings ----------------------------------------

// Every rank sends notified puts to its right neighbour and as many to
// itself before it waits or tests, through rings of `capacity` slots: a
// sender that finds a ring full takes its own arrivals into its pending
// list meanwhile, so the ranks make room for each other (and for
// themselves) while their lists have room. Each put's 8 bytes are checked
// once its notification is matched, and each notification is matched once.
constexpr int sent_each_way = 12;

GRMA_HOST_DEVICE inline std::uint64_t blocked_word(int origin, int i) {
  return mix(std::uint64_t(origin), std::uint64_t(i), 77);
}

struct blocked_senders {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    constexpr int words = 2 * sent_each_way;  // from the left, then from itself
    auto* inbox = static_cast<std::uint64_t*>(r.alloc(words * sizeof(std::uint64_t)));
    auto* outbox = static_cast<std::uint64_t*>(r.alloc(words * sizeof(std::uint64_t)));
    for (int i = r.thread(); i < words; i += r.threads()) {
      inbox[i] = 0;
      outbox[i] = blocked_word(me, i);
    }
    r.sync_threads();
    grma::window w = r.window_create(grma::world, inbox, words * sizeof(std::uint64_t));
    for (int i = 0; i < sent_each_way; ++i) {
      r.put_notify(w, right, std::size_t(i) * 8, 8, outbox + i, 1);
      r.put_notify(w, me, std::size_t(sent_each_way + i) * 8, 8, outbox + sent_each_way + i, 2);
    }
    r.wait_notifications(w, left, 1, sent_each_way);
    r.wait_notifications(w, me, 2, sent_each_way);
    for (int i = 0; i < words; ++i) {
      const int origin = i < sent_each_way ? left : me;
      CONF_EXPECT(r, rec, r.read(&inbox[i]) == blocked_word(origin, i), i, origin, 0);
    }
    tally(r, rec, 0, 2 * sent_each_way);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), -1, 0, 0);
    r.window_free(w);
    r.free(outbox);
    r.free(inbox);
  }
};

TEST_P(Queue, SendersBlockedOnEachOthersRingsTakeTheirOwnArrivals) {
  for (std::uint32_t capacity : {1u, 4u}) {
    SCOPED_TRACE("queue capacity " + std::to_string(capacity));
    grma::runtime rt(with_queue_capacity(capacity));
    job j(rt, GetParam());
    j.resolve(blocked_senders{});
    j.prepare();
    if (j.run(blocked_senders{})) {
      j.expect_no_failures(__FILE__);
      j.expect_counts(
          0, [](int) { return unsigned(2 * sent_each_way); }, "notifications matched");
    }
  }
}

// ---- no notification hides behind another origin's copy ------------------------------

constexpr std::size_t hol_large_bytes = std::size_t(64) << 20;
constexpr std::size_t hol_signal = 0, hol_small = 64, hol_large = 128;  // window offsets
constexpr int hol_small_tag = 7, hol_large_tag = 8;
constexpr double hol_grace_seconds = 200e-6;

// Origin A (the last rank) puts 64 MiB to rank 0; origin B (the rank before
// it, on A's device where the device has two ranks) puts 8 bytes to rank 0
// once A has started, then signals rank 0. Rank 0 waits for that signal and
// tests for B's notification: it must be there within hol_grace_seconds,
// far less than A's copy takes (a ticket taken before the copy kept it
// hidden for milliseconds; the grace covers A holding its ticket for its
// copy's last piece, longer where the OS preempts A's thread then). Then
// rank 0 waits for A's and checks every byte of both.
struct head_of_line {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int a = n - 1, b = n - 2, target = 0;
    const bool large_range = me == target, large_source = me == a;
    const std::size_t range = large_range ? hol_large + hol_large_bytes : hol_large;
    auto* window_memory = static_cast<std::uint8_t*>(r.alloc(range));
    auto* source = large_source ? static_cast<std::uint8_t*>(r.alloc(hol_large_bytes)) : window_memory + hol_small;
    auto* cell = static_cast<std::uint64_t*>(r.alloc(8));  // uniform()
    if (r.thread() == 0) *reinterpret_cast<std::uint64_t*>(window_memory + hol_signal) = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, window_memory, range);
    if (me == a) {
      fill(r, source, hol_large_bytes, 0xa);
      r.put_signal(w, b, 0, 0, nullptr, hol_signal, 1, grma::signal_op::add);  // "I start"
      r.put_notify(w, target, hol_large, hol_large_bytes, source, hol_large_tag);
    } else if (me == b) {
      r.wait_signal(w, hol_signal, grma::cmp::ge, 1);
      fill(r, source, 8, 0xb);
      r.put_notify(w, target, hol_small, 8, source, hol_small_tag);
      r.put_signal(w, target, 0, 0, nullptr, hol_signal, 1, grma::signal_op::add);
    }
    if (me == target) {
      r.wait_signal(w, hol_signal, grma::cmp::ge, 1);
      const double give_up = r.wtime() + hol_grace_seconds;
      bool visible = r.test_notifications(w, b, hol_small_tag, 1);
      while (!visible && uniform(r, std::uint64_t(r.wtime() < give_up ? 1 : 0), cell) != 0)
        visible = r.test_notifications(w, b, hol_small_tag, 1);
      CONF_EXPECT(r, rec, visible, 0, 0, 0);
      if (!visible) r.wait_notifications(w, b, hol_small_tag, 1);
      CONF_CHECK_PATTERN(r, rec, window_memory + hol_small, 8, 0xb, 0, 1);
      r.wait_notifications(w, a, hol_large_tag, 1);
      CONF_CHECK_PATTERN(r, rec, window_memory + hol_large, hol_large_bytes, 0xa, 0, 2);
      tally(r, rec, 0, visible ? 1 : 0);
    }
    r.barrier(grma::world);
    r.window_free(w);
    if (large_source) r.free(source);
    r.free(cell);
    r.free(window_memory);
  }
};

TEST_P(Queue, ANotificationIsVisibleWhileAnotherOriginsLargePutCopies) {
  grma::settings s = suite_settings();
  s.heap_size = std::uint64_t(192) << 20;  // rank 0's 64 MiB window and A's source
  grma::runtime rt(s);
  job j(rt, GetParam());
  const int n = j.resolve(head_of_line{});
  if (n < 3) GTEST_SKIP() << "needs three ranks";
  j.prepare();
  if (j.run(head_of_line{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(0, [](int rank) { return rank == 0 ? 1u : 0u; }, "visible at once");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Queue, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
