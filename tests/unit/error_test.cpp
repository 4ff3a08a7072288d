// The text of error records: rank, call and values must all appear.
#include "grma/error.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>

namespace {

using grma::call;
using grma::describe;
using grma::errc;
using grma::error_record;

error_record record_of(errc code, std::int32_t rank, call where,
                       std::initializer_list<std::int64_t> values, const char* text = "") {
  error_record r{};
  r.code = static_cast<std::int32_t>(code);
  r.rank = rank;
  r.where = static_cast<std::int32_t>(where);
  int i = 0;
  for (std::int64_t v : values) r.values[i++] = v;
  std::strncpy(r.text, text, sizeof r.text - 1);
  return r;
}

TEST(ErrorText, RankOutOfRange) {
  EXPECT_EQ(describe(record_of(errc::rank_out_of_range, 3, call::put_notify, {9, 4, 0})),
            "grma: rank 3: put_notify: rank 9 is out of range: communicator world has 4 ranks");
  EXPECT_EQ(describe(record_of(errc::rank_out_of_range, 0, call::get_notify, {-1, 2, 1})),
            "grma: rank 0: get_notify: rank -1 is out of range: communicator device has 2 ranks");
}

TEST(ErrorText, RangeOutsideWindow) {
  EXPECT_EQ(
      describe(record_of(errc::range_outside_window, 1, call::put_notify, {4096, 128, 1024, 2, 5})),
      "grma: rank 1: put_notify: offset 4096 + size 128 exceeds the 1024 bytes that rank 2 "
      "registered with window 5");
}

TEST(ErrorText, CountsAndTags) {
  EXPECT_EQ(describe(record_of(errc::negative_tag, 2, call::put_signal, {-3})),
            "grma: rank 2: put_signal: tag -3 is negative (tags are >= 0)");
  EXPECT_EQ(describe(record_of(errc::invalid_count, 4, call::wait_notifications, {0})),
            "grma: rank 4: wait_notifications: count 0 is less than 1");
  EXPECT_EQ(describe(record_of(errc::invalid_count, 3, call::test_some_notifications, {-2})),
            "grma: rank 3: test_some_notifications: most -2 is less than 1");
  EXPECT_EQ(describe(record_of(errc::count_exceeds_match_capacity, 5, call::test_notifications,
                               {300, 256})),
            "grma: rank 5: test_notifications: count 300 exceeds the 256 unmatched notifications "
            "a rank can hold (GRMA_MATCH_CAPACITY)");
  EXPECT_EQ(
      describe(record_of(errc::buffer_not_shared, 6, call::wait_some_notifications, {0xfffcd0})),
      "grma: rank 6: wait_some_notifications: buffer 0xfffcd0 is one thread's own memory; "
      "the rank's threads write and read it, so it must be memory they share (from alloc, "
      "a window, userdata, or __shared__)");
}

TEST(ErrorText, Windows) {
  EXPECT_EQ(describe(record_of(errc::window_not_created, 0, call::put_notify, {3, 0})),
            "grma: rank 0: put_notify: window 3 (generation 0) was never created");
  EXPECT_EQ(describe(record_of(errc::window_freed, 7, call::window_free, {2, 5})),
            "grma: rank 7: window_free: window 2 (generation 5) is used after window_free");
  EXPECT_EQ(describe(record_of(errc::window_table_full, 1, call::window_create, {64})),
            "grma: rank 1: window_create: all 64 window slots are in use (GRMA_MAX_WINDOWS)");
  EXPECT_EQ(describe(record_of(errc::window_memory_not_managed, 1, call::window_create,
                               {0x7f001000, 4096})),
            "grma: rank 1: window_create: memory at 0x7f001000 (4096 bytes) is not grma memory: "
            "register memory from alloc or userdata");
  // A count of one is "1 byte".
  EXPECT_EQ(
      describe(record_of(errc::window_memory_not_managed, 1, call::window_create, {0x7f001000, 1})),
      "grma: rank 1: window_create: memory at 0x7f001000 (1 byte) is not grma memory: "
      "register memory from alloc or userdata");
}

TEST(ErrorText, Heap) {
  EXPECT_EQ(describe(record_of(errc::heap_exhausted, 0, call::alloc, {1000, 4096, 512, 256})),
            "grma: rank 0: alloc: cannot allocate 1000 bytes: the heap of 4096 bytes has 512 "
            "bytes free, the largest free block is 256 bytes (GRMA_HEAP_SIZE)");
  EXPECT_EQ(describe(record_of(errc::invalid_free, 6, call::free, {0xdead40})),
            "grma: rank 6: free: pointer 0xdead40 was not returned by alloc, or was freed already");
  EXPECT_EQ(describe(record_of(errc::double_free, 6, call::free, {0xbeef00})),
            "grma: rank 6: free: pointer 0xbeef00 was freed already (double free)");
}

TEST(ErrorText, Collectives) {
  EXPECT_EQ(describe(record_of(errc::collective_mismatch, 2, call::barrier,
                               {1, 0, static_cast<std::int64_t>(call::window_create), 7})),
            "grma: rank 2: barrier: collective mismatch on communicator device: rank 0 called "
            "window_create (collective #7)");
  EXPECT_EQ(describe(record_of(errc::invalid_comm, 3, call::comm_query, {9})),
            "grma: rank 3: rank/size: communicator 9 does not exist");
}

// A team check's arguments beyond the signature (team_collective_begin):
// alltoalls' two 28-bit strides fill all 56 bits of `more`, shifted past
// the slot and the call (the top one lands in the sign bit).
TEST(ErrorText, TeamCollectiveMismatchCarriesFullStrides) {
  const std::uint64_t before = 0xfffffffull | 0x8000001ull << 28, mine = 1 | 2ull << 28;
  const auto alltoalls = std::uint64_t(call::alltoalls);
  EXPECT_EQ(describe(record_of(errc::team_collective_mismatch, 1, call::alltoalls,
                               {std::int64_t(3 | mine << 8), std::int64_t(alltoalls | before << 8),
                                2, 0, std::int64_t(2)})),
            "grma: rank 1: alltoalls: every member of team 3 must make the same collective call: "
            "member 0 called alltoalls with size 2, dest stride 268435455 and source stride "
            "134217729, this rank with size 2, dest stride 1 and source stride 2");
}

// A strided split's stride as given (a team of one takes any, -3 here), in
// the 56 bits the check keeps.
TEST(ErrorText, TeamSplitMismatchShowsANegativeStride) {
  const std::uint64_t more_bits = (std::uint64_t{1} << 56) - 1;
  const std::uint64_t before = std::uint64_t(-3) & more_bits, mine = 0;
  const auto split = std::uint64_t(call::team_split_strided);
  EXPECT_EQ(describe(record_of(errc::team_collective_mismatch, 1, call::team_split_strided,
                               {std::int64_t(2 | mine << 8), std::int64_t(split | before << 8), 1,
                                4 | 4 << 16, std::int64_t(1)})),
            "grma: rank 1: team_split_strided: every member of team 2 must make the same "
            "collective call: member 0 called team_split_strided with size 1, start 4 and stride "
            "-3, this rank with size 1, start 4 and stride 0");
}

TEST(ErrorText, Signals) {
  EXPECT_EQ(describe(record_of(errc::signal_misaligned, 1, call::put_signal, {12})),
            "grma: rank 1: put_signal: signal offset 12 is not 8-byte aligned in the heap");
  EXPECT_EQ(describe(record_of(errc::invalid_enum, 1, call::wait_signal, {17})),
            "grma: rank 1: wait_signal: invalid signal_op or cmp value 17");
}

TEST(ErrorText, AssertionCarriesItsText) {
  EXPECT_EQ(
      describe(record_of(errc::assertion_failed, 5, call::rank_assert, {}, "main.cpp:12: x > 0")),
      "grma: rank 5: GRMA_ASSERT: assertion failed: main.cpp:12: x > 0");
}

TEST(ErrorText, AbortNamesTheFailedRankWhenKnown) {
  EXPECT_EQ(describe(record_of(errc::aborted, 4, call::wait_signal, {2})),
            "grma: rank 4: wait_signal: stopped because the job was aborted (rank 2 failed)");
  EXPECT_EQ(describe(record_of(errc::aborted, 4, call::barrier, {-1})),
            "grma: rank 4: barrier: stopped because the job was aborted");
}

TEST(ErrorText, HostErrorsHaveNoRankOrCall) {
  EXPECT_EQ(describe(record_of(errc::invalid_config, -1, call::runtime, {}, "bad setting")),
            "grma: bad setting");
  EXPECT_EQ(describe(record_of(errc::backend_unavailable, -1, call::none, {}, "no CUDA device")),
            "grma: no CUDA device");
  EXPECT_EQ(describe(record_of(errc::timeout, 0, call::runtime, {})),
            "grma: rank 0: watchdog timeout");
}

TEST(ErrorText, EveryCodeAndCallHasText) {
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(call::count_); ++c)
    EXPECT_STRNE(grma::call_name(static_cast<call>(c)), "unknown call") << "call " << c;
  // Describing each code with an empty text leaves something after the prefix,
  // except for the codes whose whole message is that text.
  for (std::int32_t c = 1; c < static_cast<std::int32_t>(errc::count_); ++c) {
    const auto code = static_cast<errc>(c);
    if (code == errc::invalid_config || code == errc::backend_unavailable ||
        code == errc::device_error || code == errc::process_failed)
      continue;
    EXPECT_GT(describe(record_of(code, -1, call::runtime, {})).size(), std::strlen("grma: "))
        << "code " << c;
  }
}

TEST(Error, FromRecordKeepsCodeRankCallAndText) {
  const error_record r = record_of(errc::double_free, 6, call::free, {0x40});
  const grma::error e(r);
  EXPECT_EQ(e.code(), errc::double_free);
  EXPECT_EQ(e.rank(), 6);
  EXPECT_EQ(e.where(), call::free);
  EXPECT_EQ(std::string(e.what()), describe(r));
}

}  // namespace
