// The core's RMA without notification, portable: put and get (blocking and
// nbi) move every byte at every size and alignment; iput and iget follow
// their strides; fence orders a put before a flag written with p and
// before an overlapping put, and g reads what p wrote; quiet on each of a rank's contexts completes
// that context's puts (suite Contexts).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "support.hpp"

namespace conformance {
namespace {

class RmaNbi : public testing::TestWithParam<config> {};
class Contexts : public testing::TestWithParam<config> {};

// ---- put and get at many sizes ----------------------------------------------------

constexpr int size_count = 7;
GRMA_HOST_DEVICE inline std::size_t size_of(int i, std::size_t most) {
  const std::size_t sizes[size_count] = {0, 1, 7, 64, 1000, 4097, most};
  return min_of(sizes[i], most);
}

struct put_get_sizes {
  std::size_t most;  // bytes of the largest transfer

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* inbox = static_cast<std::uint8_t*>(r.alloc_symmetric(most + 64));
    auto* local = static_cast<std::uint8_t*>(r.alloc_symmetric(most + 64));
    const int next = rank_after(r, me, 1), previous = rank_after(r, me, -1);
    for (int i = 0; i < size_count; ++i) {
      const std::size_t bytes = size_of(i, most), at = (bytes * 13) % 64;
      for (int variant = 0; variant < 4; ++variant) {
        const std::uint64_t salt = std::uint64_t(i * 4 + variant);
        if (variant < 2) {
          // Put to the next rank; the previous one's data arrives here.
          fill(r, local + at / 2, bytes, mix(std::uint64_t(me), salt));
          if (variant == 0)
            r.put(inbox + at, local + at / 2, bytes, next);
          else
            r.put_nbi(inbox + at, local + at / 2, bytes, next);
          r.quiet();
          r.barrier(grma::world);
          CONF_CHECK_PATTERN(r, rec, inbox + at, bytes, mix(std::uint64_t(previous), salt), 0,
                             salt);
        } else {
          // Get the next rank's inbox, filled by that rank.
          fill(r, inbox + at, bytes, mix(std::uint64_t(me), salt));
          r.barrier(grma::world);
          if (variant == 2)
            r.get(local + at / 2, inbox + at, bytes, next);
          else {
            r.get_nbi(local + at / 2, inbox + at, bytes, next);
            r.quiet();
            r.sync_threads();
          }
          CONF_CHECK_PATTERN(r, rec, local + at / 2, bytes, mix(std::uint64_t(next), salt), 0,
                             salt);
        }
        tally(r, rec, 0);
        r.barrier(grma::world);  // nobody writes an inbox another still checks
      }
    }
    r.free_symmetric(local);
    r.free_symmetric(inbox);
  }
};

TEST_P(RmaNbi, PutsAndGetsMoveEveryByte) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(put_get_sizes{});
  j.prepare();
  const put_get_sizes program{min_of<std::size_t>(j.symmetric_slice() / 4, 65536 + 17)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return unsigned(4 * size_count); }, "transfers");
  }
}

// Many _nbi transfers in flight at once, then one quiet: each rank gets
// `count` pieces of the next rank's outbox (sizes up to `most`, a small one
// travelling inside its command, larger ones after it) into pieces of its
// own buffer, and puts as many of its own into the previous rank's inbox (so
// the next rank's arrive here); after the
// quiet and a barrier every byte of both is checked. Across nodes the
// engine then holds a rank's gets by destination, several at once.
struct many_in_flight {
  std::size_t most;
  static constexpr int count = 24;

  GRMA_HOST_DEVICE static std::size_t piece(int k, std::size_t most) {
    const std::size_t sizes[3] = {8, 200, most};
    return sizes[k % 3];
  }
  GRMA_HOST_DEVICE static std::size_t place(int k, std::size_t most) {  // of piece k
    std::size_t at = 0;
    for (int j = 0; j < k; ++j) at += piece(j, most) + 8;
    return at;
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    const std::size_t total = place(count, most);
    auto* outbox = static_cast<std::uint8_t*>(r.alloc_symmetric(total));
    auto* inbox = static_cast<std::uint8_t*>(r.calloc_symmetric(total, 1));
    auto* fetched = static_cast<std::uint8_t*>(r.alloc_symmetric(total));  // the rank heap may be small
    const int next = rank_after(r, me, 1), previous = rank_after(r, me, -1);
    fill(r, outbox, total, mix(std::uint64_t(me), 7));
    r.barrier(grma::world);
    for (int k = 0; k < count; ++k) {
      const std::size_t at = place(k, most), bytes = piece(k, most);
      r.get_nbi(fetched + at, outbox + at, bytes, next);
      r.put_nbi(inbox + at, outbox + at, bytes, previous);
    }
    r.quiet();
    r.sync_threads();
    for (int k = 0; k < count; ++k) {
      const std::size_t at = place(k, most), bytes = piece(k, most);
      CONF_CHECK_PATTERN(r, rec, fetched + at, bytes, mix(std::uint64_t(next), 7), at, k);
    }
    r.barrier(grma::world);  // every put is in place
    for (int k = 0; k < count; ++k) {
      const std::size_t at = place(k, most), bytes = piece(k, most);
      CONF_CHECK_PATTERN(r, rec, inbox + at, bytes, mix(std::uint64_t(next), 7), at, 100 + k);
    }
    tally(r, rec, 0, count);
    r.barrier(grma::world);
    r.free_symmetric(fetched);
    r.free_symmetric(inbox);
    r.free_symmetric(outbox);
  }
};

TEST_P(RmaNbi, ManyInFlightCompleteAtQuiet) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(many_in_flight{});
  j.prepare();
  const many_in_flight program{min_of<std::size_t>(j.symmetric_slice() / 128, 4097)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return unsigned(many_in_flight::count); }, "transfers");
  }
}

// ---- strided ---------------------------------------------------------------------------

constexpr std::size_t strided_count = 300;

template <class T>
GRMA_HOST_DEVICE T element(int rank, std::size_t i) {
  return T(mix(std::uint64_t(rank), i));
}

// Element i of the sender's array (stride 2) lands at i * 3 of the next
// rank's; then each rank reads the previous rank's elements back with
// iget (stride 3 there, 1 here), and checks that nothing between the
// strided elements was written.
template <class T>
struct strided_copy {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    constexpr std::size_t spread = strided_count * 3;
    auto* inbox = static_cast<T*>(r.calloc_symmetric(spread, sizeof(T)));
    auto* local = static_cast<T*>(r.alloc_symmetric(spread * sizeof(T)));
    const int next = rank_after(r, me, 1), previous = rank_after(r, me, -1);
    for (std::size_t i = std::size_t(r.thread()); i < strided_count; i += std::size_t(r.threads()))
      local[2 * i] = element<T>(me, i);
    r.sync_threads();
    r.iput(inbox, local, 3, 2, strided_count, next);
    r.quiet();
    r.barrier(grma::world);
    if (r.thread() == 0)
      for (std::size_t i = 0; i < spread; ++i) {
        const T want = i % 3 == 0 ? element<T>(previous, i / 3) : T(0);
        CONF_EXPECT(r, rec, inbox[i] == want, 1, i, 0);
      }
    // The previous rank's inbox holds what its own previous rank sent.
    const int second = rank_after(r, me, -2);
    r.iget(local, inbox, 1, 3, strided_count, previous);
    r.sync_threads();
    if (r.thread() == 0)
      for (std::size_t i = 0; i < strided_count; ++i)
        CONF_EXPECT(r, rec, local[i] == element<T>(second, i), 2, i, 0);
    tally(r, rec, 0);
    r.barrier(grma::world);
    r.free_symmetric(local);
    r.free_symmetric(inbox);
  }
};

TEST_P(RmaNbi, StridedPutsAndGetsFollowTheirStrides) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(strided_copy<std::uint8_t>{});
  j.prepare();
  if (j.run(strided_copy<std::uint8_t>{}) && j.run(strided_copy<std::uint16_t>{}) &&
      j.run(strided_copy<float>{}) && j.run(strided_copy<std::int64_t>{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 4u; }, "strided rounds");
  }
}

// ---- fence: a put, then a flag ------------------------------------------------------

// In rounds, each rank puts a block to the next rank, fences, and sets the
// next rank's flag to the round with p; it waits for the flag its previous
// rank sets, checks the block, and acknowledges with p to the previous
// rank's ack word, for which the sender waits before its next round. The
// block is complete when the flag is seen. g reads the ack word back. The
// flag and the ack are adjacent words of type T (8 bytes, then 4: across
// nodes each width has its own store at the target). With `overwrite`, a
// second put of that many bytes of another pattern follows the block's
// after a fence, over its start: fence orders it after the first, which
// is non-blocking (across nodes a put of up to a few KiB travels in its
// header, while a larger one's data follows it). With `signalled` (T is
// std::uint64_t), that second put is a put_signal that sets the flag itself.
template <class T>
struct fence_then_flag {
  int rounds;
  std::size_t bytes;
  std::size_t overwrite = 0;
  bool signalled = false;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* words = static_cast<T*>(r.calloc_symmetric(2, sizeof(T)));
    T* flag = words;
    T* ack = words + 1;
    auto* inbox = static_cast<std::uint8_t*>(r.alloc_symmetric(bytes));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc_symmetric(bytes));
    auto* second = static_cast<std::uint8_t*>(r.alloc_symmetric(overwrite + 1));
    const int next = rank_after(r, me, 1), previous = rank_after(r, me, -1);
    for (int round = 1; round <= rounds; ++round) {
      const T value = T(round);
      const auto seed = [&](int from, int put) {
        return mix(std::uint64_t(from) * 2 + std::uint64_t(put), std::uint64_t(value));
      };
      if (next != me) {
        fill(r, outbox, bytes, seed(me, 0));
        // Non-blocking where a second put follows: a blocking one would
        // return only once the first's data had left for the target.
        if (overwrite != 0)
          r.put_nbi(inbox, outbox, bytes, next);
        else
          r.put(inbox, outbox, bytes, next);
        r.fence();
        if (overwrite != 0) {
          fill(r, second, overwrite, seed(me, 1));
          if constexpr (std::is_same_v<T, std::uint64_t>)
            if (signalled)
              r.put_signal(inbox, second, overwrite, flag, value, grma::signal_op::set, next);
          if (!signalled) r.put(inbox, second, overwrite, next);
          r.fence();
        }
        if (r.thread() == 0 && !signalled) r.p(flag, value, next);
      }
      if (previous != me) {
        // Every thread waits: each then reads the block it checks.
        r.wait_until(flag, grma::cmp::eq, value);
        CONF_CHECK_PATTERN(r, rec, inbox, overwrite, seed(previous, 1), 0, round);
        CONF_CHECK_PATTERN(r, rec, inbox + overwrite, bytes - overwrite, seed(previous, 0),
                           overwrite, round);
        if (r.thread() == 0) r.p(ack, value, previous);
      }
      if (next != me) {
        r.wait_until(ack, grma::cmp::eq, value);
        const T read = r.g(ack, me);
        CONF_EXPECT(r, rec, read == value, 1, round, read);
        r.quiet();  // the source is the program's again
      }
      tally(r, rec, 0);
    }
    r.barrier(grma::world);
    r.free_symmetric(second);
    r.free_symmetric(outbox);
    r.free_symmetric(inbox);
    r.free_symmetric(words);
  }
};

TEST_P(RmaNbi, FenceOrdersAPutBeforeAFlag) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(fence_then_flag<std::uint64_t>{});
  j.prepare();
  const int rounds = 50;
  const std::size_t bytes = min_of<std::size_t>(j.symmetric_slice() / 4, 8192 + 40);
  if (j.run(fence_then_flag<std::uint64_t>{rounds, bytes}) &&
      j.run(fence_then_flag<std::uint32_t>{rounds, bytes})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(2 * rounds); }, "rounds");
  }
}

TEST_P(RmaNbi, FenceOrdersOverlappingPuts) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(fence_then_flag<std::uint64_t>{});
  j.prepare();
  const int rounds = 10;
  // A first put large enough that its data is still arriving at another
  // node when the second's header comes.
  const std::size_t bytes =
      min_of<std::size_t>(j.symmetric_slice() / 4, (std::size_t(1) << 20) + 40);
  // Past a command's inline bytes, and past what a header carries; a put,
  // then a put_signal.
  bool ran = true;
  for (const bool signalled : {false, true})
    for (const std::size_t second : {std::size_t(1000), std::size_t(3777)})
      ran = ran && j.run(fence_then_flag<std::uint64_t>{
                       rounds, bytes, min_of<std::size_t>(second, bytes / 2), signalled});
  if (ran) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(4 * rounds); }, "rounds");
  }
}

// ---- contexts ---------------------------------------------------------------------------

constexpr int context_count = 16;
constexpr std::size_t context_block = 512;

// Each of the rank's 16 contexts puts its own block to the next rank and is
// quieted on its own; the blocks arrive. Destroyed contexts come back as
// new handles (another generation), and the default context still works.
struct context_blocks {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* inbox = static_cast<std::uint8_t*>(r.alloc_symmetric(context_count * context_block));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc_symmetric(context_count * context_block));
    const int next = rank_after(r, me, 1), previous = rank_after(r, me, -1);
    for (int pass = 0; pass < 2; ++pass) {
      grma::context ctx[context_count];
      for (int c = 0; c < context_count; ++c) {
        ctx[c] = r.ctx_create();
        CONF_EXPECT(r, rec, ctx[c].slot == unsigned(c + 1), 1, c, ctx[c].slot);
        CONF_EXPECT(r, rec, ctx[c].generation == unsigned(pass * context_count + c + 1), 2, c,
                    ctx[c].generation);
      }
      for (int c = 0; c < context_count; ++c) {
        std::uint8_t* block = outbox + std::size_t(c) * context_block;
        fill(r, block, context_block, mix(std::uint64_t(me), std::uint64_t(c), std::uint64_t(pass)));
        r.put_nbi(inbox + std::size_t(c) * context_block, block, context_block, next, ctx[c]);
      }
      for (int c = context_count - 1; c >= 0; --c) r.quiet(ctx[c]);
      r.barrier(grma::world);
      for (int c = 0; c < context_count; ++c)
        CONF_CHECK_PATTERN(r, rec, inbox + std::size_t(c) * context_block, context_block,
                           mix(std::uint64_t(previous), std::uint64_t(c), std::uint64_t(pass)), 0, c);
      r.barrier(grma::world);
      for (int c = 0; c < context_count; ++c) {
        r.ctx_destroy(ctx[c]);
        CONF_EXPECT(r, rec, ctx[c] == grma::default_context, 3, c, 0);
      }
      tally(r, rec, 0);
    }
    r.put(inbox, outbox, 8, next, grma::default_context);
    r.quiet(grma::default_context);
    r.barrier(grma::world);
    r.free_symmetric(outbox);
    r.free_symmetric(inbox);
  }
};

TEST_P(Contexts, EachContextCompletesItsOwnPuts) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(context_blocks{});
  j.prepare();
  if (j.run(context_blocks{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 2u; }, "passes");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, RmaNbi, testing::ValuesIn(suite_configs()), config_name);
INSTANTIATE_TEST_SUITE_P(Conformance, Contexts, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
