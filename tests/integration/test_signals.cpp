// Signals: put_signal writes data, then sets or adds to a 64-bit word at the
// target; wait_signal sees the data once it sees the word.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "support.hpp"

namespace grma_test {
namespace {

class Signals : public testing::TestWithParam<int> {};

// Ranks 2k and 2k + 1 take turns: one puts a block of data and sets the
// other's signal to the round number; the other waits for it, checks the
// data, and answers the same way. The data must be complete when the signal
// is seen.
TEST_P(Signals, SetPublishesTheDataBeforeTheSignal) {
  constexpr int rounds = 200;
  constexpr std::size_t data_bytes = 4096 + 24;
  constexpr std::size_t signal_offset = 0;
  constexpr std::size_t data_offset = 64;
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world);
    const int peer = me ^ 1;
    const std::size_t bytes = data_offset + data_bytes;
    auto* region = static_cast<std::uint8_t*>(r.alloc(bytes));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc(data_bytes));
    *reinterpret_cast<std::uint64_t*>(region + signal_offset) = 0;
    grma::window w = r.window_create(grma::world, region, bytes);
    if (peer < r.size(grma::world)) {
      for (int round = 1; round <= rounds; ++round) {
        const std::size_t size = 1 + std::size_t(mix(round) % data_bytes);
        auto send = [&] {
          fill_pattern(outbox, size, mix(me, round));
          r.put_signal(w, peer, data_offset, size, outbox, signal_offset, std::uint64_t(round),
                       grma::signal_op::set);
        };
        auto receive = [&] {
          const std::uint64_t seen = r.wait_signal(w, signal_offset, grma::cmp::eq, round);
          findings.check(me, seen == std::uint64_t(round), "round ", round, ": wait_signal saw ",
                         seen);
          const std::string d = pattern_difference(region + data_offset, size, mix(peer, round));
          findings.check(me, d.empty(), "round ", round, ": ", d);
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
    r.barrier(grma::world);
    r.window_free(w);
    r.free(outbox);
    r.free(region);
  });
}

// Every rank adds to every rank's signal word many times, each time a value
// of its own; each target waits until the exact total is reached, and after a
// barrier the word holds exactly that total: no add lost or repeated. Each add
// also carries one word of data to a slot of the adding rank, checked once
// the total is seen.
TEST_P(Signals, AddsFromAllRanksSumExactly) {
  constexpr int adds_per_target = 300;
  auto value_of = [](int source, int i) {
    return std::uint64_t(source + 1) * 1000 + std::uint64_t(i % 7);
  };
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    // word 0: the signal; word 1 + s: the last data word from rank s.
    const std::size_t bytes = (1 + std::size_t(n)) * sizeof(std::uint64_t);
    auto* words = static_cast<std::uint64_t*>(r.alloc(bytes));
    auto* outgoing = static_cast<std::uint64_t*>(r.alloc(sizeof(std::uint64_t)));
    words[0] = 0;
    grma::window w = r.window_create(grma::world, words, bytes);
    for (int i = 0; i < adds_per_target; ++i) {
      for (int k = 0; k < n; ++k) {
        const int target = (me + k) % n;
        *outgoing = mix(me, target, i);
        r.put_signal(w, target, (1 + std::size_t(me)) * sizeof(std::uint64_t),
                     sizeof(std::uint64_t), outgoing, 0, value_of(me, i), grma::signal_op::add);
      }
    }
    std::uint64_t total = 0;
    for (int source = 0; source < n; ++source)
      for (int i = 0; i < adds_per_target; ++i) total += value_of(source, i);
    const std::uint64_t seen = r.wait_signal(w, 0, grma::cmp::ge, total);
    findings.check(me, seen == total, "wait_signal saw ", seen, ", expected ", total);
    for (int source = 0; source < n; ++source)
      findings.check(me, r.read(&words[1 + source]) == mix(source, me, adds_per_target - 1),
                     "the last data word from ", source, " is not there");
    r.barrier(grma::world);
    const std::uint64_t final_value = r.read(&words[0]);
    findings.check(me, final_value == total, "the signal ends at ", final_value, ", expected ",
                   total);
    r.barrier(grma::world);
    r.window_free(w);
    r.free(outgoing);
    r.free(words);
  });
}

// wait_signal with each comparison, waiting for a value the peer is about to
// write and returning the word it saw; each step is acknowledged through a
// signal word at the peer. The last steps find their condition true at once.
TEST_P(Signals, WaitSignalWithEachComparison) {
  struct signal_step {
    grma::signal_op op;
    std::uint64_t value;  // what the writer sets or adds
    grma::cmp c;
    std::uint64_t wait_for;  // the reader waits until word <c> wait_for
    std::uint64_t word_after;
  };
  constexpr signal_step steps[] = {
      {grma::signal_op::set, 5, grma::cmp::eq, 5, 5},
      {grma::signal_op::set, 9, grma::cmp::ne, 5, 9},
      {grma::signal_op::add, 1, grma::cmp::gt, 9, 10},
      {grma::signal_op::add, 2, grma::cmp::ge, 12, 12},
      {grma::signal_op::set, 3, grma::cmp::lt, 12, 3},
      {grma::signal_op::set, 2, grma::cmp::le, 2, 2},
      {grma::signal_op::add, 0xffffffff00000000ull, grma::cmp::gt, 0xfffffffeffffffffull,
       0xffffffff00000002ull},
      {grma::signal_op::set, 0, grma::cmp::lt, 1, 0},
  };
  constexpr std::size_t data_bytes = 100;
  constexpr std::size_t ack_offset = 8, data_offset = 16;
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world);
    const int peer = me ^ 1;
    const std::size_t bytes = data_offset + data_bytes;
    auto* region = static_cast<std::uint8_t*>(r.alloc(bytes));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc(data_bytes));
    auto* signal = reinterpret_cast<std::uint64_t*>(region);
    signal[0] = 0;  // written by the peer
    signal[1] = 0;  // acknowledgements from the peer
    grma::window w = r.window_create(grma::world, region, bytes);
    if (peer < r.size(grma::world)) {
      const bool writer = me % 2 == 0;
      int index = 0;
      for (const signal_step& st : steps) {
        ++index;
        if (writer) {
          fill_pattern(outbox, data_bytes, mix(me, index));
          r.put_signal(w, peer, data_offset, data_bytes, outbox, 0, st.value, st.op);
          r.wait_signal(w, ack_offset, grma::cmp::eq, std::uint64_t(index));
        } else {
          const std::uint64_t seen = r.wait_signal(w, 0, st.c, st.wait_for);
          findings.check(me, seen == st.word_after, "step ", index, ": wait_signal returned ", seen,
                         ", expected ", st.word_after);
          const std::string d =
              pattern_difference(region + data_offset, data_bytes, mix(peer, index));
          findings.check(me, d.empty(), "step ", index, ": ", d);
          r.put_signal(w, peer, 0, 0, nullptr, ack_offset, std::uint64_t(index),
                       grma::signal_op::set);
        }
      }
      if (!writer) {  // conditions already true: no waiting
        for (grma::cmp c : {grma::cmp::eq, grma::cmp::ge, grma::cmp::le})
          findings.check(me, r.wait_signal(w, 0, c, 0) == 0, "immediate wait_signal, cmp ", int(c));
        findings.check(me, r.wait_signal(w, 0, grma::cmp::ne, 7) == 0, "immediate ne");
        findings.check(me, r.wait_signal(w, 0, grma::cmp::lt, 7) == 0, "immediate lt");
      }
    }
    r.barrier(grma::world);
    r.window_free(w);
    r.free(outbox);
    r.free(region);
  });
}

// Signals and notifications are separate: a put_signal leaves no
// notification, and a put_notify does not change a signal word.
TEST_P(Signals, SignalsLeaveNoNotifications) {
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* words = static_cast<std::uint64_t*>(r.alloc(2 * sizeof(std::uint64_t)));
    words[0] = 0;
    words[1] = 0;
    grma::window w = r.window_create(grma::world, words, 2 * sizeof(std::uint64_t));
    const int right = (me + 1) % n;
    r.put_signal(w, right, 0, 0, nullptr, 0, 1, grma::signal_op::add);
    r.put_notify(w, right, 8, 0, nullptr, 4);
    r.wait_notifications(w, (me + n - 1) % n, 4, 1);
    findings.check(me, r.wait_signal(w, 0, grma::cmp::eq, 1) == 1, "signal word");
    r.barrier(grma::world);
    findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag),
                   "put_signal left a notification");
    findings.check(me, r.read(&words[0]) == 1 && r.read(&words[1]) == 0,
                   "words after the barrier: ", r.read(&words[0]), ", ", r.read(&words[1]));
    r.barrier(grma::world);
    r.window_free(w);
    r.free(words);
  });
}

// Polling a signal word with read() while another rank sets it is the
// README's way to look at a word without waiting: no data race (the tsan
// preset runs this), and each value read is one that was set, never torn.
TEST_P(Signals, ReadPollsAWordThatAnotherRankSets) {
  constexpr std::uint64_t last = 255;  // values v * 0x0101010101010101: every byte v
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), peer = me ^ 1;
    auto* word = static_cast<std::uint64_t*>(r.alloc(sizeof(std::uint64_t)));
    *word = 0;
    grma::window w = r.window_create(grma::world, word, sizeof(std::uint64_t));
    if (peer < r.size(grma::world)) {
      if (me % 2 == 0) {
        for (std::uint64_t v = 1; v <= last; ++v) {
          const std::uint64_t value = v * 0x0101010101010101ull;  // a torn read shows
          r.put_signal(w, peer, 0, 0, nullptr, 0, value, grma::signal_op::set);
        }
      } else {
        std::uint64_t seen = 0;
        while (seen != last * 0x0101010101010101ull) {
          const std::uint64_t now = r.read(word);
          findings.check(me, now % 0x0101010101010101ull == 0 && now >= seen, "read ", now,
                         " after ", seen);
          if (now % 0x0101010101010101ull != 0 || now < seen) break;
          seen = now;
        }
      }
    }
    r.barrier(grma::world);
    r.window_free(w);
    r.free(word);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Signals, testing::ValuesIn(rank_counts), rank_count_name);

}  // namespace
}  // namespace grma_test
