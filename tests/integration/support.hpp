// Helpers of the integration tests' host-side runs (test_runtime.cpp):
// settings, data patterns and a per-rank record of failed checks.
//
// Rank code runs on the CPU backend's threads. Checks inside rank code go
// into a rank_findings object (each rank writes only its own entry); the test
// body reports them on the host after rt.run returns.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <grma/grma.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace grma_test {

// Settings independent of GRMA_* variables, on the CPU backend (the rank
// programs here take a cpu_rank), with a watchdog that turns a hang into a
// failure long before ctest's timeout.
inline grma::settings test_settings(int ranks) {
  grma::settings s;
  s.backend = grma::backend_kind::cpu;
  s.ranks_per_device = ranks;
  s.timeout_seconds = 60;
  return s;
}

// ---- data patterns -----------------------------------------------------------

// Mixes up to three values into one seed (splitmix64 finalizer).
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0) {
  std::uint64_t x = a * 0x9e3779b97f4a7c15ull ^
                    (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
                    (c + 0x1b873593ull) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x;
}

// Byte `index` of the pattern named by `seed`; differs between seeds and
// between neighbouring positions, so stale, shifted or foreign data shows.
inline std::uint8_t pattern_byte(std::uint64_t seed, std::size_t index) {
  std::uint64_t x = seed + index * 0x9e3779b97f4a7c15ull;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  return static_cast<std::uint8_t>(x >> 56);
}

// Writes bytes [first, first + bytes) of the pattern `seed` to `destination`.
inline void fill_pattern(void* destination, std::size_t bytes, std::uint64_t seed,
                         std::size_t first = 0) {
  auto* p = static_cast<std::uint8_t*>(destination);
  for (std::size_t i = 0; i < bytes; ++i) p[i] = pattern_byte(seed, first + i);
}

// Index of the first byte of [data, data + bytes) that is not the pattern's
// [first, first + bytes), or bytes when all match. Call it after the
// synchronization that makes the data visible (a matched notification, an
// observed signal, a barrier).
inline std::size_t pattern_mismatch(const void* data, std::size_t bytes, std::uint64_t seed,
                                    std::size_t first = 0) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  for (std::size_t i = 0; i < bytes; ++i)
    if (p[i] != pattern_byte(seed, first + i)) return i;
  return bytes;
}

// ---- per-rank results ----------------------------------------------------------

// Failed checks of each rank. While the job runs a rank writes only its own
// entry; after rt.run returns, EXPECT_TRUE(findings.none()) reports them all.
class rank_findings {
 public:
  explicit rank_findings(int ranks) : by_rank_(static_cast<std::size_t>(ranks)) {}

  // Records a failed check of `rank`; the message is the arguments streamed.
  template <class... Parts>
  void fail(int rank, const Parts&... parts) {
    entry& e = by_rank_.at(static_cast<std::size_t>(rank));
    if (++e.count > kept_per_rank) return;
    std::ostringstream s;
    (s << ... << parts);
    e.messages.push_back(s.str());
  }

  // Records a failure unless `ok`; returns ok.
  template <class... Parts>
  bool check(int rank, bool ok, const Parts&... parts) {
    if (!ok) fail(rank, parts...);
    return ok;
  }

  testing::AssertionResult none() const {
    std::ostringstream s;
    bool any = false;
    for (std::size_t r = 0; r < by_rank_.size(); ++r) {
      const entry& e = by_rank_[r];
      if (e.count == 0) continue;
      any = true;
      s << "\nrank " << r << ": " << e.count << " failed check(s)";
      for (const std::string& m : e.messages) s << "\n  " << m;
    }
    if (!any) return testing::AssertionSuccess();
    return testing::AssertionFailure() << s.str();
  }

 private:
  static constexpr int kept_per_rank = 8;
  struct entry {
    int count = 0;
    std::vector<std::string> messages;
  };
  std::vector<entry> by_rank_;
};

// Runs `program` on every rank, then reports what the ranks found and what
// rt.run threw (a failed or timed-out run), so both show in one test failure.
template <class Program>
void run_checked(grma::runtime& rt, const rank_findings& findings, Program&& program,
                 const grma::launch_options& options = {}) {
  try {
    rt.run(std::forward<Program>(program), options);
  } catch (const grma::error& e) {
    ADD_FAILURE() << "the run failed: " << e.what();
  }
  EXPECT_TRUE(findings.none());
}

// "" when `bytes` bytes at `data` hold the pattern `seed` from position
// `first` on, else where they first differ, for a findings message.
inline std::string pattern_difference(const void* data, std::size_t bytes, std::uint64_t seed,
                                      std::size_t first = 0) {
  const std::size_t at = pattern_mismatch(data, bytes, seed, first);
  if (at == bytes) return {};
  return "byte " + std::to_string(at) + " of " + std::to_string(bytes) + " is " +
         std::to_string(static_cast<const std::uint8_t*>(data)[at]) + ", expected " +
         std::to_string(pattern_byte(seed, first + at));
}

}  // namespace grma_test
