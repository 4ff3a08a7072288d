// Jacobi relaxation of a 2D grid (papers/001 §6.3): rows x cols cells inside
// a fixed boundary ring (1 above the first row, 0 on the other sides), each
// iteration replacing every cell by the mean of its four neighbours. The
// cells start from a pattern of their own, so that every halo carries data
// from the first iteration on. What the
// grma program, the baseline and the host's reference share.
#pragma once

#include <grma/config.hpp>

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

}  // namespace jacobi
