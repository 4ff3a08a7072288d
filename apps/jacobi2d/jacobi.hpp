// Jacobi relaxation of a 2D grid (papers/001 §6.3): rows x cols cells inside
// a fixed boundary ring (1 above the first row, 0 on the other sides), each
// iteration replacing every cell by the mean of its four neighbours. The
// cells start from a pattern of their own, so that every halo carries data
// from the first iteration on. What the
// grma program, the baseline and the host's reference share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <grma/config.hpp>
#include <vector>

namespace jacobi {

inline constexpr double top_boundary = 1.0;

// Cell (i, j)'s value before the first iteration.
GRMA_HOST_DEVICE inline double initial(long long i, long long j) {
  return double((i * 7 + j * 13) % 17) / 17.0;
}

// One cell's next value. The same expression, in the same order, everywhere:
// the grma program, the baseline and the reference agree bit for bit.
GRMA_HOST_DEVICE inline double update(double up, double down, double left, double right) {
  return 0.25 * ((up + down) + (left + right));
}

// How the PEs split the grid: py rows of px PEs, PE p at row p / px and
// column p % px; the grid's rows and columns are split as evenly as they go.
struct decomposition {
  int rows;
  int cols;
  int py;
  int px;

  GRMA_HOST_DEVICE int first_row(int pr) const { return int((long long)rows * pr / py); }
  GRMA_HOST_DEVICE int first_col(int pc) const { return int((long long)cols * pc / px); }
  GRMA_HOST_DEVICE int height(int pr) const { return first_row(pr + 1) - first_row(pr); }
  GRMA_HOST_DEVICE int width(int pc) const { return first_col(pc + 1) - first_col(pc); }
  GRMA_HOST_DEVICE int max_height() const { return (rows + py - 1) / py; }
  GRMA_HOST_DEVICE int max_width() const { return (cols + px - 1) / px; }
};

// The split of `pes` PEs whose largest tile has the shortest edge (the
// least halo for its cells), every tile at least one cell.
inline decomposition split(int rows, int cols, int pes) {
  decomposition best{rows, cols, pes, 1};
  int best_edge = -1;
  for (int px = 1; px <= pes; ++px) {
    if (pes % px != 0 || px > cols || pes / px > rows) continue;
    const decomposition d{rows, cols, pes / px, px};
    const int edge = d.max_height() + d.max_width();
    if (best_edge < 0 || edge < best_edge) best = d, best_edge = edge;
  }
  return best;
}

// A PE's tile in memory (the grma program's and NVSHMEM's alike): two
// planes of (max_height + 2) rows of row_stride doubles (rows 0 and h + 1
// the north and south halos), then the west and east halo columns and the
// packed edge columns of both parities (max_height each), then four signal
// words.
//
// Doubles from one row of a plane to the next: whole 128-byte lines, so
// that every row starts a line and a warp's loads of a row touch as few
// lines as they can.
GRMA_HOST_DEVICE inline std::size_t row_stride(const decomposition& d) {
  return (std::size_t(d.max_width()) + 15) / 16 * 16;
}
GRMA_HOST_DEVICE inline std::size_t tile_bytes(const decomposition& d) {
  const std::size_t hm = std::size_t(d.max_height()), wm = row_stride(d);
  return (2 * (hm + 2) * wm + 8 * hm) * sizeof(double) + 4 * sizeof(std::uint64_t);
}

// One tile's sweep from plane `cur` to plane `next` (rows of `wm` doubles;
// the tile h x w cells at rows 1..h, the west and east halo columns apart),
// by `thread` of `threads`: the frame (the cells next to a halo: rows 1
// and h, then columns 0 and w - 1 of the rows between), which the edges
// sent to the neighbours come from.
GRMA_HOST_DEVICE inline void sweep_frame(const double* cur, double* next, const double* west_halo,
                                         const double* east_halo, std::size_t wm, int h, int w,
                                         int thread, int threads) {
  auto cell = [&](int i, int j) {
    const double* row = cur + std::size_t(i) * wm;
    const double left = j > 0 ? row[j - 1] : west_halo[i - 1];
    const double right = j + 1 < w ? row[j + 1] : east_halo[i - 1];
    next[std::size_t(i) * wm + std::size_t(j)] = update((row - wm)[j], (row + wm)[j], left, right);
  };
  const int rows_of_frame = h > 1 ? 2 : 1, sides = w > 1 ? 2 : 1;
  const int frame = rows_of_frame * w + (h > 2 ? (h - 2) * sides : 0);
  for (int f = thread; f < frame; f += threads) {
    if (f < rows_of_frame * w)
      cell(f < w ? 1 : h, f % w);
    else
      cell(2 + (f - rows_of_frame * w) / sides, (f - rows_of_frame * w) % sides == 0 ? 0 : w - 1);
  }
}

// The rest of the sweep: the interior, rows 2 .. h - 1 and columns 1 .. w -
// 2, no halo in reach (it runs while the edges travel). A warp takes a row
// at a time, its lanes neighbouring cells (whole lines), four cells a lane
// at once so that their loads are in flight together.
GRMA_HOST_DEVICE inline void sweep_interior(const double* cur, double* next, std::size_t wm, int h,
                                            int w, int thread, int threads) {
  const int lanes = threads < 32 ? threads : 32, groups = threads / lanes;
  const int lane = thread % lanes, group = thread / lanes;
  for (int i = 2 + group; i < h && group < groups; i += groups) {
    const double* __restrict__ row = cur + std::size_t(i) * wm;
    double* __restrict__ out = next + std::size_t(i) * wm;
    int j = 1 + lane;
    for (; j + 3 * lanes < w - 1; j += 4 * lanes) {
      double v[4];
      for (int u = 0; u < 4; ++u) {
        const int c = j + u * lanes;
        v[u] = update(row[c - std::ptrdiff_t(wm)], row[c + std::ptrdiff_t(wm)], row[c - 1],
                      row[c + 1]);
      }
      for (int u = 0; u < 4; ++u) out[j + u * lanes] = v[u];
    }
    for (; j < w - 1; j += lanes)
      out[j] =
          update(row[j - std::ptrdiff_t(wm)], row[j + std::ptrdiff_t(wm)], row[j - 1], row[j + 1]);
  }
}

// The serial reference after `iterations` sweeps, rows x cols cells.
inline std::vector<double> reference(int rows, int cols, int iterations) {
  const std::size_t stride = std::size_t(cols) + 2, plane = (std::size_t(rows) + 2) * stride;
  std::vector<double> planes(2 * plane, 0.0);
  for (int p = 0; p < 2; ++p)
    std::fill_n(planes.begin() + std::ptrdiff_t(p * plane), stride, top_boundary);
  for (std::size_t i = 1; i <= std::size_t(rows); ++i)
    for (std::size_t j = 1; j <= std::size_t(cols); ++j)
      planes[i * stride + j] = initial((long long)i - 1, (long long)j - 1);
  for (int k = 0; k < iterations; ++k) {
    const double* cur = planes.data() + (k % 2) * plane;
    double* next = planes.data() + ((k + 1) % 2) * plane;
    for (std::size_t i = 1; i <= std::size_t(rows); ++i)
      for (std::size_t j = 1; j <= std::size_t(cols); ++j) {
        const double* c = cur + i * stride + j;
        next[i * stride + j] = update(c[-std::ptrdiff_t(stride)], c[stride], c[-1], c[1]);
      }
  }
  std::vector<double> grid(std::size_t(rows) * std::size_t(cols));
  const double* last = planes.data() + (iterations % 2) * plane;
  for (std::size_t i = 0; i < std::size_t(rows); ++i)
    for (std::size_t j = 0; j < std::size_t(cols); ++j)
      grid[i * std::size_t(cols) + j] = last[(i + 1) * stride + j + 1];
  return grid;
}

// The largest difference between the cells of PEs [first, first + count)
// in `grid` and the reference (NaN counts as infinitely different).
inline double error_of(const std::vector<double>& grid, const std::vector<double>& expected,
                       const decomposition& d, int first, int count) {
  double worst = 0;
  for (int p = first; p < first + count; ++p) {
    const int pr = p / d.px, pc = p % d.px;
    for (int i = d.first_row(pr); i < d.first_row(pr + 1); ++i)
      for (int j = d.first_col(pc); j < d.first_col(pc + 1); ++j) {
        const std::size_t at = std::size_t(i) * std::size_t(d.cols) + std::size_t(j);
        const double e = std::fabs(grid[at] - expected[at]);
        worst = std::isnan(e) ? INFINITY : std::max(worst, e);
      }
  }
  return worst;
}

// The reference and every implementation make the same additions in the
// same order; a difference means a wrong cell.
inline constexpr double tolerance = 1e-12;

}  // namespace jacobi
