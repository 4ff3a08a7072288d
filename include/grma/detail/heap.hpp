// First-fit allocator over one contiguous range of a device's heap.
//
// Block headers live in-band just before each payload and hold sizes, never
// pointers, so the heap stays valid wherever it is mapped. Neighbouring free
// blocks are merged on free (boundary tags: each header knows the size of the
// block before it). The caller serializes calls with heap_lock.
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/atomic.hpp"

namespace grma::detail {

// A cache line: a block's header, and the unit of the arena's other pieces
// (control block, userdata area, symmetric table).
inline constexpr std::uint64_t heap_alignment = 64;
// Payloads start at multiples of it, as cudaMalloc's do, and blocks are
// multiples of it long: a copy between two payloads moves whole 128-byte
// lines (cuda_platform::copy_by). A block's header sits just before it.
inline constexpr std::uint64_t heap_payload_alignment = 256;
inline constexpr std::uint32_t heap_block_magic = 0x67726d61;  // "grma"

enum class heap_block_state : std::uint32_t { free = 1, used = 2 };

struct heap_block {
  std::uint64_t size;       // bytes of this block, header included
  std::uint64_t prev_size;  // bytes of the block before (0 for the first)
  std::uint32_t magic;
  heap_block_state state;
  std::int32_t owner;  // world rank that allocated it
  std::uint32_t pad[9];
};
static_assert(sizeof(heap_block) == heap_alignment, "a header is one aligned unit");

struct heap_allocator {
  std::uint32_t lock;
  std::uint32_t pad;
  std::uint64_t begin;  // offset of the first header in the heap
  std::uint64_t end;    // offset one past the managed range
  std::uint64_t free_bytes;
};

GRMA_INLINE constexpr std::uint64_t align_up(std::uint64_t x, std::uint64_t a) {
  return (x + a - 1) / a * a;
}

GRMA_INLINE heap_block* heap_block_at(unsigned char* heap, std::uint64_t offset) {
  return reinterpret_cast<heap_block*>(heap + offset);
}

// Where a heap whose range starts at `begin` puts its first header: one
// header short of a multiple of heap_payload_alignment (the first payload's).
GRMA_INLINE constexpr std::uint64_t heap_first_header(std::uint64_t begin) {
  return align_up(begin + heap_alignment, heap_payload_alignment) - heap_alignment;
}

// Host only: manage [begin, end) of a heap: its whole blocks from
// heap_first_header(begin), which is the allocator's begin. Returns the
// header of the one free block that covers them, which the caller stores at
// heap + a.begin (where the heap is device memory, with a copy).
inline heap_block heap_prepare(heap_allocator& a, std::uint64_t begin, std::uint64_t end) {
  a = heap_allocator{};
  a.begin = heap_first_header(begin);
  a.end = end <= a.begin
              ? a.begin
              : a.begin + (end - a.begin) / heap_payload_alignment * heap_payload_alignment;
  heap_block b{};
  if (a.end == a.begin) return b;  // too small for one block: every allocation fails
  b.size = a.end - a.begin;
  b.magic = heap_block_magic;
  b.state = heap_block_state::free;
  b.owner = -1;
  a.free_bytes = b.size - heap_alignment;
  return b;
}

// Host only: heap_prepare for a heap in host memory.
inline void heap_init(heap_allocator& a, unsigned char* heap, std::uint64_t begin,
                      std::uint64_t end) {
  const heap_block first = heap_prepare(a, begin, end);
  if (a.end != a.begin) *heap_block_at(heap, a.begin) = first;
}

struct heap_failure {
  std::uint64_t free_bytes;
  std::uint64_t largest_free;
};

// free_bytes counts payload bytes: the sum over free blocks of (size - header).

// Returns the offset of a payload of at least `bytes` bytes, or 0 when no free
// block is large enough (then `why` says how much there was).
GRMA_INLINE std::uint64_t heap_allocate(heap_allocator& a, unsigned char* heap,
                                        std::uint64_t bytes, std::int32_t owner,
                                        heap_failure& why) {
  // A request the whole range cannot hold needs more than any block has
  // (and its rounding up cannot wrap around).
  const std::uint64_t need =
      bytes < a.end - a.begin
          ? align_up((bytes == 0 ? 1 : bytes) + heap_alignment, heap_payload_alignment)
          : ~std::uint64_t{0};
  std::uint64_t largest = 0;
  for (std::uint64_t off = a.begin; off < a.end;) {
    heap_block* b = heap_block_at(heap, off);
    if (b->state == heap_block_state::free && b->size >= need) {
      const std::uint64_t rest = b->size - need;
      if (rest != 0) {  // split: the tail (a whole block) stays free
        heap_block* tail = heap_block_at(heap, off + need);
        *tail = heap_block{};
        tail->size = rest;
        tail->prev_size = need;
        tail->magic = heap_block_magic;
        tail->state = heap_block_state::free;
        tail->owner = -1;
        if (off + b->size < a.end) heap_block_at(heap, off + b->size)->prev_size = rest;
        b->size = need;
        a.free_bytes -= need;
      } else {
        a.free_bytes -= b->size - heap_alignment;
      }
      b->state = heap_block_state::used;
      b->owner = owner;
      return off + heap_alignment;
    }
    if (b->state == heap_block_state::free && b->size - heap_alignment > largest)
      largest = b->size - heap_alignment;
    off += b->size;
  }
  why.free_bytes = a.free_bytes;
  why.largest_free = largest;
  return 0;
}

enum class heap_free_result { ok, not_allocated, already_free };

GRMA_INLINE heap_free_result heap_release(heap_allocator& a, unsigned char* heap,
                                          std::uint64_t payload) {
  if (payload < a.begin + heap_alignment || payload >= a.end ||
      payload % heap_payload_alignment != 0)
    return heap_free_result::not_allocated;
  std::uint64_t start = payload - heap_alignment;
  heap_block* b = heap_block_at(heap, start);
  if (b->magic != heap_block_magic || b->size < heap_payload_alignment || start + b->size > a.end)
    return heap_free_result::not_allocated;
  if (b->state == heap_block_state::free) return heap_free_result::already_free;
  if (b->state != heap_block_state::used) return heap_free_result::not_allocated;

  b->state = heap_block_state::free;
  b->owner = -1;
  a.free_bytes += b->size - heap_alignment;
  std::uint64_t size = b->size;
  if (start + size < a.end) {  // merge with the next block; its header becomes payload
    heap_block* next = heap_block_at(heap, start + size);
    if (next->state == heap_block_state::free) {
      size += next->size;
      next->magic = 0;
      a.free_bytes += heap_alignment;
    }
  }
  if (b->prev_size != 0) {  // merge into the previous block
    heap_block* prev = heap_block_at(heap, start - b->prev_size);
    if (prev->state == heap_block_state::free) {
      b->magic = 0;
      start -= b->prev_size;
      size += prev->size;
      a.free_bytes += heap_alignment;
    }
  }
  heap_block_at(heap, start)->size = size;
  if (start + size < a.end) heap_block_at(heap, start + size)->prev_size = size;
  return heap_free_result::ok;
}

// Spin lock that serializes the device's allocator. Acquire/release make the
// block headers written under the lock visible to the next holder.
template <scope S, class Wait>
GRMA_INLINE void heap_lock(heap_allocator& a, Wait&& wait) {
  while (!compare_exchange_acquire<S>(a.lock, 0u, 1u)) wait();
}

template <scope S>
GRMA_INLINE void heap_unlock(heap_allocator& a) {
  store_release<S>(a.lock, 0u);
}

}  // namespace grma::detail
