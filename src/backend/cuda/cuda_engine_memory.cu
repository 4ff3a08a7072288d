#include "cuda_engine_memory.hpp"

#include <cuda_runtime.h>

#include <bit>
#include <cstddef>
#include <map>
#include <mutex>

#include "cuda_arena.hpp"
#include "grma/detail/atomic.hpp"

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

class cuda_engine_memory final : public engine_memory {
 public:
  // On the thread that launches the rank kernel, before the launch.
  cuda_engine_memory(int device, bool network_reaches_devices)
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
    } catch (...) {
      release();
      throw;
    }
  }
  ~cuda_engine_memory() override { release(); }
  cuda_engine_memory(const cuda_engine_memory&) = delete;
  cuda_engine_memory& operator=(const cuda_engine_memory&) = delete;

  void bind() override { cuda_check(cudaSetDevice(device_), "cudaSetDevice (network engine)"); }

  std::shared_ptr<unsigned char> staging(std::size_t bytes) override {
    return network_reaches_devices_ ? nullptr : pool_.take(bytes);
  }

  // Each copy completes before the call returns, so copies are ordered by
  // the calls (a later one starts after an earlier one's writes landed).
  void read(void* to, const void* from, std::size_t bytes) override { copy(to, from, bytes, "reading GPU memory"); }
  void write(void* to, const void* from, std::size_t bytes) override { copy(to, from, bytes, "writing GPU memory"); }

  void read_window(const window_table& t, std::uint32_t slot, std::int32_t target, window_slot& s,
                   window_entry& entry) override {
    // No lock (the host cannot take it): window_slot_take sets `active`
    // last, after the entries and the other fields. One copy of the slot
    // could mix bytes of before and after (a slot may span two sectors),
    // so the generation and `active` (8 aligned bytes) come first; once
    // they say active, the slot and then the entry are that window's.
    static_assert(offsetof(window_slot, active) == 4, "generation and active lead the slot");
    read(&s, &t.slots[slot], 2 * sizeof(std::uint32_t));
    if (!s.active) {
      // Its claims tell what comes next; it may be being taken meanwhile
      // (the engine then waits for it: remote_engine's about_to_exist).
      read(&s, &t.slots[slot], sizeof s);
      s.active = 0;
      return;
    }
    read(&s, &t.slots[slot], sizeof s);
    if (target >= 0 && std::uint32_t(target) < s.comm_size) read(&entry, &t.entry(slot, target), sizeof entry);
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
    add_signal<<<1, 1, 0, stream_>>>(&word, value);
    finish("adding to a signal word");
  }

  void load_arrivals(const collective_arrival* from, std::size_t count,
                     collective_arrival* to) override {
    read(to, from, count * sizeof *from);
  }

  // Two strided copies, not two per arrival: all payloads, then all stamps.
  void store_arrivals(collective_arrival* to, const collective_arrival* from,
                      std::size_t count) override {
    if (count == 0) return;
    constexpr std::size_t pitch = sizeof(collective_arrival);
    cuda_check(cudaMemcpy2DAsync(to->payload, pitch, from->payload, pitch, sizeof to->payload, count,
                                 cudaMemcpyDefault, stream_),
               "writing arrivals");
    cuda_check(cudaStreamSynchronize(stream_), "writing arrivals");  // payloads landed
    cuda_check(cudaMemcpy2DAsync(&to->stamp, pitch, &from->stamp, pitch, sizeof to->stamp, count,
                                 cudaMemcpyDefault, stream_),
               "writing arrivals");
    cuda_check(cudaStreamSynchronize(stream_), "writing arrivals");
  }

  bool claim_error(std::uint32_t& claim) override {
    claim_word<<<1, 1, 0, stream_>>>(&claim, won_);
    finish("claiming the job's error record");
    std::uint32_t won = 0;
    read(&won, won_, sizeof won);
    return won != 0;
  }

 private:
  void copy(void* to, const void* from, std::size_t bytes, const char* what) {
    if (bytes == 0) return;
    cuda_check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_), what);
    cuda_check(cudaStreamSynchronize(stream_), what);
  }

  void release() {
    if (won_ != nullptr) cudaFree(won_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    won_ = nullptr;
    stream_ = nullptr;
  }

  void finish(const char* what) {
    cuda_check(cudaGetLastError(), what);
    cuda_check(cudaStreamSynchronize(stream_), what);
  }

  int device_;
  bool network_reaches_devices_;
  cudaStream_t stream_ = nullptr;
  std::uint32_t* won_ = nullptr;  // device memory: claim_word's answer
  pinned_pool pool_;
};

}  // namespace

std::unique_ptr<engine_memory> make_cuda_engine_memory(int device, bool network_reaches_devices) {
  return std::make_unique<cuda_engine_memory>(device, network_reaches_devices);
}

}  // namespace grma::detail
