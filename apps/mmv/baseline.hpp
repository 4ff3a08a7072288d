// The kernel-boundary baseline of the streaming matrix-vector product
// (papers/002 §7, the GPI-2 version's GPU side): per batch, the host copies
// every pair's vectors into the workers' buffer, launches a kernel of one
// block per pair (each copies the matrix into shared memory, then
// multiplies its vectors) and copies the products back; two batches in
// flight, as grma's version has. The producers' vectors and products may be
// on another GPU of the process than the workers' (cudaMemcpyPeerAsync), or
// in another process: then the producers' host sends each batch with MPI
// (not CUDA-aware: through pinned host memory), and the workers' host
// receives it, copies it in, launches the kernel and sends the products
// back (papers/002 §7's kernel-boundary version).
#pragma once

namespace mmv {

struct baseline_job {
  int pairs;
  int vectors;  // per batch and pair
  int batches;
  int threads;  // per block
  // Both ends in this process: the producers' memory on GPU
  // producer_device, the workers' on worker_device.
  int producer_device = 0;
  int worker_device = 0;
  // The ends in two processes, one GPU each (its current one): the other
  // end's MPI_COMM_WORLD process (-1: both ends here), and whether this
  // process is the producers'.
  int partner_process = -1;
  bool producers_here = true;
};

// Seconds for the batches (after one warm-up batch); with `wrong`, whether a
// product of the last batch differs from the matrix times its vector (the
// producers' end checks; the workers' says false).
double run_baseline(const baseline_job& job, bool* wrong);

}  // namespace mmv
