// Notification queues made tiny (4 entries, 8 unmatched held per rank) under
// all-to-all load: senders feel back-pressure, and every notification still
// arrives exactly once, with its data, counted per source and per tag.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "support.hpp"

namespace grma_test {
namespace {

constexpr int sent_per_rank = 2000;  // notifications each rank sends, spread over all others
constexpr int tags_per_source = 5;
constexpr int waited_at_end = 3;  // the last notifications of a step, taken by a wildcard wait
constexpr double stall_seconds = 30;

// A step lets one group of ranks send while the other group only receives, so
// no cycle of full queues can form. Ranks s and t exchange in the steps for
// the lowest bit in which they differ: first s sends (the step with s's bit
// value as `direction`), then t. Steps over all bits cover every ordered pair
// exactly once.
struct step {
  int bit;
  int direction;
  bool sends(int source, int target) const {
    const int differ = source ^ target;
    return differ != 0 && (differ & -differ) == (1 << bit) && ((source >> bit) & 1) == direction;
  }
};

std::vector<step> steps_for(int ranks) {
  std::vector<step> steps;
  for (int bit = 0; (1 << bit) < ranks; ++bit)
    for (int direction = 0; direction < 2; ++direction) steps.push_back({bit, direction});
  return steps;
}

class BackPressure : public testing::TestWithParam<int> {};

// The tag names the source and cycles through tags_per_source values, so a
// match on (any_source, tag) still tells the receiver who sent it. Every
// fourth notification is a zero-byte put; the others carry one word into a
// slot of their own at the target.
TEST_P(BackPressure, TinyQueuesLoseAndDuplicateNothing) {
  const int ranks = GetParam();
  const int per_pair = (sent_per_rank + ranks - 2) / (ranks - 1);
  auto tag_of = [](int source, int i) { return source * tags_per_source + i % tags_per_source; };
  auto carries_data = [](int i) { return i % 4 != 3; };
  auto word_of = [](int source, int target, int i) { return mix(source, target, i); };

  grma::settings s = test_settings(ranks);
  s.queue_capacity = 4;
  s.match_capacity = 8;
  rank_findings findings(ranks);
  std::vector<int> received(std::size_t(ranks), 0);
  grma::runtime rt(s);
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const std::size_t inbox_words = std::size_t(n) * per_pair;
    auto* inbox = static_cast<std::uint64_t*>(r.alloc(inbox_words * sizeof(std::uint64_t)));
    auto* outgoing = static_cast<std::uint64_t*>(r.alloc(sizeof(std::uint64_t)));
    grma::window w = r.window_create(grma::world, inbox, inbox_words * sizeof(std::uint64_t));
    auto slot = [&](int source, int i) { return std::size_t(source) * per_pair + std::size_t(i); };

    int step_index = 0;
    for (const step& st : steps_for(n)) {
      std::vector<int> targets, sources;
      for (int other = 0; other < n; ++other) {
        if (st.sends(me, other)) targets.push_back(other);
        if (st.sends(other, me)) sources.push_back(other);
      }
      // Sending: round-robin over the targets, so each queue has several
      // producers and each producer several queues.
      for (int i = 0; i < per_pair; ++i) {
        for (int target : targets) {
          if (carries_data(i)) {
            *outgoing = word_of(me, target, i);
            r.put_notify(w, target, slot(me, i) * sizeof(std::uint64_t), sizeof(std::uint64_t),
                         outgoing, tag_of(me, i));
          } else {
            r.put_notify(w, target, 0, 0, nullptr, tag_of(me, i));
          }
        }
      }

      // Receiving: next[s][k] is the index of the next notification from
      // source s with tag k; matching is FIFO per source and tag.
      std::vector<std::vector<int>> next(static_cast<std::size_t>(n),
                                         std::vector<int>(tags_per_source));
      for (int source : sources)
        for (int k = 0; k < tags_per_source; ++k) next[source][k] = k;
      auto take = [&](int source, int k) {
        const int i = next[source][k];
        next[source][k] += tags_per_source;
        ++received[me];
        if (carries_data(i)) {
          const std::uint64_t word = r.read(&inbox[slot(source, i)]);
          findings.check(me, word == word_of(source, me, i), "step ", step_index, ": notification ",
                         i, " from ", source, " came before its data");
        }
      };
      int remaining = int(sources.size()) * per_pair;
      const int identified_until = std::min(remaining, waited_at_end);
      double last_progress = r.wtime();
      while (remaining > identified_until) {
        bool progress = false;
        for (int source : sources) {
          for (int k = 0; k < tags_per_source; ++k) {
            const int left = (per_pair - next[source][k] + tags_per_source - 1) / tags_per_source;
            if (left == 0) continue;
            // Alternate between naming the source and matching any source;
            // ask for two at once where two are due, then for one (with 8
            // unmatched held, the second may not fit yet).
            const int querying = (source + k + step_index) % 2 == 0 ? grma::any_source : source;
            for (int count = left >= 2 && remaining - 2 >= identified_until ? 2 : 1; count > 0;
                 --count) {
              if (!r.test_notifications(w, querying, tag_of(source, k), count)) continue;
              for (int c = 0; c < count; ++c) take(source, k);
              remaining -= count;
              progress = true;
              break;
            }
            if (remaining == identified_until) break;
          }
          if (remaining == identified_until) break;
        }
        if (progress) {
          last_progress = r.wtime();
        } else if (r.wtime() - last_progress > stall_seconds) {
          findings.fail(me, "step ", step_index, ": ", remaining, " notifications never came");
          break;
        } else {
          std::this_thread::yield();
        }
      }
      if (remaining > 0 && remaining == identified_until) {
        // The rest, whoever sent them, with one wildcard wait.
        r.wait_notifications(w, grma::any_source, grma::any_tag, remaining);
        for (int source : sources)
          for (int k = 0; k < tags_per_source; ++k)
            while (next[source][k] < per_pair) take(source, k);
      }
      r.barrier(grma::world);  // every rank has sent and received this step
      findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag), "step ",
                     step_index, ": a notification too many");
      r.barrier(grma::world);  // before the next step's sends
      ++step_index;
    }
    r.window_free(w);
    r.free(outgoing);
    r.free(inbox);
  });
  for (int rank = 0; rank < ranks; ++rank)
    EXPECT_EQ(received[rank], (ranks - 1) * per_pair) << "rank " << rank;
}

INSTANTIATE_TEST_SUITE_P(Ranks, BackPressure, testing::ValuesIn(rank_counts), rank_count_name);

}  // namespace
}  // namespace grma_test
