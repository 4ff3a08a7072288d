// The streaming multi-matrix-vector product with grma's GASPI layer
// (papers/002 §7, the GPU-side GPI version): one persistent kernel, the
// job's ranks in pairs. Producer p (world rank p) sends batches of vectors
// to worker p (world rank pairs + p, on the job's other device when it has
// two) with write_notify; the worker multiplies each vector by the matrix,
// which it holds in shared memory from the start to the end of the stream
// (as GPUrdma's did), and writes the products back with
// write_notify. Two batches are in flight per pair: the producer sends
// batch b + 1 while the worker computes batch b; batch b carries vector set
// b % 2 (the producer makes both sets before the clock starts, as the
// baseline's host does).
//
// Segment 0 of every rank: two vector buffers (a producer's outgoing, a
// worker's incoming), then two product buffers (a worker's outgoing, a
// producer's incoming), `vectors` vectors each. Notification b % 2 tells a
// worker batch b came, 2 + b % 2 tells a producer its products did; the
// value is b + 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <grma/gaspi.hpp>
#include <grma/grma.hpp>

#include "mmv.hpp"

namespace mmv {

// What the host reads back: each producer's seconds for its stream and, in
// checked runs, whether a product was wrong (any thread that finds one
// stores 1).
struct producer_record {
  double seconds;
  unsigned wrong;
  unsigned pad;
};

struct grma_program {
  int pairs;
  int vectors;  // per batch and pair
  int batches;
  bool check;

  GRMA_HOST_DEVICE std::size_t buffer_bytes() const { return std::size_t(vectors) * vector_bytes; }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    namespace gaspi = grma::gaspi;
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    const std::size_t bytes = buffer_bytes();
    g.segment_create(0, 4 * bytes, gaspi::group_all, gaspi::block);
    void* segment = nullptr;
    g.segment_ptr(0, &segment);
    auto* memory = static_cast<unsigned char*>(segment);
    const int me = r.rank(grma::world);
    g.barrier(gaspi::group_all, gaspi::block);
    if (me < pairs)
      produce(g, r, me, memory);
    else if (me < 2 * pairs)
      work(g, r, me - pairs, memory);
    g.barrier(gaspi::group_all, gaspi::block);
    g.proc_term(gaspi::block);
  }

 private:
  template <class Handle, class Rank>
  GRMA_HOST_DEVICE void produce(Handle& g, Rank& r, int stream, unsigned char* memory) const {
    namespace gaspi = grma::gaspi;
    const std::size_t bytes = buffer_bytes();
    const int worker = pairs + stream;
    gaspi::notification_id_t id = 0;
    gaspi::notification_t value = 0;
    // The stream's batches alternate between two sets of vectors, made
    // before the clock starts (the baseline sends the same two).
    for (int k = 0; k < 2; ++k) {
      auto* x = reinterpret_cast<float*>(memory + k * bytes);
      for (int e = r.thread(); e < vectors * n; e += r.threads())
        x[e] = vector_entry(stream, k, e / n, e % n);
    }
    r.sync_threads();
    const double start = r.wtime();
    for (int b = 0; b < batches + 2; ++b) {
      if (b >= 2) {  // batch b - 2's products: the worker's buffers are free again
        const int k = (b - 2) % 2;
        g.notify_waitsome(0, 2 + k, 1, &id, gaspi::block);
        g.notify_reset(0, 2 + k, &value);
        if (check)
          check_products(r, stream, k, reinterpret_cast<const float*>(memory + (2 + k) * bytes));
      }
      if (b >= batches) continue;
      const int k = b % 2;
      g.write_notify(0, k * bytes, worker, 0, k * bytes, bytes, k, gaspi::notification_t(b + 1), 0,
                     gaspi::block);
      // The queue's count (two a batch) is emptied now and then: that the
      // products came back says the vectors arrived.
      if (b % 256 == 255) g.wait(0, gaspi::block);
    }
    g.wait(0, gaspi::block);
    const double seconds = r.wtime() - start;
    if (r.thread() == 0) r.template userdata<producer_record>()[stream].seconds = seconds;
  }

  template <class Handle, class Rank>
  GRMA_HOST_DEVICE void work(Handle& g, Rank& r, int stream, unsigned char* memory) const {
    namespace gaspi = grma::gaspi;
    const std::size_t bytes = buffer_bytes();
    gaspi::notification_id_t id = 0;
    gaspi::notification_t value = 0;
#if GRMA_DEVICE_CODE
    // The matrix in the block's shared memory for the whole stream, as
    // GPUrdma's worker kept it (a row a lane in registers would not fit the
    // 64 registers a thread of a 1024-thread rank has), rows a padded row
    // apart so that the lanes' reads of their rows hit different banks. A
    // whole warp per vector: lane i computes entry i.
    __shared__ float matrix[n][n + 1];
    for (int e = r.thread(); e < n * n; e += r.threads())
      matrix[e / n][e % n] = matrix_entry(e / n, e % n);
    r.sync_threads();
    const int lane = r.thread() % n, warp = r.thread() / n, warps = r.threads() / n;
#else
    // One thread: the whole matrix.
    float matrix[n][n];
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) matrix[i][j] = matrix_entry(i, j);
#endif
    for (int b = 0; b < batches; ++b) {
      const int k = b % 2;
      g.notify_waitsome(0, k, 1, &id, gaspi::block);
      g.notify_reset(0, k, &value);
      // Batch b - 2's products have left the buffer: the producer had them
      // before it sent batch b. The queue is emptied now and then.
      if (b % 256 == 255) g.wait(0, gaspi::block);
      const auto* x = reinterpret_cast<const float*>(memory + k * bytes);
      auto* y = reinterpret_cast<float*>(memory + (2 + k) * bytes);
#if GRMA_DEVICE_CODE
      for (int v = warp; v < vectors; v += warps)
        y[v * n + lane] = warp_product(matrix[lane], x + v * n, lane);
#else
      for (int v = 0; v < vectors; ++v)
        for (int i = 0; i < n; ++i) y[v * n + i] = product_entry(matrix[i], x + v * n);
#endif
      r.sync_threads();
      g.write_notify(0, (2 + k) * bytes, stream, 0, (2 + k) * bytes, bytes, 2 + k,
                     gaspi::notification_t(b + 1), 0, gaspi::block);
    }
    g.wait(0, gaspi::block);
  }

  // Products of vector set k (batches k, k + 2, ...) against the matrix, by all threads.
  template <class Rank>
  GRMA_HOST_DEVICE void check_products(Rank& r, int stream, int k, const float* y) const {
    for (int e = r.thread(); e < vectors * n; e += r.threads()) {
      float row[n], x[n];
      for (int j = 0; j < n; ++j) {
        row[j] = matrix_entry(e % n, j);
        x[j] = vector_entry(stream, k, e / n, j);
      }
      if (y[e] != product_entry(row, x))
        *static_cast<volatile unsigned*>(&r.template userdata<producer_record>()[stream].wrong) = 1;
    }
    r.sync_threads();
  }
};

}  // namespace mmv
