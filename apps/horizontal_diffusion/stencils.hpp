// Horizontal diffusion (papers/000 §4.3): the four stencils and the band
// layout that the grma version, the kernel-boundary baseline and the serial
// reference share, so that the three differ only in how rows travel.
//
// A field is a grid of m rows by n columns of doubles. A band is r rows of
// it stored with one halo row above and one below: row k of the band
// (1 <= k <= r) is at band + k * n; rows 0 and r + 1 are the halos. Values
// outside the grid (the halos at its top and bottom edge, columns -1 and n)
// are zero.
//
//   lap(i,j) = -4 in(i,j) + in(i-1,j) + in(i+1,j) + in(i,j-1) + in(i,j+1)
//   fli(i,j) = lap(i+1,j) - lap(i,j)
//   flj(i,j) = lap(i,j+1) - lap(i,j)
//   out(i,j) = ((fli(i-1,j) - fli(i,j)) + (flj(i,j-1) - flj(i,j))) / 64
//
// out is the paper's, scaled by 1/64 (out = -Laplacian(Laplacian(in)) / 64,
// whose eigenvalues lie in [-1, 0]) so that many iterations stay finite; the
// memory traffic is the same. So lap needs both halos of in, fli the halo
// below of lap, out the halo above of fli, and flj none.
#pragma once

#include <cstddef>
#include <cstdint>

#include <grma/config.hpp>

namespace hd {

// The fields of one horizontal diffusion, in the order of their buffers.
enum field : int { in, lap, fli, flj, out, field_count };

// Which halo rows an exchange fills: `above` comes from the rank above (its
// last row), `below` from the rank below (its first row).
struct halo_rows {
  bool above;
  bool below;
};
inline constexpr halo_rows halos_of_in{true, true};
inline constexpr halo_rows halos_of_lap{false, true};
inline constexpr halo_rows halos_of_fli{true, false};

// Elements of a band with its two halo rows.
GRMA_HOST_DEVICE inline std::size_t band_elements(int rows, int n) {
  return std::size_t(rows + 2) * std::size_t(n);
}

// Columns [first, end) of a band, end clipped to the row: what one sweep
// computes (every_column: all of them).
struct column_range {
  unsigned first;
  unsigned end;
};
inline constexpr column_range every_column{0, ~0u};

// Points a thread of a sweep computes at a time (the four loads in flight).
inline constexpr int sweep_points_per_thread = 4;

// Computes rows 1..rows of `columns` of a band of `destination`,
// value(index in the band, column) at each point, by `thread` of `threads`.
// Threads sweep a row of the columns together where there are enough of
// them, four points per thread at a time: the four values are computed
// (loaded) before any is stored, so their loads are in flight together (a
// rank has few threads per SM to hide memory latency). The sweep goes down
// all the band's rows of one block of columns before the next block: a
// stencil reads each input row for up to three output rows (lap: three), and
// a block's rows are still in cache when it reads them again, where whole
// rows of a wide grid are not. (A row of 16384 columns is 128 KiB, and 528
// ranks' next rows overflow an H100's 50 MiB L2; a block of 1024 columns,
// four for each of 256 threads, is 48 KiB over a band's six rows, 25 MiB
// for 528 ranks.) Fewer columns than threads are taken several rows at a
// time, so every thread stays busy. No division per point.
template <class Value>
GRMA_HOST_DEVICE inline void sweep(double* destination, int rows, int n, column_range columns,
                                   int thread, int threads, Value&& value) {
  const unsigned w = unsigned(n), t = unsigned(thread), count = unsigned(threads);
  const unsigned first = columns.first, end = columns.end < w ? columns.end : w;
  if (first >= end) return;
  if (end - first >= count) {
    unsigned j = first + t;
    for (; j + 3 * count < end; j += 4 * count)
      for (unsigned i = 1; i <= unsigned(rows); ++i) {
        const std::size_t row = std::size_t(i) * w;
        const double v0 = value(row + j, j), v1 = value(row + j + count, j + count),
                     v2 = value(row + j + 2 * count, j + 2 * count),
                     v3 = value(row + j + 3 * count, j + 3 * count);
        destination[row + j] = v0;
        destination[row + j + count] = v1;
        destination[row + j + 2 * count] = v2;
        destination[row + j + 3 * count] = v3;
      }
    for (; j < end; j += count)
      for (unsigned i = 1; i <= unsigned(rows); ++i) {
        const std::size_t row = std::size_t(i) * w;
        destination[row + j] = value(row + j, j);
      }
    return;
  }
  const unsigned width = end - first, rows_at_once = count / width, j = first + t % width;
  if (t >= rows_at_once * width) return;
  for (unsigned i = 1 + t / width; i <= unsigned(rows); i += rows_at_once)
    destination[std::size_t(i) * w + j] = value(std::size_t(i) * w + j, j);
}

GRMA_HOST_DEVICE inline void compute_lap(const double* in_band, double* lap_band, int rows, int n,
                                         int thread, int threads,
                                         column_range columns = every_column) {
  sweep(lap_band, rows, n, columns, thread, threads, [&](std::size_t at, unsigned j) {
    const double* c = in_band + at;
    const double left = j > 0 ? c[-1] : 0.0, right = j + 1 < unsigned(n) ? c[1] : 0.0;
    return -4.0 * c[0] + c[-std::ptrdiff_t(n)] + c[n] + left + right;
  });
}

GRMA_HOST_DEVICE inline void compute_fli(const double* lap_band, double* fli_band, int rows, int n,
                                         int thread, int threads,
                                         column_range columns = every_column) {
  sweep(fli_band, rows, n, columns, thread, threads,
        [&](std::size_t at, unsigned) { return lap_band[at + n] - lap_band[at]; });
}

GRMA_HOST_DEVICE inline void compute_flj(const double* lap_band, double* flj_band, int rows, int n,
                                         int thread, int threads,
                                         column_range columns = every_column) {
  sweep(flj_band, rows, n, columns, thread, threads, [&](std::size_t at, unsigned j) {
    const double right = j + 1 < unsigned(n) ? lap_band[at + 1] : 0.0;
    return right - lap_band[at];
  });
}

GRMA_HOST_DEVICE inline void compute_out(const double* fli_band, const double* flj_band,
                                         double* out_band, int rows, int n, int thread,
                                         int threads, column_range columns = every_column) {
  sweep(out_band, rows, n, columns, thread, threads, [&](std::size_t at, unsigned j) {
    const double flj_left = j > 0 ? flj_band[at - 1] : 0.0;
    return ((fli_band[at - n] - fli_band[at]) + (flj_left - flj_band[at])) * (1.0 / 64);
  });
}

// The random input of data set `set`: the same on every process and backend.
GRMA_HOST_DEVICE inline double input_value(int set, std::size_t row, std::size_t column) {
  std::uint64_t x = (row * 0x9e3779b97f4a7c15ull) ^ (column * 0xbf58476d1ce4e5b9ull) ^
                    (std::uint64_t(set + 1) * 0x94d049bb133111ebull);
  x ^= x >> 31;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 29;
  return double(x >> 11) * (1.0 / 9007199254740992.0) - 0.5;  // [-0.5, 0.5)
}

}  // namespace hd
