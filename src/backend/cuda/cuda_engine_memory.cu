#include "cuda_engine_memory.hpp"

#include <cuda_runtime.h>

#include <bit>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include "cuda_arena.hpp"
#include "grma/error.hpp"
#include "grma/detail/atomic.hpp"
#include "grma/detail/ring.hpp"

namespace grma::detail {
namespace {

// Ordering of the kernels below: the engine's earlier copies (a put's data)
// completed before the launch on the same stream, and the release half of
// each atomic makes them visible before the new value.
__global__ void add_signal(std::uint64_t* word, std::uint64_t value) {
  fetch_add_acq_rel<scope::system>(*word, value);
}

__global__ void claim_word(std::uint32_t* word, std::uint64_t* won) {
  *won = compare_exchange_acquire<scope::system>(*word, 0u, 1u) ? 1u : 0u;
}

// A remote atomic on a word of `width` bytes (the proxy's, and atomic_word's
// for the engine without a proxy); returns the old value.
__device__ std::uint64_t apply_atomic(void* word, std::uint32_t width, remote_atomic op, std::uint64_t operand,
                                      std::uint64_t compare) {
  if (width == 4)
    return apply_remote_atomic<scope::system>(*static_cast<std::uint32_t*>(word), op, std::uint32_t(operand),
                                              std::uint32_t(compare));
  return apply_remote_atomic<scope::system>(*static_cast<std::uint64_t*>(word), op, operand, compare);
}

__global__ void atomic_word(void* word, std::uint32_t width, remote_atomic op, std::uint64_t operand,
                            std::uint64_t compare, std::uint64_t* old) {
  *old = apply_atomic(word, width, op, operand, compare);
}

// ---- the proxy ------------------------------------------------------------------
//
// A copy through the driver costs 5-7 us before a running kernel sees it; a
// store to mapped host memory that the kernel polls, under 2 (design.md,
// "Across nodes"). So by default the engine hands its small writes and reads
// and its atomics to a proxy: one warp, in a kernel beside the ranks, that
// polls a ring in mapped host memory and applies each operation in order.
// One poller per GPU: many readers of host memory starve the copy engines.
//
// An operation is one step, then optionally a second after a release fence:
// a put's data and its notification (or signal) are one operation, so the
// ranks see them one poll after the engine hands them over. Its writes are
// to its own GPU, or, where its process drives several (host access under
// GRMA_DEVICES), to theirs too, through peer access: then its fences are at
// system scope, as the ranks' own between GPUs are (design.md, "Scope").
// What it reads, and a claim's word, may also be the node's first GPU's
// (the window table, the job's error claim).

enum class device_op_kind : std::uint8_t {
  store = 1,  // first_bytes of first_data at `first` (none: only the second step)
  copy_in,    // `length` bytes from mapped host memory at `host` to `first`
  copy_out,   // `length` bytes from `first` to mapped host memory at `host`
  claim,      // compare-and-swap 0 -> 1 at `first`; the answer (1 won, 2 lost) to `host`
  atomic,     // remote atomic `second_bytes` on the word of `first_bytes` at `first`: operand
              // `value`, compare `second`; the old value (8 bytes) to `host` (unless null)
  stop,
};
enum class device_op_then : std::uint8_t { none, store, add };  // second_data / `value` at `second`

inline constexpr std::uint32_t device_op_inline = 56;  // a store's most: a command's inline bytes
inline constexpr std::uint32_t device_op_second = 32;  // a second store's most: a notification
inline constexpr std::uint32_t device_op_copy = 4096;  // a copy's most: 512 bytes per warp load, 8 in flight

struct device_op {
  device_op_kind kind;
  device_op_then then;
  std::uint8_t first_bytes;
  std::uint8_t second_bytes;  // whole 8-byte words at an aligned `second`, or one 4-byte word
  std::uint32_t length;
  std::uint64_t first;
  std::uint64_t host;    // 16-byte aligned
  std::uint64_t second;
  std::uint64_t value;
  unsigned char first_data[device_op_inline];
  unsigned char second_data[device_op_second];
};
static_assert(sizeof(device_op) == 128 && offsetof(device_op, first_data) == 40 &&
                  offsetof(device_op, second_data) == 96,
              "the proxy reads an operation as 32 four-byte fields, a lane each");
using device_op_ring = ring<device_op>;
inline constexpr std::uint32_t proxy_capacity = 1024;

}  // namespace

// A proxy slot: the operation's 32 four-byte fields, each in a word with
// the slot's sequence number, so that the proxy's 32 lanes read the whole
// slot at once (one trip over PCIe, not a sequence number and then the
// payload) and a lane that read a word before the engine stored it sees it.
// The engine stores it (host code: word 0 last, with release); the proxy
// reads it with a lane per word (proxy), not with sequenced_slot::load.
template <>
struct ring_slot<device_op> : sequenced_slot<device_op, 32> {};

namespace {

static_assert(sizeof(ring_slot<device_op>) == 256, "a proxy slot is one load per lane");

inline constexpr unsigned full_warp = 0xffffffffu;

// Field `index` of the operation, from the lane that holds it.
__device__ std::uint32_t proxy_field(std::uint32_t mine, int index) { return __shfl_sync(full_warp, mine, index); }

// Fields `index` and `index + 1` of an operation in shared memory, as one
// 64-bit value (an address, a value).
__device__ std::uint64_t op_field64(const std::uint32_t* op, int index) {
  return std::uint64_t(op[index]) | std::uint64_t(op[index + 1]) << 32;
}

// Up to sixteen bytes from global memory (device or mapped host), not
// through L1 (another SM, or the host, wrote them), in the widest aligned
// loads: a word others change meanwhile (a ring's `consumed` count) is read
// whole, never a byte of its old value beside a byte of its new one.
__device__ uint4 load16(const unsigned char* from, std::uint32_t bytes) {
  uint4 v{0, 0, 0, 0};
  const auto at = reinterpret_cast<std::uintptr_t>(from);
  if (bytes == 16 && at % 16 == 0) {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(__cvta_generic_to_global(from))
                 : "memory");
    return v;
  }
  auto* out = reinterpret_cast<unsigned char*>(&v);
  for (std::uint32_t i = 0; i < bytes;) {
    if ((at + i) % 8 == 0 && bytes - i >= 8) {
      const std::uint64_t w = *reinterpret_cast<const volatile std::uint64_t*>(from + i);
      std::memcpy(out + i, &w, 8);
      i += 8;
    } else if ((at + i) % 4 == 0 && bytes - i >= 4) {
      const std::uint32_t w = *reinterpret_cast<const volatile std::uint32_t*>(from + i);
      std::memcpy(out + i, &w, 4);
      i += 4;
    } else {
      out[i] = *reinterpret_cast<const volatile unsigned char*>(from + i);
      ++i;
    }
  }
  return v;
}

__device__ void store16(unsigned char* to, uint4 v, std::uint32_t bytes) {
  if (bytes == 16 && reinterpret_cast<std::uintptr_t>(to) % 16 == 0) {
    *reinterpret_cast<uint4*>(to) = v;
    return;
  }
  const auto* in = reinterpret_cast<const unsigned char*>(&v);
  for (std::uint32_t i = 0; i < bytes; ++i) to[i] = in[i];
}

// The warp copies up to device_op_copy bytes: every load first, then every
// store, so that the loads' trips overlap.
__device__ void proxy_copy(unsigned char* to, const unsigned char* from, std::uint32_t length, unsigned lane) {
  constexpr std::uint32_t rounds = device_op_copy / (32 * 16);
  uint4 v[rounds];
#pragma unroll
  for (std::uint32_t r = 0; r < rounds; ++r) {
    const std::uint32_t at = (r * 32 + lane) * 16;
    if (at < length) v[r] = load16(from + at, length - at < 16 ? length - at : 16);
  }
#pragma unroll
  for (std::uint32_t r = 0; r < rounds; ++r) {
    const std::uint32_t at = (r * 32 + lane) * 16;
    if (at < length) store16(to + at, v[r], length - at < 16 ? length - at : 16);
  }
}

// Release: the writes before it are visible to the ranks that read what
// follows, those of the proxy's GPU, or of every GPU it writes (`peers`).
__device__ void proxy_fence(bool peers) {
  if (peers)
    fence_release<scope::system>();
  else
    fence_release<scope::device>();
}

__device__ device_op_kind proxy_kind(std::uint32_t header) {
  return device_op_kind(header & 0xffu);
}

// The first step of operation `op` (its 32 fields in shared memory, where
// every lane reads them: a broadcast, not a shuffle per field). Every lane
// takes part.
__device__ void proxy_first(const std::uint32_t* op, unsigned lane, bool peers) {
  const std::uint32_t header = op[0];
  const device_op_kind kind = proxy_kind(header);
  const std::uint32_t first_bytes = (header >> 16) & 0xffu, second_bytes = header >> 24;
  const std::uint32_t length = op[1];
  auto* first = reinterpret_cast<unsigned char*>(op_field64(op, 2));
  auto* host = reinterpret_cast<unsigned char*>(op_field64(op, 4));
  constexpr unsigned first_lane = offsetof(device_op, first_data) / 4;
  constexpr unsigned second_lane = offsetof(device_op, second_data) / 4;
  switch (kind) {
    case device_op_kind::store:
      // Lanes 10-23 hold the data, four bytes each.
      if (lane >= first_lane && lane < second_lane) {
        const std::uint32_t at = (lane - first_lane) * 4;
        if (at < first_bytes) {
          if (at + 4 <= first_bytes && reinterpret_cast<std::uintptr_t>(first + at) % 4 == 0) {
            *reinterpret_cast<std::uint32_t*>(first + at) = op[lane];
          } else {
            for (std::uint32_t i = 0; at + i < first_bytes && i < 4; ++i)
              first[at + i] = (unsigned char)(op[lane] >> (8 * i));
          }
        }
      }
      break;
    case device_op_kind::copy_in: proxy_copy(first, host, length, lane); break;
    case device_op_kind::copy_out: proxy_copy(host, first, length, lane); break;
    case device_op_kind::claim:
      if (lane == 0) {
        const bool won = compare_exchange_acquire<scope::system>(*reinterpret_cast<std::uint32_t*>(first), 0u, 1u);
        store_relaxed<scope::system>(*reinterpret_cast<std::uint32_t*>(host), won ? 1u : 2u);
      }
      break;
    case device_op_kind::atomic:
      if (lane == 0) {
        // Release, as before a second step: the earlier operations' writes
        // (a put's data before its signal) are visible before the word's
        // new value. The barrier after each operation orders the other lanes'.
        proxy_fence(peers);
        const std::uint64_t old = apply_atomic(first, first_bytes, remote_atomic(second_bytes),
                                               op_field64(op, 8), op_field64(op, 6));
        if (host != nullptr)
          store_relaxed<scope::system>(*reinterpret_cast<std::uint64_t*>(host), old);
      }
      break;
    case device_op_kind::stop: break;
  }
}

// Applies operation `op` (its 32 fields in shared memory). Every lane takes
// part.
__device__ void proxy_apply(const std::uint32_t* op, unsigned lane, bool peers) {
  proxy_first(op, lane, peers);
  const std::uint32_t header = op[0];
  const auto then = device_op_then((header >> 8) & 0xffu);
  if (then == device_op_then::none) return;
  // Release: every lane's first step (a put's data), and every earlier
  // operation's writes, are visible before the second step's strong stores
  // (to the ranks that read them: this GPU's, or the peers'). The barrier
  // orders the other lanes' writes before the storing lanes' fences, which
  // are cumulative (as __syncthreads and one thread's fence are for a block).
  __syncwarp();
  proxy_fence(peers);
  auto* second = reinterpret_cast<unsigned char*>(op_field64(op, 6));
  const std::uint32_t second_bytes = header >> 24;
  constexpr unsigned second_lane = offsetof(device_op, second_data) / 4;
  // System scope, as the ranks' own signal atomics and stores: ranks of the
  // node's other GPUs may add to or set the same word.
  if (then == device_op_then::add) {
    if (lane == 0)
      fetch_add_relaxed<scope::system>(*reinterpret_cast<std::uint64_t*>(second),
                                       op_field64(op, 8));
    return;
  }
  // A 4-byte word ranks may poll (a p of 4 bytes): one store.
  if (second_bytes == 4) {
    if (lane == second_lane)
      store_relaxed<scope::system>(*reinterpret_cast<std::uint32_t*>(second), op[lane]);
    return;
  }
  // Whole words (lanes 24, 26, 28, 30, each with the field above its own):
  // a notification's words are each checked by their sequence number, so
  // none may land halfway.
  if (lane >= second_lane && (lane - second_lane) % 2 == 0 &&
      (lane - second_lane) * 4 < second_bytes)
    store_relaxed<scope::system>(reinterpret_cast<std::uint64_t*>(second)[(lane - second_lane) / 2],
                                 op_field64(op, int(lane)));
}

// Release: the proxy's writes (a copy out's data, a claim's answer) are
// visible to the engine, and so are the proxy's reads of the slots, before
// `consumed` says so. The barrier orders the other lanes' writes before
// lane 0's release, which is cumulative (as __syncthreads and one thread's
// fence are for a block); a fence on every lane measured 0.5 us more.
__device__ void proxy_release(device_op_ring* inbox, std::uint64_t head, unsigned lane) {
  __syncwarp();
  if (lane == 0) store_release<scope::system>(inbox->consumed, head);
}

// Slots read in one trip while operations keep coming: the loads overlap,
// so a busy proxy serves up to this many a trip over PCIe (decisions 026,
// 041); an idle one reads only the next slot, since its polls are PCIe
// traffic the copy engines share. Eight keep the proxy within 64 registers
// (below); sixteen spilled, and were slower.
inline constexpr int proxy_batch = 8;

// At most 64 registers a thread: the proxy must fit in the room one rank's
// block leaves on a multiprocessor (plan_cuda reserves no more), or it
// never starts and the engine waits for it (decision 026). `peers`: it
// writes other GPUs' memory too (system-scope fences).
__global__ void __maxnreg__(64) proxy(device_op_ring* inbox, std::uint32_t mask, bool peers) {
  const unsigned lane = threadIdx.x;
  int reading = 1;  // slots a trip reads: proxy_batch after a trip that found work
  // The trip's slots, a field per lane: in shared memory, since registers
  // for them all beside an operation's would take the proxy beyond its 64.
  __shared__ std::uint32_t fields[proxy_batch][32];
  for (std::uint64_t head = 0;;) {
    int ready = 0;  // consecutive slots from `head` found whole
    bool later_reads = false;  // a later slot's operation reads memory
    while (ready == 0) {
      std::uint64_t word[proxy_batch];
      // The later slots first, relaxed, then the next one with acquire,
      // which pairs with the engine's release of its word 0 (x86 stores
      // stay in order, so any word seen means what the engine wrote before
      // is there): an acquire orders the loads after it, so it comes last
      // for the trip's loads to overlap.
#pragma unroll
      for (int k = 1; k < proxy_batch; ++k)
        word[k] = k < reading
                      ? load_relaxed<scope::system>(inbox->slots()[(head + k) & mask].word[lane])
                      : 0;
      word[0] = load_acquire<scope::system>(inbox->slots()[head & mask].word[lane]);
#pragma unroll
      for (int k = 0; k < proxy_batch; ++k) {
        // Warp-uniform conditions: every lane takes part in the vote or none.
        if (ready == k && k < reading &&
            __all_sync(full_warp, std::uint32_t(word[k] >> 32) == std::uint32_t(head + k + 1))) {
          ready = k + 1;
          fields[k][lane] = std::uint32_t(word[k]);
          later_reads |= k > 0 && device_op_kind(proxy_field(std::uint32_t(word[k]), 0) & 0xffu) !=
                                      device_op_kind::store;
        }
      }
      reading = ready == 0 ? 1 : proxy_batch;
    }
    // A later slot was read relaxed: before its operation reads what the
    // engine ordered before the slot (a copy in's scratch; a copy out's,
    // a claim's or an atomic's device memory, written by ranks or copies
    // the engine saw land), lane 0's fence makes its reads of the slots
    // acquire. A store only writes. (The fence is cuda::'s own: atomic.hpp
    // has no acquire fence, as nothing else in grma fences to acquire.)
    if (later_reads && lane == 0)
      cuda::atomic_thread_fence(cuda::std::memory_order_acquire, cuda::thread_scope_system);
    // Lane 0's acquire orders the other lanes' reads of the scratch after it too.
    __syncwarp();
    // The barrier above also makes every lane's fields visible to the others.
    for (int k = 0; k < ready; ++k) {
      if (proxy_kind(fields[k][0]) == device_op_kind::stop) {
        proxy_release(inbox, head + k + 1, lane);
        return;
      }
      proxy_apply(fields[k], lane, peers);
      // The next operation's lanes see this one's writes (a store, then a
      // copy out of the same bytes): in order, as the engine pushed them.
      __syncwarp();
    }
    // After the trip's operations: the engine waits for reads and claims,
    // and acknowledges writes once they are in place; the release costs the
    // proxy about 0.5 us, after the operations' own writes.
    head += std::uint64_t(ready);
    proxy_release(inbox, head, lane);
  }
}

// Pinned host buffers, reused: allocating pinned memory costs far more than
// the copies it serves. Sizes are powers of two from 64 KiB. What it holds
// is bounded by the engine's lanes (data_lanes): as much as they have held
// at once.
class pinned_pool {
 public:
  pinned_pool() = default;
  pinned_pool(const pinned_pool&) = delete;
  pinned_pool& operator=(const pinned_pool&) = delete;
  ~pinned_pool() {
    for (auto& [bytes, buffer] : free_) cudaFreeHost(buffer);
  }

  std::shared_ptr<unsigned char> take(std::size_t bytes) {
    const std::size_t size = std::bit_ceil(bytes < min_bytes ? min_bytes : bytes);
    unsigned char* buffer = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        buffer = it->second;
        free_.erase(it);
      }
    }
    if (buffer == nullptr)
      cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&buffer), size, cudaHostAllocPortable),
                 "cudaHostAlloc of a staging buffer");
    return std::shared_ptr<unsigned char>(buffer, [this, size](unsigned char* b) {
      const std::lock_guard<std::mutex> lock(mutex_);
      free_.emplace(size, b);
    });
  }

 private:
  static constexpr std::size_t min_bytes = std::size_t{64} << 10;
  std::mutex mutex_;
  std::multimap<std::size_t, unsigned char*> free_;
};

class cuda_engine_memory final : public engine_memory {
 public:
  // On the thread that launches the rank kernel, before the launch.
  cuda_engine_memory(int device, std::span<const unsigned char> heap_reached, bool use_proxy,
                     bool peers)
      : device_(device), peers_(peers), heap_reached_(heap_reached) {
    // Loads the atomics' kernels now: loaded lazily at their first launch,
    // they would wait for the running rank kernel, which may wait for them.
    try {
      cudaFuncAttributes attributes{};
      cuda_check(cudaFuncGetAttributes(&attributes, add_signal), "loading the network engine's kernels");
      cuda_check(cudaFuncGetAttributes(&attributes, claim_word), "loading the network engine's kernels");
      cuda_check(cudaFuncGetAttributes(&attributes, atomic_word), "loading the network engine's kernels");
      // Non-blocking: the legacy default stream would wait for the rank kernel.
      cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags (network engine)");
      cuda_check(cudaMalloc(reinterpret_cast<void**>(&answer_), sizeof *answer_), "cudaMalloc (network engine)");
      cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&scratch_), scratch_bytes + small_bytes,
                               cudaHostAllocMapped | cudaHostAllocPortable),
                 "cudaHostAlloc (network engine)");
      void* scratch_device = nullptr;
      cuda_check(cudaHostGetDevicePointer(&scratch_device, scratch_, 0),
                 "cudaHostGetDevicePointer of the network engine's scratch");
      scratch_device_ = static_cast<unsigned char*>(scratch_device);
      if (use_proxy) prepare_proxy();
    } catch (...) {
      release();
      throw;
    }
  }
  ~cuda_engine_memory() override { release(); }
  cuda_engine_memory(const cuda_engine_memory&) = delete;
  cuda_engine_memory& operator=(const cuda_engine_memory&) = delete;

  void bind() override { cuda_check(cudaSetDevice(device_), "cudaSetDevice (network engine)"); }
  bool spin_when_idle() const override { return true; }
  memory_place devices_place() const override { return memory_place::device; }
  void unbind() override { stop_proxy(); }

  // Where the network reaches GPU memory itself (UCX with CUDA), it moves
  // chunks of direct_bytes and more of the heap (cudaMalloc'd: CUDA IPC
  // takes it; a rank's other buffers, a __device__ variable or managed
  // memory, it may not). Smaller ones still go through pinned memory and
  // the proxy, since a message of GPU memory costs UCX a copy on a stream of
  // its own at each end: over CUDA IPC a notified put's round trip was 85 us
  // at every size from 64 B to 256 KiB, against 36 us staged at 64 B and 80
  // at 32 KiB; at 256 KiB, 156 us staged against 46 direct (decision 026).
  // A CUDA-aware MPI takes the same rule, unmeasured.
  bool network_moves(const void* at, std::size_t bytes) const override {
    const auto p = reinterpret_cast<std::uintptr_t>(at);
    const auto heap = reinterpret_cast<std::uintptr_t>(heap_reached_.data());
    return bytes >= direct_bytes && p >= heap && bytes <= heap_reached_.size() &&
           p - heap <= heap_reached_.size() - bytes;
  }
  std::shared_ptr<unsigned char> staging(std::size_t bytes) override { return pool_.take(bytes); }

  // Without the proxy, all copies go on one stream, so each starts after
  // the one before has landed: writes land in call order, and a read sees
  // every earlier write. A read waits for its copy; a small write's source is
  // first copied into pinned scratch, so that the caller may reuse its own at
  // once and the write goes on while the engine does other work.
  //
  // With it, reads and writes up to device_op_copy bytes are the proxy's
  // (through the mapped scratch), in order with its other operations; larger
  // ones are copies, which wait for the proxy's earlier operations, and which
  // later operations wait for (push). Reads and writes wait for their copy;
  // a staged write does not (write_staged).
  void read(void* to, const void* from, std::size_t bytes) override {
    if (bytes == 0) return;
    unsigned char* landing = scratch_ + scratch_bytes;  // pinned: a pageable one costs a second copy
    if (inbox_ != nullptr && bytes <= device_op_copy) {
      device_op op{};
      op.kind = device_op_kind::copy_out;
      op.length = std::uint32_t(bytes);
      op.first = reinterpret_cast<std::uint64_t>(from);
      op.host = reinterpret_cast<std::uint64_t>(scratch_device_ + scratch_bytes);
      apply_now(op);  // the data is in the landing
      std::memcpy(to, landing, bytes);
      return;
    }
    flush_proxy();  // a read sees every earlier write
    if (bytes > small_bytes) {  // a staging buffer's (pinned), or a node's arrivals
      enqueue(to, from, bytes, "reading GPU memory");
      return wait("reading GPU memory");
    }
    enqueue(landing, from, bytes, "reading GPU memory");
    wait("reading GPU memory");
    std::memcpy(to, landing, bytes);
  }

  void write(void* to, const void* from, std::size_t bytes) override {
    if (bytes == 0) return;
    if (inbox_ != nullptr) {
      if (bytes <= device_op_copy) {
        device_op op{};
        op.first = reinterpret_cast<std::uint64_t>(to);
        if (bytes <= device_op_inline) {
          op.kind = device_op_kind::store;
          op.first_bytes = std::uint8_t(bytes);
          std::memcpy(op.first_data, from, bytes);
        } else {
          op.kind = device_op_kind::copy_in;
          op.length = std::uint32_t(bytes);
          op.host = reinterpret_cast<std::uint64_t>(scratch_device_) + take_scratch(from, bytes);
        }
        return stage(op);
      }
      flush_proxy();
    }
    if (bytes > small_bytes) {  // from a staging buffer, which the caller reuses next
      enqueue(to, from, bytes, "writing GPU memory");
      return wait("writing GPU memory");
    }
    unsigned char* source = scratch_ + take_scratch(from, bytes);
    enqueue(to, source, bytes, "writing GPU memory");
  }

  // On the copies' stream, after the proxy's earlier writes; later proxy
  // operations wait for it (push). The stage is let go of in progress().
  void write_staged(void* to, std::shared_ptr<unsigned char> stage, std::size_t bytes) override {
    if (bytes <= small_bytes) return write(to, stage.get(), bytes);
    flush_proxy();
    cudaEvent_t done = nullptr;
    if (free_events_.empty()) {
      cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate (network engine)");
    } else {
      done = free_events_.back();
      free_events_.pop_back();
    }
    // Held before the copy is queued: should queueing or recording fail,
    // release() still waits for the stream before it lets the stage go.
    const void* from = stage.get();
    staged_writes_.push_back({done, std::move(stage)});
    enqueue(to, from, bytes, "writing GPU memory");
    cuda_check(cudaEventRecord(done, stream_), "cudaEventRecord (network engine)");
  }

  bool progress() override {
    bool any = false;
    while (!staged_writes_.empty()) {
      const cudaError_t e = cudaEventQuery(staged_writes_.front().done);
      if (e == cudaErrorNotReady) break;
      cuda_check(e, "writing GPU memory");
      retire_staged_write();
      any = true;
    }
    return any;
  }

  void flush() override {
    flush_proxy();
    if (pending_) wait("writing GPU memory");
  }

  // A proxy operation waits for the staged writes before it (push), so a
  // mark covers them through the proxy's count, except those made since the
  // last operation: their count is kept beside the mark.
  std::uint64_t mark() override {
    push_staged();
    if (inbox_ != nullptr && !staged_writes_.empty())
      marks_after_copies_.emplace_back(pushed_, staged_landed_ + staged_writes_.size());
    return pushed_;
  }

  bool landed(std::uint64_t mark) override {
    if (inbox_ == nullptr) return engine_memory::landed(mark);  // the copies' stream: a flush
    while (!marks_after_copies_.empty() && marks_after_copies_.front().first <= mark) {
      const std::uint64_t copies = marks_after_copies_.front().second;
      if (staged_landed_ < copies) progress();
      if (staged_landed_ < copies) return false;
      marks_after_copies_.pop_front();
    }
    // Acquire: pairs with the proxy's release; what it wrote is in place.
    if (load_acquire<scope::system>(inbox_->consumed) >= mark) return true;
    check_proxy(++landed_polls_);
    return false;
  }

  void read_window_slot(const window_table& t, std::uint32_t slot, window_slot& s) override {
    read(&s, &t.slots[slot], sizeof s);
  }
  void read_window_entry(const window_table& t, std::uint32_t slot, std::int32_t target,
                         window_entry& e) override {
    read(&e, &t.entry(slot, target), sizeof e);
  }

  std::uint64_t consumed(notification_ring& q) override {
    std::uint64_t n = 0;
    read(&n, &q.consumed, sizeof n);
    return n;
  }

  void publish(notification_ring& q, std::uint32_t capacity, std::uint64_t ticket,
               const notification& n) override {
    // The four self-validating words in one write: the consumer takes the
    // entry only once it finds the sequence number in all of them.
    std::uint64_t words[4];
    ring_slot<notification>::words_of(std::uint32_t(ticket + 1), n, words);
    std::uint64_t* at = q.slots()[ticket & (capacity - 1)].word;
    if (inbox_ != nullptr) return then(device_op_then::store, at, words, sizeof words, 0);
    write(at, words, sizeof words);
  }

  void signal(std::uint64_t& word, signal_op op, std::uint64_t value) override {
    if (inbox_ != nullptr) {
      if (op == signal_op::add) return then(device_op_then::add, &word, nullptr, 0, value);
      return then(device_op_then::store, &word, &value, sizeof value, 0);
    }
    if (op != signal_op::add) return write(&word, &value, sizeof value);
    add_signal<<<1, 1, 0, stream_>>>(&word, value);
    cuda_check(cudaGetLastError(), "adding to a signal word");
    pending_ = true;
  }

  void load_arrivals(const collective_arrival* from, std::size_t count,
                     collective_arrival* to) override {
    read(to, from, count * sizeof *from);
  }

  // Two strided copies, not two per arrival: all payloads, then all stamps.
  void store_arrivals(collective_arrival* to, const collective_arrival* from,
                      std::size_t count) override {
    if (count == 0) return;
    flush_proxy();
    // The payloads' copy lands before the stamps' starts (one stream).
    constexpr std::size_t pitch = sizeof(collective_arrival);
    cuda_check(cudaMemcpy2DAsync(to->payload, pitch, from->payload, pitch, sizeof to->payload, count,
                                 cudaMemcpyDefault, stream_),
               "writing arrivals");
    cuda_check(cudaMemcpy2DAsync(&to->stamp, pitch, &from->stamp, pitch, sizeof to->stamp, count,
                                 cudaMemcpyDefault, stream_),
               "writing arrivals");
    wait("writing arrivals");  // `from` is the caller's again
  }

  bool claim_error(std::uint32_t& claim) override {
    if (inbox_ != nullptr) {
      device_op op{};
      op.kind = device_op_kind::claim;
      op.first = reinterpret_cast<std::uint64_t>(&claim);
      op.host = reinterpret_cast<std::uint64_t>(scratch_device_ + scratch_bytes);
      apply_now(op);  // the answer is there
      return *reinterpret_cast<volatile std::uint32_t*>(scratch_ + scratch_bytes) == 1u;
    }
    claim_word<<<1, 1, 0, stream_>>>(&claim, answer_);
    cuda_check(cudaGetLastError(), "claiming the job's error record");
    std::uint64_t won = 0;
    read(&won, answer_, sizeof won);
    return won != 0;
  }

  // One store of the whole word, after the writes before it: with the
  // proxy, a second step (after its release fence), of 8 bytes as a
  // signal's or of 4; without it, a copy of the word after the copies
  // before it on the one stream.
  void store_word(void* at, std::uint32_t width, std::uint64_t value) override {
    if (width == 8) return signal(*static_cast<std::uint64_t*>(at), signal_op::set, value);
    const auto word = std::uint32_t(value);
    if (inbox_ != nullptr) return then(device_op_then::store, at, &word, sizeof word, 0);
    write(at, &word, sizeof word);
  }

  std::uint64_t atomic(void* word, std::uint32_t width, remote_atomic op, std::uint64_t operand,
                       std::uint64_t compare) override {
    if (inbox_ != nullptr) {
      apply_now(atomic_op(word, width, op, operand, compare,
                          reinterpret_cast<std::uint64_t>(scratch_device_ + scratch_bytes)));
      return *reinterpret_cast<volatile std::uint64_t*>(scratch_ + scratch_bytes);  // the answer
    }
    launch_atomic(word, width, op, operand, compare);
    std::uint64_t old = 0;
    read(&old, answer_, sizeof old);
    return old;
  }

  // Queued like a write: the proxy's, after the writes before it; without
  // the proxy, a kernel on the copies' stream, which a flush waits for.
  void atomic_unanswered(void* word, std::uint32_t width, remote_atomic op, std::uint64_t operand,
                         std::uint64_t compare) override {
    // A set or add of a whole word is a signal's: with the proxy, the second
    // step of the operation that writes the data before it (a put_signal's
    // put, then its atomic); without it, a copy of the word or add_signal.
    if (width == 8 && (op == remote_atomic::set || op == remote_atomic::add))
      return signal(*static_cast<std::uint64_t*>(word),
                    op == remote_atomic::add ? signal_op::add : signal_op::set, operand);
    if (inbox_ != nullptr) {
      push_staged();
      return push(atomic_op(word, width, op, operand, compare, 0));
    }
    launch_atomic(word, width, op, operand, compare);
  }

 private:
  // A remote atomic for the proxy; its old value to `answer` (mapped host
  // memory, as the proxy addresses it), unless 0.
  static device_op atomic_op(void* word, std::uint32_t width, remote_atomic op,
                             std::uint64_t operand, std::uint64_t compare, std::uint64_t answer) {
    device_op o{};
    o.kind = device_op_kind::atomic;
    o.first_bytes = std::uint8_t(width);
    o.second_bytes = std::uint8_t(op);
    o.first = reinterpret_cast<std::uint64_t>(word);
    o.second = compare;
    o.value = operand;
    o.host = answer;
    return o;
  }

  // Without the proxy: the atomic's kernel on the copies' stream, after the
  // copies before it; its old value to answer_.
  void launch_atomic(void* word, std::uint32_t width, remote_atomic op, std::uint64_t operand,
                     std::uint64_t compare) {
    atomic_word<<<1, 1, 0, stream_>>>(word, width, op, operand, compare, answer_);
    cuda_check(cudaGetLastError(), "applying a remote atomic");
    pending_ = true;
  }

  // Copies and writes up to this size go through the scratch; larger ones
  // are a staging buffer's.
  static constexpr std::size_t small_bytes = device_op_copy;
  // The least chunk the network moves in GPU memory itself (staging()).
  static constexpr std::size_t direct_bytes = std::size_t{64} << 10;
  // Small writes between two waits (a write that finds it full waits).
  static constexpr std::size_t scratch_bytes = std::size_t{1} << 20;

  // Room in the scratch for `bytes` copied from `from`; its offset. Once
  // the scratch is full, waits for everything that reads it.
  std::size_t take_scratch(const void* from, std::size_t bytes) {
    if (scratch_used_ + bytes > scratch_bytes) flush();  // frees the scratch
    const std::size_t at = scratch_used_;
    scratch_used_ += (bytes + 15) & ~std::size_t{15};  // the proxy's copies read 16-byte words
    std::memcpy(scratch_ + at, from, bytes);
    return at;
  }

  void enqueue(void* to, const void* from, std::size_t bytes, const char* what) {
    cuda_check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_), what);
    pending_ = true;
  }

  // Spins: a blocking synchronize adds the thread's wake-up to every copy.
  void wait(const char* what) {
    cudaError_t e = cudaSuccess;
    while ((e = cudaStreamQuery(stream_)) == cudaErrorNotReady) {
    }
    cuda_check(e, what);
    pending_ = false;
    if (inbox_ == nullptr) scratch_used_ = 0;  // every copy from it has landed
    while (!staged_writes_.empty()) retire_staged_write();
  }

  // The oldest staged write has landed: its stage goes back to its lane.
  void retire_staged_write() {
    free_events_.push_back(staged_writes_.front().done);
    staged_writes_.pop_front();
    ++staged_landed_;
  }

  // Mapped host memory: the proxy's ring. The kernel is loaded now (see the
  // constructor) and launched at the first operation (design.md: not before
  // the rank kernel runs).
  void prepare_proxy() {
    const std::size_t bytes = device_op_ring::bytes_for(proxy_capacity);
    cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&proxy_memory_), bytes,
                             cudaHostAllocMapped | cudaHostAllocPortable),
               "cudaHostAlloc of the network engine's proxy ring");
    std::memset(proxy_memory_, 0, bytes);
    void* device_memory = nullptr;
    cuda_check(cudaHostGetDevicePointer(&device_memory, proxy_memory_, 0),
               "cudaHostGetDevicePointer of the proxy ring");
    inbox_ = ring_init<device_op>(proxy_memory_, proxy_capacity);
    inbox_device_ = reinterpret_cast<device_op_ring*>(device_memory);
    cudaFuncAttributes attributes{};
    cuda_check(cudaFuncGetAttributes(&attributes, proxy), "loading the network engine's proxy");
    cuda_check(cudaStreamCreateWithFlags(&proxy_stream_, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags (network engine's proxy)");
  }

  // A write waits for what comes next: a notification or signal after it
  // goes in the same operation (then).
  void stage(const device_op& op) {
    push_staged();
    staged_ = op;
    has_staged_ = true;
  }

  void push_staged() {
    if (!has_staged_) return;
    has_staged_ = false;
    push(staged_);
  }

  // A notification's or signal's store, or a signal's add, after the staged
  // write (if any) in the same operation.
  void then(device_op_then kind, void* at, const void* data, std::size_t bytes, std::uint64_t value) {
    device_op op{};
    if (has_staged_) {
      op = staged_;
      has_staged_ = false;
    } else {
      op.kind = device_op_kind::store;
    }
    op.then = kind;
    op.second = reinterpret_cast<std::uint64_t>(at);
    op.second_bytes = std::uint8_t(bytes);
    if (bytes != 0) std::memcpy(op.second_data, data, bytes);
    op.value = value;
    push(op);
  }

  // The engine is the ring's only producer: tickets are its own count.
  void push(const device_op& op) {
    if (!proxy_started_) {
      proxy_started_ = true;
      proxy<<<1, 32, 0, proxy_stream_>>>(inbox_device_, proxy_capacity - 1, peers_);
      cuda_check(cudaGetLastError(), "launching the network engine's proxy");
    }
    if (pending_) wait("writing GPU memory");  // queued copies land first
    const std::uint64_t ticket = pushed_++;
    for (std::uint32_t spins = 0; !ring_has_credit<scope::system>(*inbox_, proxy_capacity, ticket, known_consumed_);)
      check_proxy(++spins);
    ring_publish<scope::system>(*inbox_, proxy_capacity, ticket, op);
  }

  // Pushes `op` after what is staged and waits until the proxy has applied
  // it: its writes (a copy out's data, a claim's answer) are then visible.
  void apply_now(const device_op& op) {
    push_staged();
    push(op);
    flush_proxy();
  }

  // Waits until the proxy has applied everything pushed (and staged).
  void flush_proxy() {
    if (inbox_ == nullptr) return;
    push_staged();
    // Acquire: pairs with the proxy's release of `consumed`; its writes
    // (a copy out's data, a claim's answer) are visible once the count says so.
    for (std::uint32_t spins = 0; load_acquire<scope::system>(inbox_->consumed) < pushed_;) check_proxy(++spins);
    known_consumed_ = pushed_;
    scratch_used_ = 0;  // the proxy has read every copy in from it
  }

  // The proxy ends only when told; ended otherwise (the GPU's context
  // failed: a rank kernel's crash), waiting for it would never end.
  void check_proxy(std::uint32_t spins) {
    if (spins % 4096 != 0) return;
    const cudaError_t e = cudaStreamQuery(proxy_stream_);
    if (e == cudaErrorNotReady) return;
    throw error(errc::device_error, -1, call::runtime,
                std::string("grma: the network engine's proxy on GPU ") + std::to_string(device_) +
                    " has ended: " + (e == cudaSuccess ? "unexpectedly" : cudaGetErrorString(e)));
  }

  void stop_proxy() {
    if (!proxy_started_ || proxy_stopped_) return;
    proxy_stopped_ = true;
    if (cudaStreamQuery(proxy_stream_) != cudaErrorNotReady) return;  // already ended (a failed context)
    try {
      push_staged();
      device_op op{};
      op.kind = device_op_kind::stop;
      push(op);
    } catch (const error&) {
      return;
    }
    cudaStreamSynchronize(proxy_stream_);
  }

  void release() {
    stop_proxy();
    if (proxy_stream_ != nullptr) cudaStreamDestroy(proxy_stream_);
    if (proxy_memory_ != nullptr) cudaFreeHost(proxy_memory_);
    proxy_stream_ = nullptr;
    proxy_memory_ = nullptr;
    inbox_ = nullptr;
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);  // copies from the scratch and stages
    for (const staged_write& w : staged_writes_) free_events_.push_back(w.done);
    staged_writes_.clear();
    for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
    free_events_.clear();
    if (scratch_ != nullptr) cudaFreeHost(scratch_);
    if (answer_ != nullptr) cudaFree(answer_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    scratch_ = nullptr;
    answer_ = nullptr;
    stream_ = nullptr;
  }

  int device_;
  bool peers_;                                   // it writes other GPUs' memory too
  std::span<const unsigned char> heap_reached_;  // empty: the network reaches no GPU memory
  cudaStream_t stream_ = nullptr;
  std::uint64_t* answer_ = nullptr;  // device memory: claim_word's and atomic_word's answer
  // Pinned and mapped: small writes' sources (scratch_bytes), then small
  // reads' landing (small_bytes), which is also a claim's answer.
  unsigned char* scratch_ = nullptr;
  unsigned char* scratch_device_ = nullptr;  // the same, as the proxy addresses it
  std::size_t scratch_used_ = 0;
  bool pending_ = false;  // copies or kernels queued since the last wait
  pinned_pool pool_;
  // Large writes on the stream not waited for, oldest first (after pool_:
  // their stages return to it).
  struct staged_write {
    cudaEvent_t done;
    std::shared_ptr<unsigned char> stage;
  };
  std::deque<staged_write> staged_writes_;
  std::vector<cudaEvent_t> free_events_;
  std::uint64_t staged_landed_ = 0;  // staged writes retired so far
  // (mark, staged writes issued by then) for marks taken with some in flight.
  std::deque<std::pair<std::uint64_t, std::uint64_t>> marks_after_copies_;
  // The proxy (null inbox_: copies and the one-thread kernels instead).
  unsigned char* proxy_memory_ = nullptr;  // mapped host memory
  device_op_ring* inbox_ = nullptr;
  device_op_ring* inbox_device_ = nullptr;  // the same ring, as the proxy addresses it
  cudaStream_t proxy_stream_ = nullptr;
  device_op staged_{};
  bool has_staged_ = false;
  std::uint64_t pushed_ = 0, known_consumed_ = 0;
  std::uint32_t landed_polls_ = 0;
  bool proxy_started_ = false, proxy_stopped_ = false;
};

}  // namespace

std::unique_ptr<engine_memory> make_cuda_engine_memory(int device,
                                                       std::span<const unsigned char> heap_reached,
                                                       bool use_proxy, bool peers) {
  return std::make_unique<cuda_engine_memory>(device, heap_reached, use_proxy, peers);
}

}  // namespace grma::detail
