// Jacobi 2D with grma's OpenSHMEM layer (papers/001 §6.3, the GIO version):
// one persistent kernel, each PE (a rank) relaxing its tile of the grid and
// trading edges with its four neighbours: put_nbi of each edge, one fence,
// then a signal word per edge (p) carrying the generation it belongs to,
// which the neighbour waits for with signal_wait_until.
//
// A PE keeps two planes of its tile, generation g in plane g % 2: rows 1..h
// are its cells, rows 0 and h + 1 the halos from its north and south
// neighbours; the west and east halos are columns of their own. Iteration k
// computes generation k + 1 from generation k: it waits for the neighbours'
// generation-k edges (signal >= k), computes its frame (the cells next to a
// halo), sends the frame's edges into the neighbours' plane (k + 1) % 2,
// then computes its interior while they travel. A neighbour writes into
// that plane only after it has the PE's generation-k edges, sent after the
// PE read its generation-(k - 1) halos there: two planes suffice. At the
// grid's edge the halos hold the fixed boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <grma/grma.hpp>
#include <grma/shmem.hpp>

#include "jacobi.hpp"

namespace jacobi {

// What the host reads back: PE 0's time for the iterations, then (when the
// run writes back) the final grid, rows x cols.
struct result_header {
  double seconds;
  double pad[7];
};

struct grma_program {
  decomposition d;
  int iterations;
  bool write_back;

  // Halo sides; signal s counts the generations that came from side s.
  enum side : int { north = 0, south, west, east };

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    grma::shmem::handle sh(r);
    const int me = sh.my_pe(), pr = me / d.px, pc = me % d.px;
    const int h = d.height(pr), w = d.width(pc);
    const std::size_t wm = row_stride(d), hm = std::size_t(d.max_height());
    const std::size_t plane_size = (hm + 2) * wm;
    // [plane 0][plane 1][column halos: parity, side (west, east), hm][packed edges: the
    // same][signals]
    auto* block = static_cast<double*>(sh.align(128, tile_bytes(d)));
    for (std::size_t k = std::size_t(r.thread()); k < tile_bytes(d) / sizeof(double);
         k += std::size_t(r.threads()))
      block[k] = 0;
    double* const planes = block;
    double* const halos = block + 2 * plane_size;
    double* const packed = halos + 4 * hm;
    auto* const signals = reinterpret_cast<std::uint64_t*>(packed + 4 * hm);
    auto plane = [&](int generation) { return planes + std::size_t(generation % 2) * plane_size; };
    auto halo = [&](double* base, int generation, int s) {
      return base + (std::size_t(generation % 2) * 2 + std::size_t(s == east ? 1 : 0)) * hm;
    };
    const int neighbour[4] = {pr > 0 ? me - d.px : -1, pr + 1 < d.py ? me + d.px : -1,
                              pc > 0 ? me - 1 : -1, pc + 1 < d.px ? me + 1 : -1};
    r.sync_threads();
    // Generation 0 in plane 0: the tile's cells, and as halos the
    // neighbours' cells next to it (or the boundary). Plane 1's halos at the
    // grid's top hold the boundary too; no neighbour ever writes them.
    const long long row0 = d.first_row(pr),
                    col0 = d.first_col(pc);  // the tile's first cell in the grid
    for (int k = r.thread(); k < (h + 2) * w; k += r.threads()) {
      const long long i = row0 + k / w - 1, j = col0 + k % w;
      planes[std::size_t(k / w) * wm + std::size_t(k % w)] = i < 0        ? top_boundary
                                                             : i < d.rows ? initial(i, j)
                                                                          : 0.0;
    }
    for (int i = r.thread(); i < h; i += r.threads()) {
      halo(halos, 0, west)[i] = pc > 0 ? initial(row0 + i, col0 - 1) : 0.0;
      halo(halos, 0, east)[i] = pc + 1 < d.px ? initial(row0 + i, col0 + w) : 0.0;
    }
    if (pr == 0)
      for (int j = r.thread(); j < w; j += r.threads())
        planes[plane_size + std::size_t(j)] = top_boundary;
    sh.barrier_all();

    const double start = r.wtime();
    for (int k = 0; k < iterations; ++k) {
      const double* cur = plane(k);
      double* next = plane(k + 1);
      const double* west_halo = halo(halos, k, west);
      const double* east_halo = halo(halos, k, east);
      // The neighbours' generation-k edges are here; the sends of two
      // iterations ago (from the packed edges of this parity) are done.
      if (r.thread() == 0) {
        if (k > 0)
          for (int s = north; s <= east; ++s)
            if (neighbour[s] >= 0)
              sh.signal_wait_until(signals + s, grma::shmem::cmp_ge, std::uint64_t(k));
        sh.quiet();
      }
      r.sync_threads();
      sweep_frame(cur, next, west_halo, east_halo, wm, h, w, r.thread(), r.threads());
      r.sync_threads();  // the frame is whole before its edge columns are packed
      for (int i = r.thread(); i < h; i += r.threads()) {
        halo(packed, k + 1, west)[i] = next[std::size_t(i + 1) * wm];
        halo(packed, k + 1, east)[i] = next[std::size_t(i + 1) * wm + std::size_t(w - 1)];
      }
      r.sync_threads();
      // The four edges, then one fence and their signals: a put to a PE
      // is ordered before a later put to it by the fence between them
      // (OpenSHMEM), so one fence serves all four, where put_signal_nbi
      // pays one each (decision 031 has the figures).
      if (neighbour[north] >= 0)  // my first row: the north PE's south halo row
        sh.put_nbi(next + std::size_t(d.height(pr - 1) + 1) * wm, next + wm, std::size_t(w),
                   neighbour[north]);
      if (neighbour[south] >= 0)  // my last row: the south PE's north halo row
        sh.put_nbi(next, next + std::size_t(h) * wm, std::size_t(w), neighbour[south]);
      if (neighbour[west] >= 0)
        sh.put_nbi(halo(halos, k + 1, east), halo(packed, k + 1, west), std::size_t(h),
                   neighbour[west]);
      if (neighbour[east] >= 0)
        sh.put_nbi(halo(halos, k + 1, west), halo(packed, k + 1, east), std::size_t(h),
                   neighbour[east]);
      if (r.thread() == 0) {
        // The signal word each neighbour reads for the side I am on.
        constexpr int facing[4] = {south, north, east, west};
        sh.fence();
        for (int s = north; s <= east; ++s)
          if (neighbour[s] >= 0) sh.p(signals + facing[s], std::uint64_t(k + 1), neighbour[s]);
      }
      // The interior while the edges travel.
      sweep_interior(cur, next, wm, h, w, r.thread(), r.threads());
      r.sync_threads();
    }
    sh.barrier_all();
    if (me == 0 && r.thread() == 0)
      r.template userdata<result_header>()->seconds = r.wtime() - start;

    if (write_back) {
      auto* grid = reinterpret_cast<double*>(r.template userdata<result_header>() + 1);
      const double* last = plane(iterations);
      for (std::size_t k = std::size_t(r.thread()); k < std::size_t(h) * std::size_t(w);
           k += std::size_t(r.threads()))
        grid[(std::size_t(row0) + k / std::size_t(w)) * std::size_t(d.cols) + std::size_t(col0) +
             k % std::size_t(w)] = last[(k / std::size_t(w) + 1) * wm + k % std::size_t(w)];
    }
    sh.barrier_all();
    sh.free(block);
  }
};

}  // namespace jacobi
