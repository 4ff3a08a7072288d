// The serial reference: the same stencils over the whole grid as one band.
#pragma once

#include <utility>
#include <vector>

#include "stencils.hpp"

namespace hd {

// The grid of data set `set` (m x n) after `iterations` iterations.
inline std::vector<double> reference_grid(int set, int m, int n, int iterations) {
  const std::size_t nn = std::size_t(n), elements = band_elements(m, n);
  std::vector<double> f[field_count];
  for (auto& v : f) v.assign(elements, 0.0);
  for (std::size_t k = 0; k < std::size_t(m) * nn; ++k) f[in][nn + k] = input_value(set, k / nn, k % nn);
  for (int it = 0; it < iterations; ++it) {
    compute_lap(f[in].data(), f[lap].data(), m, n, 0, 1);
    compute_fli(f[lap].data(), f[fli].data(), m, n, 0, 1);
    compute_flj(f[lap].data(), f[flj].data(), m, n, 0, 1);
    compute_out(f[fli].data(), f[flj].data(), f[out].data(), m, n, 0, 1);
    std::swap(f[in], f[out]);
  }
  return {f[in].begin() + std::ptrdiff_t(nn), f[in].end() - std::ptrdiff_t(nn)};
}

}  // namespace hd
