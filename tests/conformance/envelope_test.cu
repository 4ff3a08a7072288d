// The notification's envelope, portable: wait_notification and
// test_notification return the source, tag and 64-bit immediate of the
// notification they matched, oldest first, so a wildcard receive learns
// its origin; wait_some_notifications and test_some_notifications return
// several at once, oldest first, each exactly once; notification and
// signal waits with a time limit return timed_out and take nothing. Every
// path, other nodes included.
#include <cstddef>
#include <cstdint>

#include "support.hpp"

namespace conformance {
namespace {

class Envelope : public testing::TestWithParam<config> {};

constexpr int envelope_group = 8;
constexpr int envelope_rounds = 3;

GRMA_HOST_DEVICE inline std::uint64_t immediate_of(int source, int target, int round) {
  // All 64 bits in use: the high ones too.
  return mix(std::uint64_t(source), std::uint64_t(target), std::uint64_t(round)) | (1ull << 63);
}

// In groups of up to 8, every member puts 8 bytes to every other with a tag
// and an immediate of its own; each receives with wildcards and checks
// what each envelope says against the data that came with it.
struct envelopes {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const group g(me, n, envelope_group);
    // From the symmetric heap (one collective, not one allocation per rank).
    auto* inbox = static_cast<std::uint64_t*>(r.alloc_symmetric(sizeof(std::uint64_t) * (envelope_group + 2)));
    std::uint64_t* outgoing = inbox + g.size;
    std::uint64_t* signal = inbox + g.size + 1;
    if (r.thread() == 0) *signal = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, inbox, sizeof(std::uint64_t) * (std::size_t(g.size) + 2));
    // Nothing yet: limited waits time out and take nothing.
    grma::envelope none{};
    CONF_EXPECT(r, rec, !r.test_notification(w, grma::any_source, grma::any_tag, none), 1, 0, 0);
    CONF_EXPECT(r, rec, r.wait_notifications(w, grma::any_source, grma::any_tag, 1, grma::within{0.002}) ==
                            grma::wait_result::timed_out, 2, 0, 0);
    CONF_EXPECT(r, rec, r.wait_notification(w, grma::any_source, 5, none, grma::within{0.002}) ==
                            grma::wait_result::timed_out, 3, 0, 0);
    std::uint64_t seen = 7;
    CONF_EXPECT(r, rec, r.wait_signal(w, sizeof(std::uint64_t) * std::size_t(g.size + 1), grma::cmp::ne,
                                      std::uint64_t{0}, grma::within{0.002}, &seen) ==
                            grma::wait_result::timed_out && seen == 0, 4, seen, 0);
    for (const double passed : passed_limits{}.seconds) {
      CONF_EXPECT(r, rec,
                  r.wait_notifications(w, grma::any_source, grma::any_tag, 1,
                                       grma::within{passed}) == grma::wait_result::timed_out,
                  14, 0, 0);
      CONF_EXPECT(r, rec,
                  r.wait_notification(w, grma::any_source, 5, none, grma::within{passed}) ==
                      grma::wait_result::timed_out,
                  15, 0, 0);
      CONF_EXPECT(
          r, rec,
          r.wait_signal(w, sizeof(std::uint64_t) * std::size_t(g.size + 1), grma::cmp::ne,
                        std::uint64_t{0}, grma::within{passed}) == grma::wait_result::timed_out,
          17, 0, 0);
    }
    r.barrier(grma::world);
    for (int round = 0; round < envelope_rounds; ++round) {
      for (int k = 1; k < g.size; ++k) {
        const int target = g.member((g.index + k) % g.size);
        if (r.thread() == 0) *outgoing = std::uint64_t(me) * 1000 + std::uint64_t(round);
        r.sync_threads();
        r.put_notify(w, target, std::size_t(g.index) * sizeof(std::uint64_t), sizeof(std::uint64_t),
                     outgoing, 100 + round, immediate_of(me, target, round));
      }
      int from_each[envelope_group] = {};
      for (int k = 1; k < g.size; ++k) {
        grma::envelope e{};
        if (k % 2 == 0) {
          e = r.wait_notification(w, grma::any_source, 100 + round);
        } else {
          while (!r.test_notification(w, grma::any_source, grma::any_tag, e)) relax();
        }
        CONF_EXPECT(r, rec, e.tag == 100 + round, 5, e.tag, round);
        const group sender(e.source, n, envelope_group);
        CONF_EXPECT(r, rec, e.source >= 0 && e.source < n && sender.id == g.id && e.source != me, 6, e.source, me);
        CONF_EXPECT(r, rec, e.immediate == immediate_of(e.source, me, round), 7, e.source, round);
        const std::uint64_t data = r.read(&inbox[sender.index]);
        CONF_EXPECT(r, rec, data == std::uint64_t(e.source) * 1000 + std::uint64_t(round), 8, e.source, data);
        from_each[sender.index] += 1;
      }
      for (int i = 0; i < g.size; ++i)
        CONF_EXPECT(r, rec, from_each[i] == (i == g.index ? 0 : 1), 9, i, from_each[i]);
      tally(r, rec, 0, unsigned(g.size - 1));
      r.barrier(grma::world);  // the inbox is written again next round
    }
    r.window_free(w);
    r.free_symmetric(inbox);
  }
};

TEST_P(Envelope, WildcardReceivesLearnSourceTagAndImmediate) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(envelopes{});
  j.prepare();
  if (j.run(envelopes{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0,
        [&](int rank) {
          const group g(rank, n, envelope_group);
          return unsigned(envelope_rounds * (g.size - 1));
        },
        "envelopes");
  }
}

constexpr int batch_sends = 12;  // notifications from each member to each other
constexpr int batch_most = 8;

// In groups of up to 8, every member sends `batch_sends` notifications to
// every other (tags 0, 1, ...; data in the sender's slot), and takes its
// own with the calls for some, in turns: wildcards with at most 1..8, a
// test polled, one source's alone, and with a time limit. Each envelope is
// checked: from a member, the next tag of that source (oldest first), its
// immediate; every notification is taken exactly once, and the limited
// calls find nothing at the end. With `by_warp`, the rank's last warp
// takes them (one_warp()) while the other threads work.
struct batches {
  bool by_warp;

  // The taking, by the rank's threads or one warp's (`c`).
  template <class Caller>
  GRMA_HOST_DEVICE void take_all(Caller& c, rank_record& rec, grma::window w, grma::envelope* got,
                                 const group& g, int n) const {
    const int me = g.member(g.index);
    int next[envelope_group] = {};  // each member's next tag
    const int expected = (g.size - 1) * batch_sends;
    int taken = 0;
    for (int turn = 0; taken < expected; ++turn) {
      const int most = 1 + turn % batch_most;
      int k = 0;
      switch (turn % 4) {
        case 0:
          k = c.wait_some_notifications(w, grma::any_source, grma::any_tag, got, most);
          break;
        case 1:
          while ((k = c.test_some_notifications(w, grma::any_source, grma::any_tag, got, most)) ==
                 0)
            relax();
          break;
        case 2: {
          // The first member with notifications left, alone.
          int from = 0;
          while (from == g.index || next[from] == batch_sends) ++from;
          k = c.wait_some_notifications(w, g.member(from), grma::any_tag, got, most);
          for (int i = 0; i < k; ++i)
            CONF_EXPECT_EACH(rec, got[i].source == g.member(from), 2, got[i].source, from);
          break;
        }
        default:
          CONF_EXPECT(c, rec,
                      c.wait_some_notifications(w, grma::any_source, grma::any_tag, got, most, k,
                                                grma::within{30.0}) == grma::wait_result::met,
                      3, k, 0);
      }
      CONF_EXPECT(c, rec, k >= 1 && k <= most, 4, k, most);
      // Every thread checks every envelope it reads (and keeps its own
      // `next`): the lanes wrote them, the call's barriers show them to all.
      for (int i = 0; i < k && i < most; ++i) {
        const grma::envelope e = got[i];
        const group sender(e.source, n, envelope_group);
        const bool member = e.source >= 0 && e.source < n && sender.id == g.id && e.source != me;
        CONF_EXPECT_EACH(rec, member, 5, e.source, me);
        if (!member) continue;
        CONF_EXPECT_EACH(rec, e.tag == next[sender.index], 6, e.source,
                         e.tag * 1000 + next[sender.index]);
        CONF_EXPECT_EACH(rec, e.immediate == immediate_of(e.source, me, e.tag), 7, e.source, e.tag);
        next[sender.index] = e.tag + 1;
      }
      taken += k;
      tally(c, rec, 0, unsigned(k));
      // No barrier here: the next call meets the threads before it writes `got`.
    }
    int none = 5;
    CONF_EXPECT(c, rec,
                c.wait_some_notifications(w, grma::any_source, grma::any_tag, got, batch_most, none,
                                          grma::within{0.002}) == grma::wait_result::timed_out &&
                    none == 0,
                9, none, 0);
    for (const double passed : passed_limits{}.seconds) {
      none = 5;
      CONF_EXPECT(
          c, rec,
          c.wait_some_notifications(w, grma::any_source, grma::any_tag, got, batch_most, none,
                                    grma::within{passed}) == grma::wait_result::timed_out &&
              none == 0,
          16, none, 0);
    }
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const group g(me, n, envelope_group);
    // After the window's words: the envelopes the calls hand out (memory
    // the rank's threads share), then the workers' words.
    const std::size_t words_at =
        sizeof(std::uint64_t) * (envelope_group + 2) + sizeof(grma::envelope) * batch_most;
    auto* inbox = static_cast<std::uint64_t*>(
        r.alloc_symmetric(words_at + sizeof(std::uint64_t) * std::size_t(r.threads())));
    std::uint64_t* outgoing = inbox + envelope_group;
    auto* got = reinterpret_cast<grma::envelope*>(inbox + envelope_group + 2);
    auto* words =
        reinterpret_cast<std::uint64_t*>(reinterpret_cast<std::uint8_t*>(inbox) + words_at);
    grma::window w = r.window_create(grma::world, inbox, sizeof(std::uint64_t) * envelope_group);
    CONF_EXPECT(r, rec,
                r.test_some_notifications(w, grma::any_source, grma::any_tag, got, batch_most) == 0,
                1, 0, 0);
    r.barrier(grma::world);
    for (int sent = 0; sent < batch_sends; ++sent)
      for (int k = 1; k < g.size; ++k) {
        const int target = g.member((g.index + k) % g.size);
        if (r.thread() == 0) *outgoing = std::uint64_t(me) * 1000 + std::uint64_t(sent);
        r.sync_threads();
        r.put_notify(w, target, std::size_t(g.index) * sizeof(std::uint64_t), sizeof(std::uint64_t),
                     outgoing, sent, immediate_of(me, target, sent));
      }
    if (by_warp) {
      auto warp = r.one_warp();
      const warp_split split(r, warp);
      r.sync_threads();  // the warp's turn: the rank's last call is done in every thread
      if (split.calls) take_all(warp, rec, w, got, g, n);
      split.work(r, words, 0);
      r.sync_threads();
      split.check_work(r, rec, words, 0);
    } else {
      take_all(r, rec, w, got, g, n);
    }
    for (int i = 0; i < g.size; ++i) {
      if (i == g.index) continue;
      const std::uint64_t data = r.read(&inbox[i]);
      CONF_EXPECT(r, rec, data == std::uint64_t(g.member(i)) * 1000 + batch_sends - 1, 8, i, data);
    }
    r.barrier(grma::world);
    r.window_free(w);
    r.free_symmetric(inbox);
  }
};

void run_batches(const config& c, bool by_warp) {
  grma::runtime rt(suite_settings());
  job j(rt, c);
  if (by_warp && !j.has_warp())
    GTEST_SKIP() << "a rank of fewer threads than a warp has no one_warp()";
  const int n = j.resolve(batches{by_warp});
  j.prepare();
  if (j.run(batches{by_warp})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0,
        [&](int rank) { return unsigned((group(rank, n, envelope_group).size - 1) * batch_sends); },
        "notifications taken");
  }
}

TEST_P(Envelope, SomeTakesManyOldestFirstEachOnce) {
  run_batches(GetParam(), false);
}

TEST_P(Envelope, OneWarpTakesSomeWhileTheOthersWork) {
  run_batches(GetParam(), true);
}

// Pairs (2i, 2i + 1): the odd rank tells its partner it is about to wait
// and calls for up to four; the even rank pauses (on a GPU 50 ms, a CPU 1
// ms), then sends four at once. A call that had to wait takes the first alone (on a
// GPU, whose ranks are never descheduled, its first look comes long before
// the four: there exactly one; a CPU thread may look late and find more);
// the rest come oldest first, each once, in as many calls as they take.
struct first_arrival {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int partner = me ^ 1;
    auto* word = static_cast<std::uint64_t*>(
        r.alloc_symmetric(sizeof(std::uint64_t) * 2 + sizeof(grma::envelope) * 4));
    auto* got = reinterpret_cast<grma::envelope*>(word + 2);
    grma::window w = r.window_create(grma::world, word, sizeof(std::uint64_t));
#if GRMA_DEVICE_CODE
    constexpr bool looks_first = true;
    constexpr double pause = 0.05;  // long enough under compute-sanitizer's tools too
#else
    constexpr bool looks_first = false;
    constexpr double pause = 0.001;
#endif
    if (partner < n && me % 2 == 0) {
      r.wait_notifications(w, partner, 9, 1);
      const double start = r.wtime();
      while (r.wtime() - start < pause) relax();
      for (int tag = 0; tag < 4; ++tag) r.put_notify(w, partner, 0, 0, word, tag, 100 + tag);
      tally(r, rec, 0);
    } else if (partner < n) {
      r.put_notify(w, partner, 0, 0, word, 9);
      int k = r.wait_some_notifications(w, grma::any_source, grma::any_tag, got, 4);
      CONF_EXPECT(r, rec, k >= 1 && (k == 1 || !looks_first), 1, k, 0);
      for (int next = 0; next < 4;) {
        for (int i = 0; i < k && next < 4; ++i, ++next)
          CONF_EXPECT_EACH(rec,
                           got[i].source == partner && got[i].tag == next &&
                               got[i].immediate == std::uint64_t(100 + next),
                           2, got[i].tag, next);
        if (next < 4) k = r.wait_some_notifications(w, partner, grma::any_tag, got, 4);
      }
      tally(r, rec, 0);
    }
    r.barrier(grma::world);
    r.window_free(w);
    r.free_symmetric(word);
  }
};

TEST_P(Envelope, SomeThatWaitsTakesTheFirstToArrive) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(first_arrival{});
  j.prepare();
  if (j.run(first_arrival{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int rank) { return (rank ^ 1) < n ? 1u : 0u; }, "pairs done");
  }
}

// Ranks whose threads do not fill whole warps: the lanes' step is then the
// leading thread's alone (a CPU rank is one thread whatever is asked).
TEST(EnvelopePartialWarps, SomeTakesManyOldestFirstEachOnce) {
  run_batches({3, 48}, false);
  run_batches({8, 1}, false);
  run_batches({2, 80}, true);
}

INSTANTIATE_TEST_SUITE_P(Conformance, Envelope, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
