// The first-fit heap allocator: alignment, disjoint blocks, fragmentation and
// coalescing, exhaustion reports, refused frees, a randomized model, the lock.
#include "grma/detail/heap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using grma::detail::align_up;
using grma::detail::heap_alignment;
using grma::detail::heap_allocate;
using grma::detail::heap_allocator;
using grma::detail::heap_block;
using grma::detail::heap_block_at;
using grma::detail::heap_block_magic;
using grma::detail::heap_block_state;
using grma::detail::heap_failure;
using grma::detail::heap_free_result;
using grma::detail::heap_init;
using grma::detail::heap_lock;
using grma::detail::heap_payload_alignment;
using grma::detail::heap_release;
using grma::detail::heap_unlock;
using grma::detail::scope;
using grma::test::aligned_buffer;
using grma::test::unexpected_wait;

// One block as a walk over the headers finds it.
struct block_info {
  std::uint64_t offset;  // of the header
  std::uint64_t size;    // header included
  bool free;
};

// A heap managing [begin, end) of its own memory, as the runtime sets one up
// behind the userdata area.
class test_heap {
 public:
  test_heap(std::uint64_t begin, std::uint64_t end) : memory_(end) {
    heap_init(allocator_, memory_.data(), begin, end);
  }

  std::uint64_t allocate(std::uint64_t bytes, heap_failure& why) {
    return heap_allocate(allocator_, memory_.data(), bytes, 0, why);
  }
  std::uint64_t allocate(std::uint64_t bytes) {
    heap_failure why{};
    return allocate(bytes, why);
  }
  heap_free_result release(std::uint64_t payload) {
    return heap_release(allocator_, memory_.data(), payload);
  }

  std::uint64_t free_bytes() const { return allocator_.free_bytes; }
  unsigned char* at(std::uint64_t offset) const { return memory_.data() + offset; }
  heap_allocator& allocator() { return allocator_; }

  // Walks the block headers and checks what must hold between any two calls:
  // the blocks tile the managed range, each knows its predecessor's size, no
  // two free blocks touch (they would have been merged), and free_bytes is the
  // payload of the free blocks.
  std::vector<block_info> checked_blocks() const {
    std::vector<block_info> out;
    std::uint64_t previous_size = 0;
    bool previous_free = false;
    std::uint64_t free_payload = 0;
    std::uint64_t off = allocator_.begin;
    while (off < allocator_.end) {
      const heap_block* b = heap_block_at(memory_.data(), off);
      const bool is_free = b->state == heap_block_state::free;
      EXPECT_TRUE(is_free || b->state == heap_block_state::used) << "block at " << off;
      EXPECT_EQ(b->prev_size, previous_size) << "block at " << off;
      EXPECT_FALSE(is_free && previous_free) << "unmerged free blocks at " << off;
      const bool header_valid = b->magic == heap_block_magic && b->size >= heap_payload_alignment &&
                                b->size % heap_payload_alignment == 0;
      EXPECT_TRUE(header_valid) << "block at " << off << ": magic " << b->magic << ", size "
                                << b->size;
      if (!header_valid) break;  // the sizes cannot be followed any further
      if (is_free) free_payload += b->size - heap_alignment;
      out.push_back({off, b->size, is_free});
      previous_size = b->size;
      previous_free = is_free;
      off += b->size;
    }
    EXPECT_EQ(off, allocator_.end) << "blocks do not tile the managed range";
    EXPECT_EQ(free_payload, allocator_.free_bytes);
    return out;
  }

 private:
  aligned_buffer memory_;
  heap_allocator allocator_{};
};

constexpr std::uint64_t header = heap_alignment;
constexpr std::uint64_t unit = heap_payload_alignment;  // the smallest block
// The first header's place: one header short of a payload alignment.
constexpr std::uint64_t first_header = unit - header;

void fill(unsigned char* p, std::uint64_t bytes, unsigned char value) {
  std::fill(p, p + bytes, value);
}

bool holds(const unsigned char* p, std::uint64_t bytes, unsigned char value) {
  return std::all_of(p, p + bytes, [&](unsigned char c) { return c == value; });
}

TEST(Heap, InitialFreeBytesAreTheRangeLessOneHeader) {
  test_heap heap(first_header, first_header + 4096);
  EXPECT_EQ(heap.free_bytes(), 4096 - header);
  EXPECT_EQ(heap.checked_blocks().size(), 1u);
}

TEST(Heap, RangeTooSmallForOneBlockAllocatesNothing) {
  test_heap heap(0, header);
  heap_failure why{1, 1};
  EXPECT_EQ(heap.allocate(1, why), 0u);
  EXPECT_EQ(why.free_bytes, 0u);
  EXPECT_EQ(why.largest_free, 0u);
}

TEST(Heap, PayloadsAre256ByteAligned) {
  for (std::uint64_t begin :
       {std::uint64_t{0}, std::uint64_t{64}, first_header, std::uint64_t{300}}) {
    test_heap heap(begin, begin + (16 << 10));
    for (std::uint64_t bytes : {0, 1, 7, 63, 64, 65, 100, 128, 192, 193, 256, 1000, 4095}) {
      const std::uint64_t off = heap.allocate(bytes);
      ASSERT_NE(off, 0u) << bytes << " bytes from " << begin;
      EXPECT_EQ(off % unit, 0u) << bytes << " bytes from " << begin;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(heap.at(off)) % unit, 0u);
    }
    heap.checked_blocks();  // the headers are still consistent
  }
}

// A range that starts elsewhere loses what lies before the first place one
// header short of a payload alignment, and ends at a whole block.
TEST(Heap, RangeIsCutToWholeAlignedBlocks) {
  test_heap heap(64, 64 + 4096);
  EXPECT_EQ(heap.allocator().begin, first_header);
  EXPECT_EQ(heap.allocator().end, first_header + 15 * unit);
  EXPECT_EQ(heap.free_bytes(), 15 * unit - header);
  EXPECT_EQ(heap.checked_blocks().size(), 1u);
  // From 0, the first header is at 192: 447 bytes hold no block, 448 one.
  EXPECT_EQ(test_heap(0, first_header + unit - 1).allocate(1), 0u);
  test_heap one(0, first_header + unit);
  EXPECT_EQ(one.allocate(unit - header), first_header + header);
  EXPECT_EQ(one.free_bytes(), 0u);
}

// A request larger than the whole range fails as any that does not fit,
// however large (its size rounded up would wrap around).
TEST(Heap, HugeRequestsFail) {
  test_heap heap(first_header, first_header + 4096);
  for (std::uint64_t bytes :
       {std::uint64_t{4096}, ~std::uint64_t{0}, ~std::uint64_t{0} - 63, ~std::uint64_t{0} - 255}) {
    heap_failure why{};
    EXPECT_EQ(heap.allocate(bytes, why), 0u) << bytes;
    EXPECT_EQ(why.free_bytes, 4096 - header);
    EXPECT_EQ(why.largest_free, 4096 - header);
  }
  EXPECT_EQ(heap.checked_blocks().size(), 1u);
}

// Each live block is filled with its own byte; writing all of them and then
// reading them back finds any overlap, including with a neighbour's header.
TEST(Heap, LiveBlocksDoNotOverlap) {
  const std::uint64_t begin = 128, end = begin + (32 << 10);
  test_heap heap(begin, end);
  struct live_block {
    std::uint64_t offset, bytes;
  };
  std::vector<live_block> live;
  for (std::uint64_t i = 0;; ++i) {
    const std::uint64_t bytes = i * 37 % 700 + 1;
    const std::uint64_t off = heap.allocate(bytes);
    if (off == 0) break;
    live.push_back({off, bytes});
    fill(heap.at(off), bytes, static_cast<unsigned char>(live.size()));
  }
  ASSERT_GT(live.size(), 40u);
  heap.checked_blocks();  // the headers are still consistent
  for (std::size_t i = 0; i < live.size(); ++i) {
    EXPECT_TRUE(holds(heap.at(live[i].offset), live[i].bytes, static_cast<unsigned char>(i + 1)))
        << "block " << i;
    EXPECT_GE(live[i].offset, begin + header);
    EXPECT_LE(live[i].offset + live[i].bytes, end);
    if (i > 0) {
      EXPECT_GE(live[i].offset, live[i - 1].offset + live[i - 1].bytes + header);
    }
  }
}

// Thirty-two of the smallest blocks fill the heap exactly. Freeing every
// other one leaves half the bytes free but no two adjacent, so a request of
// two blocks' payload fails; freeing the rest merges everything back into one
// block.
TEST(Heap, FragmentationAndCoalescing) {
  constexpr int block_count = 32;
  constexpr std::uint64_t payload = unit - header;
  const std::uint64_t begin = first_header;
  test_heap heap(begin, begin + block_count * unit);
  const std::uint64_t initial_free = heap.free_bytes();

  std::vector<std::uint64_t> offsets;
  for (int i = 0; i < block_count; ++i) {
    offsets.push_back(heap.allocate(payload));
    ASSERT_NE(offsets.back(), 0u) << "block " << i;
  }
  EXPECT_EQ(heap.free_bytes(), 0u);
  EXPECT_EQ(heap.allocate(1), 0u);

  for (int i = 0; i < block_count; i += 2)
    ASSERT_EQ(heap.release(offsets[i]), heap_free_result::ok);
  EXPECT_EQ(heap.free_bytes(), block_count / 2 * payload);
  heap_failure why{};
  EXPECT_EQ(heap.allocate(2 * payload, why), 0u);
  EXPECT_EQ(why.free_bytes, block_count / 2 * payload);
  EXPECT_EQ(why.largest_free, payload);
  EXPECT_EQ(heap.checked_blocks().size(), std::size_t(block_count));

  for (int i = 1; i < block_count; i += 2)
    ASSERT_EQ(heap.release(offsets[i]), heap_free_result::ok);
  EXPECT_EQ(heap.free_bytes(), initial_free);
  EXPECT_EQ(heap.checked_blocks().size(), 1u);
  EXPECT_EQ(heap.allocate(initial_free), begin + header);
  EXPECT_EQ(heap.free_bytes(), 0u);
}

TEST(Heap, ExhaustionReportsFreeBytesAndLargestBlock) {
  test_heap heap(first_header, first_header + 2048);  // one block: 1984 payload bytes
  ASSERT_EQ(heap.free_bytes(), 1984u);

  const std::uint64_t first = heap.allocate(1000);  // takes 1280 (1000 + header, in whole
  ASSERT_NE(first, 0u);                             // units), leaves a 768-byte block
  EXPECT_EQ(heap.free_bytes(), 704u);

  heap_failure why{};
  EXPECT_EQ(heap.allocate(705, why), 0u);
  EXPECT_EQ(why.free_bytes, 704u);
  EXPECT_EQ(why.largest_free, 704u);

  // 600 bytes need all 768 (600 + header, in whole units): no block is left.
  const std::uint64_t second = heap.allocate(600);
  ASSERT_NE(second, 0u);
  EXPECT_EQ(heap.free_bytes(), 0u);
  EXPECT_EQ(heap.allocate(1, why), 0u);
  EXPECT_EQ(why.free_bytes, 0u);
  EXPECT_EQ(why.largest_free, 0u);

  EXPECT_EQ(heap.release(second), heap_free_result::ok);
  EXPECT_EQ(heap.free_bytes(), 704u);
  EXPECT_EQ(heap.release(first), heap_free_result::ok);
  EXPECT_EQ(heap.free_bytes(), 1984u);
  EXPECT_EQ(heap.checked_blocks().size(), 1u);
}

TEST(Heap, DoubleFreeIsRefused) {
  test_heap heap(first_header, first_header + 4096);
  const std::uint64_t a = heap.allocate(64), b = heap.allocate(64), c = heap.allocate(64);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  ASSERT_NE(c, 0u);

  ASSERT_EQ(heap.release(b), heap_free_result::ok);  // both neighbours in use: b stays a block
  const std::uint64_t free_after_b = heap.free_bytes();
  EXPECT_EQ(heap.release(b), heap_free_result::already_free);
  EXPECT_EQ(heap.free_bytes(), free_after_b);

  // Freeing a merges b into a; b's header is gone, so b is no allocation any
  // more (the error text for not_allocated says "or was freed already").
  ASSERT_EQ(heap.release(a), heap_free_result::ok);
  EXPECT_EQ(heap.release(a), heap_free_result::already_free);
  EXPECT_EQ(heap.release(b), heap_free_result::not_allocated);
  const std::uint64_t free_after_a = heap.free_bytes();
  EXPECT_EQ(free_after_a, free_after_b + unit);  // a's payload and b's header
  heap.checked_blocks();  // the headers are still consistent
  EXPECT_EQ(heap.release(c), heap_free_result::ok);
  EXPECT_EQ(heap.free_bytes(), 4096 - header);
}

TEST(Heap, ForeignOrMisalignedPointerIsRefused) {
  const std::uint64_t begin = first_header, end = begin + 8192;
  test_heap heap(begin, end);
  const std::uint64_t a = heap.allocate(256);
  ASSERT_NE(a, 0u);
  const std::uint64_t free_before = heap.free_bytes();

  EXPECT_EQ(heap.release(a + 8), heap_free_result::not_allocated);       // misaligned
  EXPECT_EQ(heap.release(a + unit), heap_free_result::not_allocated);    // inside a's payload
  EXPECT_EQ(heap.release(0), heap_free_result::not_allocated);           // before the range
  EXPECT_EQ(heap.release(begin), heap_free_result::not_allocated);       // the first header
  EXPECT_EQ(heap.release(end), heap_free_result::not_allocated);         // past the range
  EXPECT_EQ(heap.release(std::uint64_t{1} << 40), heap_free_result::not_allocated);
  EXPECT_EQ(heap.free_bytes(), free_before);
  heap.checked_blocks();  // the headers are still consistent
  EXPECT_EQ(heap.release(a), heap_free_result::ok);
}

// Random allocations and frees, checked against a model of first fit: before
// each allocation the walk over the headers (`layout`) says which block must
// be chosen, or, when none is large enough, what the failure must report.
TEST(HeapRandomized, AgreesWithFirstFitModel) {
  constexpr unsigned sequences = 200;
  constexpr int steps = 300;
  const std::uint64_t begin = first_header, end = begin + (32 << 10);
  for (unsigned seed = 1; seed <= sequences; ++seed) {
    std::mt19937_64 rng(seed);
    const auto pick = [&](std::uint64_t low, std::uint64_t high) {
      return std::uniform_int_distribution<std::uint64_t>(low, high)(rng);
    };
    test_heap heap(begin, end);
    const std::uint64_t initial_free = heap.free_bytes();
    struct live_block {
      std::uint64_t offset, bytes;
      unsigned char fill;
    };
    std::vector<live_block> live;
    std::vector<block_info> layout = heap.checked_blocks();
    for (int step = 0; step < steps; ++step) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", step " << step);
      if (live.empty() || pick(0, 99) < 60) {
        const std::uint64_t bytes = pick(0, 9) == 0 ? pick(0, 8192) : pick(0, 512);
        const std::uint64_t need = align_up((bytes == 0 ? 1 : bytes) + header, unit);
        const auto fit = std::find_if(layout.begin(), layout.end(), [&](const block_info& b) {
          return b.free && b.size >= need;
        });
        heap_failure why{};
        const std::uint64_t off = heap.allocate(bytes, why);
        if (fit == layout.end()) {
          ASSERT_EQ(off, 0u);
          std::uint64_t free_payload = 0, largest = 0;
          for (const block_info& b : layout)
            if (b.free) {
              free_payload += b.size - header;
              largest = std::max(largest, b.size - header);
            }
          ASSERT_EQ(why.free_bytes, free_payload);
          ASSERT_EQ(why.largest_free, largest);
        } else {
          ASSERT_EQ(off, fit->offset + header);
          const auto fill_byte = static_cast<unsigned char>(pick(1, 255));
          fill(heap.at(off), bytes, fill_byte);
          live.push_back({off, bytes, fill_byte});
        }
      } else {
        const std::size_t i = pick(0, live.size() - 1);
        ASSERT_TRUE(holds(heap.at(live[i].offset), live[i].bytes, live[i].fill));
        ASSERT_EQ(heap.release(live[i].offset), heap_free_result::ok);
        live.erase(live.begin() + std::ptrdiff_t(i));
      }
      // The walk checks the structure; its used blocks must be exactly ours.
      layout = heap.checked_blocks();
      std::vector<std::uint64_t> used;
      for (const block_info& b : layout)
        if (!b.free) used.push_back(b.offset + header);
      std::vector<std::uint64_t> expected_used;
      for (const live_block& b : live) expected_used.push_back(b.offset);
      std::sort(expected_used.begin(), expected_used.end());
      ASSERT_EQ(used, expected_used);
      ASSERT_FALSE(::testing::Test::HasFailure());
    }
    for (const live_block& b : live) {
      ASSERT_TRUE(holds(heap.at(b.offset), b.bytes, b.fill)) << "seed " << seed;
      ASSERT_EQ(heap.release(b.offset), heap_free_result::ok) << "seed " << seed;
    }
    ASSERT_EQ(heap.free_bytes(), initial_free) << "seed " << seed;
    ASSERT_EQ(heap.checked_blocks().size(), 1u) << "seed " << seed;
  }
}

TEST(HeapLock, SecondLockerWaitsUntilUnlocked) {
  heap_allocator a{};
  heap_lock<scope::device>(a, unexpected_wait);
  int waits = 0;
  heap_lock<scope::device>(a, [&] {
    if (++waits == 3) heap_unlock<scope::device>(a);  // the first holder leaves
  });
  EXPECT_EQ(waits, 3);
  EXPECT_EQ(a.lock, 1u);
  heap_unlock<scope::device>(a);
  EXPECT_EQ(a.lock, 0u);
}

// Two threads allocate and free under the lock; the headers they write must
// stay consistent and every block's contents its owner's.
TEST(HeapLock, SerializesThreads) {
  test_heap heap(0, 64 << 10);
  const std::uint64_t initial_free = heap.free_bytes();
  const auto work = [&](unsigned char fill_byte) {
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t bytes = std::uint64_t(i % 7 + 1) * 48;
      heap_lock<scope::device>(heap.allocator(), [] { std::this_thread::yield(); });
      const std::uint64_t off = heap.allocate(bytes);
      heap_unlock<scope::device>(heap.allocator());
      ASSERT_NE(off, 0u);
      fill(heap.at(off), bytes, fill_byte);
      std::this_thread::yield();
      ASSERT_TRUE(holds(heap.at(off), bytes, fill_byte));
      heap_lock<scope::device>(heap.allocator(), [] { std::this_thread::yield(); });
      const heap_free_result freed = heap.release(off);
      heap_unlock<scope::device>(heap.allocator());
      ASSERT_EQ(freed, heap_free_result::ok);
    }
  };
  std::thread other(work, static_cast<unsigned char>(0xaa));
  work(0x55);
  other.join();
  EXPECT_EQ(heap.free_bytes(), initial_free);
  EXPECT_EQ(heap.checked_blocks().size(), 1u);
}

}  // namespace
