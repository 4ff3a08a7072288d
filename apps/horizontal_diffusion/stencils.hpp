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

// Applies one stencil to rows 1..rows of a band, by `thread` of `threads`
// (points are spread over all threads, so narrow grids keep every thread busy).
template <class Point>
GRMA_HOST_DEVICE inline void for_points(int rows, int n, int thread, int threads, Point&& point) {
  const unsigned total = unsigned(rows) * unsigned(n);
  for (unsigned p = unsigned(thread); p < total; p += unsigned(threads)) {
    const unsigned i = p / unsigned(n) + 1, j = p % unsigned(n);
    point(std::size_t(i) * unsigned(n) + j, j);
  }
}

GRMA_HOST_DEVICE inline void compute_lap(const double* in_band, double* lap_band, int rows, int n,
                                         int thread, int threads) {
  for_points(rows, n, thread, threads, [&](std::size_t at, unsigned j) {
    const double* c = in_band + at;
    const double left = j > 0 ? c[-1] : 0.0, right = j + 1 < unsigned(n) ? c[1] : 0.0;
    lap_band[at] = -4.0 * c[0] + c[-std::ptrdiff_t(n)] + c[n] + left + right;
  });
}

GRMA_HOST_DEVICE inline void compute_fli(const double* lap_band, double* fli_band, int rows, int n,
                                         int thread, int threads) {
  for_points(rows, n, thread, threads, [&](std::size_t at, unsigned) {
    fli_band[at] = lap_band[at + n] - lap_band[at];
  });
}

GRMA_HOST_DEVICE inline void compute_flj(const double* lap_band, double* flj_band, int rows, int n,
                                         int thread, int threads) {
  for_points(rows, n, thread, threads, [&](std::size_t at, unsigned j) {
    const double right = j + 1 < unsigned(n) ? lap_band[at + 1] : 0.0;
    flj_band[at] = right - lap_band[at];
  });
}

GRMA_HOST_DEVICE inline void compute_out(const double* fli_band, const double* flj_band,
                                         double* out_band, int rows, int n, int thread,
                                         int threads) {
  for_points(rows, n, thread, threads, [&](std::size_t at, unsigned j) {
    const double flj_left = j > 0 ? flj_band[at - 1] : 0.0;
    out_band[at] = ((fli_band[at - n] - fli_band[at]) + (flj_left - flj_band[at])) * (1.0 / 64);
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
