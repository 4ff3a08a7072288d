#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <cuda/atomic>
#include <stdexcept>
#include <string>
#include <thread>

#include "baseline.hpp"

namespace spts {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("spts baseline: ") + what + ": " + cudaGetErrorString(e));
}

// The rows of one level, rows[first, first + count): their dependencies are
// all of earlier levels, solved by earlier launches.
__global__ void solve_level(const std::int64_t* row_start, const int* col, const double* value,
                            const double* b, const int* rows, int first, int count, double* x) {
  const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= count) return;
  const int i = rows[first + t];
  const std::int64_t diagonal = row_start[i + 1] - 1;
  double sum = 0;
  for (std::int64_t k = row_start[i]; k < diagonal; ++k) sum += value[k] * x[col[k]];
  x[i] = (b[i] - sum) / value[diagonal];
}

template <class T>
T* to_device(const std::vector<T>& host) {
  T* p = nullptr;
  check(cudaMalloc(&p, host.size() * sizeof(T) + 1), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return p;
}

// ---- host helper ----

// A solved row on its way to the other GPUs: the GPU writes `row`, then
// (after a system-scope fence) `x`, whose bits are `unsolved` until then.
struct outbox_entry {
  std::int64_t row;
  std::uint64_t x;
};

// The words the solve waits on hold x's bits, the value its own flag: no
// other data is read behind them, so relaxed loads and stores do. This
// GPU's rows at its scope; the rows from host memory, and the outbox, at
// the system's.
template <cuda::thread_scope S>
__device__ std::uint64_t load(const std::uint64_t* word) {
  return cuda::atomic_ref<std::uint64_t, S>(*const_cast<std::uint64_t*>(word))
      .load(cuda::memory_order_relaxed);
}
template <cuda::thread_scope S>
__device__ void store(std::uint64_t* word, std::uint64_t bits) {
  cuda::atomic_ref<std::uint64_t, S>(*word).store(bits, cuda::memory_order_relaxed);
}

// One GPU's sync-free solve: each warp takes the next of `rows` (level by
// level, so a row's inputs are taken before it: no warp waits on a row that
// no running warp holds) and waits on each input's x, this GPU's own
// (`x`) or another's (`remote`, in host memory). Every lane adds the
// products in column order, as the serial reference does; lane 0 stores x.
__global__ void solve_helped(const int* rows, int count, int* next, const std::int64_t* row_start,
                             const int* col, const double* value, const double* b,
                             const unsigned char* owner, int me, std::uint64_t* x,
                             const std::uint64_t* remote, const unsigned char* wanted,
                             outbox_entry* outbox, int* outbox_tail) {
  const int lane = int(threadIdx.x % 32);
  for (;;) {
    int at = 0;
    if (lane == 0) at = atomicAdd(next, 1);
    at = __shfl_sync(~0u, at, 0);
    if (at >= count) return;
    const int i = rows[at];
    const std::int64_t diagonal = row_start[i + 1] - 1;
    double sum = 0;
    for (std::int64_t first = row_start[i]; first < diagonal; first += 32) {
      const std::int64_t k = first + lane;
      double product = 0;
      if (k < diagonal) {
        const int j = col[k];
        const bool mine = owner[j] == me;
        std::uint64_t bits;
        while ((bits = mine ? load<cuda::thread_scope_device>(x + j)
                            : load<cuda::thread_scope_system>(remote + j)) == unsolved) {
        }
        product = value[k] * __longlong_as_double(static_cast<long long>(bits));
      }
      const int lanes = int(diagonal - first < 32 ? diagonal - first : 32);
      for (int l = 0; l < lanes; ++l) sum += __shfl_sync(~0u, product, l);
    }
    if (lane != 0) continue;
    const auto bits =
        static_cast<std::uint64_t>(__double_as_longlong((b[i] - sum) / value[diagonal]));
    store<cuda::thread_scope_device>(x + i, bits);
    if (!wanted[i]) continue;
    outbox_entry& e = outbox[atomicAdd(outbox_tail, 1)];
    e.row = i;
    __threadfence_system();  // the row before its x, which tells the helper the entry is whole
    store<cuda::thread_scope_system>(&e.x, bits);
  }
}

template <class T>
T* pinned(std::size_t count) {
  T* p = nullptr;
  check(cudaHostAlloc(&p, count * sizeof(T) + 1, cudaHostAllocMapped | cudaHostAllocPortable),
        "cudaHostAlloc");
  return p;
}

// Forwards `total` entries of one GPU's outbox, in the order the GPU took
// them, into the inbox (x's bits by row) the other GPUs read; gives up when
// `stop` is raised.
void forward(outbox_entry* outbox, int total, std::uint64_t* inbox, const std::atomic<bool>& stop) {
  for (int head = 0; head < total; ++head) {
    std::atomic_ref<std::uint64_t> x(outbox[head].x);
    std::uint64_t bits;
    while ((bits = x.load(std::memory_order_acquire)) == unsolved)
      if (stop.load(std::memory_order_relaxed)) return;
    std::atomic_ref<std::uint64_t>(inbox[outbox[head].row]).store(bits, std::memory_order_release);
  }
}

// One helper thread a GPU for one solve; stopped and joined however the
// solve ends (a failed or timed-out kernel throws).
struct helper_threads {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  ~helper_threads() {
    stop = true;
    for (std::thread& t : threads) t.join();
  }
};

}  // namespace

double run_host_helper(const csr& m, const std::vector<double>& b, int devices, int chunk,
                       int threads, std::vector<double>& x) {
  int first_device = 0;
  check(cudaGetDevice(&first_device), "cudaGetDevice");
  const std::size_t n = std::size_t(m.n);
  // Position k of the level order is GPU (k / chunk) mod devices's.
  std::vector<std::vector<int>> rows(static_cast<std::size_t>(devices));
  std::vector<unsigned char> owner(n), wanted(n, 0);
  {
    std::size_t k = 0;
    for (const auto& level : levels(m))
      for (const int i : level) {
        const int d = int((k++ / std::size_t(chunk)) % std::size_t(devices));
        owner[std::size_t(i)] = static_cast<unsigned char>(d);
        rows[std::size_t(d)].push_back(i);
      }
  }
  std::vector<int> sending(static_cast<std::size_t>(devices), 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::int64_t k = m.row_start[i]; k + 1 < m.row_start[i + 1]; ++k) {
      const auto j = std::size_t(m.col[std::size_t(k)]);
      if (owner[j] != owner[i] && !wanted[j]) wanted[j] = 1, ++sending[owner[j]];
    }
  const std::vector<std::uint64_t> none(n, unsolved);
  auto* inbox = pinned<std::uint64_t>(n);
  struct gpu {
    int *rows, *next, *tail;
    std::int64_t* row_start;
    int* col;
    double *value, *b;
    unsigned char *owner, *wanted;
    std::uint64_t* x;
    outbox_entry* outbox;
    int blocks;
  };
  std::vector<gpu> gpus(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    gpu& g = gpus[std::size_t(d)];
    check(cudaSetDevice(first_device + d), "cudaSetDevice");
    g.rows = to_device(rows[std::size_t(d)]);
    g.next = to_device(std::vector<int>{0});
    g.tail = to_device(std::vector<int>{0});
    g.row_start = to_device(m.row_start);
    g.col = to_device(m.col);
    g.value = to_device(m.value);
    g.b = to_device(b);
    g.owner = to_device(owner);
    g.wanted = to_device(wanted);
    g.x = to_device(none);
    g.outbox = pinned<outbox_entry>(std::size_t(sending[std::size_t(d)]));
    // Two blocks an SM, all resident: a spinning warp never keeps a row from
    // starting, and with more the spinning warps crowd out the solving ones
    // (decision 038).
    int per_sm = 0, sms = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, solve_helped, threads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, first_device + d),
          "cudaDeviceGetAttribute");
    g.blocks = std::min(per_sm, 2) * sms;
  }
  auto solve = [&] {
    for (std::size_t i = 0; i < n; ++i) inbox[i] = unsolved;
    for (int d = 0; d < devices; ++d) {
      gpu& g = gpus[std::size_t(d)];
      check(cudaSetDevice(first_device + d), "cudaSetDevice");
      check(cudaMemcpy(g.x, none.data(), n * sizeof(std::uint64_t), cudaMemcpyHostToDevice),
            "cudaMemcpy");
      check(cudaMemset(g.next, 0, sizeof(int)), "cudaMemset");
      check(cudaMemset(g.tail, 0, sizeof(int)), "cudaMemset");
      for (int e = 0; e < sending[std::size_t(d)]; ++e) g.outbox[e] = {-1, unsolved};
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    helper_threads helpers;
    for (int d = 0; d < devices; ++d)
      helpers.threads.emplace_back(forward, gpus[std::size_t(d)].outbox, sending[std::size_t(d)],
                                   inbox, std::cref(helpers.stop));
    const auto begin = std::chrono::steady_clock::now();
    for (int d = 0; d < devices; ++d) {
      const gpu& g = gpus[std::size_t(d)];
      check(cudaSetDevice(first_device + d), "cudaSetDevice");
      solve_helped<<<unsigned(g.blocks), unsigned(threads)>>>(
          g.rows, int(rows[std::size_t(d)].size()), g.next, g.row_start, g.col, g.value, g.b,
          g.owner, d, g.x, inbox, g.wanted, g.outbox, g.tail);
      check(cudaGetLastError(), "solve_helped");
    }
    // A solve that never ends (it should not) is an error, not a hang.
    for (int d = 0; d < devices; ++d) {
      check(cudaSetDevice(first_device + d), "cudaSetDevice");
      cudaError_t state;
      while ((state = cudaStreamQuery(nullptr)) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() - begin > std::chrono::seconds(60))
          throw std::runtime_error("spts host-helper baseline: GPU " + std::to_string(d) +
                                   " has not finished its rows after 60 s");
        std::this_thread::yield();
      }
      check(state, "solve_helped");
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - begin;
    return took.count();
  };
  solve();  // warm-up
  const double seconds = solve();
  x.assign(n, 0.0);
  std::vector<std::uint64_t> bits(n);
  for (int d = 0; d < devices; ++d) {
    gpu& g = gpus[std::size_t(d)];
    check(cudaSetDevice(first_device + d), "cudaSetDevice");
    check(cudaMemcpy(bits.data(), g.x, n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    for (const int i : rows[std::size_t(d)])
      std::memcpy(&x[std::size_t(i)], &bits[std::size_t(i)], sizeof(double));
    for (void* p :
         {static_cast<void*>(g.rows), static_cast<void*>(g.next), static_cast<void*>(g.tail),
          static_cast<void*>(g.row_start), static_cast<void*>(g.col), static_cast<void*>(g.value),
          static_cast<void*>(g.b), static_cast<void*>(g.owner), static_cast<void*>(g.wanted),
          static_cast<void*>(g.x)})
      cudaFree(p);
    cudaFreeHost(g.outbox);
  }
  cudaFreeHost(inbox);
  check(cudaSetDevice(first_device), "cudaSetDevice");
  return seconds;
}

double run_level_set(const csr& m, const std::vector<double>& b, int threads,
                     std::vector<double>& x) {
  const std::vector<std::vector<int>> by_level = levels(m);
  std::vector<int> rows;
  for (const auto& level : by_level) rows.insert(rows.end(), level.begin(), level.end());
  std::int64_t* row_start = to_device(m.row_start);
  int* col = to_device(m.col);
  double* value = to_device(m.value);
  double* rhs = to_device(b);
  int* ordered = to_device(rows);
  double* solution = to_device(std::vector<double>(std::size_t(m.n), 0.0));
  auto solve = [&] {
    int first = 0;
    for (const auto& level : by_level) {
      const int count = int(level.size());
      solve_level<<<unsigned((count + threads - 1) / threads), unsigned(threads)>>>(
          row_start, col, value, rhs, ordered, first, count, solution);
      first += count;
    }
    check(cudaGetLastError(), "solve_level");
  };
  solve();  // warm-up
  // The timed solve's x from NaN: a row it does not write shows in the check.
  check(cudaMemset(solution, 0xff, std::size_t(m.n) * sizeof(double)), "cudaMemset");
  cudaEvent_t begin, end;
  check(cudaEventCreate(&begin), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  check(cudaEventRecord(begin), "cudaEventRecord");
  solve();
  check(cudaEventRecord(end), "cudaEventRecord");
  check(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
  x.assign(std::size_t(m.n), 0.0);
  check(cudaMemcpy(x.data(), solution, x.size() * sizeof(double), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  for (void* p :
       {static_cast<void*>(row_start), static_cast<void*>(col), static_cast<void*>(value),
        static_cast<void*>(rhs), static_cast<void*>(ordered), static_cast<void*>(solution)})
    cudaFree(p);
  return double(ms) * 1e-3;
}

}  // namespace spts
