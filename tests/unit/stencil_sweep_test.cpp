// The horizontal diffusion stencils over blocks of columns and rows of them
// (grma-hd's HD-OVERLAP on wide GPU ranks: warps claim a row of a block at
// a time) must compute what one sweep of the whole band does, and touch
// nothing else.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "horizontal_diffusion/stencils.hpp"

namespace {

constexpr int rows = 4;

std::vector<double> random_band(int n, int set = 0) {
  std::vector<double> b(hd::band_elements(rows, n));
  for (std::size_t k = 0; k < b.size(); ++k)
    b[k] = hd::input_value(set, k / std::size_t(n), k % std::size_t(n));
  return b;
}

bool same_bytes(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// The Laplacian straight from its definition (stencils.hpp), point by point.
TEST(Sweep, LaplacianIsItsDefinition) {
  for (int n : {8, 33, 300})
    for (int threads : {1, 3, 8, 64}) {
      const std::vector<double> in = random_band(n);
      std::vector<double> lap(in.size(), 0.0);
      for (int t = 0; t < threads; ++t) hd::compute_lap(in.data(), lap.data(), rows, n, t, threads);
      for (int i = 1; i <= rows; ++i)
        for (int j = 0; j < n; ++j) {
          const auto at = [&](int r, int c) { return c < 0 || c >= n ? 0.0 : in[r * n + c]; };
          const double expected =
              -4.0 * at(i, j) + at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1);
          EXPECT_EQ(lap[i * n + j], expected)
              << n << " columns, " << threads << " threads, row " << i << ", column " << j;
        }
    }
}

// Each stencil by `lanes` lanes per block of `width` columns, block after
// block, against one thread sweeping the whole band.
TEST(Sweep, BlocksOfColumnsComputeWhatTheWholeBandDoes) {
  for (int n : {8, 33, 64, 100, 300}) {
    const std::vector<double> a = random_band(n, 0), b = random_band(n, 1);
    using stencil = void (*)(const std::vector<double>&, const std::vector<double>&,
                             std::vector<double>&, int, int, int, hd::column_range);
    const stencil stencils[] = {
        [](auto& x, auto&, auto& out, int w, int t, int ts, hd::column_range c) {
          hd::compute_lap(x.data(), out.data(), rows, w, t, ts, c);
        },
        [](auto& x, auto&, auto& out, int w, int t, int ts, hd::column_range c) {
          hd::compute_fli(x.data(), out.data(), rows, w, t, ts, c);
        },
        [](auto& x, auto&, auto& out, int w, int t, int ts, hd::column_range c) {
          hd::compute_flj(x.data(), out.data(), rows, w, t, ts, c);
        },
        [](auto& x, auto& y, auto& out, int w, int t, int ts, hd::column_range c) {
          hd::compute_out(x.data(), y.data(), out.data(), rows, w, t, ts, c);
        },
    };
    for (std::size_t s = 0; s < std::size(stencils); ++s) {
      std::vector<double> whole(a.size(), 0.0);
      stencils[s](a, b, whole, n, 0, 1, hd::every_column);
      // Blocks as wide as four points a lane, narrower than the lanes, and
      // wider; the last one cut by the row's end.
      for (int lanes : {1, 4, 32})
        for (unsigned width : {4u * unsigned(lanes), 7u, 64u}) {
          std::vector<double> blocks(a.size(), 0.0);
          for (unsigned first = 0; first < unsigned(n); first += width)
            for (int lane = 0; lane < lanes; ++lane)
              stencils[s](a, b, blocks, n, lane, lanes, {first, first + width});
          EXPECT_TRUE(same_bytes(blocks, whole)) << "stencil " << s << ", " << n << " columns, "
                                                 << lanes << " lanes, blocks of " << width;
        }
    }
  }
}

// Row i of a band computed as row 1 of the band that starts i - 1 rows
// later (HD-OVERLAP's claims of one row of a block), block by block.
TEST(Sweep, RowsOfShiftedBandsComputeWhatTheWholeBandDoes) {
  for (int n : {33, 300}) {
    const std::vector<double> in = random_band(n);
    std::vector<double> whole(in.size(), 0.0), by_rows(in.size(), 0.0);
    hd::compute_lap(in.data(), whole.data(), rows, n, 0, 1);
    const unsigned width = 64;
    for (unsigned first = 0; first < unsigned(n); first += width)
      for (int i = 1; i <= rows; ++i)
        for (int lane = 0; lane < 16; ++lane) {
          const std::size_t shift = std::size_t(i - 1) * std::size_t(n);
          hd::compute_lap(in.data() + shift, by_rows.data() + shift, 1, n, lane, 16,
                          {first, first + width});
        }
    EXPECT_TRUE(same_bytes(by_rows, whole)) << n << " columns";
  }
}

TEST(Sweep, WritesOnlyItsColumnsAndRows) {
  const int n = 100;
  const std::vector<double> in = random_band(n);
  // Four points a thread and a tail; only a tail; fewer columns than
  // threads; none; an end past the row.
  const hd::column_range ranges[] = {{40, 76}, {40, 50}, {3, 7}, {60, 60}, {90, ~0u}};
  for (const hd::column_range columns : ranges) {
    std::vector<double> out(in.size(), std::numeric_limits<double>::quiet_NaN());
    for (int t = 0; t < 8; ++t) hd::compute_lap(in.data(), out.data(), rows, n, t, 8, columns);
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::size_t i = k / n, j = k % n;
      const bool inside = i >= 1 && i <= rows && j >= columns.first && j < columns.end;
      EXPECT_EQ(inside, !std::isnan(out[k])) << "columns [" << columns.first << ", " << columns.end
                                             << "): row " << i << ", column " << j;
    }
  }
}

}  // namespace
