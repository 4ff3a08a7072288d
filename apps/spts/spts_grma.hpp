// Sync-free sparse triangular solve with grma's OpenSHMEM layer (papers/001
// §6.4): L x = b with the rows, taken level by level, dealt to the PEs in
// turn. A PE solves its rows in that order; a row waits (signal_wait_until)
// for each row it depends on that another PE solves, and once solved sends its
// own x to every PE that needs it. No barrier between levels and no kernel
// boundary: a row starts as soon as its inputs are there.
//
// The value is its own flag: an inbox slot holds `unsolved` (a signalling
// NaN, which no arithmetic produces) until the owner's atomic_set writes the
// row's x there, so a hop is one atomic store and the waiter's load, with no
// fence and no second word (the value is read with the wait, nothing else
// needs ordering behind it; decision 038).
//
// The host lays out in userdata, per PE, where each nonzero's x comes from
// (the PE's own rows, or a slot of its inbox that the owner fills) and, per
// row, the PEs and slots it goes to, the PE whose reading row comes first
// in the order first (on a chain, the next link waits for no other send).
// One thread of each PE solves its rows (the waits are made by one thread
// of a PE at a time), one after the other; taken level by level, a row
// never waits behind a row of its PE that is further along than itself
// (decision 031: in index order the solve became serial).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <grma/grma.hpp>
#include <grma/shmem.hpp>

#include "matrix.hpp"

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
    // [own x: max_rows][inbox: max_slots], the inbox x's bits
    auto* own = static_cast<double*>(sh.malloc(std::size_t(max_rows + max_slots) * sizeof(double)));
    auto* inbox = reinterpret_cast<std::uint64_t*>(own + max_rows);
    for (std::int64_t k = r.thread(); k < max_slots; k += r.threads()) inbox[k] = unsolved;
    sh.barrier_all();  // every inbox unsolved before any row is sent

    const double start = r.wtime();
    if (r.thread() == 0) {
      // What a row reads besides its inputs is loaded before its waits (and
      // a nonzero's before the previous one's wait): the acquire that ends
      // a wait empties the L1, so a load after it is a trip to L2 on the
      // chain from one row's value to the next's.
      std::int64_t i = me < n ? rows_in_order[me] : 0;
      for (std::int64_t at = me; at < n; at += pes) {
        const std::int64_t next = at + pes < n ? rows_in_order[at + pes] : 0;
        const std::int64_t first = rows[i], diagonal = rows[i + 1] - 1;
        const double b_i = rhs[i], d_i = values[diagonal];
        const std::int64_t send_first = sends[i], send_end = sends[i + 1];
        const std::uint64_t first_to = send_first < send_end ? to[send_first] : 0;
        std::int64_t w = first < diagonal ? source[first] : 0;
        double v = first < diagonal ? values[first] : 0;
        double sum = 0;
        for (std::int64_t k = first; k < diagonal; ++k) {
          const std::int64_t w_k = w;
          const double v_k = v;
          if (k + 1 < diagonal) w = source[k + 1], v = values[k + 1];
          double x_k;
          if (w_k >= 0) {
            x_k = own[w_k];  // a row of mine, solved before this one
          } else {
            const std::uint64_t bits =
                sh.signal_wait_until(inbox - w_k - 1, grma::shmem::cmp_ne, unsolved);
            std::memcpy(&x_k, &bits, sizeof x_k);
          }
          sum += v_k * x_k;
        }
        const double x_i = (b_i - sum) / d_i;
        own[at / pes] = x_i;
        std::uint64_t bits;
        std::memcpy(&bits, &x_i, sizeof bits);
        for (std::int64_t c = send_first; c < send_end; ++c) {
          const std::uint64_t t = c == send_first ? first_to : to[c];
          sh.atomic_set(inbox + (t & 0xffffffffu), bits, int(t >> 32));
        }
        i = next;
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
