// Waits on words, portable: wait_until and its all/any/some forms return
// once the words another rank writes with p satisfy them, leave out the
// words their status excludes, and return timed_out when their time limit
// passes; the test forms answer at once. Every thread of a rank may wait on
// a word of its own.
#include <cstddef>
#include <cstdint>

#include "support.hpp"

namespace conformance {
namespace {

class Waits : public testing::TestWithParam<config> {};

constexpr int word_count = 8;  // word 7 is never written
constexpr int lane_words = 32;

struct word_waits {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* words = static_cast<std::uint64_t*>(
        r.calloc_symmetric(word_count + lane_words, sizeof(std::uint64_t)));
    std::uint64_t* lanes = words + word_count;
    auto* cells = static_cast<int*>(r.alloc_symmetric(64 + sizeof(int) * (word_count + 2)));
    int* status = cells + 16;  // excludes word 7
    const int next = rank_after(r, me, 1), previous = rank_after(r, me, -1);
    if (r.thread() == 0)
      for (int i = 0; i < word_count; ++i) status[i] = i == word_count - 1 ? 1 : 0;
    r.sync_threads();
    using grma::cmp;

    // Nothing written yet: tests fail, a limited wait times out.
    CONF_EXPECT(r, rec, !r.test(words + 3, cmp::ne, std::uint64_t{0}), 1, 0, 0);
    CONF_EXPECT(r, rec, r.test_any(words, word_count, status, cmp::ne, std::uint64_t{0}) == grma::core::no_word, 2, 0, 0);
    CONF_EXPECT(r, rec, r.wait_until(words + 2, cmp::gt, std::uint64_t{0}, grma::within{0.002}) ==
                            grma::wait_result::timed_out, 3, 0, 0);
    for (const double passed : passed_limits{}.seconds) {
      std::size_t index = 0, count = 9, some[word_count];
      CONF_EXPECT(r, rec,
                  r.wait_until(words + 2, cmp::gt, std::uint64_t{0}, grma::within{passed}) ==
                      grma::wait_result::timed_out,
                  16, 0, 0);
      CONF_EXPECT(r, rec,
                  r.wait_until_any(words, word_count, status, cmp::ne, std::uint64_t{0}, index,
                                   grma::within{passed}) == grma::wait_result::timed_out,
                  17, 0, 0);
      CONF_EXPECT(r, rec,
                  r.wait_until_some(words, word_count, some, status, cmp::ne, std::uint64_t{0},
                                    count, grma::within{passed}) == grma::wait_result::timed_out &&
                      count == 0,
                  18, count, 0);
    }
    r.barrier(grma::world);

    // The previous rank sets words with p between barriers (word i to i + 1):
    // word 4, then 1 and 6, then the rest of 0..6; any, some and all see them.
    if (next != me && r.thread() == 0) r.p(words + 4, std::uint64_t{5}, next);
    if (previous != me) {
      const std::size_t any = r.wait_until_any(words, word_count, status, cmp::ne, std::uint64_t{0});
      CONF_EXPECT(r, rec, any == 4, 4, any, 0);
      CONF_EXPECT(r, rec, words[any] == 5, 5, words[any], 0);
    }
    r.barrier(grma::world);
    if (next != me && r.thread() == 0) {
      r.p(words + 1, std::uint64_t{2}, next);
      r.p(words + 6, std::uint64_t{7}, next);
    }
    if (previous != me) {
      std::size_t indices[word_count];
      std::size_t found = 0;
      // Until both new words are there: some returns what is set so far.
      do found = r.wait_until_some(words, word_count, indices, status, cmp::ne, std::uint64_t{0});
      while (found < 3);
      CONF_EXPECT(r, rec, found == 3 && indices[0] == 1 && indices[1] == 4 && indices[2] == 6, 6,
                  found, indices[0]);
    }
    r.barrier(grma::world);
    // The words not set yet (a word set again would race with the checks
    // below, which read it plainly after a wait that saw its first value).
    if (next != me && r.thread() == 0)
      for (int i = 0; i < word_count - 1; ++i)
        if (i != 1 && i != 4 && i != 6) r.p(words + i, std::uint64_t(i + 1), next);
    if (previous != me) {
      r.wait_until_all(words, word_count, status, cmp::ne, std::uint64_t{0});
      for (int i = 0; i < word_count - 1; ++i) CONF_EXPECT(r, rec, words[i] == unsigned(i + 1), 7, i, words[i]);
      CONF_EXPECT(r, rec, r.test_all(words, word_count, status, cmp::ge, std::uint64_t{1}), 8, 0, 0);
      // Word 7 alone: never written.
      CONF_EXPECT(r, rec, !r.test_all(words, word_count, nullptr, cmp::ge, std::uint64_t{1}), 9, 0, 0);
      CONF_EXPECT(r, rec, r.wait_until_all(words, word_count, nullptr, cmp::ne, std::uint64_t{0},
                                           grma::within{0.002}) == grma::wait_result::timed_out,
                  10, 0, 0);
      std::size_t index = 0;
      int only_last[word_count] = {1, 1, 1, 1, 1, 1, 1, 0};
      CONF_EXPECT(r, rec, r.wait_until_any(words, word_count, only_last, cmp::ne, std::uint64_t{0}, index,
                                           grma::within{0.002}) == grma::wait_result::timed_out,
                  11, index, 0);
      std::size_t count = 9, some[word_count];
      CONF_EXPECT(r, rec, r.wait_until_some(words, word_count, some, status, cmp::eq, std::uint64_t{3}, count,
                                            grma::within{1.0}) == grma::wait_result::met && count == 1 && some[0] == 2,
                  12, count, some[0]);
      int none[word_count] = {1, 1, 1, 1, 1, 1, 1, 1};
      CONF_EXPECT(r, rec, r.wait_until_any(words, word_count, none, cmp::eq, std::uint64_t{0}) == grma::core::no_word,
                  13, 0, 0);
      CONF_EXPECT(r, rec, r.wait_until(words + 5, cmp::eq, std::uint64_t{6}, grma::within{1.0}) == grma::wait_result::met,
                  14, 0, 0);
      const std::uint64_t seen = r.wait_until(words + 6, cmp::ge, std::uint64_t{7});
      CONF_EXPECT(r, rec, seen == 7, 15, seen, 0);
    }
    r.barrier(grma::world);

    // Each thread waits on a word of its own, which the previous rank's
    // threads set one each.
    if (next != me && r.thread() < lane_words)
      r.p(lanes + r.thread(), std::uint64_t(r.thread() + 100), next);
    if (previous != me) {
      const int lane = r.thread() % lane_words;
      const std::uint64_t seen = r.wait_until(lanes + lane, cmp::ge, std::uint64_t{100});
      if (seen != std::uint64_t(lane + 100)) record_failure(rec, __LINE__, lane, (long long)seen, 0);
    }
    tally(r, rec, 0);
    r.barrier(grma::world);
    r.free_symmetric(cells);
    r.free_symmetric(words);
  }
};

TEST_P(Waits, AllAnySomeAndTimeLimits) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(word_waits{});
  j.prepare();
  if (j.run(word_waits{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "ranks done");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Waits, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
