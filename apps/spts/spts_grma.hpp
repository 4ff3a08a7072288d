// Sync-free sparse triangular solve with grma's OpenSHMEM layer (papers/001
// §6.4): L x = b with the rows, taken level by level, dealt to the PEs in
// turn. A PE solves its rows in that order; a row waits (wait_until) for the
// flag of each row it depends on that another PE solves, reads that row's
// x, and once solved sends its own x to every PE that needs it: the values
// with p, a fence, then the flags with p. No barrier between levels and no
// kernel boundary: a row starts as soon as its inputs are there.
//
// The host lays out in userdata, per PE, where each nonzero's x comes from
// (the PE's own rows, or a slot of its inbox that the owner fills) and, per
// row, the PEs and slots it goes to. One thread of each PE solves its rows
// (the waits are made by one thread of a PE at a time), one after the
// other; taken level by level, a row never waits behind a row of its PE
// that is further along than itself (decision 031: in index order the
// solve became serial).
#pragma once

#include <cstddef>
#include <cstdint>
#include <grma/grma.hpp>
#include <grma/shmem.hpp>

namespace spts {

// Where a PE reads the x of a nonzero's column: its own row `where` (>= 0),
// or slot -(where + 1) of its inbox.
struct grma_program {
  std::int64_t n;
  std::int64_t max_rows;  // the most rows a PE solves: n / P, rounded up
  // order[k] (userdata offset; int64), the rows level by level: PE p takes
  // rows order[p], order[p + P], ... and keeps row order[k] at k / P.
  std::uint64_t order;
  std::int64_t max_slots;  // the most inbox slots a PE has
  // Byte offsets in userdata, after the header: row_start[n + 1],
  // where[nonzeros] (int64), value[nonzeros], b[n], consumer_start[n + 1],
  // consumers[...] (pe << 32 | slot), and x[n], which the run fills.
  std::uint64_t row_start, where, value, b, consumer_start, consumers, x;

  struct header {
    double seconds;  // PE 0's time for the solve
    double pad[7];
  };

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    grma::shmem::handle sh(r);
    const int me = sh.my_pe(), pes = sh.n_pes();
    auto* data = static_cast<unsigned char*>(r.userdata());
    const auto* rows_in_order = reinterpret_cast<const std::int64_t*>(data + order);
    const auto* rows = reinterpret_cast<const std::int64_t*>(data + row_start);
    const auto* source = reinterpret_cast<const std::int64_t*>(data + where);
    const auto* values = reinterpret_cast<const double*>(data + value);
    const auto* rhs = reinterpret_cast<const double*>(data + b);
    const auto* sends = reinterpret_cast<const std::int64_t*>(data + consumer_start);
    const auto* to = reinterpret_cast<const std::uint64_t*>(data + consumers);
    // [own x: max_rows][inbox x: max_slots][inbox flags: max_slots]
    auto* own =
        static_cast<double*>(sh.calloc(std::size_t(max_rows + 2 * max_slots), sizeof(double)));
    double* inbox = own + max_rows;
    auto* ready = reinterpret_cast<std::uint64_t*>(inbox + max_slots);

    const double start = r.wtime();
    if (r.thread() == 0) {
      for (std::int64_t at = me; at < n; at += pes) {
        const std::int64_t i = rows_in_order[at];
        const std::int64_t diagonal = rows[i + 1] - 1;
        double sum = 0;
        for (std::int64_t k = rows[i]; k < diagonal; ++k) {
          const std::int64_t w = source[k];
          double x_k;
          if (w >= 0) {
            x_k = own[w];  // a row of mine, solved before this one
          } else {
            sh.wait_until(ready - w - 1, grma::shmem::cmp_ne, std::uint64_t{0});
            x_k = inbox[-w - 1];  // after the flag's acquire
          }
          sum += values[k] * x_k;
        }
        const double x_i = (rhs[i] - sum) / values[diagonal];
        own[at / pes] = x_i;
        if (sends[i] == sends[i + 1]) continue;
        for (std::int64_t c = sends[i]; c < sends[i + 1]; ++c)
          sh.p(inbox + (to[c] & 0xffffffffu), x_i, int(to[c] >> 32));
        sh.fence();  // each value before its flag
        for (std::int64_t c = sends[i]; c < sends[i + 1]; ++c)
          sh.p(ready + (to[c] & 0xffffffffu), std::uint64_t{1}, int(to[c] >> 32));
      }
    }
    r.sync_threads();
    sh.barrier_all();
    if (me == 0 && r.thread() == 0) r.template userdata<header>()->seconds = r.wtime() - start;
    auto* solution = reinterpret_cast<double*>(data + x);
    for (std::int64_t at = me + std::int64_t(r.thread()) * pes; at < n;
         at += std::int64_t(r.threads()) * pes)
      solution[rows_in_order[at]] = own[at / pes];
    sh.barrier_all();
    sh.free(own);
  }
};

}  // namespace spts
