#include "cuda_engine_memory.hpp"

#include <cuda_runtime.h>

#include <bit>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
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

__global__ void claim_word(std::uint32_t* word, std::uint32_t* won) {
  *won = compare_exchange_acquire<scope::system>(*word, 0u, 1u) ? 1u : 0u;
}

// ---- the proxy ------------------------------------------------------------------
//
// A copy through the driver costs 5-7 us before a running kernel sees it; a
// store to mapped host memory that the kernel polls, under 2 (design.md,
// "Across nodes"). So by default the engine hands its small writes and its
// atomics to a proxy: one GPU thread, in a kernel beside the ranks, that
// polls a ring in mapped host memory and applies each operation in order.
// One poller per GPU: many readers of host memory starve the copy engines.

enum class device_op_kind : std::uint32_t { write = 1, add = 2, claim = 3, stop = 4 };

inline constexpr std::uint32_t device_op_bytes = 96;  // a write's most: a slot is 128 bytes

struct device_op {
  device_op_kind kind;
  std::uint32_t bytes;     // write: of data
  std::uint64_t address;   // device memory: where to write, add or claim
  std::uint64_t value;     // add: the addend; claim: where the answer goes (mapped host memory)
  unsigned char data[device_op_bytes];
};
using device_op_ring = ring<device_op>;
static_assert(sizeof(ring_slot<device_op>) == 128, "a proxy slot is two cache lines");
inline constexpr std::uint32_t proxy_capacity = 1024;

__device__ void apply(const device_op& op) {
  switch (op.kind) {
    case device_op_kind::write: {
      auto* to = reinterpret_cast<unsigned char*>(op.address);
      if (op.address % 8 == 0 && op.bytes % 8 == 0) {
        // Whole words, each a relaxed system-scope store: the last of them
        // (a notification's, a signal's) is what a waiting rank observes.
        auto* words = reinterpret_cast<std::uint64_t*>(to);
        for (std::uint32_t i = 0; i < op.bytes / 8; ++i) {
          std::uint64_t w;
          memcpy(&w, op.data + 8 * i, 8);
          store_relaxed<scope::system>(words[i], w);
        }
      } else {
        for (std::uint32_t i = 0; i < op.bytes; ++i) to[i] = op.data[i];
      }
      break;
    }
    case device_op_kind::add:
      fetch_add_acq_rel<scope::system>(*reinterpret_cast<std::uint64_t*>(op.address), op.value);
      break;
    case device_op_kind::claim: {
      const bool won = compare_exchange_acquire<scope::system>(
          *reinterpret_cast<std::uint32_t*>(op.address), 0u, 1u);
      store_relaxed<scope::system>(*reinterpret_cast<std::uint32_t*>(op.value), won ? 1u : 2u);
      break;
    }
    case device_op_kind::stop: break;
  }
}

__global__ void proxy(device_op_ring* inbox, std::uint32_t mask) {
  ring_reader reader{0, 0, mask};
  device_op op;
  for (;;) {
    if (!ring_try_pop<scope::system>(*inbox, reader, op)) continue;
    if (op.kind == device_op_kind::stop) return;
    // Release, with the strong stores of a notification or signal word:
    // what earlier operations wrote (a put's data) is visible first.
    fence_release<scope::system>();
    apply(op);
    // Release: the operation's writes are visible, to the ranks and to the
    // engine, before `consumed` says it is done, and before anything the
    // next operation writes (a put's data before its notification).
    ring_release<scope::system>(*inbox, reader);
  }
}

// Pinned host buffers, reused: allocating pinned memory costs far more than
// the copies it serves. Sizes are powers of two from 64 KiB.
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

// What the engine copied of a slot's live window: kept while the slot's
// state word (window_table::states) stays the word it was copied under.
// Every window the slot takes has a word of its own.
struct kept_window {
  std::uint64_t state = 0;
  window_slot slot{};
  std::unordered_map<std::int32_t, window_entry> entries;  // by target, as asked for
};

class cuda_engine_memory final : public engine_memory {
 public:
  // On the thread that launches the rank kernel, before the launch.
  cuda_engine_memory(int device, bool network_reaches_devices, bool use_proxy)
      : device_(device), network_reaches_devices_(network_reaches_devices) {
    // Loads the atomics' kernels now: loaded lazily at their first launch,
    // they would wait for the running rank kernel, which may wait for them.
    try {
      cudaFuncAttributes attributes{};
      cuda_check(cudaFuncGetAttributes(&attributes, add_signal), "loading the network engine's kernels");
      cuda_check(cudaFuncGetAttributes(&attributes, claim_word), "loading the network engine's kernels");
      // Non-blocking: the legacy default stream would wait for the rank kernel.
      cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags (network engine)");
      cuda_check(cudaMalloc(reinterpret_cast<void**>(&won_), sizeof *won_), "cudaMalloc (network engine)");
      cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&scratch_), scratch_bytes + small_bytes,
                               cudaHostAllocPortable),
                 "cudaHostAlloc (network engine)");
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
  void unbind() override { stop_proxy(); }

  std::shared_ptr<unsigned char> staging(std::size_t bytes) override {
    return network_reaches_devices_ ? nullptr : pool_.take(bytes);
  }

  // All copies go on one stream, so each starts after the one before has
  // landed: writes land in call order, and a read sees every earlier write.
  // A read waits for its copy; a small write's source is first copied into
  // pinned scratch, so that the caller may reuse its own at once and the
  // write goes on while the engine does other work. (A copy and a wait for
  // it cost several microseconds; a put's data and notification, and the
  // acknowledgement after them, used to wait for two.)
  void read(void* to, const void* from, std::size_t bytes) override {
    if (bytes == 0) return;
    flush_proxy();  // a read sees every earlier write
    if (bytes > small_bytes) {  // a staging buffer's (pinned), or a node's arrivals
      enqueue(to, from, bytes, "reading GPU memory");
      return wait("reading GPU memory");
    }
    unsigned char* landing = scratch_ + scratch_bytes;  // pinned: a pageable one costs a second copy
    enqueue(landing, from, bytes, "reading GPU memory");
    wait("reading GPU memory");
    std::memcpy(to, landing, bytes);
  }

  // With the proxy, writes up to device_op_bytes go to it; larger ones are
  // copies, queued after the proxy's earlier operations have landed (and
  // its next one waits for them: push).
  void write(void* to, const void* from, std::size_t bytes) override {
    if (bytes == 0) return;
    if (inbox_ != nullptr) {
      if (bytes <= device_op_bytes) {
        device_op op{device_op_kind::write, std::uint32_t(bytes), reinterpret_cast<std::uint64_t>(to), 0, {}};
        std::memcpy(op.data, from, bytes);
        return push(op);
      }
      flush_proxy();
    }
    if (bytes > small_bytes) {  // from a staging buffer, which the caller reuses next
      enqueue(to, from, bytes, "writing GPU memory");
      return wait("writing GPU memory");
    }
    if (scratch_used_ + bytes > scratch_bytes) wait("writing GPU memory");  // frees the scratch
    unsigned char* source = scratch_ + scratch_used_;
    scratch_used_ += (bytes + 15) & ~std::size_t{15};
    std::memcpy(source, from, bytes);
    enqueue(to, source, bytes, "writing GPU memory");
  }

  void flush() override {
    flush_proxy();
    if (pending_) wait("writing GPU memory");
  }

  void read_window(const window_table& t, std::uint32_t slot, std::int32_t target, window_slot& s,
                   window_entry& entry) override {
    if (kept_.size() < t.capacity) kept_.resize(t.capacity);
    kept_window& k = kept_[slot];
    while (true) {
      // Acquire: pairs with window_slot_take's release; a live word means
      // the slot and entries copied after it are that window's (or a later
      // one's, should it be freed meanwhile, as with any check).
      const std::uint64_t state = load_acquire<scope::system>(t.states[slot]);
      if ((state & 1u) == 0) {  // no live window: the word tells all that is asked
        s = window_slot_of_state(state);
        return;
      }
      if (k.state == state) break;
      window_slot copy{};
      read(&copy, &t.slots[slot], sizeof copy);
      if (window_state_word(copy) == state) {  // else it changed meanwhile: look again
        k = kept_window{state, copy, {}};
        break;
      }
    }
    s = k.slot;
    if (target < 0 || std::uint32_t(target) >= s.comm_size) return;
    auto it = k.entries.find(target);
    if (it == k.entries.end()) {
      window_entry e{};
      read(&e, &t.entry(slot, target), sizeof e);
      it = k.entries.emplace(target, e).first;
    }
    entry = it->second;
  }

  std::uint64_t consumed(notification_ring& q) override {
    std::uint64_t n = 0;
    read(&n, &q.consumed, sizeof n);
    return n;
  }

  void publish(notification_ring& q, std::uint32_t capacity, std::uint64_t ticket,
               const notification& n) override {
    // One copy of the three self-validating words: the consumer takes the
    // entry only once it finds the sequence number in all of them.
    using slot = ring_slot<notification>;
    const auto sequence = std::uint32_t(ticket + 1);
    const std::uint64_t words[3] = {slot::pack(sequence, n.window),
                                    slot::pack(sequence, std::uint32_t(n.source)),
                                    slot::pack(sequence, std::uint32_t(n.tag))};
    write(q.slots()[ticket & (capacity - 1)].word, words, sizeof words);
  }

  void signal(std::uint64_t& word, signal_op op, std::uint64_t value) override {
    if (op != signal_op::add) return write(&word, &value, sizeof value);
    if (inbox_ != nullptr)
      return push(device_op{device_op_kind::add, 0, reinterpret_cast<std::uint64_t>(&word), value, {}});
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
      store_relaxed<scope::system>(*answer_, 0u);
      push(device_op{device_op_kind::claim, 0, reinterpret_cast<std::uint64_t>(&claim),
                     reinterpret_cast<std::uint64_t>(answer_device_), {}});
      flush_proxy();  // Acquire (in it): the answer is there
      return load_relaxed<scope::system>(*answer_) == 1u;
    }
    claim_word<<<1, 1, 0, stream_>>>(&claim, won_);
    cuda_check(cudaGetLastError(), "claiming the job's error record");
    std::uint32_t won = 0;
    read(&won, won_, sizeof won);
    return won != 0;
  }

 private:
  // Copies and writes up to this size go through the scratch; larger ones
  // are a staging buffer's, and waited for.
  static constexpr std::size_t small_bytes = 4096;
  // Small writes between two waits (a write that finds it full waits).
  static constexpr std::size_t scratch_bytes = std::size_t{1} << 20;

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
    scratch_used_ = 0;  // every copy from it has landed
  }

  // Mapped host memory: the proxy's ring, then claim's answer word. The
  // kernel is loaded now (see the constructor) and launched at the first
  // operation (design.md: not before the rank kernel runs).
  void prepare_proxy() {
    const std::size_t bytes = device_op_ring::bytes_for(proxy_capacity) + 64;
    cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&proxy_memory_), bytes,
                             cudaHostAllocMapped | cudaHostAllocPortable),
               "cudaHostAlloc of the network engine's proxy ring");
    std::memset(proxy_memory_, 0, bytes);
    unsigned char* device_memory = nullptr;
    cuda_check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_memory), proxy_memory_, 0),
               "cudaHostGetDevicePointer of the proxy ring");
    inbox_ = ring_init<device_op>(proxy_memory_, proxy_capacity);
    answer_ = reinterpret_cast<std::uint32_t*>(proxy_memory_ + device_op_ring::bytes_for(proxy_capacity));
    answer_device_ = device_memory + device_op_ring::bytes_for(proxy_capacity);
    inbox_device_ = reinterpret_cast<device_op_ring*>(device_memory);
    cudaFuncAttributes attributes{};
    cuda_check(cudaFuncGetAttributes(&attributes, proxy), "loading the network engine's proxy");
    cuda_check(cudaStreamCreateWithFlags(&proxy_stream_, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags (network engine's proxy)");
  }

  // The engine is the ring's only producer: tickets are its own count.
  void push(const device_op& op) {
    if (!proxy_started_) {
      proxy_started_ = true;
      proxy<<<1, 1, 0, proxy_stream_>>>(inbox_device_, proxy_capacity - 1);
      cuda_check(cudaGetLastError(), "launching the network engine's proxy");
    }
    if (pending_) wait("writing GPU memory");  // queued copies land first
    const std::uint64_t ticket = pushed_++;
    for (std::uint32_t spins = 0; !ring_has_credit<scope::system>(*inbox_, proxy_capacity, ticket, known_consumed_);)
      check_proxy(++spins);
    ring_publish<scope::system>(*inbox_, proxy_capacity, ticket, op);
  }

  // Waits until the proxy has applied everything pushed.
  void flush_proxy() {
    if (inbox_ == nullptr) return;
    // Acquire: pairs with the proxy's release of `consumed`; its writes
    // (and a claim's answer) are visible once the count says so.
    for (std::uint32_t spins = 0; load_acquire<scope::system>(inbox_->consumed) < pushed_;) check_proxy(++spins);
    known_consumed_ = pushed_;
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
      push(device_op{device_op_kind::stop, 0, 0, 0, {}});
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
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);  // copies from the scratch
    if (scratch_ != nullptr) cudaFreeHost(scratch_);
    if (won_ != nullptr) cudaFree(won_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    scratch_ = nullptr;
    won_ = nullptr;
    stream_ = nullptr;
  }

  int device_;
  bool network_reaches_devices_;
  cudaStream_t stream_ = nullptr;
  std::uint32_t* won_ = nullptr;  // device memory: claim_word's answer
  // Pinned: small writes' sources (scratch_bytes), then small reads' landing (small_bytes).
  unsigned char* scratch_ = nullptr;
  std::size_t scratch_used_ = 0;
  bool pending_ = false;  // copies or kernels queued since the last wait
  std::vector<kept_window> kept_;  // by slot
  pinned_pool pool_;
  // The proxy (null inbox_: copies and the one-thread kernels instead).
  unsigned char* proxy_memory_ = nullptr;  // mapped host memory
  device_op_ring* inbox_ = nullptr;
  device_op_ring* inbox_device_ = nullptr;  // the same ring, as the proxy addresses it
  std::uint32_t* answer_ = nullptr;         // a claim's: 1 won, 2 lost
  unsigned char* answer_device_ = nullptr;  // the same word, as the proxy addresses it
  cudaStream_t proxy_stream_ = nullptr;
  std::uint64_t pushed_ = 0, known_consumed_ = 0;
  bool proxy_started_ = false, proxy_stopped_ = false;
};

}  // namespace

std::unique_ptr<engine_memory> make_cuda_engine_memory(int device, bool network_reaches_devices,
                                                       bool use_proxy) {
  return std::make_unique<cuda_engine_memory>(device, network_reaches_devices, use_proxy);
}

}  // namespace grma::detail
