// The horizontal diffusion stencils over blocks of columns (grma-hd's
// HD-OVERLAP on wide GPU ranks: warps claim blocks one at a time) must
// compute what one sweep of the whole band does, and touch nothing else.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "horizontal_diffusion/stencils.hpp"

namespace {

constexpr int rows = 4;

std::vector<double> random_band(int n) {
  std::vector<double> b(hd::band_elements(rows, n));
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = hd::input_value(0, k / std::size_t(n), k % std::size_t(n));
  return b;
}

// The Laplacian of `in` by `lanes` lanes per block of `width` columns, block by block.
std::vector<double> laplacian_by_blocks(const std::vector<double>& in, int n, int lanes, unsigned width) {
  std::vector<double> out(in.size(), 0.0);
  for (unsigned first = 0; first < unsigned(n); first += width)
    for (int lane = 0; lane < lanes; ++lane)
      hd::compute_lap(in.data(), out.data(), rows, n, lane, lanes, {first, first + width});
  return out;
}

TEST(Sweep, BlocksOfColumnsComputeWhatTheWholeBandDoes) {
  for (int n : {8, 33, 64, 100, 300}) {
    const std::vector<double> in = random_band(n);
    std::vector<double> whole(in.size(), 0.0);
    hd::compute_lap(in.data(), whole.data(), rows, n, 0, 1);
    // Blocks wider than, as wide as and narrower than four points a lane,
    // the last one cut by the row's end.
    for (int lanes : {1, 4, 32})
      for (unsigned width : {4u * unsigned(lanes), 7u, 64u}) {
        const std::vector<double> blocks = laplacian_by_blocks(in, n, lanes, width);
        EXPECT_EQ(std::memcmp(blocks.data(), whole.data(), whole.size() * sizeof(double)), 0)
            << "width " << n << ", " << lanes << " lanes, blocks of " << width << " columns";
      }
  }
}

TEST(Sweep, WritesOnlyItsColumnsAndRows) {
  const int n = 100;
  const std::vector<double> in = random_band(n);
  const double untouched = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> out(in.size(), untouched);
  const hd::column_range columns{40, 72};
  for (int lane = 0; lane < 8; ++lane) hd::compute_lap(in.data(), out.data(), rows, n, lane, 8, columns);
  for (std::size_t k = 0; k < out.size(); ++k) {
    const std::size_t i = k / n, j = k % n;
    const bool inside = i >= 1 && i <= rows && j >= columns.first && j < columns.end;
    EXPECT_EQ(inside, out[k] == out[k]) << "row " << i << ", column " << j;  // NaN: untouched
  }
}

}  // namespace
