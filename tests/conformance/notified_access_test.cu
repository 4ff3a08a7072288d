// Notified access, portable: put_notify and get_notify deliver their data
// before their notification, and matching finds every notification exactly
// once, with and without wildcards, in FIFO order.
#include <cstddef>
#include <cstdint>

#include "support.hpp"

namespace conformance {
namespace {

class NotifiedAccess : public testing::TestWithParam<config> {};

// ---- ping-pong -------------------------------------------------------------------

constexpr std::size_t ping_pong_max_bytes = std::size_t(1) << 20;
constexpr std::size_t ping_pong_max_offset = 7;  // messages land at offsets 0..7
constexpr int ping_pong_sizes = 19;

GRMA_HOST_DEVICE inline std::size_t ping_pong_size(int s) {
  const std::size_t sizes[ping_pong_sizes] = {1,
                                              2,
                                              3,
                                              7,
                                              8,
                                              9,
                                              63,
                                              64,
                                              65,
                                              255,
                                              1000,
                                              4095,
                                              4096,
                                              4097,
                                              65535,
                                              65536,
                                              100003,
                                              ping_pong_max_bytes - 1,
                                              ping_pong_max_bytes};
  return sizes[s];
}
GRMA_HOST_DEVICE inline int ping_pong_rounds(std::size_t bytes) {
  return bytes <= 4096 ? 16 : bytes <= 65536 ? 4 : 2;
}

// Ranks 2k and 2k + 1 bounce messages of 1 B to 1 MiB (odd sizes, unaligned
// offsets); each message names its sender, size and round, and is checked
// byte for byte on arrival. The first `big_pairs` pairs go up to 1 MiB, the
// others up to `small_max` so that the heap holds every rank's buffers.
struct ping_pong {
  int big_pairs;
  std::size_t small_max;
  buffers mem;

  GRMA_HOST_DEVICE std::size_t limit(int rank) const {
    return rank / 2 < big_pairs ? ping_pong_max_bytes : small_max;
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    const int peer = me ^ 1;
    const std::size_t max_bytes = limit(me);
    auto* inbox = mem.get<std::uint8_t>(r, round64(max_bytes + ping_pong_max_offset) + max_bytes);
    auto* outbox = reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(inbox) +
                                                   round64(max_bytes + ping_pong_max_offset));
    grma::window w = r.window_create(grma::world, inbox, max_bytes + ping_pong_max_offset);
    if (peer < r.size(grma::world)) {
      for (int s = 0; s < ping_pong_sizes && ping_pong_size(s) <= max_bytes; ++s) {
        const std::size_t bytes = ping_pong_size(s);
        for (int round = 0; round < ping_pong_rounds(bytes); ++round) {
          const std::size_t offset = std::size_t(s + round) % (ping_pong_max_offset + 1);
          const int tag = s * 100 + round;
          for (int half = 0; half < 2; ++half) {
            if ((half == 0) == (me % 2 == 0)) {
              fill(r, outbox, bytes, mix(std::uint64_t(me), bytes, std::uint64_t(round)));
              r.put_notify(w, peer, offset, bytes, outbox, tag);
            } else {
              r.wait_notifications(w, peer, tag, 1);
              CONF_CHECK_PATTERN(r, rec, inbox + offset, bytes,
                                 mix(std::uint64_t(peer), bytes, std::uint64_t(round)), 0, tag);
              tally(r, rec, 0);
            }
          }
        }
      }
    }
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 0, 0, 0);
    r.window_free(w);
    mem.release(r, inbox);
  }
};

TEST_P(NotifiedAccess, PingPongDeliversEveryByte) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(ping_pong{});
  // Two pairs of 1 MiB (none where buffers come from userdata), the others
  // share half the heap.
  const std::size_t small_max =
      clamp_to<std::size_t>(rank_budget(rt, n) / 2 - 64, 64, ping_pong_max_bytes);
  const ping_pong program{j.userdata_buffers() ? 0 : 2, small_max,
                          j.prepare(0, round64(small_max + ping_pong_max_offset) + small_max)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0,
        [&](int rank) {
          unsigned long long messages = 0;
          if ((rank ^ 1) < n)
            for (int s = 0; s < ping_pong_sizes && ping_pong_size(s) <= program.limit(rank); ++s)
              messages += unsigned(ping_pong_rounds(ping_pong_size(s)));
          return messages;
        },
        "messages received");
  }
}

// ---- placements -------------------------------------------------------------------

// A GPU rank's copy moves 16-byte vectors where both ends are 16-byte
// aligned, else bytes, in unrolled steps of all its threads, then the rest
// (cuda_platform::copy_by). Puts of sizes that end within a step or after
// several, from and to places within a 128-byte line alike or not, are
// checked byte for byte on arrival, with the bytes on either side untouched.
constexpr int placement_sizes = 10;
GRMA_HOST_DEVICE inline std::size_t placement_size(int s) {
  const std::size_t sizes[placement_sizes] = {
      1, 15, 16, 113, 128, 129, 4096 + 48, 32768 + 16 * 7 + 3, 65536 * 2 + 1, 65536 * 3 + 80 + 9};
  return sizes[s];
}
constexpr std::size_t placement_max = 65536 * 3 + 80 + 9;
constexpr int placement_count = 10;
// Where the source and the destination start within a 128-byte line.
GRMA_HOST_DEVICE inline std::size_t placement_of(int p, int end) {
  const std::size_t places[placement_count][2] = {{0, 0}, {16, 16}, {64, 64}, {112, 112}, {8, 8},
                                                  {3, 3}, {0, 64},  {0, 8},   {8, 0},     {5, 9}};
  return places[p][end];
}
constexpr std::uint8_t untouched = 0xa5;

struct placements {
  std::size_t most;  // the largest size this job's buffers hold
  buffers mem;

  // Room for `most` bytes at any place of a line, a line of margin on either
  // side, and the line the buffer may start into.
  GRMA_HOST_DEVICE std::size_t room() const { return round64(most) + 4 * 128; }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), peer = me ^ 1;
    auto* inbox = mem.get<std::uint8_t>(r, 2 * room());
    auto* outbox = inbox + room();
    grma::window w = r.window_create(grma::world, inbox, room());
    // The first whole line after a line of margin, in either buffer.
    const auto line_after = [](const std::uint8_t* p) {
      return std::size_t(128 + ((128 - (reinterpret_cast<std::uintptr_t>(p) & 127)) & 127));
    };
    const std::size_t in_line = line_after(inbox), out_line = line_after(outbox);
    for (std::size_t i = std::size_t(r.thread()); i < room(); i += std::size_t(r.threads()))
      inbox[i] = untouched;
    r.sync_threads();
    r.barrier(grma::world);  // every inbox is ready before any put
    if (peer < r.size(grma::world)) {
      int tag = 0;
      for (int s = 0; s < placement_sizes && placement_size(s) <= most; ++s)
        for (int p = 0; p < placement_count; ++p, ++tag) {
          const std::size_t bytes = placement_size(s);
          const std::size_t from = out_line + placement_of(p, 0), to = in_line + placement_of(p, 1);
          for (int half = 0; half < 2; ++half) {
            if ((half == 0) == (me % 2 == 0)) {
              fill(r, outbox + from, bytes, mix(std::uint64_t(me), bytes, std::uint64_t(p)));
              r.put_notify(w, peer, to, bytes, outbox + from, tag);
            } else {
              r.wait_notifications(w, peer, tag, 1);
              CONF_CHECK_PATTERN(r, rec, inbox + to, bytes,
                                 mix(std::uint64_t(peer), bytes, std::uint64_t(p)), 0, tag);
              CONF_EXPECT(r, rec, inbox[to - 1] == untouched && inbox[to + bytes] == untouched, tag,
                          inbox[to - 1], inbox[to + bytes]);
              // Untouched again before this rank's own put, which the peer's
              // next one waits for.
              for (std::size_t i = std::size_t(r.thread()); i < bytes;
                   i += std::size_t(r.threads()))
                inbox[to + i] = untouched;
              r.sync_threads();
              tally(r, rec, 0);
            }
          }
        }
    }
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 0, 0, 0);
    r.window_free(w);
    mem.release(r, inbox);
  }
};

// The placements at a point of the matrix; every size where the heap holds
// the buffers, else those up to what it holds.
void run_placements(const config& c) {
  grma::runtime rt(suite_settings());
  job j(rt, c);
  const int n = j.resolve(placements{});
  const std::size_t half = rank_budget(rt, n) / 2;
  const std::size_t most =
      clamp_to<std::size_t>(half > 4 * 128 ? half - 4 * 128 : 0, 129, placement_max);
  placements program{most, {}};
  program.mem = j.prepare(0, 2 * program.room());
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    int sizes = 0;
    while (sizes < placement_sizes && placement_size(sizes) <= most) ++sizes;
    j.expect_counts(
        0, [&](int rank) { return (rank ^ 1) < n ? unsigned(sizes * placement_count) : 0u; },
        "messages received");
  }
}

TEST_P(NotifiedAccess, PutsMoveEveryByteAtEveryPlacement) {
  run_placements(GetParam());
}

// Ranks whose last warp is partial: its run of a copy's step is as wide as
// the warp (a CPU rank is one thread whatever is asked).
TEST(NotifiedAccessPartialWarps, PutsMoveEveryByteAtEveryPlacement) {
  run_placements({2, 80});
  run_placements({3, 48});
}

// ---- ring ---------------------------------------------------------------------------

constexpr std::size_t ring_slot_bytes = 64;
constexpr int ring_tags = 5;
constexpr int ring_lag = 16;  // rounds sent before the first one is received

GRMA_HOST_DEVICE inline std::size_t ring_message_bytes(int source, int round) {
  return 1 + std::size_t(mix(std::uint64_t(source), std::uint64_t(round)) % ring_slot_bytes);
}

// Every rank puts to its right neighbour for many rounds, `ring_lag` rounds
// ahead of what it receives, so many messages are in flight; each round has
// its own slot, size and tag, and the receiver checks each round's data.
struct ring {
  int rounds;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void receive(Rank& r, rank_record& rec, grma::window w,
                                const std::uint8_t* inbox, int left, int round) const {
    r.wait_notifications(w, left, round % ring_tags, 1);
    CONF_CHECK_PATTERN(r, rec, inbox + std::size_t(round) * ring_slot_bytes,
                       ring_message_bytes(left, round),
                       mix(std::uint64_t(left), std::uint64_t(round)), 0, round);
    tally(r, rec, 0);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    const std::size_t inbox_bytes = std::size_t(rounds) * ring_slot_bytes;
    auto* inbox = mem.get<std::uint8_t>(r, round64(inbox_bytes) + ring_slot_bytes);
    auto* outbox = reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(inbox) +
                                                   round64(inbox_bytes));
    grma::window w = r.window_create(grma::world, inbox, inbox_bytes);
    for (int round = 0; round < rounds; ++round) {
      const std::size_t bytes = ring_message_bytes(me, round);
      fill(r, outbox, bytes, mix(std::uint64_t(me), std::uint64_t(round)));
      r.put_notify(w, right, std::size_t(round) * ring_slot_bytes, bytes, outbox,
                   round % ring_tags);
      if (round >= ring_lag) receive(r, rec, w, inbox, left, round - ring_lag);
    }
    for (int round = max_of(0, rounds - ring_lag); round < rounds; ++round)
      receive(r, rec, w, inbox, left, round);
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 0, 0, 0);
    r.window_free(w);
    mem.release(r, inbox);
  }
};

TEST_P(NotifiedAccess, RingDeliversEveryRound) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(ring{});
  const int rounds = int(clamp_to<std::size_t>((rank_budget(rt, n) - 256) / ring_slot_bytes,
                                               std::size_t(ring_lag + 1), 400));
  const ring program{
      rounds, j.prepare(0, round64(std::size_t(rounds) * ring_slot_bytes) + ring_slot_bytes)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(program.rounds); }, "rounds received");
  }
}

// ---- one warp communicates while the others work ------------------------------------------

constexpr std::size_t warp_halo_bytes = 1000;
constexpr int warp_halo_tags = 3;

// A halo exchange in which one warp of each rank puts to both neighbours of
// a ring and takes both of theirs (one by test_notifications, one by
// wait_notifications), round after round, while the rank's other threads
// work; then all threads check both messages byte for byte and a word
// another thread wrote. Neighbours wait for each other, so one is at most a
// round ahead: rounds alternate between two slots per neighbour.
struct one_warp_halo {
  int rounds;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    // [from the left: two slots][from the right: two slots][outbox][words]
    const std::size_t slot = round64(warp_halo_bytes);
    auto* inbox = mem.get<std::uint8_t>(r, 5 * slot + 8 * std::size_t(r.threads()));
    std::uint8_t* outbox = inbox + 4 * slot;
    auto* words = reinterpret_cast<std::uint64_t*>(inbox + 5 * slot);
    grma::window w = r.window_create(grma::world, inbox, 4 * slot);
    auto warp = r.one_warp();
    const warp_split split(r, warp);
    for (int round = 0; round < rounds; ++round) {
      const std::size_t from_left = std::size_t(round % 2) * slot, from_right = from_left + 2 * slot;
      const int tag = round % warp_halo_tags;
      fill(r, outbox, warp_halo_bytes, mix(std::uint64_t(me), std::uint64_t(round)));
      if (split.calls) {
        warp.put_notify(w, right, from_left, warp_halo_bytes, outbox, tag);  // I am its left
        warp.put_notify(w, left, from_right, warp_halo_bytes, outbox, tag);
        while (!warp.test_notifications(w, left, tag, 1)) relax();
        warp.wait_notifications(w, right, tag, 1);
        tally(warp, rec, 0);
      }
      split.work(r, words, round);
      r.sync_threads();
      CONF_CHECK_PATTERN(r, rec, inbox + from_left, warp_halo_bytes,
                         mix(std::uint64_t(left), std::uint64_t(round)), 0, round);
      CONF_CHECK_PATTERN(r, rec, inbox + from_right, warp_halo_bytes,
                         mix(std::uint64_t(right), std::uint64_t(round)), 0, round);
      split.check_work(r, rec, words, round);
      r.sync_threads();  // the words are read before the next round writes them
    }
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 0, 0, 0);
    r.window_free(w);
    mem.release(r, inbox);
  }
};

TEST_P(NotifiedAccess, OneWarpPutsWhileTheOthersWork) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  if (!j.has_warp()) GTEST_SKIP() << "a rank of fewer threads than a warp has no one_warp()";
  j.resolve(one_warp_halo{});
  const one_warp_halo program{64, j.prepare(0, 5 * round64(warp_halo_bytes) + 8 * 1024)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(program.rounds); }, "rounds exchanged");
  }
}

// The warp's other calls, round after round around a ring, while the
// rank's other threads work. All threads fill an exposed block with this
// round's pattern; the warp put_signals a copy of it into the right
// neighbour's inbox (two slots: the right one checks a round's slot before
// it can let me reach the round after next), with the signal word set to
// the round; waits for the left one's signal (its block is ready), then
// get_notifies the left one's block, and waits for the right one's get's
// notification before the next round overwrites the block. Then all threads
// check what came by put_signal and by get_notify byte for byte.
struct one_warp_gets_and_signals {
  int rounds;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    // Window: [signal word][exposed][inbox: two slots]; then [got][words].
    const std::size_t slot = round64(warp_halo_bytes), exposed = 64, inbox = exposed + slot;
    const std::size_t window_bytes = inbox + 2 * slot;
    auto* base = mem.get<std::uint8_t>(r, window_bytes + slot + 8 * std::size_t(r.threads()));
    std::uint8_t* got = base + window_bytes;
    auto* words = reinterpret_cast<std::uint64_t*>(got + slot);
    if (r.thread() == 0) *reinterpret_cast<std::uint64_t*>(base) = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, base, window_bytes);
    auto warp = r.one_warp();
    const warp_split split(r, warp);
    for (int round = 0; round < rounds; ++round) {
      const std::uint64_t seed = mix(std::uint64_t(me), std::uint64_t(round));
      const std::size_t to = inbox + std::size_t(round % 2) * slot;
      const int tag = round % warp_halo_tags;
      fill(r, base + exposed, warp_halo_bytes, seed);
      if (split.calls) {
        warp.put_signal(w, right, to, warp_halo_bytes, base + exposed, 0,
                        std::uint64_t(round + 1), grma::signal_op::set);
        // ge, not eq: a signal that overtook this round fails here rather
        // than hang; every lane checks the value the wait broadcast.
        const std::uint64_t seen = warp.wait_signal(w, 0, grma::cmp::ge, std::uint64_t(round + 1));
        if (seen != std::uint64_t(round + 1))
          record_failure(rec, __LINE__, round, warp.thread(), (long long)seen);
        warp.get_notify(w, left, exposed, warp_halo_bytes, got, tag);
        warp.wait_notifications(w, right, tag, 1);  // the right one has my block
        tally(warp, rec, 0);
      }
      split.work(r, words, round);
      r.sync_threads();
      const std::uint64_t from_left = mix(std::uint64_t(left), std::uint64_t(round));
      CONF_CHECK_PATTERN(r, rec, got, warp_halo_bytes, from_left, 0, round);
      CONF_CHECK_PATTERN(r, rec, base + to, warp_halo_bytes, from_left, 0, round);
      split.check_work(r, rec, words, round);
      r.sync_threads();  // the words are read before the next round writes them
    }
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 0, 0, 0);
    r.window_free(w);
    mem.release(r, base);
  }
};

TEST_P(NotifiedAccess, OneWarpGetsAndSignalsWhileTheOthersWork) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  if (!j.has_warp()) GTEST_SKIP() << "a rank of fewer threads than a warp has no one_warp()";
  j.resolve(one_warp_gets_and_signals{});
  const std::size_t slot = round64(warp_halo_bytes);
  const one_warp_gets_and_signals program{64, j.prepare(0, 64 + 4 * slot + 8 * 1024)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(program.rounds); }, "rounds exchanged");
  }
}

// ---- token ring ------------------------------------------------------------------------

// A token travels around the ring; each rank adds one, so a lost, repeated or
// early hop shows in the value.
struct token_ring {
  int laps;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void pass(Rank& r, grma::window w, std::uint64_t* outgoing, int right,
                             std::uint64_t value) const {
    if (r.thread() == 0) *outgoing = value;
    r.sync_threads();
    r.put_notify(w, right, 0, sizeof(std::uint64_t), outgoing, 1);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* token = mem.get<std::uint64_t>(r, 2 * sizeof(std::uint64_t));
    std::uint64_t* outgoing = token + 1;
    grma::window w = r.window_create(grma::world, token, sizeof(std::uint64_t));
    if (me == 0) pass(r, w, outgoing, right, 1);
    for (int lap = 0; lap < laps; ++lap) {
      r.wait_notifications(w, left, 1, 1);
      const std::uint64_t value = *token;
      const std::uint64_t expected =
          std::uint64_t(lap) * std::uint64_t(n) + std::uint64_t(me == 0 ? n : me);
      CONF_EXPECT(r, rec, value == expected, lap, value, expected);
      tally(r, rec, 0);
      if (me != 0 || lap + 1 < laps) pass(r, w, outgoing, right, value + 1);
    }
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 0, 0, 0);
    r.window_free(w);
    mem.release(r, token);
  }
};

TEST_P(NotifiedAccess, TokenCirclesTheRing) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(token_ring{});
  const token_ring program{clamp_to(20000 / n, 2, 100), j.prepare(0, 16)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(program.laps); }, "laps");
  }
}

// ---- all-to-all --------------------------------------------------------------------------

// How an all-to-all round's receivers match their notifications.
enum class matching { exact, any_source, any_tag, any_one_by_one, any_all_at_once, test_exact };
constexpr int matching_count = 6;
constexpr int all_to_all_group = 64;  // ranks per all-to-all group

GRMA_HOST_DEVICE inline int all_to_all_tag(int source, int round) {
  return source * 16 + round % 16;
}

// Each round every rank puts a message of its own size to every member of
// its group (itself included) with a tag that names the source. Receivers
// match them with another combination of wildcards each round, check all
// data, and after everyone is done no notification may be left: each was
// matched exactly once.
struct all_to_all {
  int rounds;
  std::size_t block;
  buffers mem;

  GRMA_HOST_DEVICE std::size_t message_bytes(int source, int target, int round) const {
    return 1 + std::size_t(mix(std::uint64_t(source), std::uint64_t(target), std::uint64_t(round)) %
                           block);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const group g(me, n, all_to_all_group);
    auto* inbox = mem.get<std::uint8_t>(r, round64(std::size_t(g.size) * block) + block);
    auto* outbox = reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(inbox) +
                                                   round64(std::size_t(g.size) * block));
    grma::window w = r.window_create(grma::world, inbox, std::size_t(g.size) * block);
    for (int round = 0; round < rounds; ++round) {
      for (int k = 0; k < g.size; ++k) {
        const int target = g.member((g.index + k) % g.size);
        const std::size_t bytes = message_bytes(me, target, round);
        fill(r, outbox, bytes, mix(std::uint64_t(me), std::uint64_t(target), std::uint64_t(round)));
        r.put_notify(w, target, std::size_t(g.index) * block, bytes, outbox,
                     all_to_all_tag(me, round));
      }
      const matching how = matching(round % matching_count);
      for (int k = 0; k < g.size; ++k) {
        const int source = g.member((g.index + g.size - k) % g.size);
        switch (how) {
          case matching::exact:
            r.wait_notifications(w, source, all_to_all_tag(source, round), 1);
            tally(r, rec, 0);
            break;
          case matching::any_source:
            r.wait_notifications(w, grma::any_source, all_to_all_tag(source, round), 1);
            tally(r, rec, 0);
            break;
          case matching::any_tag:
            r.wait_notifications(w, source, grma::any_tag, 1);
            tally(r, rec, 0);
            break;
          case matching::any_one_by_one:
            r.wait_notifications(w, grma::any_source, grma::any_tag, 1);
            tally(r, rec, 0);
            break;
          case matching::any_all_at_once:
            if (k == 0) {
              r.wait_notifications(w, grma::any_source, grma::any_tag, g.size);
              tally(r, rec, 0, unsigned(g.size));
            }
            break;
          case matching::test_exact:
            break;
        }
      }
      if (how == matching::test_exact) {
        r.barrier(grma::world);  // every message of this round has arrived
        for (int i = 0; i < g.size; ++i) {
          const int source = g.member(i);
          const bool first = r.test_notifications(w, source, all_to_all_tag(source, round), 1);
          CONF_EXPECT(r, rec, first, round, source, 1);
          if (first) tally(r, rec, 0);
          const bool second = r.test_notifications(w, source, all_to_all_tag(source, round), 1);
          CONF_EXPECT(r, rec, !second, round, source, 2);
        }
      }
      for (int i = 0; i < g.size; ++i) {
        const int source = g.member(i);
        CONF_CHECK_PATTERN(r, rec, inbox + std::size_t(i) * block, message_bytes(source, me, round),
                           mix(std::uint64_t(source), std::uint64_t(me), std::uint64_t(round)), 0,
                           round * 100000 + source);
      }
      r.barrier(grma::world);  // every rank has sent and matched this round
      CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag, 1), round, -1,
                  3);
      r.barrier(grma::world);  // before anyone sends the next round
    }
    r.window_free(w);
    mem.release(r, inbox);
  }
};

TEST_P(NotifiedAccess, AllToAllMatchesEachNotificationOnce) {
  grma::runtime rt(with_ring_room(1024));
  job j(rt, GetParam());
  const int n = j.resolve(all_to_all{});
  const int members = min_of(n, all_to_all_group);
  const std::size_t block =
      clamp_to<std::size_t>(rank_budget(rt, n) / std::size_t(members + 1) - 64, 16, 1500);
  const all_to_all program{4 * matching_count, block,
                           j.prepare(0, round64(std::size_t(members) * block) + block)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0,
        [&](int rank) {
          return (unsigned long long)(program.rounds) *
                 unsigned(group(rank, n, all_to_all_group).size);
        },
        "notifications matched");
  }
}

// ---- get_notify ---------------------------------------------------------------------------

constexpr int get_group = 64;
GRMA_HOST_DEVICE inline int get_tag(int origin) {
  return 50 + origin;
}

// Every rank reads a range of every other group member's window (some
// none of it) into private memory. The data arrives at the origin; each target matches exactly one
// notification per origin, with the origin's rank and tag, and then reuses
// the range at once. Windows on world and on device take turns.
struct get_notify {
  int rounds;
  std::size_t exposed_bytes;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const group g(me, n, get_group);
    auto* exposed = mem.get<std::uint8_t>(r, round64(exposed_bytes) + exposed_bytes);
    auto* landing = reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(exposed) +
                                                    round64(exposed_bytes));
    grma::window windows[2] = {r.window_create(grma::world, exposed, exposed_bytes),
                               r.window_create(world_or_whole_device(r, true), exposed, exposed_bytes)};
    const std::size_t half = exposed_bytes / 2;
    for (int round = 0; round < rounds; ++round) {
      const grma::window w = windows[round % 2];
      fill(r, exposed, exposed_bytes, mix(std::uint64_t(me), std::uint64_t(round)));
      r.barrier(grma::world);
      for (int k = 1; k < g.size; ++k) {
        const int target = g.member((g.index + k) % g.size);
        const std::size_t offset =
            mix(std::uint64_t(me), std::uint64_t(target), std::uint64_t(round)) % half;
        // Some read nothing: they notify all the same.
        const std::size_t bytes =
            (round + k) % 7 == 0
                ? 0
                : 1 + mix(std::uint64_t(target), std::uint64_t(me), std::uint64_t(round)) % half;
        r.get_notify(w, target, offset, bytes, landing, get_tag(me));
        CONF_CHECK_PATTERN(r, rec, landing, bytes, mix(std::uint64_t(target), std::uint64_t(round)),
                           offset, round * 100000 + target);
      }
      if (round % 4 < 2) {  // wait for each origin by rank and tag
        for (int k = 1; k < g.size; ++k) {
          const int origin = g.member((g.index + g.size - k) % g.size);
          r.wait_notifications(w, origin, get_tag(origin), 1);
          tally(r, rec, 0);
        }
      } else {  // after everyone is done, test for each origin
        r.barrier(grma::world);
        for (int k = 1; k < g.size; ++k) {
          const int origin = g.member((g.index + k) % g.size);
          const bool matched = r.test_notifications(w, origin, get_tag(origin), 1);
          CONF_EXPECT(r, rec, matched, round, origin, 0);
          if (matched) tally(r, rec, 0);
        }
      }
      // The readers are done: overwriting may not change what they got.
      fill(r, exposed, exposed_bytes, mix(std::uint64_t(me), std::uint64_t(round), 999));
      r.barrier(grma::world);
      CONF_EXPECT(r, rec,
                  !r.test_notifications(windows[0], grma::any_source, grma::any_tag) &&
                      !r.test_notifications(windows[1], grma::any_source, grma::any_tag),
                  round, -1, 1);
    }
    for (grma::window& w : windows) r.window_free(w);
    mem.release(r, exposed);
  }
};

TEST_P(NotifiedAccess, GetNotifyReadsTheTargetAndNotifiesIt) {
  grma::runtime rt(with_ring_room(1024));
  job j(rt, GetParam());
  const int n = j.resolve(get_notify{});
  const std::size_t exposed = clamp_to<std::size_t>(rank_budget(rt, n) / 2 - 64, 64, 4096);
  const get_notify program{12, exposed, j.prepare(0, round64(exposed) + exposed)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0,
        [&](int rank) {
          return (unsigned long long)(program.rounds) *
                 unsigned(group(rank, n, get_group).size - 1);
        },
        "notifications from origins");
  }
}

// ---- count > 1 and FIFO -----------------------------------------------------------------

// wait_notifications with count > 1 blocks until that many match, while
// notifications with other tags stay queued, in order, for later queries.
struct wait_with_count {
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void send(Rank& r, grma::window w, std::uint64_t* outgoing, int me, int peer,
                             int part, int i, int tag) const {
    if (r.thread() == 0)
      outgoing[i] = mix(std::uint64_t(me), std::uint64_t(i), std::uint64_t(part));
    r.sync_threads();
    r.put_notify(w, peer, std::size_t(i) * sizeof(std::uint64_t), sizeof(std::uint64_t),
                 &outgoing[i], tag);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void check_words(Rank& r, rank_record& rec, const std::uint64_t* words, int peer,
                                    int part, int count) const {
    for (int i = r.thread(); i < count; i += r.threads())
      if (words[i] != mix(std::uint64_t(peer), std::uint64_t(i), std::uint64_t(part)))
        record_failure(rec, __LINE__, part, i, 0);
    r.sync_threads();
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    constexpr int tag_a = 1, tag_b = 2;
    constexpr int b_first = 6, a_count = 4, b_later = 3;
    constexpr int messages = b_first + a_count + b_later;
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    const int peer = me ^ 1;
    const bool active = peer < r.size(grma::world);
    const bool sender = me % 2 == 0;
    auto* words = mem.get<std::uint64_t>(r, 2 * messages * sizeof(std::uint64_t));
    std::uint64_t* outgoing = words + messages;
    grma::window w = r.window_create(grma::world, words, messages * sizeof(std::uint64_t));

    // Part 1: six B, four A, three B. The receiver asks for the four A at once.
    if (active && sender) {
      for (int i = 0; i < b_first; ++i) send(r, w, outgoing, me, peer, 1, i, tag_b);
      for (int i = b_first; i < b_first + a_count; ++i) send(r, w, outgoing, me, peer, 1, i, tag_a);
      for (int i = b_first + a_count; i < messages; ++i)
        send(r, w, outgoing, me, peer, 1, i, tag_b);
    }
    if (active && !sender) {
      r.wait_notifications(w, peer, tag_a, a_count);
      tally(r, rec, 0, a_count);
      check_words(r, rec, words, peer, 1, b_first + a_count);  // the B before the A arrived first
      r.wait_notifications(w, peer, tag_b, b_first + b_later);
      tally(r, rec, 0, b_first + b_later);
      check_words(r, rec, words, peer, 1, messages);
    }
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 1, 0, 0);
    r.barrier(grma::world);  // before part 2 is sent

    // Part 2: tags 3 4 3 5 4 3; a wildcard wait for three takes the oldest
    // three (3 4 3) and leaves 5 4 3.
    const int sequence[6] = {3, 4, 3, 5, 4, 3};
    if (active && sender)
      for (int i = 0; i < 6; ++i) send(r, w, outgoing, me, peer, 2, i, sequence[i]);
    if (active && !sender) {
      r.wait_notifications(w, peer, grma::any_tag, 3);
      tally(r, rec, 0, 3);
    }
    r.barrier(grma::world);
    if (active && !sender) {
      CONF_EXPECT(r, rec, !r.test_notifications(w, peer, 3, 2), 2, 3, 2);
      CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, 4, 2), 2, 4, 2);
      const bool four = r.test_notifications(w, peer, 4, 1);
      CONF_EXPECT(r, rec, four, 2, 4, 1);
      const bool rest = r.test_notifications(w, grma::any_source, grma::any_tag, 2);
      CONF_EXPECT(r, rec, rest, 2, -1, 2);
      tally(r, rec, 0, (four ? 1u : 0u) + (rest ? 2u : 0u));
      check_words(r, rec, words, peer, 2, 6);
    }
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 2, 0, 0);
    r.window_free(w);
    mem.release(r, words);
  }
};

TEST_P(NotifiedAccess, WaitWithCountLeavesOtherTagsQueuedInOrder) {
  grma::runtime rt(with_ring_room(1024));
  job j(rt, GetParam());
  const int n = j.resolve(wait_with_count{});
  if (j.run(wait_with_count{j.prepare(0, 2 * 13 * sizeof(std::uint64_t))})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int rank) { return (rank ^ 1) < n && rank % 2 == 1 ? 13u + 6u : 0u; },
        "notifications matched");
  }
}

// ---- matching against a FIFO model --------------------------------------------------------

constexpr int model_per_target = 48;  // per window and neighbour; well below match_capacity
constexpr int model_tags = 5;         // tags 0..4 are sent; tag 5 never is
constexpr int model_queries = 400;

GRMA_HOST_DEVICE inline int model_tag(int source, int target, int window, int i) {
  return int(mix(std::uint64_t(source * 2 + window), std::uint64_t(target), std::uint64_t(i)) %
             model_tags);
}

// Zero-byte notifications from both neighbours on two windows, then a long
// sequence of test_notifications queries (wildcards, counts 1..4), each
// compared with a model of FIFO matching kept by every thread: a query
// succeeds when `count` queued notifications match, and then removes exactly
// the oldest `count` matches. Queries over any source ask for all matches (or
// one more), so their outcome does not depend on how the sources interleave.
struct fifo_model {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    int neighbours[2] = {(me + 1) % n, (me + n - 1) % n};
    const int neighbour_count = neighbours[1] == neighbours[0] ? 1 : 2;
    grma::window windows[2] = {r.window_create(grma::world, nullptr, 0),
                               r.window_create(grma::world, nullptr, 0)};
    for (int i = 0; i < model_per_target; ++i)
      for (int k = 0; k < neighbour_count; ++k)
        for (int win = 0; win < 2; ++win)
          r.put_notify(windows[win], neighbours[k], 0, 0, nullptr,
                       model_tag(me, neighbours[k], win, i));
    r.barrier(grma::world);

    // model[window][neighbour][i]: the tag still queued, or -1 once matched.
    int model[2][2][model_per_target];
    for (int win = 0; win < 2; ++win)
      for (int k = 0; k < 2; ++k)
        for (int i = 0; i < model_per_target; ++i)
          model[win][k][i] = k < neighbour_count ? model_tag(neighbours[k], me, win, i) : -1;
    for (int q = 0; q < model_queries; ++q) {
      const std::uint64_t x = mix(std::uint64_t(me), std::uint64_t(q), 7);
      const int win = int(x % 2);
      const int tag = x / 2 % (model_tags + 2) == model_tags + 1 ? grma::any_tag
                                                                 : int(x / 2 % (model_tags + 2));
      const bool any_source = x / 16 % 4 == 0;
      const int which = int(x / 64 % std::uint64_t(neighbour_count));
      const int source = any_source ? grma::any_source : neighbours[which];
      int available = 0;
      for (int k = 0; k < neighbour_count; ++k)
        if (any_source || k == which)
          for (int i = 0; i < model_per_target; ++i)
            available += model[win][k][i] >= 0 && (tag == grma::any_tag || model[win][k][i] == tag);
      const int count = any_source ? max_of(1, available + int(x / 256 % 2)) : 1 + int(x / 256 % 4);
      const bool expected = available >= count;
      const bool matched = r.test_notifications(windows[win], source, tag, count);
      if (matched != expected) {
        CONF_EXPECT(r, rec, false, q, count, available);
        break;
      }
      if (!matched) continue;
      tally(r, rec, 0, unsigned(count));
      for (int k = 0; k < neighbour_count; ++k) {
        if (!any_source && k != which) continue;
        int removed = 0;
        for (int i = 0; i < model_per_target && removed < count; ++i) {
          if (model[win][k][i] >= 0 && (tag == grma::any_tag || model[win][k][i] == tag)) {
            model[win][k][i] = -1;
            ++removed;
          }
        }
      }
    }
    // Whatever the model still holds is queued, and nothing else.
    for (int win = 0; win < 2; ++win) {
      for (int k = 0; k < neighbour_count; ++k) {
        int left = 0;
        for (int i = 0; i < model_per_target; ++i) left += model[win][k][i] >= 0;
        if (left > 0) {
          const bool there = r.test_notifications(windows[win], neighbours[k], grma::any_tag, left);
          CONF_EXPECT(r, rec, there, win, neighbours[k], left);
          if (there) tally(r, rec, 0, unsigned(left));
        }
      }
      CONF_EXPECT(r, rec, !r.test_notifications(windows[win], grma::any_source, grma::any_tag), win,
                  -1, 0);
    }
    r.barrier(grma::world);
    for (grma::window& w : windows) r.window_free(w);
  }
};

TEST_P(NotifiedAccess, MatchingFollowsTheFifoModel) {
  grma::runtime rt(with_ring_room(1024));
  job j(rt, GetParam());
  const int n = j.resolve(fifo_model{});
  j.prepare();
  if (j.run(fifo_model{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return 2u * model_per_target * (n == 2 ? 1u : 2u); },
        "notifications matched");
  }
}

// ---- many windows ------------------------------------------------------------------

constexpr int many_windows = 12;     // more than a rank's window cache has sets (8)
constexpr int many_targets = 6;      // more than a set has lines (4)
constexpr int many_rounds = 2;       // at two places of each range
constexpr int many_generations = 2;  // the windows freed and made again, in the same slots

GRMA_HOST_DEVICE inline std::uint64_t many_seed(int generation, int window, int round, int source,
                                                int target) {
  return mix(std::uint64_t(generation) * 1024 + std::uint64_t(window) * 16 + std::uint64_t(round),
             std::uint64_t(source) * 4096 + std::uint64_t(target));
}

// Each rank puts 8 bytes through each of many_windows windows to each of the
// next many_targets ranks (as many as there are), windows and targets
// interleaved so that the rank's cached lookups are replaced and made again:
// every word lands in the range of its window and target, at its round's
// and source's place, and each notification is matched once. Then the
// windows are freed and made again (new generations of the same slots),
// whose lookups must not find the old windows' lines.
struct many_windows_puts {
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int targets = min_of(many_targets, n);
    // A word per (round, k) where rank me - k sent it; then the outbox.
    const std::size_t range = std::size_t(many_rounds) * std::size_t(targets) * 8;
    auto* memory = mem.get<std::uint8_t>(r, many_windows * range + 64);
    std::uint8_t* outbox = memory + many_windows * range;
    for (int generation = 0; generation < many_generations; ++generation) {
      grma::window w[many_windows];
      for (int k = 0; k < many_windows; ++k)
        w[k] = r.window_create(grma::world, memory + std::size_t(k) * range, range);
      for (int round = 0; round < many_rounds; ++round) {
        for (int i = 0; i < many_windows * targets; ++i) {
          const int k = (i * 7 + me) % many_windows, step = 1 + i / many_windows;
          const int target = (me + step) % n;
          fill(r, outbox, 8, many_seed(generation, k, round, me, target));
          r.put_notify(w[k], target, std::size_t(round * targets + step - 1) * 8, 8, outbox, round);
        }
        for (int k = 0; k < many_windows; ++k)
          for (int step = 1; step <= targets; ++step) {
            const int source = (me + n - step % n) % n;
            r.wait_notifications(w[k], source, round, 1);
            CONF_CHECK_PATTERN(
                r, rec,
                memory + std::size_t(k) * range + std::size_t(round * targets + step - 1) * 8, 8,
                many_seed(generation, k, round, source, me), 0, k * 100 + step);
            tally(r, rec, 0);
          }
      }
      r.barrier(grma::world);
      for (int k = 0; k < many_windows; ++k)
        CONF_EXPECT(r, rec, !r.test_notifications(w[k], grma::any_source, grma::any_tag), k, 0, 0);
      for (int k = 0; k < many_windows; ++k) r.window_free(w[k]);
    }
    mem.release(r, memory);
  }
};

TEST_P(NotifiedAccess, PutsThroughManyWindowsLandInTheirRanges) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(many_windows_puts{});
  const std::size_t range = std::size_t(many_rounds) * std::size_t(min_of(many_targets, n)) * 8;
  const many_windows_puts program{j.prepare(0, many_windows * range + 64)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0,
        [&](int) {
          return unsigned(many_generations * many_windows * many_rounds * min_of(many_targets, n));
        },
        "words checked");
  }
}

// ---- value puts ---------------------------------------------------------------------

// A value put's bytes travel in its notification and land when the target
// matches it. Every round each rank sends its right neighbour five value
// puts (8, 1, 2, 4 and 8 bytes, tags 0-4) to their own places of a 64-byte
// window, then an empty put_notify on a second window (tag 9). The
// neighbour takes them by another call each round: one by one with their
// envelopes, all five by count, calls for some, tests newest first after a
// barrier (from its pending list), or after the second window's
// notification, which moves them into its pending list first (all but the
// first and the calls for some hold the five at once: one by one instead
// where GRMA_MATCH_CAPACITY holds fewer than six). Each value is
// checked once it is matched, the envelope's immediate holds its bytes, and
// the window's other bytes never change.
constexpr int value_puts = 5;
constexpr int value_tag_behind = 9;
constexpr int value_ways = 5;
constexpr std::size_t value_window = 64;
GRMA_HOST_DEVICE inline std::size_t value_place(int k) {
  const std::size_t places[value_puts] = {8, 17, 34, 44, 56};
  return places[k];
}
GRMA_HOST_DEVICE inline std::size_t value_size(int k) {
  const std::size_t sizes[value_puts] = {8, 1, 2, 4, 8};
  return sizes[k];
}
// Value k of `source` in `round`, as the bytes its size keeps.
GRMA_HOST_DEVICE inline std::uint64_t value_bits(int source, int round, int k) {
  const std::uint64_t v = mix(std::uint64_t(source), std::uint64_t(round), std::uint64_t(k) + 77);
  return value_size(k) == 8 ? v : v & ((std::uint64_t{1} << (8 * value_size(k))) - 1);
}

struct value_put_ring {
  int rounds;
  bool roomy;        // the match capacity holds the five and the other window's
  bool rings_hold;   // a ring holds a round's six (tests after a barrier wait for none)
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void send(Rank& r, grma::window w, int target, int round) const {
    const int me = r.rank(grma::world);
    r.put_value_notify(w, target, value_place(0), value_bits(me, round, 0), 0);
    r.put_value_notify(w, target, value_place(1), std::uint8_t(value_bits(me, round, 1)), 1);
    r.put_value_notify(w, target, value_place(2), std::uint16_t(value_bits(me, round, 2)), 2);
    r.put_value_notify(w, target, value_place(3), std::uint32_t(value_bits(me, round, 3)), 3);
    const std::uint64_t last = value_bits(me, round, 4);
    double as_double;  // any trivially copyable type of 8 bytes
    std::memcpy(&as_double, &last, sizeof last);
    r.put_value_notify(w, target, value_place(4), as_double, 4);
  }

  // Value k from `left` is in its place.
  template <class Rank>
  GRMA_HOST_DEVICE void check(Rank& r, rank_record& rec, const std::uint8_t* inbox, int left,
                              int round, int k) const {
    std::uint64_t got = 0;
    for (std::size_t b = 0; b < value_size(k); ++b)
      got |= std::uint64_t(inbox[value_place(k) + b]) << (8 * b);
    CONF_EXPECT_EACH(rec, got == value_bits(left, round, k), round * 10 + k, (long long)got,
                     (long long)value_bits(left, round, k));
    tally(r, rec, 0);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* inbox = mem.get<std::uint8_t>(r, value_window + value_puts * sizeof(grma::envelope));
    auto* got = reinterpret_cast<grma::envelope*>(inbox + value_window);  // the threads share it
    grma::window w = r.window_create(grma::world, inbox, value_window);
    grma::window other = r.window_create(grma::world, inbox, 0);
    for (int round = 0; round < rounds; ++round) {
      for (std::size_t i = std::size_t(r.thread()); i < value_window; i += std::size_t(r.threads()))
        inbox[i] = untouched;
      r.sync_threads();
      r.barrier(grma::world);  // every window is untouched before this round's puts
      send(r, w, right, round);
      r.put_notify(other, right, 0, 0, nullptr, value_tag_behind);
      int way = round % value_ways;
      if ((way == 1 || way == 3 || way == 4) && !roomy) way = 0;  // they need the room
      if (way == 3 && !rings_hold) way = 0;  // a sender short of room would block the barrier
      if (way == 4) r.wait_notifications(other, left, value_tag_behind, 1);
      if (way == 0 || way == 4) {  // one by one, with the envelopes
        for (int k = 0; k < value_puts; ++k) {
          const grma::envelope e = r.wait_notification(w, way == 4 ? grma::any_source : left,
                                                       way == 4 ? grma::any_tag : k);
          CONF_EXPECT(r, rec, e.source == left && e.tag == k && e.immediate == value_bits(left, round, k),
                      round * 10 + k, e.source * 100 + e.tag, (long long)e.immediate);
          check(r, rec, inbox, left, round, k);
        }
      } else if (way == 1) {  // all five by count
        r.wait_notifications(w, left, grma::any_tag, value_puts);
        for (int k = 0; k < value_puts; ++k) check(r, rec, inbox, left, round, k);
      } else if (way == 2) {  // calls for some
        for (int taken = 0; taken < value_puts;)
          taken += r.wait_some_notifications(w, grma::any_source, grma::any_tag, got + taken,
                                             value_puts - taken);
        for (int k = 0; k < value_puts; ++k) {
          CONF_EXPECT(r, rec, got[k].source == left && got[k].tag == k &&
                                  got[k].immediate == value_bits(left, round, k),
                      round * 10 + k, got[k].source * 100 + got[k].tag, (long long)got[k].immediate);
          check(r, rec, inbox, left, round, k);
        }
      } else {  // tests newest first, once all have arrived
        r.barrier(grma::world);
        for (int k = value_puts - 1; k >= 0; --k) {
          const bool matched = r.test_notifications(w, left, k, 1);
          CONF_EXPECT(r, rec, matched, round * 10 + k, 0, 0);
          if (matched) check(r, rec, inbox, left, round, k);
        }
      }
      if (way != 4) r.wait_notifications(other, left, value_tag_behind, 1);
      // Every byte but the values' is as it was.
      for (std::size_t i = std::size_t(r.thread()); i < value_window; i += std::size_t(r.threads())) {
        bool placed = false;
        for (int k = 0; k < value_puts; ++k)
          placed |= i >= value_place(k) && i < value_place(k) + value_size(k);
        CONF_EXPECT_EACH(rec, placed || inbox[i] == untouched, round, (long long)i, inbox[i]);
      }
      r.sync_threads();
    }
    r.barrier(grma::world);
    CONF_EXPECT(r, rec,
                !r.test_notifications(w, grma::any_source, grma::any_tag) &&
                    !r.test_notifications(other, grma::any_source, grma::any_tag),
                0, 0, 0);
    r.window_free(other);
    r.window_free(w);
    mem.release(r, inbox);
  }
};

// Rings of at least four slots: where they hold fewer than a round's six
// notifications (GRMA_QUEUE_CAPACITY), senders wait for room and take
// their own arrivals meanwhile, and no round tests after a barrier.
TEST_P(NotifiedAccess, ValuePutsLandWhenTheirNotificationIsMatched) {
  grma::runtime rt(with_ring_room(4));
  job j(rt, GetParam());
  j.resolve(value_put_ring{});
  const value_put_ring program{
      4 * value_ways, rt.settings().match_capacity >= value_puts + 1,
      rt.settings().queue_capacity >= value_puts + 1,
      j.prepare(0, value_window + value_puts * sizeof(grma::envelope))};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(program.rounds * value_puts); }, "values matched");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, NotifiedAccess, testing::ValuesIn(suite_configs()),
                         config_name);

}  // namespace
}  // namespace conformance
