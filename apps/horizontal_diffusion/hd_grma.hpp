// Horizontal diffusion with grma (papers/000 §4.3.3): world rank w owns rows
// [w r, w r + r) of the grid. A device's ranks keep each field in one block
// (alloc_shared) with their bands one after another, so the halo row above
// rank w's band is rank w-1's last row: the windows of a device overlap, and
// a halo put between two ranks of one device has the same source and
// destination address (no copy, only the notification). Halos to and from
// other devices and nodes are copied. Every put is tagged by iteration and
// stage; a stencil waits for the tags it needs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <grma/grma.hpp>

#include "stencils.hpp"

// A function compiled apart from its callers (not inlined).
#ifdef __CUDACC__
#define HD_NOINLINE __noinline__
#else
#define HD_NOINLINE [[gnu::noinline]]
#endif

namespace hd {

enum class variant : int {
  hd,          // one data set: exchange, then compute, stencil by stencil
  overlap,     // two data sets: one computes while the other's halos travel
  nooverlap,   // two data sets, serialized (the reference for overlap)
  compute,     // one data set, no exchange: the stencils' memory time alone
};
GRMA_HOST_DEVICE inline int data_sets(variant v) {
  return v == variant::overlap || v == variant::nooverlap ? 2 : 1;
}

// What the host reads back: rank 0's time for the iterations; then, when the
// run verifies, the final grid of each data set (m x n doubles each).
struct result_header {
  double seconds;
  double pad[7];  // the grids start 64-byte aligned
};

struct grma_program {
  variant how;
  int rows;        // r: rows per rank
  int n;           // grid width
  int iterations;
  bool write_back; // copy the final grids into userdata

  // Tags: iteration, then which exchange, then the data set.
  GRMA_HOST_DEVICE static int tag(int iteration, int stage, int set) {
    return (iteration * 3 + stage) * 2 + set;
  }

  // The stencils of one exchange-to-exchange stage (fluxes: fli and flj).
  enum class stencil : int { none, laplacian, fluxes, output };

  template <class Rank>
  struct state {
    Rank& r;
    const grma_program& p;
    int me, ranks;
    double* band[2][field_count];   // this rank's band of each field and data set
    grma::window win[2][field_count];
    unsigned claims;                // on the rank's claim counter so far (iterate_by_warps)

    GRMA_HOST_DEVICE std::size_t row_bytes() const { return std::size_t(p.n) * sizeof(double); }

    // Puts this rank's edge rows into its neighbours' halos of field f:
    // by the rank's threads (`c` the rank) or one warp (`c` its one_warp()).
    template <class Caller>
    GRMA_HOST_DEVICE void send_halos(Caller& c, int set, field f, halo_rows h, int t) {
      const std::size_t n = std::size_t(p.n);
      // My last row is the halo above my lower neighbour's band.
      if (h.above && me + 1 < ranks)
        c.put_notify(win[set][f], me + 1, 0, row_bytes(), band[set][f] + std::size_t(p.rows) * n, t);
      // My first row is the halo below my upper neighbour's band.
      if (h.below && me > 0)
        c.put_notify(win[set][f], me - 1, std::size_t(p.rows + 1) * n * sizeof(double), row_bytes(),
                     band[set][f] + n, t);
    }
    GRMA_HOST_DEVICE void send_halos(int set, field f, halo_rows h, int t) { send_halos(r, set, f, h, t); }

    template <class Caller>
    GRMA_HOST_DEVICE void wait_halos(Caller& c, int set, field f, halo_rows h, int t) {
      if (h.above && me > 0) c.wait_notifications(win[set][f], me - 1, t, 1);
      if (h.below && me + 1 < ranks) c.wait_notifications(win[set][f], me + 1, t, 1);
    }
    GRMA_HOST_DEVICE void wait_halos(int set, field f, halo_rows h, int t) { wait_halos(r, set, f, h, t); }

    // The exchanging warp's puts and waits of a phase of iterate_by_warps, as
    // one call: compiled apart from the stencils and the claiming loop beside
    // it, which in line it slows at every width (docs/decisions/009). HD and
    // HD-NOOVERLAP keep their exchanges in line (the whole rank's calls): out
    // of line they are slower.
    template <class Caller>
    GRMA_HOST_DEVICE HD_NOINLINE void exchange_apart(Caller& c, int set, field f, halo_rows h,
                                                     int t) {
      send_halos(c, set, f, h, t);
      wait_halos(c, set, f, h, t);
    }

    // A stencil by all the rank's threads, then a meeting of them: the next
    // stencil (or put) reads what other threads wrote.
    GRMA_HOST_DEVICE void stencil_of(stencil work, int s) {
      p.compute(band[s], work, p.rows, r.thread(), r.threads(), every_column);
      r.sync_threads();
    }
    // out becomes the next iteration's in (buffers and windows alike).
    GRMA_HOST_DEVICE void swap(int s) {
      double* b = band[s][in];
      band[s][in] = band[s][out];
      band[s][out] = b;
      grma::window w = win[s][in];
      win[s][in] = win[s][out];
      win[s][out] = w;
    }
  };

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    state<Rank> st{r, *this, r.rank(grma::world), r.size(grma::world), {}, {}, 0};
    const int sets = data_sets(how);
    const int device_rank = r.rank(grma::device), device_ranks = r.size(grma::device);
    const std::size_t nn = std::size_t(n);
    // One block per field and data set for the device's bands and two halo rows.
    const std::size_t block_bytes = band_elements(device_ranks * rows, n) * sizeof(double);
    double* block[2][field_count] = {};
    for (int s = 0; s < sets; ++s)
      for (int f = 0; f < field_count; ++f) {
        block[s][f] = static_cast<double*>(r.alloc_shared(block_bytes));
        st.band[s][f] = block[s][f] + std::size_t(device_rank) * std::size_t(rows) * nn;
        // The halos at the grid's edge stay zero; my rows start as input.
        for (std::size_t k = std::size_t(r.thread()); k < nn; k += std::size_t(r.threads())) {
          if (st.me == 0) st.band[s][f][k] = 0;
          if (st.me + 1 == st.ranks) st.band[s][f][std::size_t(rows + 1) * nn + k] = 0;
        }
        for (std::size_t k = std::size_t(r.thread()); k < std::size_t(rows) * nn;
             k += std::size_t(r.threads()))
          st.band[s][f][nn + k] =
              f == in ? input_value(s, std::size_t(st.me) * std::size_t(rows) + k / nn, k % nn) : 0;
        if (f != flj)  // the one field no neighbour needs
          st.win[s][f] = r.window_create(grma::world, st.band[s][f],
                                         band_elements(rows, n) * sizeof(double));
      }
    r.barrier(grma::world);  // every band is ready before any neighbour reads it

    const double start = r.wtime();
    switch (how) {
      case variant::hd: iterate_serialized(st, 1); break;
      case variant::nooverlap: iterate_serialized(st, 2); break;
      case variant::overlap: iterate_overlapped(st); break;
      case variant::compute: iterate_compute(st); break;
    }
    r.barrier(grma::world);
    if (st.me == 0 && r.thread() == 0)
      r.template userdata<result_header>()->seconds = r.wtime() - start;

    if (write_back) {
      auto* grids = reinterpret_cast<double*>(r.template userdata<result_header>() + 1);
      const std::size_t grid = std::size_t(st.ranks) * std::size_t(rows) * nn;
      for (int s = 0; s < sets; ++s)
        for (std::size_t k = std::size_t(r.thread()); k < std::size_t(rows) * nn;
             k += std::size_t(r.threads()))
          grids[std::size_t(s) * grid + std::size_t(st.me) * std::size_t(rows) * nn + k] =
              st.band[s][in][nn + k];
    }
    for (int s = 0; s < sets; ++s)
      for (int f = 0; f < field_count; ++f)
        if (f != flj) r.window_free(st.win[s][f]);
    for (int s = 0; s < sets; ++s)
      for (int f = 0; f < field_count; ++f) r.free_shared(block[s][f]);
  }

  // HD (one set) and HD-NOOVERLAP (two): each exchange, then each stencil.
  template <class State>
  GRMA_HOST_DEVICE void iterate_serialized(State& st, int sets) const {
    for (int it = 0; it < iterations; ++it) {
      for (int s = 0; s < sets; ++s) st.send_halos(s, in, halos_of_in, tag(it, 0, s));
      for (int s = 0; s < sets; ++s) st.wait_halos(s, in, halos_of_in, tag(it, 0, s));
      for (int s = 0; s < sets; ++s) st.stencil_of(stencil::laplacian, s);
      for (int s = 0; s < sets; ++s) st.send_halos(s, lap, halos_of_lap, tag(it, 1, s));
      for (int s = 0; s < sets; ++s) st.wait_halos(s, lap, halos_of_lap, tag(it, 1, s));
      for (int s = 0; s < sets; ++s) st.stencil_of(stencil::fluxes, s);
      for (int s = 0; s < sets; ++s) st.send_halos(s, fli, halos_of_fli, tag(it, 2, s));
      for (int s = 0; s < sets; ++s) st.wait_halos(s, fli, halos_of_fli, tag(it, 2, s));
      for (int s = 0; s < sets; ++s) {
        st.stencil_of(stencil::output, s);
        st.swap(s);
      }
    }
  }

  // HD-OVERLAP (papers/000 Listing 4.1): while one set's halos travel, the
  // other set computes. A set's out rows go out as soon as they are computed
  // (they are the next iteration's in). A rank of two warps or more gives
  // one warp the exchanges while the others compute (iterate_by_warps); a
  // smaller rank (one thread on the CPU backend) alternates itself.
  template <class State>
  GRMA_HOST_DEVICE void iterate_overlapped(State& st) const {
    const int lanes = st.r.one_warp().threads();
    if (st.r.threads() >= 2 * lanes)
      return wide_enough_to_claim(st.r.threads(), lanes) ? iterate_by_warps<true>(st)
                                                         : iterate_by_warps<false>(st);
    for (int s = 0; s < 2; ++s) st.send_halos(s, in, halos_of_in, tag(0, 0, s));
    for (int it = 0; it < iterations; ++it) {
      for (int s = 0; s < 2; ++s) {
        st.wait_halos(s, in, halos_of_in, tag(it, 0, s));
        st.stencil_of(stencil::laplacian, s);
        st.send_halos(s, lap, halos_of_lap, tag(it, 1, s));
      }
      for (int s = 0; s < 2; ++s) {
        st.wait_halos(s, lap, halos_of_lap, tag(it, 1, s));
        st.stencil_of(stencil::fluxes, s);
        st.send_halos(s, fli, halos_of_fli, tag(it, 2, s));
      }
      for (int s = 0; s < 2; ++s) {
        st.wait_halos(s, fli, halos_of_fli, tag(it, 2, s));
        st.stencil_of(stencil::output, s);
        st.send_halos(s, out, halos_of_in, tag(it + 1, 0, s));
        st.swap(s);
      }
    }
    // The last iteration's out halos arrived (and are part of the work).
    for (int s = 0; s < 2; ++s) st.wait_halos(s, in, halos_of_in, tag(iterations, 0, s));
  }

  // HD-OVERLAP with the exchanges on one warp: six phases an iteration, in
  // each the other warps compute one stencil of one set while the warp puts
  // the halos of the stencil before (the other set's, or the same set's
  // when nothing else is between them) and waits for those the next stencil
  // needs. Then all the rank's threads meet: what the workers computed is
  // behind the warp's next puts, what the warp waited for before their next
  // reads. A phase costs the longer of its stencil and its exchange.
  //
  //   phase  workers   warp: sends, then waits for
  //   (0)    -         in(0)         in(0)          before the loop
  //   1      lap(0)    in(1)         in(1)
  //   2      lap(1)    lap(0)        lap(0)
  //   3      flx(0)    lap(1)        lap(1)
  //   4      flx(1)    fli(0)        fli(0)
  //   5      out(0)    fli(1)        fli(1)         then set 0's out becomes in
  //   6      out(1)    in(0) (next)  in(0) (next)   then set 1's out becomes in
  //   (7)    -         in(1) (next)  in(1) (next)   after the loop
  //
  // Claims: the band is wide enough for the warps to claim rows of blocks of
  // columns (phase). A template argument, so that narrower bands run the
  // phase without a trace of claiming (it cost them 2.5-3.5 % as a run-time
  // test).
  template <bool Claims, class State>
  GRMA_HOST_DEVICE void iterate_by_warps(State& st) const {
    auto warp = st.r.one_warp();
    // The counter starts at zero before the first phase's meeting, which
    // puts it before any claim.
    if (Claims && st.r.thread() == 0) rank_claim_counter() = 0;
    phase<Claims>(st, warp, stencil::none, 0, 0, in, halos_of_in, tag(0, 0, 0));
    for (int it = 0; it < iterations; ++it) {
      phase<Claims>(st, warp, stencil::laplacian, 0, 1, in, halos_of_in, tag(it, 0, 1));
      phase<Claims>(st, warp, stencil::laplacian, 1, 0, lap, halos_of_lap, tag(it, 1, 0));
      phase<Claims>(st, warp, stencil::fluxes, 0, 1, lap, halos_of_lap, tag(it, 1, 1));
      phase<Claims>(st, warp, stencil::fluxes, 1, 0, fli, halos_of_fli, tag(it, 2, 0));
      phase<Claims>(st, warp, stencil::output, 0, 1, fli, halos_of_fli, tag(it, 2, 1));
      st.swap(0);  // every thread: its own copy of the state
      phase<Claims>(st, warp, stencil::output, 1, 0, in, halos_of_in, tag(it + 1, 0, 0));
      st.swap(1);
    }
    phase<Claims>(st, warp, stencil::none, 0, 1, in, halos_of_in, tag(iterations, 0, 1));
  }

  // One phase of iterate_by_warps: the workers compute `work` of data set
  // `set` while the warp puts the halos of field f of set `exchanged` and
  // waits for its neighbours'; then all the rank's threads meet. Where the
  // band has at least two blocks of columns for every warp (Claims), the
  // warps claim the stencil's rows of blocks one at a time and the
  // exchanging warp joins in when its exchange is done: at wide grids a
  // stencil takes several rounds, and the warp would otherwise idle for most
  // of the phase (one warp in eight of a memory-bound rank).
  template <bool Claims, class State, class Warp>
  GRMA_HOST_DEVICE void phase(State& st, Warp& warp, stencil work, int set, int exchanged, field f,
                              halo_rows h, int t) const {
    auto& r = st.r;
    const int lanes = warp.threads();
    const bool by_claims = Claims && work != stencil::none;
    if (r.thread() < lanes) {
      st.exchange_apart(warp, exchanged, f, h, t);
    } else if (!by_claims) {
      compute(st.band[set], work, rows, r.thread() - lanes, r.threads() - lanes, every_column);
    }
    if (by_claims) claim_rows(st, work, set, lanes);
    r.sync_threads();
  }

  // The rank's warps take `work` one claim at a time from the rank's counter.
  // A claim is one row of a block of columns, a block's rows one after
  // another before the next block's (the rows that neighbouring claims read
  // are still in cache): the last claims of a phase, which the other warps
  // wait for, are a fraction of a block. The counter only counts up: a
  // phase's claims are its next `claims` values, and each warp stops at its
  // first claim past them, so that every thread knows where the next phase's
  // claims start (claims + warps on; unsigned arithmetic wraps around with
  // the counter).
  template <class State>
  GRMA_HOST_DEVICE void claim_rows(State& st, stencil work, int set, int lanes) const {
    const unsigned width = block_width(lanes), band_rows = unsigned(rows);
    const unsigned claims = (unsigned(n) + width - 1) / width * band_rows;
    const int lane = st.r.thread() % lanes;
    unsigned& counter = rank_claim_counter();
    for (unsigned c; (c = next_claim(counter, lane) - st.claims) < claims;) {
      // Row i of a band is row 1 of the band that starts i - 1 rows later.
      double* row[field_count];
      for (int f = 0; f < field_count; ++f)
        row[f] = st.band[set][f] + std::size_t(c % band_rows) * std::size_t(n);
      const unsigned first = c / band_rows * width;
      compute(row, work, 1, lane, lanes, {first, first + width});
    }
    st.claims += claims + unsigned(st.r.threads() / lanes);
  }

  // A block is as many columns as one warp sweeps at a time.
  GRMA_HOST_DEVICE static unsigned block_width(int lanes) {
    return unsigned(sweep_points_per_thread) * unsigned(lanes);
  }

  // Claiming pays where the band has at least two blocks for each warp (on
  // two H200s, claiming at 2048 columns made HD-OVERLAP 5 % faster, at 1024
  // 3 % slower): with fewer, the claims' cost is more than the exchanging
  // warp's share gains. Every warp must be whole (next_claim's broadcast).
  GRMA_HOST_DEVICE bool wide_enough_to_claim(int threads, int lanes) const {
    return threads % lanes == 0 &&
           unsigned(n) >= 2 * block_width(lanes) * unsigned(threads / lanes);
  }

  // `work` on rows 1..band_rows of `columns` of data set b's bands, by
  // `thread` of `threads`.
  GRMA_HOST_DEVICE void compute(double* const* b, stencil work, int band_rows, int thread,
                                int threads, column_range columns) const {
    switch (work) {
      case stencil::laplacian:
        compute_lap(b[in], b[lap], band_rows, n, thread, threads, columns);
        break;
      case stencil::fluxes:
        compute_fli(b[lap], b[fli], band_rows, n, thread, threads, columns);
        compute_flj(b[lap], b[flj], band_rows, n, thread, threads, columns);
        break;
      case stencil::output:
        compute_out(b[fli], b[flj], b[out], band_rows, n, thread, threads, columns);
        break;
      case stencil::none:
        break;
    }
  }

  // The rank's counter of claims: shared memory on a GPU, where a
  // rank is one thread block. A CPU rank is one thread, never more than one
  // warp: it never claims, but the code is compiled for it.
  GRMA_HOST_DEVICE static unsigned& rank_claim_counter() {
#if GRMA_DEVICE_CODE
    __shared__ unsigned counter;
#else
    thread_local unsigned counter;
#endif
    return counter;
  }

  // The next claim for the calling warp, the same for each of its lanes:
  // lane 0 takes it, the others wait for it in the shuffle. The atomic is
  // relaxed: a claim orders no data (claims write disjoint points and read
  // only what the phase does not write), and the stencil's
  // writes reach the other warps through the meeting that ends the phase.
  GRMA_HOST_DEVICE static unsigned next_claim(unsigned& counter, int lane) {
#if GRMA_DEVICE_CODE
    unsigned b = 0;
    if (lane == 0) b = atomicAdd(&counter, 1u);
    return __shfl_sync(0xffffffffu, b, 0);
#else
    (void)lane;
    return counter++;
#endif
  }

  // The stencils alone, for the memory time: on rows 2..r-1 of each band,
  // so that no rank reads another's rows (nothing orders them here).
  template <class State>
  GRMA_HOST_DEVICE void iterate_compute(State& st) const {
    const std::size_t nn = std::size_t(n);
    const int inner = rows - 2;
    auto& r = st.r;
    for (int it = 0; it < iterations; ++it) {
      double* const* b = st.band[0];
      compute_lap(b[in] + nn, b[lap] + nn, inner, n, r.thread(), r.threads());
      r.sync_threads();
      compute_fli(b[lap] + nn, b[fli] + nn, inner, n, r.thread(), r.threads());
      compute_flj(b[lap] + nn, b[flj] + nn, inner, n, r.thread(), r.threads());
      r.sync_threads();
      compute_out(b[fli] + nn, b[flj] + nn, b[out] + nn, inner, n, r.thread(), r.threads());
      r.sync_threads();
      st.swap(0);
    }
  }
};

}  // namespace hd
