// Helpers shared by the unit tests: memory laid out as the runtime lays it out
// (zeroed, 256-byte aligned), and a wait function for code that must not wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>

#include "grma/detail/ring.hpp"

namespace grma::test {

// Zeroed memory on a 256-byte boundary, freed with the object.
class aligned_buffer {
 public:
  static constexpr std::size_t alignment = 256;  // the heap's payload alignment, as a GPU's

  explicit aligned_buffer(std::size_t bytes)
      : memory_(static_cast<unsigned char*>(
            std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment))) {
    if (memory_ == nullptr) throw std::bad_alloc();
    std::memset(memory_.get(), 0, bytes);
  }

  unsigned char* data() const { return memory_.get(); }

 private:
  struct free_memory {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, free_memory> memory_;
};

// A ring together with the memory it lives in.
template <class Payload>
class owned_ring {
 public:
  explicit owned_ring(std::uint32_t capacity)
      : memory_(detail::ring<Payload>::bytes_for(capacity)),
        ring_(detail::ring_init<Payload>(memory_.data(), capacity)) {}

  detail::ring<Payload>& operator*() const { return *ring_; }
  detail::ring<Payload>* operator->() const { return ring_; }

 private:
  aligned_buffer memory_;
  detail::ring<Payload>* ring_;
};

// Wait function for a producer or locker that must find room at once. A
// single-threaded test would otherwise spin forever, so it fails loudly.
inline void unexpected_wait() {
  throw std::logic_error("unexpected wait: the ring is full or the lock is held");
}

}  // namespace grma::test
