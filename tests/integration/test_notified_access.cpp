// Notified access between ranks: put_notify and get_notify deliver the data
// before their notification, and matching finds every notification exactly
// once, with and without wildcards, in FIFO order.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <vector>

#include "support.hpp"

namespace grma_test {
namespace {

class NotifiedAccess : public testing::TestWithParam<int> {};

// Ranks 2k and 2k + 1 bounce messages of 1 B to 1 MiB, odd sizes and
// unaligned offsets included. Every message carries new data that names its
// sender and round, checked byte for byte on arrival.
TEST_P(NotifiedAccess, PingPongDeliversEveryByte) {
  constexpr std::size_t max_bytes = std::size_t(1) << 20;
  constexpr std::size_t sizes[] = {1,        2,    3,     7,     8,      9,
                                   63,       64,   65,    255,   1000,   4095,
                                   4096,     4097, 65535, 65536, 100003, max_bytes - 1,
                                   max_bytes};
  constexpr std::size_t max_offset = 7;  // messages land at offsets 0..7 of the inbox
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world);
    const int peer = me ^ 1;
    auto* inbox = static_cast<std::uint8_t*>(r.alloc(max_bytes + max_offset));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc(max_bytes));
    grma::window w = r.window_create(grma::world, inbox, max_bytes + max_offset);
    if (peer < r.size(grma::world)) {
      for (std::size_t s = 0; s < std::size(sizes); ++s) {
        const std::size_t bytes = sizes[s];
        const int rounds = bytes <= 4096 ? 16 : bytes <= 65536 ? 4 : 2;
        for (int round = 0; round < rounds; ++round) {
          const std::size_t offset = (s + std::size_t(round)) % (max_offset + 1);
          const int tag = int(s) * 100 + round;
          auto send = [&] {
            fill_pattern(outbox, bytes, mix(me, bytes, round));
            r.put_notify(w, peer, offset, bytes, outbox, tag);
          };
          auto receive = [&] {
            r.wait_notifications(w, peer, tag, 1);
            const std::string d =
                pattern_difference(inbox + offset, bytes, mix(peer, bytes, round));
            findings.check(me, d.empty(), bytes, " B from ", peer, " round ", round, ": ", d);
          };
          if (me % 2 == 0) {
            send();
            receive();
          } else {
            receive();
            send();
          }
        }
      }
    }
    r.barrier(grma::world);
    findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag),
                   "a notification is left after the ping-pong");
    r.window_free(w);
    r.free(outbox);
    r.free(inbox);
  });
}

// Every rank puts to its right neighbour for many rounds without waiting for
// the neighbour, so many messages are in flight; each round has its own slot,
// size and tag, and the receiver checks each round's data.
TEST_P(NotifiedAccess, RingDeliversEveryRound) {
  constexpr int rounds = 400;
  constexpr int tags = 5;
  constexpr int lag = 16;  // rounds sent before the first one is received
  constexpr std::size_t slot_bytes = 64;
  auto message_bytes = [](int source, int round) {
    return 1 + std::size_t(mix(source, round) % slot_bytes);
  };
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* inbox = static_cast<std::uint8_t*>(r.alloc(rounds * slot_bytes));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc(slot_bytes));
    grma::window w = r.window_create(grma::world, inbox, rounds * slot_bytes);
    auto receive = [&](int round) {
      r.wait_notifications(w, left, round % tags, 1);
      const std::string d = pattern_difference(inbox + round * slot_bytes,
                                               message_bytes(left, round), mix(left, round));
      findings.check(me, d.empty(), "round ", round, ": ", d);
    };
    for (int round = 0; round < rounds; ++round) {
      const std::size_t bytes = message_bytes(me, round);
      fill_pattern(outbox, bytes, mix(me, round));
      r.put_notify(w, right, round * slot_bytes, bytes, outbox, round % tags);
      if (round >= lag) receive(round - lag);
    }
    for (int round = rounds - lag; round < rounds; ++round) receive(round);
    r.barrier(grma::world);
    findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag),
                   "a notification is left after the ring");
    r.window_free(w);
    r.free(outbox);
    r.free(inbox);
  });
}

// A token travels around the ring many times; each rank adds one, so a lost,
// repeated or early hop shows in the value.
TEST_P(NotifiedAccess, TokenCirclesTheRing) {
  constexpr int laps = 100;
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* token = static_cast<std::uint64_t*>(r.alloc(2 * sizeof(std::uint64_t)));
    std::uint64_t* outgoing = token + 1;
    grma::window w = r.window_create(grma::world, token, sizeof(std::uint64_t));
    auto pass = [&](std::uint64_t value) {
      *outgoing = value;
      r.put_notify(w, (me + 1) % n, 0, sizeof(std::uint64_t), outgoing, 1);
    };
    if (me == 0) pass(1);
    for (int lap = 0; lap < laps; ++lap) {
      r.wait_notifications(w, (me + n - 1) % n, 1, 1);
      const std::uint64_t value = r.read(token);
      const std::uint64_t expected = std::uint64_t(lap) * n + (me == 0 ? n : me);
      findings.check(me, value == expected, "lap ", lap, ": token ", value, ", expected ",
                     expected);
      if (me != 0 || lap + 1 < laps) pass(value + 1);
    }
    r.barrier(grma::world);
    findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag),
                   "a notification is left after the token ring");
    r.window_free(w);
    r.free(token);
  });
}

// How an all-to-all round's receivers match their notifications.
enum class matching { exact, any_source, any_tag, any_one_by_one, any_all_at_once, test_exact };
constexpr matching matchings[] = {matching::exact,           matching::any_source,
                                  matching::any_tag,         matching::any_one_by_one,
                                  matching::any_all_at_once, matching::test_exact};

// Each round every rank puts a message of its own size to every rank, itself
// included, with a tag that names the source. Receivers match them with a
// different combination of wildcards each round, check all data, and after
// everyone is done no notification may be left: each matched exactly once.
TEST_P(NotifiedAccess, AllToAllMatchesEachNotificationOnce) {
  constexpr int rounds = 4 * int(std::size(matchings));
  constexpr std::size_t block = 1500;
  auto tag_of = [](int source, int round) { return source * 16 + round % 16; };
  auto message_bytes = [](int source, int target, int round) {
    return 1 + std::size_t(mix(source, target, round) % block);
  };
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* inbox = static_cast<std::uint8_t*>(r.alloc(n * block));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc(block));
    grma::window w = r.window_create(grma::world, inbox, n * block);
    for (int round = 0; round < rounds; ++round) {
      for (int k = 0; k < n; ++k) {
        const int target = (me + k) % n;
        const std::size_t bytes = message_bytes(me, target, round);
        fill_pattern(outbox, bytes, mix(me, target, round));
        r.put_notify(w, target, me * block, bytes, outbox, tag_of(me, round));
      }
      const matching how = matchings[round % std::size(matchings)];
      for (int k = 0; k < n; ++k) {
        const int source = (me + n - k) % n;
        switch (how) {
          case matching::exact:
            r.wait_notifications(w, source, tag_of(source, round), 1);
            break;
          case matching::any_source:
            r.wait_notifications(w, grma::any_source, tag_of(source, round), 1);
            break;
          case matching::any_tag:
            r.wait_notifications(w, source, grma::any_tag, 1);
            break;
          case matching::any_one_by_one:
            r.wait_notifications(w, grma::any_source, grma::any_tag, 1);
            break;
          case matching::any_all_at_once:
            if (k == 0) r.wait_notifications(w, grma::any_source, grma::any_tag, n);
            break;
          case matching::test_exact:
            break;
        }
      }
      if (how == matching::test_exact) {
        r.barrier(grma::world);  // every message of this round has arrived
        for (int source = 0; source < n; ++source) {
          findings.check(me, r.test_notifications(w, source, tag_of(source, round), 1), "round ",
                         round, ": no notification from ", source);
          findings.check(me, !r.test_notifications(w, source, tag_of(source, round), 1), "round ",
                         round, ": a second notification from ", source);
        }
      }
      for (int source = 0; source < n; ++source) {
        const std::string d = pattern_difference(
            inbox + source * block, message_bytes(source, me, round), mix(source, me, round));
        findings.check(me, d.empty(), "round ", round, " from ", source, ": ", d);
      }
      r.barrier(grma::world);  // every rank has sent and matched this round
      findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag, 1), "round ",
                     round, ": a notification is left");
      r.barrier(grma::world);  // before anyone sends the next round
    }
    r.window_free(w);
    r.free(outbox);
    r.free(inbox);
  });
}

// Every rank reads a range of every other rank's window into private memory.
// The data arrives at the origin; each target matches exactly one
// notification per origin, with the origin's rank and tag, and then reuses the
// range at once. Windows on world and on device take turns.
TEST_P(NotifiedAccess, GetNotifyReadsTheTargetAndNotifiesIt) {
  constexpr int rounds = 12;
  constexpr std::size_t exposed_bytes = 4096;
  auto tag_of = [](int origin) { return 50 + origin; };
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* exposed = static_cast<std::uint8_t*>(r.alloc(exposed_bytes));
    auto* landing = static_cast<std::uint8_t*>(r.alloc(exposed_bytes));
    const std::array<grma::window, 2> windows = {
        r.window_create(grma::world, exposed, exposed_bytes),
        r.window_create(grma::device, exposed, exposed_bytes)};
    for (int round = 0; round < rounds; ++round) {
      const grma::window w = windows[round % 2];
      fill_pattern(exposed, exposed_bytes, mix(me, round));
      r.barrier(grma::world);
      for (int k = 1; k < n; ++k) {
        const int target = (me + k) % n;
        const std::size_t offset = mix(me, target, round) % (exposed_bytes / 2);
        const std::size_t bytes = 1 + mix(target, me, round) % (exposed_bytes / 2);
        r.get_notify(w, target, offset, bytes, landing, tag_of(me));
        const std::string d = pattern_difference(landing, bytes, mix(target, round), offset);
        findings.check(me, d.empty(), "round ", round, " get from ", target, ": ", d);
      }
      if (round % 4 < 2) {  // wait for each origin by rank and tag
        for (int k = 1; k < n; ++k) {
          const int origin = (me + n - k) % n;
          r.wait_notifications(w, origin, tag_of(origin), 1);
        }
      } else {  // after everyone is done, test for each origin
        r.barrier(grma::world);
        for (int k = 1; k < n; ++k) {
          const int origin = (me + k) % n;
          findings.check(me, r.test_notifications(w, origin, tag_of(origin), 1), "round ", round,
                         ": no notification from origin ", origin);
        }
      }
      // The readers are done: overwriting may not change what they got.
      fill_pattern(exposed, exposed_bytes, mix(me, round, 999));
      r.barrier(grma::world);
      findings.check(me,
                     !r.test_notifications(windows[0], grma::any_source, grma::any_tag) &&
                         !r.test_notifications(windows[1], grma::any_source, grma::any_tag),
                     "round ", round, ": a notification is left");
    }
    for (grma::window w : windows) r.window_free(w);
    r.free(landing);
    r.free(exposed);
  });
}

// wait_notifications with count > 1 blocks until that many match, while
// notifications with other tags stay queued, in order, for later queries.
TEST_P(NotifiedAccess, WaitWithCountLeavesOtherTagsQueuedInOrder) {
  constexpr int tag_a = 1, tag_b = 2;
  constexpr int b_first = 6, a_count = 4, b_later = 3;
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world);
    const int peer = me ^ 1;
    const bool active = peer < r.size(grma::world);
    constexpr int messages = b_first + a_count + b_later;
    auto* words = static_cast<std::uint64_t*>(r.alloc(2 * messages * sizeof(std::uint64_t)));
    std::uint64_t* outgoing = words + messages;
    grma::window w = r.window_create(grma::world, words, messages * sizeof(std::uint64_t));
    const bool sender = me % 2 == 0;
    auto send = [&](int part, int i, int tag) {
      outgoing[i] = mix(me, i, part);
      r.put_notify(w, peer, i * sizeof(std::uint64_t), sizeof(std::uint64_t), &outgoing[i], tag);
    };
    auto check_words = [&](int part, int count) {
      for (int i = 0; i < count; ++i)
        findings.check(me, r.read(&words[i]) == mix(peer, i, part), "part ", part, ": word ", i,
                       " is not the sender's");
    };

    // Part 1: six B, four A, three B. The receiver asks for the four A at once.
    if (active && sender) {
      for (int i = 0; i < b_first; ++i) send(1, i, tag_b);
      for (int i = b_first; i < b_first + a_count; ++i) send(1, i, tag_a);
      for (int i = b_first + a_count; i < messages; ++i) send(1, i, tag_b);
    }
    if (active && !sender) {
      r.wait_notifications(w, peer, tag_a, a_count);
      check_words(1, b_first + a_count);  // the B before the A arrived first
      r.wait_notifications(w, peer, tag_b, b_first + b_later);
      check_words(1, messages);
    }
    r.barrier(grma::world);
    findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag),
                   "part 1: a notification is left");
    r.barrier(grma::world);  // before part 2 is sent

    // Part 2: tags 3 4 3 5 4 3; a wildcard wait for three takes the oldest
    // three (3 4 3) and leaves 5 4 3.
    constexpr int sequence[] = {3, 4, 3, 5, 4, 3};
    if (active && sender)
      for (int i = 0; i < int(std::size(sequence)); ++i) send(2, i, sequence[i]);
    if (active && !sender) r.wait_notifications(w, peer, grma::any_tag, 3);
    r.barrier(grma::world);
    if (active && !sender) {
      findings.check(me, !r.test_notifications(w, peer, 3, 2), "two tag 3 left, expected one");
      findings.check(me, !r.test_notifications(w, grma::any_source, 4, 2),
                     "two tag 4 left, expected one");
      findings.check(me, r.test_notifications(w, peer, 4, 1), "tag 4 missing");
      findings.check(me, r.test_notifications(w, grma::any_source, grma::any_tag, 2),
                     "tags 5 and 3 missing");
      check_words(2, int(std::size(sequence)));
    }
    findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag),
                   "part 2: a notification is left");
    r.window_free(w);
    r.free(words);
  });
}

// Notifications from both neighbours on two windows, then a long sequence of
// test_notifications queries (wildcards, counts 1..4), each compared with a
// reference model of FIFO matching: a query succeeds when `count` queued
// notifications match, and then removes exactly the oldest `count` matches.
// Queries over any source use counts whose outcome does not depend on how the
// two sources' notifications interleave.
TEST_P(NotifiedAccess, MatchingFollowsTheFifoModel) {
  constexpr int per_target = 48;  // per window and neighbour; well below match_capacity
  constexpr int tags = 5;         // tags 0..4 are sent; tag 5 never is
  constexpr int queries = 400;
  auto tag_of = [](int source, int target, int window, int i) {
    return int(mix(source * 2 + window, target, i) % tags);
  };
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    std::vector<int> neighbours = {(me + 1) % n};
    if ((me + n - 1) % n != neighbours[0]) neighbours.push_back((me + n - 1) % n);
    std::array<grma::window, 2> windows = {r.window_create(grma::world, nullptr, 0),
                                           r.window_create(grma::world, nullptr, 0)};
    for (int i = 0; i < per_target; ++i)
      for (int target : neighbours)
        for (int win = 0; win < 2; ++win)
          r.put_notify(windows[win], target, 0, 0, nullptr, tag_of(me, target, win, i));
    r.barrier(grma::world);

    // model[window][source]: the tags still queued, oldest first.
    std::vector<std::vector<std::deque<int>>> model(2, std::vector<std::deque<int>>(n));
    for (int win = 0; win < 2; ++win)
      for (int source : neighbours)
        for (int i = 0; i < per_target; ++i)
          model[win][source].push_back(tag_of(source, me, win, i));
    auto matching_count = [&](int win, int source, int tag) {
      int c = 0;
      for (int s = 0; s < n; ++s)
        if (source == grma::any_source || source == s)
          for (int t : model[win][s]) c += tag == grma::any_tag || t == tag;
      return c;
    };
    for (int q = 0; q < queries; ++q) {
      const std::uint64_t x = mix(me, q, 7);
      const int win = int(x % 2);
      const int tag = x / 2 % (tags + 2) == tags + 1 ? grma::any_tag : int(x / 2 % (tags + 2));
      const bool any_source = x / 16 % 4 == 0;
      const int source = any_source ? grma::any_source : neighbours[x / 64 % neighbours.size()];
      const int available = matching_count(win, source, tag);
      // Over any source: all that match (or one more), so that the removed
      // set does not depend on the interleaving of the sources.
      const int count =
          any_source ? std::max(1, available + int(x / 256 % 2)) : 1 + int(x / 256 % 4);
      const bool expected = available >= count;
      const bool matched = r.test_notifications(windows[win], source, tag, count);
      if (!findings.check(me, matched == expected, "query ", q, " (window ", win, ", source ",
                          source, ", tag ", tag, ", count ", count, ") ",
                          matched ? "matched" : "did not match", "; ", available,
                          " notifications fit")) {
        break;
      }
      if (!matched) continue;
      for (int s = 0; s < n; ++s) {
        if (source != grma::any_source && source != s) continue;
        std::deque<int>& queue = model[win][s];
        int removed = 0;
        for (auto it = queue.begin(); it != queue.end() && removed < count;) {
          if (tag == grma::any_tag || *it == tag) {
            it = queue.erase(it);
            ++removed;
          } else {
            ++it;
          }
        }
      }
    }
    // Whatever the model still holds is queued, and nothing else.
    for (int win = 0; win < 2; ++win) {
      for (int source : neighbours) {
        const int left = int(model[win][source].size());
        if (left > 0)
          findings.check(me, r.test_notifications(windows[win], source, grma::any_tag, left),
                         "window ", win, ": the ", left, " left from ", source, " are not there");
      }
      findings.check(me, !r.test_notifications(windows[win], grma::any_source, grma::any_tag),
                     "window ", win, ": more notifications than the model holds");
    }
    r.barrier(grma::world);
    for (grma::window& w : windows) r.window_free(w);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, NotifiedAccess, testing::ValuesIn(rank_counts), rank_count_name);

}  // namespace
}  // namespace grma_test
