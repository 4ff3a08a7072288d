// The kernel-boundary baseline of the streaming matrix-vector product
// (papers/002 §7, the GPI-2 version's GPU side): per batch, the host copies
// every pair's vectors into the workers' buffer, launches a kernel of one
// block per pair (each copies the matrix into shared memory, then
// multiplies its vectors) and copies the products back; two batches in
// flight, on two streams, as grma's version has. The producers' vectors and
// products may be on another GPU than the workers' (cudaMemcpyPeerAsync).
#pragma once

namespace mmv {

// Seconds for `batches` batches of `vectors` vectors per pair (after one
// warm-up batch), the producers' memory on GPU `producer_device` and the
// workers' on `worker_device`; with `wrong`, whether a product of the last
// batch differs from the matrix times its vector.
double run_baseline(int pairs, int vectors, int batches, int threads, int producer_device,
                    int worker_device, bool* wrong);

}  // namespace mmv
