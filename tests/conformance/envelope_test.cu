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
// calls find nothing at the end.
struct batches {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const group g(me, n, envelope_group);
    // The envelopes the calls hand out after the words: memory the rank's
    // threads share.
    auto* inbox = static_cast<std::uint64_t*>(r.alloc_symmetric(
        sizeof(std::uint64_t) * (envelope_group + 2) + sizeof(grma::envelope) * batch_most));
    std::uint64_t* outgoing = inbox + envelope_group;
    auto* got = reinterpret_cast<grma::envelope*>(inbox + envelope_group + 2);
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
    int next[envelope_group] = {};  // each member's next tag
    const int expected = (g.size - 1) * batch_sends;
    int taken = 0;
    for (int turn = 0; taken < expected; ++turn) {
      const int most = 1 + turn % batch_most;
      int k = 0;
      switch (turn % 4) {
        case 0:
          k = r.wait_some_notifications(w, grma::any_source, grma::any_tag, got, most);
          break;
        case 1:
          while ((k = r.test_some_notifications(w, grma::any_source, grma::any_tag, got, most)) ==
                 0)
            relax();
          break;
        case 2: {
          // The first member with notifications left, alone.
          int from = 0;
          while (from == g.index || next[from] == batch_sends) ++from;
          k = r.wait_some_notifications(w, g.member(from), grma::any_tag, got, most);
          for (int i = 0; i < k; ++i)
            CONF_EXPECT_EACH(rec, got[i].source == g.member(from), 2, got[i].source, from);
          break;
        }
        default:
          CONF_EXPECT(r, rec,
                      r.wait_some_notifications(w, grma::any_source, grma::any_tag, got, most, k,
                                                grma::within{30.0}) == grma::wait_result::met,
                      3, k, 0);
      }
      CONF_EXPECT(r, rec, k >= 1 && k <= most, 4, k, most);
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
      tally(r, rec, 0, unsigned(k));
      // No barrier here: the next call meets the threads before it writes `got`.
    }
    for (int i = 0; i < g.size; ++i) {
      if (i == g.index) continue;
      const std::uint64_t data = r.read(&inbox[i]);
      CONF_EXPECT(r, rec, data == std::uint64_t(g.member(i)) * 1000 + batch_sends - 1, 8, i, data);
    }
    int none = 5;
    CONF_EXPECT(r, rec,
                r.wait_some_notifications(w, grma::any_source, grma::any_tag, got, batch_most, none,
                                          grma::within{0.002}) == grma::wait_result::timed_out &&
                    none == 0,
                9, none, 0);
    r.barrier(grma::world);
    r.window_free(w);
    r.free_symmetric(inbox);
  }
};

TEST_P(Envelope, SomeTakesManyOldestFirstEachOnce) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(batches{});
  j.prepare();
  if (j.run(batches{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0,
        [&](int rank) { return unsigned((group(rank, n, envelope_group).size - 1) * batch_sends); },
        "notifications taken");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Envelope, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
