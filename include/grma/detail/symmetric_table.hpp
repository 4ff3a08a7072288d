// The symmetric heap's allocator. Every rank has a slice of the same size in
// its device's heap, and a symmetric block is one offset in all slices: a
// rank reaches another's copy of a block at (target's slice + offset). The
// table lists the live blocks by offset, each with the team that allocated
// it. alloc_symmetric and free_symmetric are collectives over world or a
// team. Each node keeps a table: a world collective's leader touches it
// alone on a job of one node (no rank is in another allocation then); a
// team's allocation, and a world one across nodes, finds an offset free on
// every node of its members, which the first member on each node reserves
// under the node's team lock (team_agree, rank.hpp).
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/heap.hpp"

namespace grma::detail {

struct symmetric_block {
  std::uint64_t offset;
  std::uint64_t size;
  std::uint64_t owner;  // the allocating team (symmetric_heap_calls::owner_of); world's is 0
};

// Live blocks, sorted by offset: *count of the capacity entries at `blocks`
// (pointers into the node's first device's control block).
struct symmetric_table {
  std::uint32_t capacity;
  std::uint32_t* count;
  symmetric_block* blocks;
};

// The largest alignment alloc_symmetric takes: slices are whole pages.
inline constexpr std::uint64_t symmetric_alignment_limit = 4096;

// The first bytes of every slice belong to the teams (team_workspace);
// blocks come after them.
inline constexpr std::uint64_t symmetric_reserved_bytes = 16384;

// Symmetric blocks a job may hold at once.
inline constexpr std::uint32_t symmetric_block_limit = 1024;

// Why an allocation failed, for the error's values.
struct symmetric_failure {
  std::uint64_t largest_free;
};

// A block's room: whole lines, one for a block of no bytes; a size too
// large to round up is larger than any slice (it must not wrap to 0).
GRMA_INLINE std::uint64_t symmetric_block_size(std::uint64_t bytes) {
  if (bytes > ~std::uint64_t{0} - heap_alignment) return ~std::uint64_t{0};
  return align_up(bytes == 0 ? 1 : bytes, heap_alignment);
}

// The first gap of at least `bytes` at `alignment` (a power of two) in
// [first, slice), changing nothing: its offset, or ~0 when there is none or
// the table is full (why.largest_free tells which: the most bytes a block
// at that alignment could have, so a request that is more never fits).
GRMA_INLINE std::uint64_t symmetric_first_fit(const symmetric_table& t, std::uint64_t first,
                                              std::uint64_t slice, std::uint64_t bytes,
                                              std::uint64_t alignment, symmetric_failure& why) {
  if (alignment < heap_alignment) alignment = heap_alignment;
  const std::uint64_t size = symmetric_block_size(bytes);
  std::uint64_t largest = 0;
  std::uint64_t end = first;  // of the blocks before the gap
  for (std::uint32_t i = 0; i <= *t.count; ++i) {
    const std::uint64_t next = i < *t.count ? t.blocks[i].offset : slice < first ? first : slice;
    const std::uint64_t at = align_up(end, alignment);
    if (at <= next && next - at > largest) largest = next - at;
    if (at <= next && next - at >= size) {
      if (*t.count == t.capacity) break;
      return at;
    }
    if (i < *t.count && t.blocks[i].offset + t.blocks[i].size > end) end = t.blocks[i].offset + t.blocks[i].size;
  }
  why.largest_free = largest;
  return ~std::uint64_t{0};
}

// The same gap, now `owner`'s block.
GRMA_INLINE std::uint64_t symmetric_allocate(const symmetric_table& t, std::uint64_t first,
                                             std::uint64_t slice, std::uint64_t bytes,
                                             std::uint64_t alignment, std::uint64_t owner,
                                             symmetric_failure& why) {
  const std::uint64_t at = symmetric_first_fit(t, first, slice, bytes, alignment, why);
  if (at == ~std::uint64_t{0}) return at;
  std::uint32_t i = *t.count;  // kept in offset order
  for (; i > 0 && t.blocks[i - 1].offset > at; --i) t.blocks[i] = t.blocks[i - 1];
  t.blocks[i] = {at, symmetric_block_size(bytes), owner};
  ++*t.count;
  return at;
}

enum class symmetric_release_result { released, not_found, not_owner };

// Removes `owner`'s block at `offset`: not_found where no live block starts
// there, not_owner where another owner's does (it stays).
GRMA_INLINE symmetric_release_result symmetric_release(const symmetric_table& t, std::uint64_t offset,
                                                       std::uint64_t owner) {
  for (std::uint32_t i = 0; i < *t.count; ++i) {
    if (t.blocks[i].offset != offset) continue;
    if (t.blocks[i].owner != owner) return symmetric_release_result::not_owner;
    for (std::uint32_t k = i; k + 1 < *t.count; ++k) t.blocks[k] = t.blocks[k + 1];
    --*t.count;
    return symmetric_release_result::released;
  }
  return symmetric_release_result::not_found;
}

// How many live blocks `owner` holds.
GRMA_INLINE std::uint32_t symmetric_blocks_of(const symmetric_table& t, std::uint64_t owner) {
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < *t.count; ++i) n += t.blocks[i].owner == owner ? 1 : 0;
  return n;
}

}  // namespace grma::detail
