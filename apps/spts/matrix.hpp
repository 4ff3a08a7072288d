// Lower-triangular sparse matrices for the triangular solve (host code): the
// CSR form, the generated ones (no download for tests), a Matrix Market
// reader, the serial forward substitution that checks the solvers, and
// the bits that mark a row not yet solved.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace spts {

// The bits of a row's x that the solvers wait on while the row is not
// solved: a signalling NaN, which no arithmetic produces.
inline constexpr std::uint64_t unsolved = 0x7ff4'dead'beef'0001;

// Rows in order, each row's columns ascending and its diagonal last.
struct csr {
  int n = 0;
  std::vector<std::int64_t> row_start;  // n + 1
  std::vector<int> col;
  std::vector<double> value;
  std::int64_t nonzeros() const { return row_start.empty() ? 0 : row_start.back(); }
};

// Builds the CSR form from each row's off-diagonal (column, value) pairs
// and its diagonal.
inline csr from_rows(const std::vector<std::vector<std::pair<int, double>>>& below,
                     const std::vector<double>& diagonal) {
  csr m;
  m.n = int(below.size());
  m.row_start.assign(std::size_t(m.n) + 1, 0);
  for (int i = 0; i < m.n; ++i) {
    std::vector<std::pair<int, double>> row = below[std::size_t(i)];
    std::sort(row.begin(), row.end());
    for (const auto& [c, v] : row) m.col.push_back(c), m.value.push_back(v);
    m.col.push_back(i);
    m.value.push_back(diagonal[std::size_t(i)]);
    m.row_start[std::size_t(i) + 1] = std::int64_t(m.col.size());
  }
  return m;
}

// The lower triangle of the 5-point Laplacian of an nx x ny grid (row-major
// cells): each row depends on its left and upper neighbours, nx + ny - 1
// levels.
inline csr laplacian_2d(int nx, int ny) {
  std::vector<std::vector<std::pair<int, double>>> below(std::size_t(nx) * std::size_t(ny));
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      auto& row = below[std::size_t(y) * std::size_t(nx) + std::size_t(x)];
      if (x > 0) row.push_back({y * nx + x - 1, -1.0});
      if (y > 0) row.push_back({(y - 1) * nx + x, -1.0});
    }
  return from_rows(below, std::vector<double>(below.size(), 4.0));
}

// The lower triangle of the 7-point Laplacian of an n x n x n grid.
inline csr laplacian_3d(int n) {
  const std::size_t cells = std::size_t(n) * std::size_t(n) * std::size_t(n);
  std::vector<std::vector<std::pair<int, double>>> below(cells);
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const int i = (z * n + y) * n + x;
        auto& row = below[std::size_t(i)];
        if (x > 0) row.push_back({i - 1, -1.0});
        if (y > 0) row.push_back({i - n, -1.0});
        if (z > 0) row.push_back({i - n * n, -1.0});
      }
  return from_rows(below, std::vector<double>(cells, 6.0));
}

// Long dependency chains: row i depends on row i - 1 (one chain through the
// whole matrix, n levels) and on up to `extra` random earlier rows.
inline csr random_chain(int n, int extra, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<std::vector<std::pair<int, double>>> below(static_cast<std::size_t>(n));
  for (int i = 1; i < n; ++i) {
    auto& row = below[std::size_t(i)];
    row.push_back({i - 1, -0.5});
    for (int k = 0; k < extra && i > 1; ++k) {
      const int c = int(random() % std::uint64_t(i - 1));
      if (std::none_of(row.begin(), row.end(), [&](const auto& e) { return e.first == c; }))
        row.push_back({c, -0.25 / (k + 1)});
    }
  }
  return from_rows(below, std::vector<double>(std::size_t(n), 2.0));
}

// The lower triangle (with the diagonal) of a real, integer or pattern
// Matrix Market coordinate matrix: a general file's upper entries are left
// out, a symmetric file's stand for their lower mirror; duplicate entries
// add up; a missing or zero diagonal entry becomes 1 (the solve divides by
// it).
inline csr read_matrix_market(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string line;
  std::getline(in, line);
  std::transform(line.begin(), line.end(), line.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (line.rfind("%%matrixmarket matrix coordinate", 0) != 0)
    throw std::runtime_error(path + ": not a Matrix Market coordinate matrix");
  if (line.find("complex") != std::string::npos || line.find("hermitian") != std::string::npos)
    throw std::runtime_error(path + ": complex matrices are not solved here");
  const bool pattern = line.find("pattern") != std::string::npos;
  const bool symmetric = line.find("symmetric") != std::string::npos;
  while (std::getline(in, line) && (line.empty() || line[0] == '%')) {
  }
  std::istringstream header(line);
  long rows = 0, cols = 0, entries = 0;
  if (!(header >> rows >> cols >> entries) || entries < 0)
    throw std::runtime_error(path + ": a size line (rows, columns, entries) expected");
  if (rows != cols || rows < 1)
    throw std::runtime_error(path + ": " + std::to_string(rows) + " x " + std::to_string(cols) +
                             " is no square matrix");
  if (rows > (1L << 30))
    throw std::runtime_error(path + ": " + std::to_string(rows) + " rows are more than 2^30");
  std::vector<std::vector<std::pair<int, double>>> below(static_cast<std::size_t>(rows));
  std::vector<double> diagonal(static_cast<std::size_t>(rows), 0.0);
  for (long k = 0; k < entries; ++k) {
    long r = 0, c = 0;
    double v = 1.0;
    if (!(in >> r >> c) || (!pattern && !(in >> v))) {
      if (in.eof())
        throw std::runtime_error(path + ": the file ends after " + std::to_string(k) + " of its " +
                                 std::to_string(entries) + " entries");
      throw std::runtime_error(path + ": bad entry " + std::to_string(k + 1));
    }
    if (r < 1 || c < 1 || r > rows || c > rows)
      throw std::runtime_error(path + ": entry " + std::to_string(k + 1) + " (" +
                               std::to_string(r) + ", " + std::to_string(c) + ") is outside the " +
                               std::to_string(rows) + " x " + std::to_string(rows) + " matrix");
    if (r < c) {
      if (!symmetric) continue;  // above the diagonal
      std::swap(r, c);           // a symmetric file's upper entry is its lower one
    }
    if (r == c)
      diagonal[std::size_t(r - 1)] += v;
    else
      below[std::size_t(r - 1)].push_back({int(c - 1), v});
  }
  for (auto& row : below) {
    std::sort(row.begin(), row.end());
    std::vector<std::pair<int, double>> merged;
    for (const auto& e : row)
      if (!merged.empty() && merged.back().first == e.first)
        merged.back().second += e.second;
      else
        merged.push_back(e);
    row = merged;
  }
  for (double& d : diagonal)
    if (d == 0.0) d = 1.0;
  return from_rows(below, diagonal);
}

// Forward substitution: x with L x = b, each row's sum in column order.
inline std::vector<double> solve_serial(const csr& m, const std::vector<double>& b) {
  std::vector<double> x(static_cast<std::size_t>(m.n));
  for (int i = 0; i < m.n; ++i) {
    const std::int64_t last = m.row_start[std::size_t(i) + 1] - 1;  // the diagonal
    double sum = 0;
    for (std::int64_t k = m.row_start[std::size_t(i)]; k < last; ++k)
      sum += m.value[std::size_t(k)] * x[std::size_t(m.col[std::size_t(k)])];
    x[std::size_t(i)] = (b[std::size_t(i)] - sum) / m.value[std::size_t(last)];
  }
  return x;
}

// The right-hand side every run solves for: 1 + (i mod 7) / 7.
inline std::vector<double> right_hand_side(int n) {
  std::vector<double> b(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) b[std::size_t(i)] = 1.0 + double(i % 7) / 7.0;
  return b;
}

// Levels of the rows (a row's level is one more than its dependencies'
// highest), for the level-set baseline: rows of level k, k = 0, 1, ...
inline std::vector<std::vector<int>> levels(const csr& m) {
  std::vector<int> level(static_cast<std::size_t>(m.n), 0);
  int deepest = 0;
  for (int i = 0; i < m.n; ++i) {
    int l = 0;
    for (std::int64_t k = m.row_start[std::size_t(i)]; k + 1 < m.row_start[std::size_t(i) + 1]; ++k)
      l = std::max(l, level[std::size_t(m.col[std::size_t(k)])] + 1);
    level[std::size_t(i)] = l;
    deepest = std::max(deepest, l);
  }
  std::vector<std::vector<int>> rows(std::size_t(deepest) + 1);
  for (int i = 0; i < m.n; ++i) rows[std::size_t(level[std::size_t(i)])].push_back(i);
  return rows;
}

}  // namespace spts
