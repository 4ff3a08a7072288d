// grma-jacobi2d-nvshmem: Jacobi 2D (papers/001 §6.3) with NVSHMEM's device
// API in one persistent kernel per GPU, the algorithm of jacobi_grma.hpp, for
// grma-jacobi2d's comparison in the same run. grma-jacobi2d starts it, one
// process per GPU (`--pe 0 .. --pes - 1`), and reads what each writes; it is
// not meant to be started by hand.
//
// A PE is a GPU here (NVSHMEM's model), and each of its `--blocks` thread
// blocks relaxes one tile: tile pe * blocks + block of the grid, split as
// grma splits it among as many PEs (jacobi::split), so both relax the same
// tiles. A block trades edges with its four neighbour tiles as a grma PE
// does: a put of each edge (nvshmemx_double_put_nbi_block), one fence, then a
// signal word per edge carrying the generation (nvshmemx_signal_op, set),
// which the neighbour's thread 0 waits for (nvshmem_signal_wait_until). A
// neighbour tile on the same GPU is reached through NVSHMEM too (its PE is
// this one). The tiles of a PE are one symmetric array, tile t at place t %
// blocks on PE t / blocks.
//
// Output (`--out`), one line each: `us_per_iteration US` (PE 0 only: the
// median over `--repeats` of the time from a barrier of both PEs before the
// kernel's launch to one after it ended, per iteration), and `error E` (each
// PE: the largest difference from the serial reference over its tiles after
// `--check-iterations`, or nan where that is 0).
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "jacobi.hpp"
#include "nvshmem_bootstrap.hpp"

namespace {

// The rank kernels' shape in grma-jacobi2d: up to 256 threads, four blocks
// a multiprocessor (a persistent kernel's blocks must all be resident).
constexpr int threads_most = 256, blocks_a_multiprocessor = 4;

enum side : int { north = 0, south, west, east };

struct job {
  jacobi::decomposition d;
  int pe;
  int blocks;                // tiles of this PE: pe * blocks + [0, blocks)
  std::size_t tile_doubles;  // one tile's place in the symmetric array
  int iterations;
};

// Tile `t`'s block in the symmetric array (on PE t / blocks).
__device__ double* tile_block(double* tiles, const job& j, int t) {
  return tiles + std::size_t(t % j.blocks) * j.tile_doubles;
}

// The parts of a tile's block (jacobi::tile_bytes), as jacobi_grma.hpp
// lays them out.
struct tile_parts {
  double* planes;
  double* halos;
  double* packed;
  std::uint64_t* signals;
  std::size_t wm, hm, plane_size;

  __device__ tile_parts(double* block, const jacobi::decomposition& d)
      : wm(jacobi::row_stride(d)), hm(std::size_t(d.max_height())) {
    plane_size = (hm + 2) * wm;
    planes = block;
    halos = block + 2 * plane_size;
    packed = halos + 4 * hm;
    signals = reinterpret_cast<std::uint64_t*>(packed + 4 * hm);
  }
  __device__ double* plane(int generation) const {
    return planes + std::size_t(generation % 2) * plane_size;
  }
  __device__ double* halo(double* base, int generation, int s) const {
    return base + (std::size_t(generation % 2) * 2 + std::size_t(s == east ? 1 : 0)) * hm;
  }
};

// Generation 0 in plane 0, as jacobi_grma.hpp starts it.
__global__ void __launch_bounds__(threads_most) start_tiles(double* tiles, job j) {
  const jacobi::decomposition& d = j.d;
  const int t = j.pe * j.blocks + int(blockIdx.x), pr = t / d.px, pc = t % d.px;
  const int h = d.height(pr), w = d.width(pc);
  double* block = tile_block(tiles, j, t);
  const tile_parts tp(block, d);
  for (std::size_t k = threadIdx.x; k < j.tile_doubles; k += blockDim.x) block[k] = 0;
  __syncthreads();
  const long long row0 = d.first_row(pr), col0 = d.first_col(pc);
  for (int k = int(threadIdx.x); k < (h + 2) * w; k += int(blockDim.x)) {
    const long long i = row0 + k / w - 1, jj = col0 + k % w;
    tp.planes[std::size_t(k / w) * tp.wm + std::size_t(k % w)] = i < 0 ? jacobi::top_boundary
                                                                 : i < d.rows
                                                                     ? jacobi::initial(i, jj)
                                                                     : 0.0;
  }
  for (int i = int(threadIdx.x); i < h; i += int(blockDim.x)) {
    tp.halo(tp.halos, 0, west)[i] = pc > 0 ? jacobi::initial(row0 + i, col0 - 1) : 0.0;
    tp.halo(tp.halos, 0, east)[i] = pc + 1 < d.px ? jacobi::initial(row0 + i, col0 + w) : 0.0;
  }
  if (pr == 0)
    for (int c = int(threadIdx.x); c < w; c += int(blockDim.x))
      tp.planes[tp.plane_size + std::size_t(c)] = jacobi::top_boundary;
}

// `iterations` sweeps, each block its tile (jacobi_grma.hpp's loop).
__global__ void __launch_bounds__(threads_most, blocks_a_multiprocessor)
    relax(double* tiles, job j) {
  const jacobi::decomposition& d = j.d;
  const int me = j.pe * j.blocks + int(blockIdx.x), pr = me / d.px, pc = me % d.px;
  const int h = d.height(pr), w = d.width(pc);
  const int thread = int(threadIdx.x), threads = int(blockDim.x);
  const tile_parts tp(tile_block(tiles, j, me), d);
  const std::size_t wm = tp.wm;
  const int neighbour[4] = {pr > 0 ? me - d.px : -1, pr + 1 < d.py ? me + d.px : -1,
                            pc > 0 ? me - 1 : -1, pc + 1 < d.px ? me + 1 : -1};
  for (int k = 0; k < j.iterations; ++k) {
    const double* cur = tp.plane(k);
    double* next = tp.plane(k + 1);
    const double* west_halo = tp.halo(tp.halos, k, west);
    const double* east_halo = tp.halo(tp.halos, k, east);
    if (thread == 0) {
      if (k > 0)
        for (int s = north; s <= east; ++s)
          if (neighbour[s] >= 0)
            nvshmem_signal_wait_until(tp.signals + s, NVSHMEM_CMP_GE, std::uint64_t(k));
      nvshmem_quiet();
    }
    __syncthreads();
    jacobi::sweep_frame(cur, next, west_halo, east_halo, wm, h, w, thread, threads);
    __syncthreads();
    for (int i = thread; i < h; i += threads) {
      tp.halo(tp.packed, k + 1, west)[i] = next[std::size_t(i + 1) * wm];
      tp.halo(tp.packed, k + 1, east)[i] = next[std::size_t(i + 1) * wm + std::size_t(w - 1)];
    }
    __syncthreads();
    // A neighbour's block has the same layout: the same offsets in its tile.
    auto there = [&](int t, const double* mine) {
      return tile_block(tiles, j, t) + (mine - tile_block(tiles, j, me));
    };
    auto pe_of = [&](int t) { return t / j.blocks; };
    // An edge of n doubles at `source` to side s's neighbour, at the place
    // of `mine` in its tile.
    auto send = [&](int s, const double* mine, const double* source, std::size_t n) {
      const int t = neighbour[s];
      if (t >= 0) nvshmemx_double_put_nbi_block(there(t, mine), source, n, pe_of(t));
    };
    send(north, next + std::size_t(d.height(pr - 1) + 1) * wm, next + wm, std::size_t(w));
    send(south, next, next + std::size_t(h) * wm, std::size_t(w));
    send(west, tp.halo(tp.halos, k + 1, east), tp.halo(tp.packed, k + 1, west), std::size_t(h));
    send(east, tp.halo(tp.halos, k + 1, west), tp.halo(tp.packed, k + 1, east), std::size_t(h));
    __syncthreads();  // every thread's part of the puts is issued before thread 0's fence
    if (thread == 0) {
      // One fence orders the four puts before their signals (OpenSHMEM).
      constexpr int facing[4] = {south, north, east, west};
      nvshmem_fence();
      for (int s = north; s <= east; ++s)
        if (neighbour[s] >= 0) {
          const int t = neighbour[s];
          nvshmemx_signal_op(
              reinterpret_cast<std::uint64_t*>(there(t, reinterpret_cast<double*>(tp.signals))) +
                  facing[s],
              std::uint64_t(k + 1), NVSHMEM_SIGNAL_SET, pe_of(t));
        }
    }
    // The interior while the edges travel.
    jacobi::sweep_interior(cur, next, wm, h, w, thread, threads);
    __syncthreads();
  }
  if (thread == 0) nvshmem_quiet();
}

// Each block's cells of generation `generation` into `grid` (rows x cols).
__global__ void gather(double* tiles, job j, int generation, double* grid) {
  const jacobi::decomposition& d = j.d;
  const int t = j.pe * j.blocks + int(blockIdx.x), pr = t / d.px, pc = t % d.px;
  const int h = d.height(pr), w = d.width(pc);
  const tile_parts tp(tile_block(tiles, j, t), d);
  const double* last = tp.plane(generation);
  for (std::size_t k = threadIdx.x; k < std::size_t(h) * std::size_t(w); k += blockDim.x)
    grid[(std::size_t(d.first_row(pr)) + k / std::size_t(w)) * std::size_t(d.cols) +
         std::size_t(d.first_col(pc)) + k % std::size_t(w)] =
        last[(k / std::size_t(w) + 1) * tp.wm + k % std::size_t(w)];
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// One run of `iterations` sweeps from generation 0; the seconds from a
// barrier of all PEs before the launch to one after the kernel ended.
double run(double* tiles, job j, int iterations, int threads) {
  j.iterations = iterations;
  start_tiles<<<j.blocks, threads>>>(tiles, j);
  check(cudaGetLastError(), "start_tiles");
  check(cudaDeviceSynchronize(), "start_tiles");
  nvshmem_barrier_all();
  const auto start = std::chrono::steady_clock::now();
  void* args[] = {&tiles, &j};
  // A collective launch, so that every block is resident at once.
  if (nvshmemx_collective_launch(reinterpret_cast<const void*>(relax), dim3(unsigned(j.blocks)),
                                 dim3(unsigned(threads)), args, 0, 0) != 0)
    throw std::runtime_error("nvshmemx_collective_launch of " + std::to_string(j.blocks) +
                             " blocks of " + std::to_string(threads) + " threads failed");
  check(cudaGetLastError(), "relax's launch");
  check(cudaDeviceSynchronize(), "relax");
  nvshmem_barrier_all();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int number(const char* v, const std::string& name) {
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < 0 || n > (1 << 24))
    throw std::runtime_error("bad " + name + ": " + v);
  return int(n);
}

}  // namespace

int main(int argc, char** argv) try {
  int pe = -1, pes = 0, rows = 0, cols = 0, blocks = 0, threads = threads_most, iterations = 0,
      repeats = 1, check_iterations = 0;
  std::string id_file, out_path;
  const std::pair<const char*, int*> numbers[] = {{"--pe", &pe},
                                                  {"--pes", &pes},
                                                  {"--rows", &rows},
                                                  {"--cols", &cols},
                                                  {"--blocks", &blocks},
                                                  {"--threads", &threads},
                                                  {"--iterations", &iterations},
                                                  {"--repeats", &repeats},
                                                  {"--check-iterations", &check_iterations}};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    const auto named = std::find_if(std::begin(numbers), std::end(numbers),
                                    [&](const auto& n) { return a == n.first; });
    if (named != std::end(numbers))
      *named->second = number(v, a);
    else if (a == "--id-file")
      id_file = v;
    else if (a == "--out")
      out_path = v;
    else
      throw std::runtime_error("unknown option " + a);
  }
  if (pes < 1 || pe < 0 || pe >= pes || id_file.empty() || out_path.empty() || rows < 1 ||
      cols < 1 || blocks < 1 || threads < 1 || threads > threads_most || iterations < 1 ||
      repeats < 1)
    throw std::runtime_error(
        "usage: grma-jacobi2d-nvshmem --pe P --pes N --id-file F --out F --rows R --cols C "
        "--blocks B "
        "--iterations I [--threads T (at most 256)] [--repeats K] [--check-iterations K]");
  const jacobi::decomposition d = jacobi::split(rows, cols, pes * blocks);
  if (d.height(d.py - 1) < 1 || d.width(d.px - 1) < 1)
    throw std::runtime_error("a grid of " + std::to_string(rows) + " x " + std::to_string(cols) +
                             " has fewer cells than the tiles");
  // Whole 128-byte lines a tile, as grma's allocator aligns each PE's block.
  const std::size_t tile_doubles = (jacobi::tile_bytes(d) + 127) / 128 * 16;
  const std::size_t heap = tile_doubles * sizeof(double) * std::size_t(blocks);
  bench::nvshmem_join(pe, pes, id_file, heap + (std::size_t(256) << 20));
  auto* tiles = static_cast<double*>(nvshmem_malloc(heap));
  if (tiles == nullptr)
    throw std::runtime_error("nvshmem_malloc of " + std::to_string(heap) + " bytes failed");
  const job j{d, pe, blocks, tile_doubles, iterations};
  // Every block resident at once, or the kernel would wait for ever.
  int device = 0, multiprocessors = 0, resident = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, relax, threads, 0),
        "cudaOccupancy");
  if (resident * multiprocessors < blocks)
    throw std::runtime_error(std::to_string(blocks) + " blocks of " + std::to_string(threads) +
                             " threads: only " + std::to_string(resident * multiprocessors) +
                             " fit at once");

  std::FILE* out = std::fopen((out_path).c_str(), "w");
  if (out == nullptr) throw std::runtime_error("cannot write " + out_path);
  run(tiles, j, 1, threads);  // once before the clock: loading the kernel, the peer's pages
  std::vector<double> runs;
  for (int k = 0; k < repeats; ++k)
    runs.push_back(run(tiles, j, iterations, threads) / iterations * 1e6);
  std::sort(runs.begin(), runs.end());
  if (pe == 0) std::fprintf(out, "us_per_iteration %.6g\n", runs[runs.size() / 2]);

  double error = NAN;
  if (check_iterations > 0) {
    run(tiles, j, check_iterations, threads);
    const std::size_t cells = std::size_t(rows) * std::size_t(cols);
    double* grid = nullptr;
    check(cudaMalloc(&grid, cells * sizeof(double)), "cudaMalloc");
    gather<<<blocks, threads>>>(tiles, j, check_iterations, grid);
    check(cudaGetLastError(), "gather");
    std::vector<double> host(cells, 0.0);
    check(cudaMemcpy(host.data(), grid, cells * sizeof(double), cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    check(cudaFree(grid), "cudaFree");
    error = jacobi::error_of(host, jacobi::reference(rows, cols, check_iterations), d, pe * blocks,
                             blocks);
  }
  std::fprintf(out, "error %.3g\n", error);
  if (std::fclose(out) != 0) throw std::runtime_error("cannot write " + out_path);
  nvshmem_free(tiles);
  nvshmem_finalize();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "grma-jacobi2d-nvshmem: %s\n", e.what());
  return 1;
}
