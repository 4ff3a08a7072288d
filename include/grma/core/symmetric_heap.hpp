// The symmetric heap (papers/001's symmetric data objects): blocks that every
// rank of the job allocates together, at the same offset in each rank's
// slice, so another rank's copy of a block is named by the local address and
// the rank's number, with no window. The calls of the core's RMA, atomics
// and waits take such addresses.
//
// Every rank has a slice of GRMA_SYMMETRIC_SIZE / (ranks per device) bytes
// in its device's memory. alloc_symmetric and free_symmetric are collectives
// over world (all ranks, all threads of each); ptr may be called by a single
// thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"
#include "grma/detail/device_state.hpp"
#include "grma/detail/symmetric_table.hpp"

namespace grma::core {

template <class Rank>
class symmetric_heap_calls {
 public:
  // Collective over world: a block of `bytes` at a multiple of `alignment`
  // (a power of two up to 4096; 64 at least) in every rank's slice; returns this rank's
  // copy. Every rank passes the same arguments. Like OpenSHMEM's
  // shmem_malloc it is a barrier: no rank returns before all have called.
  GRMA_INLINE void* alloc_symmetric(std::size_t bytes, std::size_t alignment = 64) {
    Rank& r = self();
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 ||
        alignment > detail::symmetric_alignment_limit)
      r.fail(errc::invalid_alignment, call::alloc_symmetric, std::int64_t(alignment));
    const std::uint64_t result = agreed_action(
        call::alloc_symmetric, bytes, alignment, [&](const detail::collective_arrival* arrivals) {
          detail::symmetric_failure why{};
          const std::uint64_t at = detail::symmetric_allocate(
              r.view().symmetric, detail::symmetric_reserved_bytes, r.view().symmetric_slice,
              arrivals[0].payload[0], arrivals[0].payload[1], why);
          if (at == ~std::uint64_t{0}) return failed | exhausted | why.largest_free;
          return at;
        });
    if ((result & exhausted) != 0)
      r.fail(errc::symmetric_exhausted, call::alloc_symmetric, std::int64_t(bytes),
             std::int64_t(r.view().symmetric_slice), std::int64_t(result & value_mask),
             std::int64_t(*r.view().symmetric.count), std::int64_t(r.view().symmetric.capacity));
    return r.symmetric_slice_base() + result;
  }

  // alloc_symmetric of count * size bytes, zeroed in every rank's slice
  // before any rank returns.
  GRMA_INLINE void* calloc_symmetric(std::size_t count, std::size_t size) {
    Rank& r = self();
    auto* block = static_cast<unsigned char*>(alloc_symmetric(count * size));
    for (std::size_t i = std::size_t(r.thread()); i < count * size; i += std::size_t(r.threads()))
      block[i] = 0;
    r.barrier(world);
    return block;
  }

  // Collective over world: every rank passes its copy of the same block (or
  // null, which frees nothing), and none uses the block any more.
  GRMA_INLINE void free_symmetric(void* block) {
    Rank& r = self();
    if (block == nullptr) {
      agreed_action(call::free_symmetric, ~std::uint64_t{0}, 0,
                    [](const detail::collective_arrival*) { return std::uint64_t{0}; });
      return;
    }
    const std::uint64_t offset = r.symmetric_offset_of(block, 1, call::free_symmetric);
    const std::uint64_t result =
        agreed_action(call::free_symmetric, offset, 0, [&](const detail::collective_arrival*) {
          return detail::symmetric_release(r.view().symmetric, offset) ? std::uint64_t{0} : failed;
        });
    if (result != 0)
      r.fail(errc::invalid_free, call::free_symmetric,
             std::int64_t(reinterpret_cast<std::uintptr_t>(block)));
  }

  // The target's copy of the symmetric object at `symmetric`, as a pointer
  // this thread may load and store through: on this rank's device or a peer
  // device of the node; null for a target on another node. Any thread.
  template <class T>
  GRMA_INLINE T* ptr(T* symmetric, int target) const {
    const Rank& r = self();
    const std::uint64_t offset = r.symmetric_offset_of(symmetric, 1, call::ptr);
    const int d = r.device_of_target(target, call::ptr);
    if (!r.view().on_node(d)) return nullptr;
    return reinterpret_cast<T*>(r.symmetric_address(d, target, offset));
  }

 private:
  // An action's result: an offset, or `failed` with the reason's bit and a value.
  static constexpr std::uint64_t failed = std::uint64_t{1} << 63;
  static constexpr std::uint64_t exhausted = std::uint64_t{1} << 62;  // value: largest free block
  static constexpr std::uint64_t disagreed = std::uint64_t{1} << 61;  // value: the differing rank
  static constexpr std::uint64_t value_mask = disagreed - 1;

  GRMA_INLINE Rank& self() { return static_cast<Rank&>(*this); }
  GRMA_INLINE const Rank& self() const { return static_cast<const Rank&>(*this); }

  // A world collective that runs `act` at the leader once every rank has
  // passed the same (p0, p1); where one passed others, every rank fails
  // the job naming the first that differs from world rank 0.
  template <class Act>
  GRMA_INLINE std::uint64_t agreed_action(call where, std::uint64_t p0, std::uint64_t p1, Act&& act) {
    Rank& r = self();
    const auto l = r.layout(world);
    const std::uint64_t result =
        r.collective(world, l, where, p0, p1, [&](const detail::collective_arrival* arrivals) {
          for (int i = 1; i < l.size; ++i)
            if (arrivals[i].payload[0] != arrivals[0].payload[0] ||
                arrivals[i].payload[1] != arrivals[0].payload[1])
              return failed | disagreed | std::uint64_t(i);
          return act(arrivals);
        });
    if ((result & disagreed) != 0)
      r.fail(errc::symmetric_mismatch, where, std::int64_t(p0), std::int64_t(p1),
             std::int64_t(result & value_mask));
    return result;
  }
};

}  // namespace grma::core
