// Notification matching, against a reference model of the FIFO rule and in
// the corner where the pending list is full; by one thread, and by groups of
// threads playing a warp's lanes (as a GPU rank's first warp matches).
#include "grma/detail/matching.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "test_support.hpp"

namespace {

using grma::detail::match_in_list;
using grma::detail::match_query;
using grma::detail::notification;
using grma::detail::pending_list;
using grma::detail::ring_peek;
using grma::detail::ring_push;
using grma::detail::scope;
using grma::detail::window_key;
using grma::test::owned_ring;
using grma::test::unexpected_wait;

// (window, source, tag): comparable, and printed readably by GoogleTest.
using fields = std::tuple<std::uint32_t, std::int32_t, std::int32_t>;

fields fields_of(const notification& n) {
  return {n.window, n.source, n.tag};
}

constexpr std::int32_t any = -1;

// A warp's lanes played by threads, `count` of them: each call runs on all
// at once, and their ballots and syncs meet at a barrier. (A ballot orders
// memory here, which a GPU's does not; the GPU runs' racecheck covers that.)
class lane_team {
 public:
  explicit lane_team(int count) : count_(count), meet_(count), bits_(std::size_t(count)) {}

  struct lanes {
    lane_team* team;
    int count;
    int index;
    std::uint32_t ballot(bool p) const { return team->ballot(index, p); }
    void sync() const { team->meet_.arrive_and_wait(); }
    bool leads() const { return index == 0; }
    std::uint32_t lanes_below() const { return (1u << index) - 1u; }
  };

  // f(lanes) on every lane; lane 0's result, which every lane must share.
  template <class F>
  std::uint32_t run(F&& f) {
    std::vector<std::uint32_t> result(static_cast<std::size_t>(count_));
    std::vector<std::thread> threads;
    for (int i = 0; i < count_; ++i)
      threads.emplace_back([&, i] { result[std::size_t(i)] = f(lanes{this, count_, i}); });
    for (std::thread& t : threads) t.join();
    for (std::uint32_t r : result) EXPECT_EQ(r, result[0]) << "the lanes disagree";
    return result[0];
  }

 private:
  std::uint32_t ballot(int index, bool p) {
    bits_[std::size_t(index)] = p;
    meet_.arrive_and_wait();
    std::uint32_t mask = 0;
    for (int i = 0; i < count_; ++i) mask |= std::uint32_t(bits_[std::size_t(i)]) << i;
    meet_.arrive_and_wait();  // every lane has read the bits before the next ballot
    return mask;
  }

  int count_;
  std::barrier<> meet_;
  std::vector<char> bits_;
};

// Matching as a rank takes it: the two steps, the first by one thread, the
// second by `lanes` lanes; or (`lanes` 0) one warp's wait, match_serially.
// The number of matches removed; `taken`, where not null, receives them
// (the lanes share it, as a rank's threads share the array of
// wait_some_notifications; for one wanted exactly, each lane has a place
// of its own, as for wait_notification, and lane 0's must get the match).
std::uint32_t match_by(int lanes, pending_list& pending, const grma::detail::inbox_rings& in,
                       grma::detail::ring_reader* readers, const match_query& q,
                       grma::envelope* taken) {
  if (lanes == 0)
    return grma::detail::match_serially<scope::device>(pending, in, readers, q, taken);
  const grma::detail::head_match step =
      grma::detail::match_at_head<scope::device>(pending, in, readers, q, taken, false);
  if (step != grma::detail::head_match::search)
    return step == grma::detail::head_match::matched ? 1u : 0u;
  // The lanes' step: a query for some has one of its own.
  const auto in_list = [&](auto g, grma::envelope* place) {
    return q.some ? grma::detail::take_some<scope::device>(pending, in, readers, q, place, g)
                  : match_in_list<scope::device>(pending, in, readers, q, place, g);
  };
  if (lanes == 1) return in_list(grma::detail::lane_group{}, taken);
  const bool lone = taken != nullptr && q.count == 1 && !q.some;
  std::vector<grma::envelope> own(static_cast<std::size_t>(lanes));
  lane_team team(lanes);
  const std::uint32_t removed = team.run([&](lane_team::lanes g) {
    return in_list(g, lone ? &own[static_cast<std::size_t>(g.index)] : taken);
  });
  if (lone && removed != 0) *taken = own[0];
  return removed;
}

// One rank's unmatched notifications as the runtime keeps them: a pending list
// in front of the rank's ring, matched by `lanes` lanes (1: one thread).
class rank_inbox {
 public:
  rank_inbox(std::uint32_t pending_capacity, std::uint32_t ring_capacity, int lanes = 1)
      : items_(pending_capacity),
        pending_{0, pending_capacity, items_.data(), 0, 0, {}},
        ring_(ring_capacity),
        lanes_(lanes) {}

  void push(const notification& n) {
    ring_push<scope::device>(*ring_, credit_, n, unexpected_wait);
  }
  void purge(std::uint32_t key) {
    grma::detail::purge_notifications<scope::device>(pending_, rings(), &reader_, key);
  }

  // Hands taken slots back after each match, so ring_peek (which starts at
  // the released head) shows exactly what is still in the ring. The number
  // of matches removed.
  std::uint32_t match(const match_query& q, grma::envelope* taken = nullptr) {
    const std::uint32_t removed = match_by(lanes_, pending_, rings(), &reader_, q, taken);
    grma::detail::ring_release<scope::device>(*ring_, reader_);
    return removed;
  }

  // One look of the first step at the ring's head where the list holds no
  // match (as the leading thread polls after a search found none).
  grma::detail::head_match look_at_head(const match_query& q, grma::envelope* taken = nullptr) {
    const grma::detail::head_match step =
        grma::detail::match_at_head<scope::device>(pending_, rings(), &reader_, q, taken, true);
    grma::detail::ring_release<scope::device>(*ring_, reader_);
    return step;
  }

  const pending_list& pending() const { return pending_; }

  std::vector<fields> pending_contents() const {
    std::vector<fields> out;
    grma::detail::pending_for_each(pending_, [&](const notification& n) {
      out.push_back(fields_of(n));
      return true;
    });
    return out;
  }
  std::vector<fields> ring_contents() const {
    std::vector<fields> out;
    notification n{};
    for (std::uint64_t i = 0; ring_peek<scope::device>(*ring_, i, n); ++i)
      out.push_back(fields_of(n));
    return out;
  }
  // Everything unmatched, oldest first.
  std::vector<fields> contents() const {
    std::vector<fields> out = pending_contents();
    for (const fields& f : ring_contents()) out.push_back(f);
    return out;
  }

 private:
  grma::detail::inbox_rings rings() const {
    return {reinterpret_cast<unsigned char*>(&*ring_), 0, 1};
  }

  std::vector<notification> items_;
  pending_list pending_;
  owned_ring<notification> ring_;
  grma::detail::ring_reader reader_{0, 0, ring_->mask};
  std::uint64_t credit_ = 0;
  int lanes_;
};

// Matching by one thread, a few lanes (fewer than the pending lists and
// rings hold, so that their runs and scans take several steps) and a whole
// warp.
class Matching : public ::testing::TestWithParam<int> {
 protected:
  // Random sequences to run: fewer where each match starts many threads,
  // and a quarter of those under ThreadSanitizer, where starting a thread
  // costs some fifty times more (the 3-lane cases took 260-300 s of the
  // tsan preset's 300 s limit on two cores).
  static unsigned sequences_for(unsigned one_thread) {
    const unsigned sequences =
        GetParam() <= 1 ? one_thread : one_thread / (4 * unsigned(GetParam()));
#if defined(__SANITIZE_THREAD__)
    return GetParam() <= 1 ? sequences : sequences / 4;
#else
    return sequences;
#endif
  }
};
// 0: one warp's wait (match_serially), which takes entries one at a time as
// one lane does.
INSTANTIATE_TEST_SUITE_P(Lanes, Matching, ::testing::Values(0, 1, 3, 32),
                         [](const ::testing::TestParamInfo<int>& lanes) {
                           return lanes.param == 0 ? std::string("serial")
                                                   : std::to_string(lanes.param) + "_lanes";
                         });

// The specification, written as plainly as possible and independently of the
// library: find the first `count` matches in arrival order; remove exactly
// those, or nothing. A query for some removes the first `count`, or all
// there are where fewer (at least one). Returns the removed, oldest first.
class reference_matcher {
 public:
  void push(const notification& n) { held_.push_back(n); }

  std::vector<notification> match(const match_query& q) {
    std::vector<std::size_t> hits;
    for (std::size_t i = 0; i < held_.size() && hits.size() < std::size_t(q.count); ++i) {
      const notification& n = held_[i];
      if (n.window == q.window && (q.source == any || n.source == q.source) &&
          (q.tag == any || n.tag == q.tag))
        hits.push_back(i);
    }
    if (hits.empty() || (!q.some && hits.size() < std::size_t(q.count))) return {};
    std::vector<notification> removed;
    for (std::size_t i : hits) removed.push_back(held_[i]);
    for (auto it = hits.rbegin(); it != hits.rend(); ++it)
      held_.erase(held_.begin() + std::ptrdiff_t(*it));
    return removed;
  }

  std::size_t size() const { return held_.size(); }
  std::vector<fields> contents() const {
    std::vector<fields> out;
    for (const notification& n : held_) out.push_back(fields_of(n));
    return out;
  }

 private:
  std::deque<notification> held_;
};

const std::uint32_t window_a = window_key(0, 1);
const std::uint32_t window_b = window_key(1, 1);

TEST(WindowKey, PutsGenerationInHighBitsAndSlotInLowBits) {
  EXPECT_EQ(window_key(3, 1), 0x00010003u);
  EXPECT_EQ(window_key(3, 0xffff), 0xffff0003u);
  EXPECT_EQ(window_key(0x1ffff, 2), 0x0002ffffu);  // the slot keeps its low 16 bits
}

TEST_P(Matching, RemovesTheOldestMatchesAndKeepsTheRestInOrder) {
  rank_inbox inbox(16, 16, GetParam());
  inbox.push({window_a, 0, 5});
  inbox.push({window_a, 1, 5});
  inbox.push({window_b, 1, 5});
  inbox.push({window_a, 1, 6});
  inbox.push({window_a, 1, 5});
  inbox.push({window_a, 1, 5});

  EXPECT_TRUE(inbox.match({window_a, 1, 5, 2}));
  EXPECT_EQ(inbox.contents(),
            (std::vector<fields>{
                {window_a, 0, 5}, {window_b, 1, 5}, {window_a, 1, 6}, {window_a, 1, 5}}));
}

TEST_P(Matching, WildcardsMatchAnySourceOrTagButNeverAnotherWindow) {
  rank_inbox inbox(16, 16, GetParam());
  inbox.push({window_b, 2, 9});
  inbox.push({window_key(0, 2), 3, 7});  // slot 0 of a later generation
  inbox.push({window_a, 3, 7});
  inbox.push({window_a, 4, 8});

  EXPECT_TRUE(inbox.match({window_a, any, 7, 1}));
  EXPECT_EQ(inbox.contents(),
            (std::vector<fields>{{window_b, 2, 9}, {window_key(0, 2), 3, 7}, {window_a, 4, 8}}));
  EXPECT_TRUE(inbox.match({window_a, 4, any, 1}));
  EXPECT_FALSE(inbox.match({window_a, any, any, 1}));
  EXPECT_TRUE(inbox.match({window_key(0, 2), any, any, 1}));
  EXPECT_EQ(inbox.contents(), (std::vector<fields>{{window_b, 2, 9}}));
}

// (source, tag, immediate) of envelopes: comparable, printed readably.
using carried = std::tuple<std::int32_t, std::int32_t, std::uint64_t>;

std::vector<carried> carried_by(const grma::envelope* e, std::uint32_t count) {
  std::vector<carried> out;
  for (std::uint32_t i = 0; i < count; ++i) out.emplace_back(e[i].source, e[i].tag, e[i].immediate);
  return out;
}
std::vector<carried> carried_by(const std::vector<notification>& ns) {
  std::vector<carried> out;
  for (const notification& n : ns) out.emplace_back(n.source, n.tag, n.immediate);
  return out;
}

// A match hands out what it removed, oldest first, with the immediates:
// from the list, and taken straight from the ring.
TEST_P(Matching, HandsOutTheRemovedMatchesOldestFirst) {
  rank_inbox inbox(16, 16, GetParam());
  for (const notification& n :
       {notification{window_a, 0, 5, 0, 11}, notification{window_a, 1, 5, 0, 12},
        notification{window_a, 0, 6, 0, 13}, notification{window_a, 0, 5, 0, 14},
        notification{window_a, 1, 6, 0, 15}})
    inbox.push(n);
  grma::envelope taken[4]{};
  ASSERT_EQ(inbox.match({window_a, 0, 5, 2}, taken), 2u);
  EXPECT_EQ(carried_by(taken, 2), (std::vector<carried>{{0, 5, 11}, {0, 5, 14}}));
  ASSERT_EQ(inbox.match({window_a, any, 6, 1}, taken), 1u);
  EXPECT_EQ(carried_by(taken, 1), (std::vector<carried>{{0, 6, 13}}));
  ASSERT_EQ(inbox.match({window_a, 1, any, 2}, taken), 2u);
  EXPECT_EQ(carried_by(taken, 2), (std::vector<carried>{{1, 5, 12}, {1, 6, 15}}));
  ASSERT_TRUE(inbox.pending_contents().empty());
  inbox.push({window_a, 2, 7, 0, 16});
  ASSERT_EQ(inbox.match({window_a, 2, 7, 1}, taken), 1u);
  EXPECT_EQ(carried_by(taken, 1), (std::vector<carried>{{2, 7, 16}}));
}

// A value put's bytes (the immediate, at the place its `carried` field
// names) land in the query's range when a match removes its notification:
// taken straight from the ring, from the list, by count and for some. A
// notification that carries none writes nothing, nor does one still held.
TEST_P(Matching, ValuePutsLandInTheQuerysRangeWhenMatched) {
  using grma::detail::carried_value;
  rank_inbox inbox(16, 16, GetParam());
  std::array<unsigned char, 64> range{}, other{};
  range.fill(0xa5);
  other.fill(0xa5);
  const auto value = [](std::uint64_t offset, unsigned size_log2, std::uint64_t bits, std::int32_t tag) {
    return notification{window_a, 1, tag, carried_value(offset, size_log2), bits};
  };
  inbox.push(value(8, 3, 0x1122334455667788ull, 0));
  inbox.push(value(17, 0, 0xab, 1));
  inbox.push({window_b, 2, 0, 0, 99});
  inbox.push(value(34, 1, 0xbeef, 2));
  inbox.push(value(44, 2, 0xdeadbeefull, 3));
  inbox.push(value(56, 3, 0x0102030405060708ull, 4));
  std::array<unsigned char, 64> expected = range;
  const auto landed = [&](std::size_t offset, std::size_t bytes, std::uint64_t bits) {
    for (std::size_t b = 0; b < bytes; ++b) expected[offset + b] = static_cast<unsigned char>(bits >> (8 * b));
  };
  ASSERT_EQ(inbox.match({window_a, 1, 0, 1, false, range.data()}), 1u);  // the ring's head
  landed(8, 8, 0x1122334455667788ull);
  EXPECT_EQ(range, expected);
  ASSERT_EQ(inbox.match({window_b, any, any, 1, false, other.data()}), 1u);  // behind two values
  EXPECT_EQ(range, expected);
  EXPECT_TRUE(std::all_of(other.begin(), other.end(), [](unsigned char c) { return c == 0xa5; }));
  ASSERT_EQ(inbox.match({window_a, 1, any, 2, false, range.data()}), 2u);
  landed(17, 1, 0xab);
  landed(34, 2, 0xbeef);
  EXPECT_EQ(range, expected);
  grma::envelope taken[8]{};
  ASSERT_EQ(inbox.match({window_a, any, any, 8, true, range.data()}, taken), 2u);
  landed(44, 4, 0xdeadbeefull);
  landed(56, 8, 0x0102030405060708ull);
  EXPECT_EQ(range, expected);
  EXPECT_EQ(carried_by(taken, 2),
            (std::vector<carried>{{1, 3, 0xdeadbeefull}, {1, 4, 0x0102030405060708ull}}));
}

// A notification slot carries a value put's place and size, at the largest
// offset each size can name, beside every bit of the immediate; stored
// without a fence (store_unordered) as with one.
TEST(NotificationSlot, CarriesAValuePutsPlaceBesideTheImmediate) {
  using grma::detail::carried_units;
  using grma::detail::carried_value;
  owned_ring<notification> q(4);
  std::uint64_t credit = 0;
  for (unsigned size_log2 = 0; size_log2 < 4; ++size_log2)
    for (const std::uint64_t offset : {std::uint64_t{0}, (carried_units - 1) << size_log2}) {
      const notification n{window_b, 0x7fffffff, 0x7ffffffe, carried_value(offset, size_log2),
                           ~std::uint64_t{0} - offset};
      const std::uint64_t ticket = grma::detail::ring_reserve<scope::device>(*q, credit, unexpected_wait);
      if (offset == 0)
        grma::detail::ring_publish<scope::device>(*q, q->capacity, ticket, n);
      else
        grma::detail::ring_publish<scope::device, false>(*q, q->capacity, ticket, n);
      notification out{};
      ASSERT_TRUE(grma::detail::ring_try_pop<scope::device>(*q, out));
      EXPECT_EQ(std::memcmp(&out, &n, sizeof n), 0) << "size 2^" << size_log2 << ", offset " << offset;
      EXPECT_EQ(out.carried >> 3 << size_log2, offset);
      EXPECT_EQ(out.carried & 3u, size_log2);
    }
}

// A query for some takes every match it can see, up to its count, and
// fails (removing nothing) only where none matches.
TEST_P(Matching, SomeTakesWhatMatchesUpToItsCount) {
  rank_inbox inbox(16, 16, GetParam());
  for (std::int32_t tag = 0; tag < 6; ++tag) {
    inbox.push({window_a, 1, tag, 0, std::uint64_t(100 + tag)});
    inbox.push({window_b, 2, tag});
  }
  grma::envelope taken[8]{};
  ASSERT_EQ(inbox.match({window_a, 1, any, 4, true}, taken), 4u);
  EXPECT_EQ(carried_by(taken, 4),
            (std::vector<carried>{{1, 0, 100}, {1, 1, 101}, {1, 2, 102}, {1, 3, 103}}));
  ASSERT_EQ(inbox.match({window_a, any, any, 8, true}, taken), 2u);  // fewer than 8: all of them
  EXPECT_EQ(carried_by(taken, 2), (std::vector<carried>{{1, 4, 104}, {1, 5, 105}}));
  const std::vector<fields> before = inbox.contents();
  EXPECT_EQ(inbox.match({window_a, any, any, 8, true}, taken), 0u);
  EXPECT_EQ(inbox.contents(), before);
  ASSERT_EQ(inbox.match({window_b, 2, 3, 1, true}, taken), 1u);
  EXPECT_EQ(carried_by(taken, 1), (std::vector<carried>{{2, 3, 0}}));
  EXPECT_EQ(inbox.contents().size(), 5u);
}

// A rank's inbox on a job of several devices: a pending list in front of
// one ring per device, matched by `lanes` lanes (0: match_serially).
class rings_inbox {
 public:
  rings_inbox(int rings, std::uint32_t pending_capacity, std::uint32_t ring_capacity)
      : memory_(std::size_t(rings) * stride_for(ring_capacity)),
        stride_(stride_for(ring_capacity)),
        rings_(rings),
        credits_(std::size_t(rings)),
        items_(pending_capacity),
        pending_{0, pending_capacity, items_.data(), 0, 0, {}} {
    for (int i = 0; i < rings; ++i) {
      ring_.push_back(grma::detail::ring_init<notification>(
          memory_.data() + stride_ * std::uint64_t(i), ring_capacity));
      readers_.push_back({0, 0, ring_capacity - 1});
    }
  }

  void push(int ring, const notification& n) {
    ring_push<scope::device>(*ring_[std::size_t(ring)], credits_[std::size_t(ring)], n,
                             unexpected_wait);
  }
  // A push in its two steps, as a producer makes it: a ticket, and later
  // its entry.
  std::uint64_t reserve(int ring) {
    return grma::detail::ring_reserve<scope::device>(*ring_[std::size_t(ring)],
                                                     credits_[std::size_t(ring)], unexpected_wait);
  }
  void publish(int ring, std::uint64_t ticket, const notification& n) {
    grma::detail::notification_ring& q = *ring_[std::size_t(ring)];
    grma::detail::ring_publish<scope::device>(q, q.capacity, ticket, n);
  }
  std::uint32_t match(int lanes, const match_query& q, grma::envelope* taken) {
    return match_by(lanes, pending_, rings(), readers_.data(), q, taken);
  }
  void purge(std::uint32_t key) {
    grma::detail::purge_notifications<scope::device>(pending_, rings(), readers_.data(), key);
  }

  const pending_list& pending() const { return pending_; }
  std::vector<fields> held() const {
    std::vector<fields> out;
    grma::detail::pending_for_each(pending_, [&](const notification& n) {
      out.push_back(fields_of(n));
      return true;
    });
    return out;
  }
  std::vector<fields> ring_contents(int ring) const {
    std::vector<fields> out;
    notification n{};
    for (std::uint64_t i = 0; ring_peek<scope::device>(*ring_[std::size_t(ring)], i, n); ++i)
      out.push_back(fields_of(n));
    return out;
  }

 private:
  static std::uint64_t stride_for(std::uint32_t ring_capacity) {
    return (grma::detail::ring<notification>::bytes_for(ring_capacity) + 255) / 256 * 256;
  }
  grma::detail::inbox_rings rings() const { return {memory_.data(), stride_, rings_}; }

  grma::test::aligned_buffer memory_;
  std::uint64_t stride_;
  int rings_;
  std::vector<grma::detail::ring<notification>*> ring_;
  std::vector<grma::detail::ring_reader> readers_;
  std::vector<std::uint64_t> credits_;
  std::vector<notification> items_;
  pending_list pending_;
};

// Two devices: a pending list of 4 in front of two rings of 16, the first
// holding eight notifications of window_b (tags 0-7), the second one of
// window_a (source 1, tag 9, immediate 77).
class two_ring_inbox : public rings_inbox {
 public:
  two_ring_inbox() : rings_inbox(2, 4, 16) {
    for (std::int32_t tag = 0; tag < 8; ++tag) push(0, notification{window_b, 0, tag});
    push(1, notification{window_a, 1, 9, 0, 77});
  }
};

// A run from one ring takes no more than its share of the list's room, so
// that the other ring's entry still gets in, as it does when entries move
// one at a time.
TEST_P(Matching, RunsLeaveTheOtherRingsTheirShareOfTheRoom) {
  two_ring_inbox inbox;
  grma::envelope taken{};
  ASSERT_EQ(inbox.match(GetParam(), {window_a, any, any, 1}, &taken), 1u);
  EXPECT_EQ(carried_by(&taken, 1), (std::vector<carried>{{1, 9, 77}}));
  EXPECT_EQ(inbox.held(), (std::vector<fields>{{window_b, 0, 0}, {window_b, 0, 1}}));
}

// The same for a query for some, which goes on past its first match: its
// runs take their share as if the match handed out were still held, so
// the list fills with the first ring's entries up to its capacity.
TEST_P(Matching, SomeLeavesTheOtherRingsTheirShareToo) {
  two_ring_inbox inbox;
  grma::envelope taken[4]{};
  ASSERT_EQ(inbox.match(GetParam(), {window_a, any, any, 4, true}, taken), 1u);
  EXPECT_EQ(carried_by(taken, 1), (std::vector<carried>{{1, 9, 77}}));
  EXPECT_EQ(inbox.held(),
            (std::vector<fields>{{window_b, 0, 0}, {window_b, 0, 1}, {window_b, 0, 2}}));
}

// A query for some keeps to each ring's share of the room when the first
// ring holds far more than its share, so the second ring's match still
// gets in.
TEST_P(Matching, SomeKeepsToEachRingsShareOfALongerBacklog) {
  rings_inbox inbox(2, 8, 16);
  for (std::int32_t tag = 0; tag < 16; ++tag) inbox.push(0, notification{window_b, 0, tag});
  inbox.push(1, notification{window_b, 1, 0});
  inbox.push(1, notification{window_b, 1, 1});
  inbox.push(1, notification{window_a, 1, 2, 0, 5});
  grma::envelope taken[4]{};
  ASSERT_EQ(inbox.match(GetParam(), {window_a, any, any, 4, true}, taken), 1u);
  EXPECT_EQ(carried_by(taken, 1), (std::vector<carried>{{1, 2, 5}}));
}

// An entry whose ticket is taken but not yet published ends what a look
// takes: nothing behind it moves, though all behind it are published.
TEST_P(Matching, AnUnpublishedEntryStopsTheRuns) {
  rings_inbox inbox(1, 128, 128);
  const std::int32_t gap = std::max(GetParam(), 2) - 1;  // within a first run of the lanes
  std::uint64_t ticket[64];
  for (std::uint64_t& t : ticket) t = inbox.reserve(0);
  for (std::int32_t i = 0; i < 64; ++i)
    if (i != gap) inbox.publish(0, ticket[i], notification{window_b, 0, i});
  std::vector<fields> all;
  for (std::int32_t i = 0; i < 64; ++i) all.push_back({window_b, 0, i});
  grma::envelope taken[4]{};
  ASSERT_EQ(inbox.match(GetParam(), {window_a, any, any, 4, true}, taken), 0u);
  EXPECT_EQ(inbox.held(), std::vector<fields>(all.begin(), all.begin() + gap));
  inbox.publish(0, ticket[gap], notification{window_b, 0, gap});
  ASSERT_EQ(inbox.match(GetParam(), {window_a, any, any, 4, true}, taken), 0u);
  EXPECT_EQ(inbox.held(), all);
}

// Taking from the middle leaves a hole; a full list closes its holes before
// it takes the next arrival, and the order stays the arrival order.
TEST_P(Matching, ClosesHolesWhenItNeedsTheRoom) {
  rank_inbox inbox(4, 8, GetParam());
  for (int tag = 0; tag < 4; ++tag) inbox.push({window_a, 0, tag});
  ASSERT_FALSE(inbox.match({window_a, 0, 9, 1}));  // all four move to the pending list
  ASSERT_TRUE(inbox.match({window_a, 0, 1, 1}));
  ASSERT_TRUE(inbox.match({window_a, 0, 2, 1}));
  inbox.push({window_a, 0, 4});
  inbox.push({window_a, 0, 5});
  EXPECT_TRUE(inbox.match({window_a, 0, 5, 1}));  // two holes closed to take 4 and 5
  EXPECT_EQ(inbox.contents(), (std::vector<fields>{{window_a, 0, 0}, {window_a, 0, 3}, {window_a, 0, 4}}));
  EXPECT_TRUE(inbox.match({window_a, any, any, 3}));
  EXPECT_TRUE(inbox.contents().empty());
}

TEST_P(Matching, TooFewMatchesRemoveNothing) {
  rank_inbox inbox(16, 16, GetParam());
  inbox.push({window_a, 0, 1});
  inbox.push({window_b, 0, 1});
  inbox.push({window_a, 0, 1});
  const std::vector<fields> before = inbox.contents();

  EXPECT_FALSE(inbox.match({window_a, 0, 1, 3}));
  EXPECT_EQ(inbox.contents(), before);
  EXPECT_TRUE(inbox.match({window_a, 0, 1, 2}));
  EXPECT_EQ(inbox.contents(), (std::vector<fields>{{window_b, 0, 1}}));
}

// Entries move from the ring to the pending list a run at a time, as many
// as the lanes reach (after the first, which one thread looks at alone):
// one thread takes them only as far as a query needs.
TEST_P(Matching, DrainsTheRingARunOfLanesAtATime) {
  rank_inbox inbox(16, 16, GetParam());
  for (std::int32_t tag = 0; tag < 5; ++tag) inbox.push({window_a, 0, tag});

  EXPECT_TRUE(inbox.match({window_a, 0, 1, 1}));
  const std::vector<fields> left{
      {window_a, 0, 0}, {window_a, 0, 2}, {window_a, 0, 3}, {window_a, 0, 4}};
  EXPECT_EQ(inbox.contents(), left);
  const std::ptrdiff_t held = std::min(std::max(GetParam(), 1), 4);
  EXPECT_EQ(inbox.pending_contents(), std::vector<fields>(left.begin(), left.begin() + held));
}

// With nothing held, an oldest arrival that is the one match wanted is
// taken alone; the rest stays in the ring.
TEST_P(Matching, TakesTheOldestArrivalStraight) {
  rank_inbox inbox(16, 16, GetParam());
  for (std::int32_t tag = 0; tag < 5; ++tag) inbox.push({window_a, 0, tag});

  EXPECT_TRUE(inbox.match({window_a, 0, 0, 1}));
  EXPECT_TRUE(inbox.pending_contents().empty());
  EXPECT_EQ(inbox.ring_contents(),
            (std::vector<fields>{
                {window_a, 0, 1}, {window_a, 0, 2}, {window_a, 0, 3}, {window_a, 0, 4}}));
}

// With the pending list full, the ring keeps the rest. A query that needs an
// entry still in the ring fails, removing nothing, until a match frees room.
TEST_P(Matching, FullPendingListLeavesTheRestInTheRing) {
  rank_inbox inbox(4, 8, GetParam());
  const notification a{window_a, 0, 1}, b{window_a, 1, 1}, c{window_a, 2, 1}, d{window_a, 3, 1};
  const notification e{window_a, 0, 2}, f{window_a, 1, 2};
  for (const notification& n : {a, b, c, d, e, f}) inbox.push(n);

  EXPECT_FALSE(inbox.match({window_a, any, 2, 1}));
  EXPECT_EQ(inbox.pending_contents(),
            (std::vector<fields>{fields_of(a), fields_of(b), fields_of(c), fields_of(d)}));
  EXPECT_EQ(inbox.ring_contents(), (std::vector<fields>{fields_of(e), fields_of(f)}));

  // Room for one more: e comes in, f still cannot.
  EXPECT_TRUE(inbox.match({window_a, 0, 1, 1}));
  EXPECT_FALSE(inbox.match({window_a, any, 2, 2}));
  EXPECT_EQ(inbox.pending_contents(),
            (std::vector<fields>{fields_of(b), fields_of(c), fields_of(d), fields_of(e)}));
  EXPECT_EQ(inbox.ring_contents(), (std::vector<fields>{fields_of(f)}));

  // Matches within the full list still work and make room for f.
  EXPECT_TRUE(inbox.match({window_a, any, 1, 2}));
  EXPECT_EQ(inbox.contents(), (std::vector<fields>{fields_of(d), fields_of(e), fields_of(f)}));
  EXPECT_TRUE(inbox.match({window_a, any, 2, 2}));
  EXPECT_EQ(inbox.pending_contents(), (std::vector<fields>{fields_of(d)}));
  EXPECT_EQ(inbox.ring_contents(), (std::vector<fields>{}));
}

// Once a search found no match for one wanted, the leading thread waits at
// the ring's head: each arrival is the match or joins the list in order,
// until the list is full (then the lanes' step waits).
TEST_P(Matching, WaitsAtTheHeadOnceTheListHoldsNoMatch) {
  using grma::detail::head_match;
  rank_inbox inbox(4, 8, GetParam());
  const notification a{window_a, 0, 1}, b{window_a, 1, 1}, c{window_a, 2, 1};
  const notification d{window_a, 3, 2, 0, 44}, e{window_a, 3, 2}, f{window_a, 4, 1};
  inbox.push(a);
  EXPECT_FALSE(inbox.match({window_a, 3, 2, 1}));
  EXPECT_EQ(inbox.look_at_head({window_a, 3, 2, 1}), head_match::empty);  // nothing came

  for (const notification& n : {b, c, d, e}) inbox.push(n);
  grma::envelope taken{};
  EXPECT_EQ(inbox.look_at_head({window_a, 3, 2, 1}, &taken), head_match::empty);
  EXPECT_EQ(inbox.look_at_head({window_a, 3, 2, 1}, &taken), head_match::empty);
  EXPECT_EQ(inbox.look_at_head({window_a, 3, 2, 1}, &taken), head_match::matched);
  EXPECT_EQ(taken.immediate, 44u);
  EXPECT_EQ(inbox.pending_contents(),
            (std::vector<fields>{fields_of(a), fields_of(b), fields_of(c)}));
  EXPECT_EQ(inbox.ring_contents(), (std::vector<fields>{fields_of(e)}));

  // e fills the list; then f, a match, stays in the ring for the lanes.
  inbox.push(f);
  EXPECT_EQ(inbox.look_at_head({window_a, 9, 9, 1}), head_match::empty);
  EXPECT_EQ(inbox.pending_contents(),
            (std::vector<fields>{fields_of(a), fields_of(b), fields_of(c), fields_of(e)}));
  EXPECT_EQ(inbox.look_at_head({window_a, 4, 1, 1}), head_match::search);
  EXPECT_EQ(inbox.ring_contents(), (std::vector<fields>{fields_of(f)}));
}

// A call for some whose first look found none waits as a call for one
// does (rank::match_waiting): the leading thread at the ring's head with
// the query's copy for one match, which takes the first match to arrive
// alone; the next call for some takes what came after it, oldest first.
TEST_P(Matching, SomeThatFindsNoneTakesTheFirstArrivalAlone) {
  using grma::detail::head_match;
  rank_inbox inbox(8, 16, GetParam());
  const notification a{window_a, 1, 1}, b{window_a, 3, 2, 0, 21}, c{window_a, 3, 5, 0, 22};
  const notification d{window_b, 3, 2}, e{window_a, 3, 7, 0, 23};
  inbox.push(a);
  const match_query some{window_a, 3, any, 8, true};
  grma::envelope taken[8]{};
  EXPECT_EQ(inbox.match(some, taken), 0u);  // a, no match, joins the list
  match_query first = some;
  first.count = 1;
  EXPECT_EQ(inbox.look_at_head(first, taken), head_match::empty);
  for (const notification& n : {d, b, c, e}) inbox.push(n);
  EXPECT_EQ(inbox.look_at_head(first, taken), head_match::empty);  // d joins the list
  EXPECT_EQ(inbox.look_at_head(first, taken), head_match::matched);
  EXPECT_EQ(carried_by(taken, 1), (std::vector<carried>{{3, 2, 21}}));
  EXPECT_EQ(inbox.pending_contents(), (std::vector<fields>{fields_of(a), fields_of(d)}));
  EXPECT_EQ(inbox.ring_contents(), (std::vector<fields>{fields_of(c), fields_of(e)}));
  ASSERT_EQ(inbox.match(some, taken), 2u);
  EXPECT_EQ(carried_by(taken, 2), (std::vector<carried>{{3, 5, 22}, {3, 7, 23}}));
  EXPECT_EQ(inbox.contents(), (std::vector<fields>{fields_of(a), fields_of(d)}));
}

// Uniform integers in [low, high] from a sequence seeded with `seed`.
class picker {
 public:
  explicit picker(unsigned seed) : rng_(seed) {}
  int operator()(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }

 private:
  std::mt19937 rng_;
};

// Random pushes and queries (exact counts and some) over few windows,
// sources and tags, so matches and wildcards are frequent. The number of unmatched notifications
// stays below the pending capacity (the full list is tested above).
TEST_P(Matching, RandomizedAgreesWithReferenceModel) {
  const unsigned sequences = sequences_for(10000);
  constexpr int steps = 40;
  const std::uint32_t windows[] = {window_a, window_b, window_key(0, 2)};
  for (unsigned seed = 1; seed <= sequences; ++seed) {
    picker pick(seed);
    const std::uint32_t pending_capacity = 4u << pick(0, 2);
    rank_inbox inbox(pending_capacity, pending_capacity << pick(0, 1), GetParam());
    reference_matcher model;
    for (int step = 0; step < steps; ++step) {
      if (model.size() + 1 < pending_capacity && pick(0, 99) < 55) {
        // Two windows in notifications; the third key only ever appears in queries.
        const notification n{windows[pick(0, 1)], pick(0, 2), pick(0, 2)};
        inbox.push(n);
        model.push(n);
        continue;
      }
      const match_query q{windows[pick(0, 2)], pick(-1, 2), pick(-1, 2), pick(1, 4),
                          pick(0, 3) == 0};
      const std::vector<notification> expected = model.match(q);
      grma::envelope taken[4]{};
      const std::uint32_t removed = inbox.match(q, taken);
      ASSERT_EQ(carried_by(taken, removed), carried_by(expected))
          << "seed " << seed << ", step " << step;
      ASSERT_EQ(inbox.contents(), model.contents()) << "seed " << seed << ", step " << step;
    }
  }
}

// The specification with the runtime's bounds: a pending list of `capacity`
// and one ring per device behind it (arrival order within each), drained
// into the list as far as a query needs and as the list has room: the
// rings in turn, a run from each of up to `lanes` entries and of no more
// than the rings' even share of the list's room (at least one). With
// nothing held and one match wanted, the first arrival alone first (the
// first ring's that has one): taken if it is the match, else moved to the
// list. Purge drops a window from the list and then from each ring in
// turn, as far as the list has room for the others' entries on the way.
class bounded_reference {
 public:
  bounded_reference(std::size_t capacity, int lanes, int rings = 1)
      : capacity_(capacity),
        lanes_(std::size_t(lanes < 1 ? 1 : lanes)),
        rings_(std::size_t(rings)) {}

  void push(const notification& n, int ring = 0) { rings_[std::size_t(ring)].push_back(n); }

  // The removed, oldest first.
  std::vector<notification> match(const match_query& q) {
    int found = 0;
    for (const notification& n : pending_)
      if (found < q.count && matches(n, q)) ++found;
    if (pending_.empty() && q.count == 1)
      for (std::deque<notification>& ring : rings_) {
        if (ring.empty()) continue;
        if (matches(ring.front(), q)) {
          const notification n = ring.front();
          ring.pop_front();
          return {n};
        }
        take(ring);
        break;
      }
    for (bool took = true; took && found < q.count;) {
      took = false;
      for (std::deque<notification>& ring : rings_) {
        if (found >= q.count || pending_.size() == capacity_ || ring.empty())
          continue;  // a run may pass the count
        const std::size_t share = (capacity_ - pending_.size()) / rings_.size();
        const std::size_t run = std::min({lanes_, std::max<std::size_t>(share, 1), ring.size()});
        for (std::size_t k = 0; k < run; ++k)
          if (matches(take(ring), q)) ++found;
        took = true;
      }
    }
    if (found == 0 || (!q.some && found < q.count)) return {};
    std::vector<notification> removed;
    for (auto it = pending_.begin(); it != pending_.end() && int(removed.size()) < q.count;)
      if (matches(*it, q)) {
        removed.push_back(*it);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    return removed;
  }

  void purge(std::uint32_t key) {
    std::erase_if(pending_, [&](const notification& n) { return n.window == key; });
    for (std::deque<notification>& ring : rings_)
      while (!ring.empty()) {
        if (ring.front().window != key) {
          if (pending_.size() == capacity_) break;
          pending_.push_back(ring.front());
        }
        ring.pop_front();
      }
  }

  std::vector<fields> pending_contents() const { return contents_of(pending_); }
  std::vector<fields> ring_contents(int ring = 0) const {
    return contents_of(rings_[std::size_t(ring)]);
  }

 private:
  static bool matches(const notification& n, const match_query& q) {
    return grma::detail::matches(n, q);
  }
  static std::vector<fields> contents_of(const std::deque<notification>& d) {
    std::vector<fields> out;
    for (const notification& n : d) out.push_back(fields_of(n));
    return out;
  }
  // Moves the ring's oldest to the list.
  const notification& take(std::deque<notification>& ring) {
    pending_.push_back(ring.front());
    ring.pop_front();
    return pending_.back();
  }

  std::size_t capacity_, lanes_;
  std::vector<std::deque<notification>> rings_;
  std::deque<notification> pending_;
};

// The pending list's bookkeeping: `size` entries in [first, end), which
// start and end with one (no hole at either end), and first = end = 0 when
// it is empty. What it remembers of the last search that found too few is
// true: that many matches of its query in [first, its end), none before
// its oldest.
::testing::AssertionResult well_formed(const pending_list& p) {
  std::uint32_t held = 0;
  for (std::uint32_t i = p.first; i < p.end; ++i) held += p.items[i].window != grma::detail::no_window;
  const bool ends_held = p.size == 0 ? p.first == 0 && p.end == 0
                                     : p.items[p.first].window != grma::detail::no_window &&
                                           p.items[p.end - 1].window != grma::detail::no_window;
  if (!(p.first <= p.end && p.end <= p.capacity && held == p.size && ends_held))
    return ::testing::AssertionFailure()
           << "size " << p.size << ", first " << p.first << ", end " << p.end << ", held " << held;
  const grma::detail::pending_search& s = p.searched;
  if (s.window == grma::detail::no_window) return ::testing::AssertionSuccess();
  const match_query q{s.window, s.source, s.tag, 1};
  std::uint32_t found = 0, before_oldest = 0;
  const bool in_list = p.first <= s.end && s.end <= p.end;
  for (std::uint32_t i = p.first; in_list && i < s.end; ++i)
    if (grma::detail::matches(p.items[i], q)) {
      ++found;
      before_oldest += i < s.oldest;
    }
  if (in_list && found == s.found && before_oldest == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the search remembered (end " << s.end << ", " << s.found << " found, oldest "
         << s.oldest << ") is not the list's: " << found << " found, " << before_oldest
         << " before the oldest";
}

// The sizes of a randomized sequence: pending lists of `fewest_held` to
// `most_held` entries, rings of 4 << [`fewest_ring_shift`,
// `most_ring_shift`] entries, and `backlog` arrivals before the first query.
struct model_sizes {
  int fewest_held = 1, most_held = 12, fewest_ring_shift = 0, most_ring_shift = 2, backlog = 0;
};

// Full pending lists, holes closed in the middle of a match, counts up to
// eight (exact, or some) and purges, against the bounded model, by `lanes`
// lanes, with `fewest` to `most` rings (a job of as many devices), the
// rings' arrivals interleaved at random.
void agree_with_the_bounded_model(int lanes, unsigned sequences, int fewest, int most,
                                  model_sizes sizes = {}) {
  constexpr int steps = 120;
  const std::uint32_t windows[] = {window_a, window_b, window_key(0, 3)};
  for (unsigned seed = 1; seed <= sequences; ++seed) {
    picker pick(seed);
    const int rings = pick(fewest, most);
    const std::uint32_t pending_capacity = std::uint32_t(pick(sizes.fewest_held, sizes.most_held));
    const std::uint32_t ring_capacity = 4u << pick(sizes.fewest_ring_shift, sizes.most_ring_shift);
    rings_inbox inbox(rings, pending_capacity, ring_capacity);
    bounded_reference model(pending_capacity, lanes, rings);
    match_query last{windows[0], -1, -1, 1};
    for (int step = -sizes.backlog; step < steps; ++step) {
      const int what = step < 0 ? 0 : pick(0, 99);
      if (what < 55) {
        const int ring = pick(0, rings - 1);
        if (model.ring_contents(ring).size() == ring_capacity) continue;  // a producer would wait
        const notification n{windows[pick(0, 2)], pick(0, 2), pick(0, 1), 0,
                             std::uint64_t(seed) * 1000 + std::uint64_t(step)};
        inbox.push(ring, n);
        model.push(n, ring);
      } else if (what < 95) {
        // A third of the queries repeat the last one's window, source and
        // tag (a wait's turns, a test in a loop), with a count of their own.
        match_query q{windows[pick(0, 2)], pick(-1, 2), pick(-1, 1), pick(1, 8), pick(0, 2) == 0};
        if (pick(0, 2) == 0) {
          q.window = last.window;
          q.source = last.source;
          q.tag = last.tag;
        }
        last = q;
        grma::envelope taken[8]{};
        const std::uint32_t removed = inbox.match(lanes, q, taken);
        ASSERT_EQ(carried_by(taken, removed), carried_by(model.match(q)))
            << "seed " << seed << ", step " << step;
      } else {
        const std::uint32_t key = windows[pick(0, 2)];
        inbox.purge(key);
        model.purge(key);
      }
      ASSERT_TRUE(well_formed(inbox.pending())) << "seed " << seed << ", step " << step;
      ASSERT_EQ(inbox.held(), model.pending_contents()) << "seed " << seed << ", step " << step;
      for (int ring = 0; ring < rings; ++ring)
        ASSERT_EQ(inbox.ring_contents(ring), model.ring_contents(ring))
            << "seed " << seed << ", step " << step << ", ring " << ring;
    }
  }
}

TEST_P(Matching, RandomizedAgreesWithTheBoundedModelUnderPressure) {
  agree_with_the_bounded_model(GetParam(), sequences_for(5000), 1, 1);
}

// Long lists and rings with a backlog: whole runs of 32 lanes, one after
// another in one call.
TEST_P(Matching, RandomizedAgreesWithTheBoundedModelInLongRuns) {
  agree_with_the_bounded_model(GetParam(), sequences_for(2000), 1, 2, {64, 192, 4, 6, 100});
}

// Runs from several rings take turns and share the list's room.
TEST_P(Matching, RandomizedAgreesWithTheBoundedModelOverSeveralRings) {
  agree_with_the_bounded_model(GetParam(), sequences_for(5000), 2, 3);
}

// Against the plain specification (reference_matcher) where several rings
// leave nothing to interleave: each source's notifications arrive on one
// ring (a source is on one device), every query names its source, and the
// list never fills; what each query takes is then that source's FIFO.
TEST_P(Matching, SeveralRingsKeepEachSourcesOrder) {
  const unsigned sequences = sequences_for(4000);
  constexpr int steps = 80;
  const std::uint32_t windows[] = {window_a, window_b};
  for (unsigned seed = 1; seed <= sequences; ++seed) {
    picker pick(seed);
    const int rings = pick(2, 3);
    rings_inbox inbox(rings, 64, 64);
    reference_matcher model;
    int held = 0;
    for (int step = 0; step < steps; ++step) {
      if (held < 48 && pick(0, 99) < 55) {
        const std::int32_t source = pick(0, 3);
        const notification n{windows[pick(0, 1)], source, pick(0, 2), 0,
                             std::uint64_t(seed) * 1000 + std::uint64_t(step)};
        inbox.push(source % rings, n);
        model.push(n);
        ++held;
        continue;
      }
      const match_query q{windows[pick(0, 1)], pick(0, 3), pick(-1, 2), pick(1, 4),
                          pick(0, 1) == 0};
      grma::envelope taken[4]{};
      const std::vector<notification> expected = model.match(q);
      const std::uint32_t removed = inbox.match(GetParam(), q, taken);
      ASSERT_EQ(carried_by(taken, removed), carried_by(expected))
          << "seed " << seed << ", step " << step;
      held -= int(removed);
    }
  }
}

}  // namespace

TEST(Purge, DropsOneWindowFromPendingListAndRing) {
  rank_inbox inbox(/*pending_capacity=*/4, /*ring_capacity=*/8);
  const notification a{1, 0, 5}, b{2, 0, 5}, c{1, 1, 6}, d{2, 1, 7}, e{1, 0, 8};
  for (const notification& n : {a, b, c, d, e}) inbox.push(n);
  ASSERT_FALSE(inbox.match({3, -1, -1, 1}));  // a-d fill the pending list, e stays in the ring
  inbox.purge(2);
  EXPECT_EQ(inbox.contents(), (std::vector<fields>{fields_of(a), fields_of(c), fields_of(e)}));
  // The other windows' notifications still match, in order.
  EXPECT_TRUE(inbox.match({1, -1, -1, 3}));
  EXPECT_EQ(inbox.contents(), (std::vector<fields>{}));
}

TEST(Purge, LeavesOthersInTheRingWhenThePendingListIsFull) {
  rank_inbox inbox(/*pending_capacity=*/2, /*ring_capacity=*/8);
  const notification a{1, 0, 1}, b{1, 0, 2}, c{2, 0, 3}, d{1, 0, 4}, e{2, 0, 5};
  for (const notification& n : {a, b, c, d, e}) inbox.push(n);
  inbox.purge(2);  // a, b fill the list; c is dropped; d has no room and stops the purge
  EXPECT_EQ(inbox.pending_contents(), (std::vector<fields>{fields_of(a), fields_of(b)}));
  EXPECT_EQ(inbox.ring_contents(), (std::vector<fields>{fields_of(d), fields_of(e)}));
}
