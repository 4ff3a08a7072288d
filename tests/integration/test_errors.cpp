// One test per bad input: the run fails with a grma::error whose message names
// the rank, the call and the values. Plus the watchdog's report on a stuck run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <grma/gaspi.hpp>
#include <grma/grma.hpp>
#include <grma/shmem.hpp>
#include <memory>
#include <string>
#include <thread>

namespace {

using testing::AnyOf;
using testing::ContainsRegex;
using testing::HasSubstr;
using testing::StartsWith;

grma::settings small_job(int ranks) {
  grma::settings s;
  s.backend = grma::backend_kind::cpu;
  s.ranks_per_device = ranks;
  s.heap_size = 1 << 20;
  s.timeout_seconds = 30;
  return s;
}

// Runs `program` on `ranks` ranks and returns the error it must end with.
template <class Program>
grma::error expect_failure(Program&& program, const grma::settings& s) {
  grma::runtime rt(s);
  try {
    rt.run(program);
  } catch (const grma::error& e) {
    return e;
  }
  ADD_FAILURE() << "the run did not fail";
  return grma::error(grma::errc::none, -1, grma::call::none, "");
}

template <class Program>
grma::error expect_failure(Program&& program, int ranks = 2) {
  return expect_failure(program, small_job(ranks));
}

// A window of 64 bytes on every rank; `body` runs with it, then it is freed.
template <class Body>
auto with_window(Body body) {
  return [body](auto& r) {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    body(r, w, static_cast<unsigned char*>(memory));
    r.window_free(w);
    r.free(memory);
  };
}

TEST(Errors, TargetRankOutOfRange) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 1) r.put_notify(w, 4, 0, 8, m, 0);
  }), 4);
  EXPECT_EQ(e.code(), grma::errc::rank_out_of_range);
  EXPECT_EQ(e.rank(), 1);
  EXPECT_EQ(e.where(), grma::call::put_notify);
  EXPECT_STREQ(e.what(), "grma: rank 1: put_notify: rank 4 is out of range: communicator world has 4 ranks");
}

TEST(Errors, OneWarpNamesTheRankAndTheCall) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 1) r.one_warp().put_notify(w, 4, 0, 8, m, 0);
  }), 4);
  EXPECT_EQ(e.rank(), 1);
  EXPECT_STREQ(e.what(), "grma: rank 1: put_notify: rank 4 is out of range: communicator world has 4 ranks");
}

TEST(Errors, NegativeTargetRank) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 0) r.get_notify(w, -1, 0, 8, m, 0);
  }));
  EXPECT_STREQ(e.what(), "grma: rank 0: get_notify: rank -1 is out of range: communicator world has 2 ranks");
}

TEST(Errors, RangeOutsideWindow) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 0) r.put_notify(w, 1, 60, 8, m, 0);
  }));
  EXPECT_EQ(e.code(), grma::errc::range_outside_window);
  EXPECT_STREQ(e.what(),
               "grma: rank 0: put_notify: offset 60 + size 8 exceeds the 64 bytes that rank 1 "
               "registered with window 0");
}

TEST(Errors, OffsetPastWindowDoesNotWrap) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 1) r.get_notify(w, 0, SIZE_MAX - 3, 8, m, 0);
  }));
  EXPECT_EQ(e.code(), grma::errc::range_outside_window);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 1: get_notify: offset 18446744073709551612 + size 8"));
}

TEST(Errors, NegativeTagOnPut) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 1) r.put_notify(w, 0, 0, 8, m, -2);
  }));
  EXPECT_EQ(e.code(), grma::errc::negative_tag);
  EXPECT_STREQ(e.what(), "grma: rank 1: put_notify: tag -2 is negative (tags are >= 0)");
}

TEST(Errors, ValuePutAtAnOffsetNotAlignedToItsSize) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 1) r.put_value_notify(w, 0, 6, std::uint32_t{7}, 0);
  }));
  EXPECT_EQ(e.code(), grma::errc::word_misaligned);
  EXPECT_EQ(e.where(), grma::call::put_value_notify);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: put_value_notify: the 4-byte value at offset 6 of the range rank 0 "
               "registered with window 0 is not aligned to its size (its offset and the range's "
               "start must both be)");
}

// The target stores the value whole at the range's start plus its offset:
// a range that starts off the value's alignment takes none at any offset.
TEST(Errors, ValuePutIntoARangeWhoseStartIsNotAligned) {
  const grma::error e = expect_failure([](auto& r) {
    auto* memory = static_cast<unsigned char*>(r.alloc(64));
    grma::window w = r.window_create(grma::world, memory + 1, 32);
    if (r.rank(grma::world) == 0) r.put_value_notify(w, 1, 4, std::uint32_t{7}, 0);
    r.window_free(w);
    r.free(memory);
  });
  EXPECT_EQ(e.code(), grma::errc::word_misaligned);
  EXPECT_STREQ(e.what(),
               "grma: rank 0: put_value_notify: the 4-byte value at offset 4 of the range rank 1 "
               "registered with window 0 is not aligned to its size (its offset and the range's "
               "start must both be)");
}

TEST(Errors, ValuePutOutsideWindow) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 0) r.put_value_notify(w, 1, 64, std::uint8_t{1}, 0);
  }));
  EXPECT_EQ(e.code(), grma::errc::range_outside_window);
  EXPECT_STREQ(e.what(),
               "grma: rank 0: put_value_notify: offset 64 + size 1 exceeds the 64 bytes that rank 1 "
               "registered with window 0");
}

TEST(Errors, NegativeTagOnValuePut) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 1) r.put_value_notify(w, 0, 8, 2.5, -1);
  }));
  EXPECT_EQ(e.code(), grma::errc::negative_tag);
  EXPECT_STREQ(e.what(), "grma: rank 1: put_value_notify: tag -1 is negative (tags are >= 0)");
}

TEST(Errors, NegativeTagOnWait) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 0) r.wait_notifications(w, grma::any_source, -5, 1);
  }));
  EXPECT_STREQ(e.what(), "grma: rank 0: wait_notifications: tag -5 is negative (tags are >= 0)");
}

TEST(Errors, SourceOutOfRangeOnTest) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 0) r.test_notifications(w, 2, grma::any_tag, 1);
  }));
  EXPECT_STREQ(e.what(), "grma: rank 0: test_notifications: rank 2 is out of range: communicator world has 2 ranks");
}

TEST(Errors, HostSourceWithoutHostAccess) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window, unsigned char*) {
    if (r.rank(grma::world) == 1) (void)r.host_source(0);
  }));
  EXPECT_EQ(e.code(), grma::errc::no_host_source);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: host_source: process 0 has no host source: the job was "
               "launched without launch_options::host_access");
}

TEST(Errors, CountBelowOne) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 1) r.wait_notifications(w, grma::any_source, grma::any_tag, 0);
  }));
  EXPECT_EQ(e.code(), grma::errc::invalid_count);
  EXPECT_STREQ(e.what(), "grma: rank 1: wait_notifications: count 0 is less than 1");
}

TEST(Errors, CountAboveMatchCapacity) {
  grma::settings s = small_job(2);
  s.match_capacity = 16;
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 0) r.wait_notifications(w, grma::any_source, grma::any_tag, 17);
  }), s);
  EXPECT_STREQ(e.what(),
               "grma: rank 0: wait_notifications: count 17 exceeds the 16 unmatched notifications "
               "a rank can hold (GRMA_MATCH_CAPACITY)");
}

TEST(Errors, SomeOfNone) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 1)
      r.wait_some_notifications(w, grma::any_source, grma::any_tag,
                                reinterpret_cast<grma::envelope*>(m), 0);
  }));
  EXPECT_EQ(e.code(), grma::errc::invalid_count);
  EXPECT_STREQ(e.what(), "grma: rank 1: wait_some_notifications: most 0 is less than 1");
}

TEST(Errors, SomeIntoANullBuffer) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 0) r.test_some_notifications(w, 1, 3, nullptr, 4);
  }));
  EXPECT_EQ(e.code(), grma::errc::null_buffer);
  EXPECT_STREQ(e.what(), "grma: rank 0: test_some_notifications: buffer is null but size is 64");
}

// The word waits for some write the ready words' indices: a null array of
// them is refused as a null values array is.
TEST(Errors, WordWaitsForSomeIntoANullIndexArray) {
  for (int form = 0; form < 5; ++form) {
    const grma::error e = expect_failure([form](auto& r) {
      auto* words = static_cast<std::uint64_t*>(r.calloc_symmetric(4, 8));
      const std::uint64_t values[4] = {};
      if (r.rank(grma::world) == 1) {
        if (form == 0) r.test_some(words, 4, nullptr, nullptr, grma::cmp::eq, std::uint64_t{0});
        if (form == 1)
          r.wait_until_some(words, 4, nullptr, nullptr, grma::cmp::eq, std::uint64_t{0});
        if (form == 2) r.test_some_vector(words, 4, nullptr, nullptr, grma::cmp::eq, values);
        if (form == 3) r.wait_until_some_vector(words, 4, nullptr, nullptr, grma::cmp::eq, values);
        std::size_t found = 0;
        if (form == 4)
          r.wait_until_some(words, 4, nullptr, nullptr, grma::cmp::eq, std::uint64_t{0}, found,
                            grma::within{1});
      }
      r.free_symmetric(words);
    });
    EXPECT_EQ(e.code(), grma::errc::null_buffer) << form;
    const char* name[] = {"test_some", "wait_until_some", "test_some_vector",
                          "wait_until_some_vector", "wait_until_some"};
    EXPECT_EQ(e.what(),
              std::string("grma: rank 1: ") + name[form] + ": buffer is null but size is 32")
        << form;
  }
}

TEST(Errors, SomeIntoAMisalignedBuffer) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 1)
      r.test_some_notifications(w, 0, 3, reinterpret_cast<grma::envelope*>(m + 4), 2);
  }));
  EXPECT_EQ(e.code(), grma::errc::word_misaligned);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 1: test_some_notifications: the 8-byte word at 0x"));
}

// More than a pending list holds is no error for some: a call takes at most
// what the list can hold.
TEST(Errors, SomeAboveMatchCapacityIsNoError) {
  grma::settings s = small_job(2);
  s.match_capacity = 16;
  grma::runtime rt(s);
  rt.run(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 1)
      for (int k = 0; k < 20; ++k) r.put_notify(w, 0, 0, 0, m, k);
    r.barrier(grma::world);
    if (r.rank(grma::world) == 0) {
      auto* got = static_cast<grma::envelope*>(r.alloc(sizeof(grma::envelope) * 100));
      int taken = r.wait_some_notifications(w, 1, grma::any_tag, got, 100);
      GRMA_ASSERT(r, taken == 16 && got[0].tag == 0 && got[15].tag == 15);
      taken = r.wait_some_notifications(w, 1, grma::any_tag, got, 100);
      GRMA_ASSERT(r, taken == 4 && got[0].tag == 16 && got[3].tag == 19);
      r.free(got);
    }
    r.barrier(grma::world);
  }));
}

TEST(Errors, WindowUsedAfterFree) {
  const grma::error e = expect_failure([](auto& r) {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    const grma::window kept = w;
    r.window_free(w);
    EXPECT_EQ(w, grma::window_none);
    if (r.rank(grma::world) == 1) r.put_notify(kept, 0, 0, 8, memory, 0);
  });
  EXPECT_EQ(e.code(), grma::errc::window_freed);
  EXPECT_STREQ(e.what(), "grma: rank 1: put_notify: window 0 (generation 1) is used after window_free");
}

TEST(Errors, WindowNeverCreated) {
  const grma::error e = expect_failure([](auto& r) {
    if (r.rank(grma::world) == 0) r.wait_notifications(grma::window{3, 1}, 1, 0, 1);
  });
  EXPECT_EQ(e.code(), grma::errc::window_not_created);
  EXPECT_STREQ(e.what(), "grma: rank 0: wait_notifications: window 3 (generation 1) was never created");
}

// window_free leaves window_none in the handle: a second free names it so.
TEST(Errors, DoubleWindowFreeNamesWindowNone) {
  const grma::error e = expect_failure([](auto& r) {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    r.window_free(w);
    r.window_free(w);
  });
  EXPECT_EQ(e.code(), grma::errc::window_not_created);
  EXPECT_THAT(e.what(), HasSubstr(": window_free: the handle is grma::window_none: its window was "
                                  "freed by window_free (or the handle was never set by window_create)"));
}

TEST(Errors, WindowMemoryNotFromGrma) {
  const grma::error e = expect_failure([](auto& r) {
    alignas(8) static unsigned char outside[2][64];
    r.window_create(grma::world, outside[r.rank(grma::world)], 64);
  });
  EXPECT_EQ(e.code(), grma::errc::window_memory_not_managed);
  EXPECT_THAT(e.what(), HasSubstr(": window_create: memory at 0x"));
  EXPECT_THAT(e.what(), HasSubstr("(64 bytes) is not grma memory: register memory from alloc or userdata"));
}

TEST(Errors, WindowTableFull) {
  grma::settings s = small_job(2);
  s.max_windows = 2;
  const grma::error e = expect_failure([](auto& r) {
    for (int i = 0; i < 3; ++i) r.window_create(grma::world, nullptr, 0);
  }, s);
  EXPECT_EQ(e.code(), grma::errc::window_table_full);
  EXPECT_THAT(e.what(), HasSubstr(": window_create: all 2 window slots are in use (GRMA_MAX_WINDOWS)"));
}

TEST(Errors, DoubleFree) {
  // Rank 1 alone allocates: with rank 0's blocks beside its own (the ranks
  // of a device share its heap), a freed neighbour of rank 0's could merge
  // with `a` and hide its header, and the second free would then be an
  // invalid free (seen once in an AddressSanitizer run).
  const grma::error e = expect_failure([](auto& r) {
    if (r.rank(grma::world) != 1) return;
    void* a = r.alloc(100);
    void* b = r.alloc(100);  // keeps a's header from merging into a free neighbour
    r.free(a);
    r.free(a);
    r.free(b);
  });
  EXPECT_EQ(e.code(), grma::errc::double_free);
  EXPECT_EQ(e.where(), grma::call::free);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 1: free: pointer 0x"));
  EXPECT_THAT(e.what(), HasSubstr("was freed already (double free)"));
}

TEST(Errors, FreeOfForeignPointer) {
  const grma::error e = expect_failure([](auto& r) {
    int local = 0;
    if (r.rank(grma::world) == 0) r.free(&local);
  });
  EXPECT_EQ(e.code(), grma::errc::invalid_free);
  EXPECT_THAT(e.what(), HasSubstr("was not returned by alloc, or was freed already"));
}

TEST(Errors, HeapExhausted) {
  const grma::error e = expect_failure([](auto& r) {
    if (r.rank(grma::world) == 0) r.alloc(std::size_t(2) << 20);
  });
  EXPECT_EQ(e.code(), grma::errc::heap_exhausted);
  EXPECT_STREQ(e.what(),
               "grma: rank 0: alloc: cannot allocate 2097152 bytes: the heap of 1048576 bytes has "
               "1048512 bytes free, the largest free block is 1048512 bytes (GRMA_HEAP_SIZE)");
}

// A collective that takes rank-private memory for itself, where the heap
// has no room for it, fails under its own name.
TEST(Errors, HeapTooFullForACollect) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<unsigned char*>(r.calloc_symmetric(16, 1));
    if (r.rank(grma::world) == 1)
      r.alloc((std::size_t(1) << 20) - 2048);  // leaves either rank less than 4 KiB
    r.collect(grma::team_world, block + 8, block, 4);
  });
  EXPECT_EQ(e.code(), grma::errc::heap_exhausted);
  EXPECT_EQ(e.where(), grma::call::collect);
  EXPECT_THAT(e.what(),
              HasSubstr(": collect: cannot allocate 4096 bytes: the heap of 1048576 bytes has "));
}

TEST(Errors, SharedBlockSizesDiffer) {
  const grma::error e =
      expect_failure([](auto& r) { r.alloc_shared(r.rank(grma::device) == 2 ? 128 : 64); }, 3);
  EXPECT_EQ(e.code(), grma::errc::shared_size_mismatch);
  EXPECT_EQ(e.where(), grma::call::alloc_shared);
  const std::string rank = "grma: rank " + std::to_string(e.rank()) + ": alloc_shared: ";
  EXPECT_STREQ(e.what(), (rank + "every rank of the device must ask for the same size: this rank "
                                 "asked for " + (e.rank() == 2 ? "128" : "64") +
                          " bytes, device rank 0 for 64 (device rank 2 differs)").c_str());
}

TEST(Errors, SharedBlockTooLarge) {
  const grma::error e = expect_failure([](auto& r) { r.alloc_shared(std::size_t(2) << 20); }, 3);
  EXPECT_EQ(e.code(), grma::errc::heap_exhausted);
  EXPECT_EQ(e.rank(), 0);  // the device's rank 0 allocates
  EXPECT_THAT(e.what(), StartsWith("grma: rank 0: alloc_shared: cannot allocate 2097152 bytes: "
                                   "the heap of 1048576 bytes"));
}

TEST(Errors, SharedFreeOfAForeignPointer) {
  static int not_grma_memory = 0;  // the same pointer on every rank
  const grma::error e = expect_failure([](auto& r) { r.free_shared(&not_grma_memory); });
  EXPECT_EQ(e.code(), grma::errc::invalid_free);
  EXPECT_EQ(e.rank(), 0);  // the device's rank 0 frees
  EXPECT_THAT(e.what(), StartsWith("grma: rank 0: free_shared: pointer 0x"));
  EXPECT_THAT(e.what(), HasSubstr("was not returned by alloc, or was freed already"));
}

TEST(Errors, SharedBlockFreedWithDifferentPointers) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<unsigned char*>(r.alloc_shared(256));
    r.free_shared(r.rank(grma::device) == 1 ? block + 64 : block);
  });
  EXPECT_EQ(e.code(), grma::errc::shared_pointer_mismatch);
  EXPECT_THAT(e.what(), HasSubstr(": free_shared: every rank of the device must free the same "
                                  "block: device rank 1 passed another pointer than device rank 0 "
                                  "(this rank passed 0x"));
}

TEST(Errors, MismatchedCollectives) {
  const grma::error e = expect_failure([](auto& r) {
    if (r.rank(grma::world) == 2)
      r.window_create(grma::world, nullptr, 0);
    else
      r.barrier(grma::world);
  }, 3);
  EXPECT_EQ(e.code(), grma::errc::collective_mismatch);
  EXPECT_EQ(e.rank(), 0);  // the leader sees the mismatch
  EXPECT_STREQ(e.what(),
               "grma: rank 0: barrier: collective mismatch on communicator world: rank 2 called "
               "window_create (collective #1)");
}

// Ranks of the device communicator are named by their world numbers, as
// everywhere else in the message: world rank 3 is device 1's rank 1.
TEST(Errors, MismatchedCollectivesOfADeviceNameWorldRanks) {
  grma::settings s = small_job(2);
  s.devices = 2;
  const grma::error e = expect_failure(
      [](auto& r) {
        if (r.rank(grma::world) == 3)
          r.window_create(grma::device, nullptr, 0);
        else
          r.barrier(grma::device);
      },
      s);
  EXPECT_STREQ(e.what(),
               "grma: rank 2: barrier: collective mismatch on communicator device: rank 3 called "
               "window_create (collective #1)");
}

// The message names the call that was given the communicator.
TEST(Errors, InvalidCommunicator) {
  EXPECT_STREQ(expect_failure([](auto& r) {
                 if (r.rank(grma::world) == 0) r.barrier(grma::comm{7});
               }).what(),
               "grma: rank 0: barrier: communicator 7 does not exist");
  EXPECT_STREQ(expect_failure([](auto& r) {
                 if (r.rank(grma::world) == 1) r.window_create(grma::comm{9}, nullptr, 0);
               }).what(),
               "grma: rank 1: window_create: communicator 9 does not exist");
  EXPECT_STREQ(expect_failure([](auto& r) {
                 if (r.rank(grma::world) == 0) (void)r.size(grma::comm{5});
               }).what(),
               "grma: rank 0: rank/size: communicator 5 does not exist");
}

TEST(Errors, MisalignedSignal) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 0) r.put_signal(w, 1, 0, 8, m, 4, 1, grma::signal_op::set);
  }));
  EXPECT_EQ(e.code(), grma::errc::signal_misaligned);
  EXPECT_STREQ(e.what(),
               "grma: rank 0: put_signal: signal offset 4 is not 8-byte aligned in the heap");
}

// The offset named is the signal word's: a put's own range may be fine.
TEST(Errors, SignalOutsideWindow) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 1) r.wait_signal(w, 64, grma::cmp::eq, 1);
  }));
  EXPECT_STREQ(
      e.what(),
      "grma: rank 1: wait_signal: signal offset 64 + size 8 exceeds the 64 bytes that rank 1 "
      "registered with window 0");
  const grma::error put = expect_failure(with_window([](auto& r, grma::window w, unsigned char* m) {
    if (r.rank(grma::world) == 0) r.put_signal(w, 1, 0, 8, m, 64, 1, grma::signal_op::set);
  }));
  EXPECT_STREQ(
      put.what(),
      "grma: rank 0: put_signal: signal offset 64 + size 8 exceeds the 64 bytes that rank 1 "
      "registered with window 0");
}

TEST(Errors, NullBuffer) {
  const grma::error e = expect_failure(with_window([](auto& r, grma::window w, unsigned char*) {
    if (r.rank(grma::world) == 0) r.put_notify(w, 1, 0, 16, nullptr, 0);
  }));
  EXPECT_STREQ(e.what(), "grma: rank 0: put_notify: buffer is null but size is 16");
}

// ---- the core: symmetric heap, RMA, atomics, contexts, waits ----

// A world symmetric call's mismatch on one node, as rank `rank` reports it:
// `passed` begins what that rank passed.
std::string symmetric_mismatch_from(int rank, const char* where, const char* passed) {
  return "rank " + std::to_string(rank) + ": " + where +
         ": every rank must pass the same arguments: world rank 1 passed others than world rank "
         "0 (this rank passed " +
         passed;
}

// On one node the leader compares every rank's arguments with rank 0's;
// across nodes the members' check of every collective over a team says
// what the other member passed.
TEST(Errors, SymmetricSizesDiffer) {
  auto sizes_differ = [](auto& r) {
    r.free_symmetric(r.alloc_symmetric(r.rank(grma::world) == 1 ? 128 : 64));
  };
  const grma::error e = expect_failure(sizes_differ);
  EXPECT_EQ(e.code(), grma::errc::symmetric_mismatch);
  EXPECT_EQ(e.where(), grma::call::alloc_symmetric);
  EXPECT_THAT(e.what(),
              AnyOf(HasSubstr(symmetric_mismatch_from(0, "alloc_symmetric", "64 bytes at alignment 64)")),
                    HasSubstr(symmetric_mismatch_from(1, "alloc_symmetric", "128 bytes at alignment 64)"))));
  grma::settings two_nodes = small_job(2);
  two_nodes.nodes = 2;
  two_nodes.devices = 2;
  const grma::error across = expect_failure(sizes_differ, two_nodes);
  EXPECT_EQ(across.code(), grma::errc::team_collective_mismatch);
  EXPECT_THAT(across.what(), HasSubstr("alloc_symmetric: every member of team 0 must make the same "
                                       "collective call: member "));
  EXPECT_THAT(across.what(), HasSubstr("at alignment 64, this rank for "));
}

TEST(Errors, SymmetricFreesDiffer) {
  const grma::error e = expect_failure([](auto& r) {
    void* block = r.alloc_symmetric(64);
    r.free_symmetric(r.rank(grma::world) == 1 ? nullptr : block);
  });
  EXPECT_EQ(e.code(), grma::errc::symmetric_mismatch);
  EXPECT_THAT(e.what(), AnyOf(HasSubstr(symmetric_mismatch_from(0, "free_symmetric", "0x")),
                              HasSubstr(symmetric_mismatch_from(1, "free_symmetric", "null)"))));
}

// Whichever rank's report ends the job names the largest free block,
// though only the first rank of a node looks at the node's table. Four
// ranks on one node, then two on each of two nodes, ten runs each: the
// report comes from a rank other than a node's first in most of them.
TEST(Errors, SymmetricHeapExhausted) {
  for (int nodes : {1, 2}) {
    grma::settings s = small_job(nodes == 1 ? 4 : 2);
    s.nodes = nodes;
    s.devices = nodes;
    s.symmetric_size =
        std::uint64_t(s.ranks_per_device) * 32768;  // 32768 a rank, the teams' 16384 first
    for (int run = 0; run < 10; ++run) {
      const grma::error e = expect_failure([](auto& r) { r.alloc_symmetric(20000); }, s);
      EXPECT_THAT(e.what(),
                  HasSubstr("alloc_symmetric: cannot allocate 20000 symmetric bytes: each "
                            "rank's slice of 32768 bytes has no free block that large "
                            "(largest 16384 bytes; GRMA_SYMMETRIC_SIZE)"))
          << nodes << " nodes, run " << run;
    }
  }
}

TEST(Errors, SymmetricSliceSmallerThanTheTeamsWorkspaces) {
  grma::settings s = small_job(2);
  s.symmetric_size = 2 * 8192;
  const grma::error e = expect_failure([](auto& r) { r.barrier(grma::world); }, s);
  EXPECT_EQ(e.code(), grma::errc::invalid_config);
  EXPECT_STREQ(e.what(),
               "grma: GRMA_SYMMETRIC_SIZE of 16384 bytes gives each of the 2 ranks of a device a slice of 8192 "
               "bytes, less than the 16384 bytes of teams' workspaces every slice starts with "
               "(GRMA_SYMMETRIC_SIZE at least 32768)");
}

TEST(Errors, SymmetricAlignmentNotAPowerOfTwo) {
  const grma::error e = expect_failure([](auto& r) {
    if (r.rank(grma::world) == 0) r.alloc_symmetric(64, 48);
    r.barrier(grma::world);
  });
  EXPECT_STREQ(e.what(),
               "grma: rank 0: alloc_symmetric: alignment 48 is not a power of two of at most 4096");
}

TEST(Errors, SymmetricFreeOfAnAddressInsideABlock) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<unsigned char*>(r.alloc_symmetric(256));
    r.free_symmetric(block + 64);
  });
  EXPECT_EQ(e.code(), grma::errc::invalid_free);
  EXPECT_THAT(e.what(), HasSubstr("free_symmetric: pointer 0x"));
}

TEST(Errors, PutToMemoryOutsideTheSymmetricHeap) {
  const grma::error e = expect_failure([](auto& r) {
    void* mine = r.alloc(64);
    if (r.rank(grma::world) == 0) r.put(mine, mine, 8, 1);
    r.barrier(grma::world);
  });
  EXPECT_EQ(e.code(), grma::errc::not_symmetric);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 0: put: address 0x"));
  EXPECT_THAT(e.what(), HasSubstr(" (8 bytes) is not in this rank's symmetric heap slice of "));
}

// A put or get of 0 bytes moves nothing and takes any addresses (as
// OpenSHMEM's of 0 elements), but not a target outside the world.
TEST(Errors, ZeroBytesTakeAnyAddressButNotAnyTarget) {
  const grma::error e = expect_failure([](auto& r) {
    const int other = 1 - r.rank(grma::world);
    r.put(nullptr, nullptr, 0, other);
    r.get_nbi(nullptr, nullptr, 0, other);
    r.quiet();
    r.barrier(grma::world);
    if (r.rank(grma::world) == 1) r.put_nbi(nullptr, nullptr, 0, 2);
  });
  EXPECT_EQ(e.code(), grma::errc::rank_out_of_range);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: put_nbi: rank 2 is out of range: communicator world has 2 ranks");
}

TEST(Errors, GetPastTheEndOfTheSlice) {
  grma::settings s = small_job(2);
  s.symmetric_size = 2 * 32768;
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<unsigned char*>(r.alloc_symmetric(16384));  // the slice's last 16384
    unsigned char local[64];
    if (r.rank(grma::world) == 1) r.get(local, block + 16352, 64, 0);
    r.barrier(grma::world);
  }, s);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 1: get: address 0x"));
  EXPECT_THAT(e.what(), HasSubstr(" (64 bytes) is not in this rank's symmetric heap slice of 32768 bytes"));
}

TEST(Errors, CoreTargetOutOfRange) {
  const grma::error e = expect_failure([](auto& r) {
    auto* word = static_cast<std::uint64_t*>(r.calloc_symmetric(1, 8));
    if (r.rank(grma::world) == 0) r.p(word, std::uint64_t{1}, 5);
    r.barrier(grma::world);
  });
  EXPECT_STREQ(e.what(), "grma: rank 0: p: rank 5 is out of range: communicator world has 2 ranks");
}

TEST(Errors, AtomicOnAMisalignedWord) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<unsigned char*>(r.calloc_symmetric(2, 8));
    if (r.rank(grma::world) == 1)
      r.atomic_add(reinterpret_cast<std::uint64_t*>(block + 4), std::uint64_t{1}, 0);
    r.barrier(grma::world);
  });
  EXPECT_EQ(e.code(), grma::errc::word_misaligned);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 1: atomic_add: the 8-byte word at 0x"));
  EXPECT_THAT(e.what(), HasSubstr(" is not aligned to its size"));
}

TEST(Errors, ContextUsedAfterDestroy) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<unsigned char*>(r.alloc_symmetric(64));
    grma::context ctx = r.ctx_create();
    const grma::context kept = ctx;
    r.ctx_destroy(ctx);
    if (r.rank(grma::world) == 0) r.put_nbi(block, block + 8, 8, 1, kept);
    r.barrier(grma::world);
  });
  EXPECT_STREQ(e.what(),
               "grma: rank 0: put_nbi: context 1 (generation 1) is not a live context of this "
               "rank (used after ctx_destroy, or never created)");
}

TEST(Errors, TooManyContexts) {
  const grma::error e = expect_failure([](auto& r) {
    if (r.rank(grma::world) == 1)
      for (int i = 0; i < 17; ++i) r.ctx_create();
    r.barrier(grma::world);
  });
  EXPECT_STREQ(e.what(),
               "grma: rank 1: ctx_create: all 16 contexts of the rank are in use (ctx_destroy "
               "frees one)");
}

TEST(Errors, WaitWithAnInvalidComparison) {
  const grma::error e = expect_failure([](auto& r) {
    auto* word = static_cast<std::uint64_t*>(r.calloc_symmetric(1, 8));
    if (r.rank(grma::world) == 1) r.wait_until(word, static_cast<grma::cmp>(9), std::uint64_t{0});
    r.barrier(grma::world);
  });
  EXPECT_STREQ(e.what(), "grma: rank 1: wait_until: invalid signal_op or cmp value 9");
}

// ---- the OpenSHMEM layer: its errors are the core's, named by the layer's call ----

TEST(Errors, ShmemNegativeStride) {
  const grma::error e = expect_failure([](auto& r) {
    grma::shmem::handle sh(r);
    auto* block = static_cast<long*>(sh.calloc(8, sizeof(long)));
    if (sh.my_pe() == 1) sh.iput(block, block + 4, -1, 1, 2, 0);
    sh.barrier_all();
  });
  EXPECT_EQ(e.code(), grma::errc::invalid_stride);
  EXPECT_STREQ(
      e.what(),
      "grma: rank 1: iput: dest stride -1, source stride 1: strides count elements and are "
      "never negative");
}

TEST(Errors, ShmemAlltoallsWithAZeroStride) {
  const grma::error e = expect_failure([](auto& r) {
    grma::shmem::handle sh(r);
    auto* block = static_cast<int*>(sh.calloc(8, sizeof(int)));
    sh.alltoalls(grma::shmem::team_world, block, block + 4, 1, 0, 1);
  });
  // Every rank fails alike; the first to fail names itself.
  EXPECT_EQ(e.code(), grma::errc::invalid_stride);
  EXPECT_THAT(e.what(), AnyOf(StartsWith("grma: rank 0: alltoalls: "),
                              StartsWith("grma: rank 1: alltoalls: ")));
  EXPECT_THAT(e.what(),
              HasSubstr("alltoalls: dest stride 1, source stride 0: strides count elements and are "
                        "never negative (alltoalls': at least 1)"));
}

TEST(Errors, ShmemStridedRangePastTheSlice) {
  // 3 elements 2^60 apart: a range of more than 2^63 bytes, which must not
  // wrap around to a small one and pass the check.
  const grma::error e = expect_failure([](auto& r) {
    grma::shmem::handle sh(r);
    auto* block = static_cast<long*>(sh.calloc(8, sizeof(long)));
    // (The stride from n_pes, 2: a constant would have the compiler warn about the loop it guards.)
    if (sh.my_pe() == 1) sh.iget(block, block + 4, 1, std::ptrdiff_t(sh.n_pes()) << 59, 3, 0);
    sh.barrier_all();
  });
  EXPECT_EQ(e.code(), grma::errc::not_symmetric);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 1: iget: address 0x"));
  EXPECT_THAT(
      e.what(),
      HasSubstr(" (18446744073709551615 bytes) is not in this rank's symmetric heap slice"));
}

TEST(Errors, ShmemPutSignalWithAnInvalidOperation) {
  const grma::error e = expect_failure([](auto& r) {
    grma::shmem::handle sh(r);
    auto* signal = static_cast<std::uint64_t*>(sh.calloc(2, 8));
    if (sh.my_pe() == 0)
      sh.putmem_signal(signal + 1, signal, 8, signal, 1, static_cast<grma::signal_op>(5), 1);
    sh.barrier_all();
  });
  EXPECT_STREQ(e.what(), "grma: rank 0: put_signal: invalid signal_op or cmp value 5");
}

TEST(Errors, ShmemPutSignalToAMisalignedSignal) {
  const grma::error e = expect_failure([](auto& r) {
    grma::shmem::handle sh(r);
    auto* block = static_cast<unsigned char*>(sh.calloc(4, 8));
    auto* signal = reinterpret_cast<std::uint64_t*>(block + 12);
    if (sh.my_pe() == 1)
      sh.putmem_signal_nbi(block, block + 24, 4, signal, 1, grma::shmem::signal_add, 0);
    sh.barrier_all();
  });
  EXPECT_EQ(e.code(), grma::errc::word_misaligned);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 1: put_signal_nbi: the 8-byte word at 0x"));
}

TEST(Errors, ShmemPutSignalFromOutsideTheSymmetricHeap) {
  const grma::error e = expect_failure([](auto& r) {
    grma::shmem::handle sh(r);
    auto* block = static_cast<std::uint64_t*>(sh.calloc(4, 8));
    auto* mine = static_cast<std::uint64_t*>(r.alloc(64));
    if (sh.my_pe() == 0) sh.put_signal(mine, block, 1, block + 1, 1, grma::shmem::signal_set, 1);
    sh.barrier_all();
  });
  EXPECT_EQ(e.code(), grma::errc::not_symmetric);
  EXPECT_THAT(e.what(), StartsWith("grma: rank 0: put_signal: "));
}

TEST(Errors, ShmemVectorWaitWithoutValues) {
  const grma::error e = expect_failure([](auto& r) {
    grma::shmem::handle sh(r);
    auto* words = static_cast<int*>(sh.calloc(4, sizeof(int)));
    if (sh.my_pe() == 1) sh.wait_until_all_vector(words, 4, nullptr, grma::shmem::cmp_eq, nullptr);
    sh.barrier_all();
  });
  EXPECT_STREQ(e.what(), "grma: rank 1: wait_until_all_vector: buffer is null but size is 16");
}

// ---- the GASPI layer: bad arguments end the job, named by the layer's call ----

namespace gaspi = grma::gaspi;

// A GASPI program: proc_init, segment 0 of 256 bytes, `body` on rank 1,
// a barrier over group_all, proc_term.
template <class Body>
auto gaspi_program(Body body) {
  return [body](auto& r) {
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    g.segment_create(0, 256, gaspi::group_all, gaspi::block);
    if (r.rank(grma::world) == 1) body(g);
    g.barrier(gaspi::group_all, gaspi::block);
    g.proc_term(gaspi::block);
  };
}

TEST(Errors, GaspiUnknownSegment) {
  const grma::error e =
      expect_failure(gaspi_program([](auto& g) { g.write(0, 0, 0, 4, 0, 8, 0, gaspi::block); }));
  EXPECT_EQ(e.code(), grma::errc::segment_unknown);
  EXPECT_EQ(e.where(), grma::call::gaspi_write);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_write: segment 4 does not exist on this rank (segment_create "
               "makes ids 0 to 31)");
}

TEST(Errors, GaspiRangeOutsideTheSegment) {
  const grma::error e =
      expect_failure(gaspi_program([](auto& g) { g.read(0, 0, 0, 0, 200, 57, 1, gaspi::block); }));
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_read: offset 200 + size 57 exceeds the 256 bytes of segment 0 "
               "(rank 0's copy)");
}

// GASPI's atomics name a segment's word by its offset, which the message shows as one.
TEST(Errors, GaspiAtomicOnAMisalignedOffset) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) {
    gaspi::atomic_value_t old = 0;
    g.atomic_fetch_add(0, 4, 0, 1, &old, gaspi::block);
  }));
  EXPECT_EQ(e.code(), grma::errc::word_misaligned);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_atomic_fetch_add: the 8-byte word at segment offset 4 is not "
               "aligned to its size");
}

TEST(Errors, GaspiNotificationIdOutOfRange) {
  const grma::error e =
      expect_failure(gaspi_program([](auto& g) { g.notify(0, 0, 1024, 1, 0, gaspi::block); }));
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_notify: notification ids 1024 to 1024 are not all in 0 to 1023 "
               "of segment 0");
}

TEST(Errors, GaspiWaitsomePastTheLastId) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) {
    gaspi::notification_id_t id = 0;
    g.notify_waitsome(0, 1000, 25, &id, gaspi::test);
  }));
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_notify_waitsome: notification ids 1000 to 1024 are not all in "
               "0 to 1023 of segment 0");
}

TEST(Errors, GaspiNotificationOfValueZero) {
  const grma::error e = expect_failure(
      gaspi_program([](auto& g) { g.write_notify(0, 0, 0, 0, 0, 8, 3, 0, 0, gaspi::block); }));
  EXPECT_EQ(e.code(), grma::errc::notification_zero);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_write_notify: notification 3 with value 0 (a notification's "
               "value is not 0)");
}

TEST(Errors, GaspiQueueOutOfRange) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) { g.wait(16, gaspi::block); }));
  EXPECT_STREQ(e.what(), "grma: rank 1: gaspi_wait: queue 16 is outside 0 to 15");
}

TEST(Errors, GaspiBarrierOfAGroupNotCommitted) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) {
    gaspi::group_t group = 0;
    g.group_create(&group);
    g.group_add(group, 1);
    g.barrier(group, gaspi::block);
  }));
  EXPECT_EQ(e.code(), grma::errc::group_state);
  EXPECT_STREQ(e.what(), "grma: rank 1: gaspi_barrier: group 1 is not committed");
}

TEST(Errors, GaspiCommitByARankOutsideTheGroup) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) {
    gaspi::group_t group = 0;
    g.group_create(&group);
    g.group_add(group, 0);
    g.group_commit(group, gaspi::block);
  }));
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_group_commit: group_commit by a rank that is not a member of "
               "group: 1");
}

// A call's output pointer is checked: a null one is a bad argument of the
// call, named, not a crash.
TEST(Errors, GaspiQueriesWithANullResultPointer) {
  const grma::error segment =
      expect_failure(gaspi_program([](auto& g) { g.segment_ptr(0, nullptr); }));
  EXPECT_EQ(segment.code(), grma::errc::null_buffer);
  EXPECT_STREQ(segment.what(),
               "grma: rank 1: gaspi_segment_ptr/size/num/list: the output pointer is null");
  const grma::error rank = expect_failure(gaspi_program([](auto& g) { g.proc_rank(nullptr); }));
  EXPECT_STREQ(rank.what(), "grma: rank 1: gaspi_proc_rank/num: the output rank is null");
  const grma::error group = expect_failure(gaspi_program([](auto& g) { g.group_create(nullptr); }));
  EXPECT_STREQ(group.what(), "grma: rank 1: gaspi_group_create: the output group is null");
  const grma::error size = expect_failure(gaspi_program([](auto& g) { g.queue_size(0, nullptr); }));
  EXPECT_STREQ(size.what(),
               "grma: rank 1: gaspi_queue_size/size_max/num: the output posted is null");
  const grma::error id = expect_failure(
      gaspi_program([](auto& g) { g.notify_waitsome(0, 0, 4, nullptr, gaspi::test); }));
  EXPECT_STREQ(id.what(), "grma: rank 1: gaspi_notify_waitsome: the output first_id is null");
  const grma::error sender = expect_failure(
      gaspi_program([](auto& g) { g.passive_receive(0, 0, nullptr, 8, gaspi::test); }));
  EXPECT_STREQ(sender.what(), "grma: rank 1: gaspi_passive_receive: the output rank is null");
  const grma::error list =
      expect_failure(gaspi_program([](auto& g) { g.segment_list(1, nullptr); }));
  EXPECT_STREQ(list.what(),
               "grma: rank 1: gaspi_segment_ptr/size/num/list: the output ids is null");
}

TEST(Errors, GaspiWaitsomeOfANegativeCount) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) {
    gaspi::notification_id_t id = 0;
    g.notify_waitsome(0, 0, -1, &id, gaspi::test);
  }));
  EXPECT_EQ(e.code(), grma::errc::argument_range);
  EXPECT_STREQ(e.what(), "grma: rank 1: gaspi_notify_waitsome: num -1 is outside 0 to 1024");
}

TEST(Errors, GaspiProcInitTwice) {
  const grma::error e = expect_failure([](auto& r) {
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    if (r.rank(grma::world) == 1) g.proc_init(gaspi::block);
    g.proc_term(gaspi::block);
  });
  EXPECT_EQ(e.code(), grma::errc::not_initialized);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_proc_init: the GASPI layer is initialized already on this rank "
               "(proc_term ends it first)");
}

TEST(Errors, GaspiCallBeforeProcInit) {
  const grma::error e = expect_failure([](auto& r) {
    gaspi::handle g(r);
    if (r.rank(grma::world) == 1) g.barrier(gaspi::group_all, gaspi::block);
    r.barrier(grma::world);
  });
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_barrier: the GASPI layer is not initialized on this rank "
               "(proc_init first)");
}

TEST(Errors, GaspiAllreduceOfTooManyElements) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) {
    long values[2] = {};
    g.allreduce(values, values, 256, gaspi::op_sum, gaspi::type_long, gaspi::group_all,
                gaspi::block);
  }));
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_allreduce: allreduce's count 256 is outside 1 to 255");
}

TEST(Errors, GaspiAllreduceUserOfMoreThanItsBuffer) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) {
    long values[2] = {};
    g.allreduce_user(
        values, values, 2, gaspi::allreduce_buf_size, [](auto...) { return gaspi::success; },
        nullptr, gaspi::group_all, gaspi::block);
  }));
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_allreduce_user: allreduce_user's element_size 2040 is outside "
               "1 to 1020");
}

TEST(Errors, GaspiAllreduceUserWhoseOperationFails) {
  const grma::error e = expect_failure([](auto& r) {
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    long one = r.rank(grma::world), total = 0;
    g.allreduce_user(
        &one, &total, 1, sizeof one, [](auto...) { return gaspi::error; }, nullptr,
        gaspi::group_all, gaspi::block);
  });
  EXPECT_EQ(e.code(), grma::errc::argument_refused);
  EXPECT_STREQ(
      e.what(),
      "grma: rank 0: gaspi_allreduce_user: allreduce_user's operation returned status: -1");
}

// proc_init, then group {1, 2}, made and filled (not committed).
template <class Handle>
gaspi::group_t initialized_with_pair(Handle& g) {
  g.proc_init(gaspi::block);
  gaspi::group_t pair = 0;
  g.group_create(&pair);
  g.group_add(pair, 1);
  g.group_add(pair, 2);
  return pair;
}

TEST(Errors, GaspiAllreduceWhileAnotherGroupsIsUnfinished) {
  const grma::error e = expect_failure(
      [](auto& r) {
        gaspi::handle g(r);
        const gaspi::group_t pair = initialized_with_pair(g);
        long one = 1, total = 0;
        // Rank 1's allreduce over every rank finds rank 0 missing and
        // returns timeout; its allreduce over {1, 2} then is refused.
        if (r.rank(grma::world) == 1) {
          g.allreduce(&one, &total, 1, gaspi::op_sum, gaspi::type_long, gaspi::group_all,
                      gaspi::test);
          g.group_commit(pair, gaspi::block);
          g.allreduce(&one, &total, 1, gaspi::op_sum, gaspi::type_long, pair, gaspi::block);
        }
        if (r.rank(grma::world) == 2) g.group_commit(pair, gaspi::block);
        g.barrier(gaspi::group_all, gaspi::block);
      },
      3);
  EXPECT_EQ(e.code(), grma::errc::collective_pending);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_allreduce: group 0 has a gaspi_allreduce that returned "
               "timeout: call it again, with the same arguments, first");
}

TEST(Errors, GaspiDeleteOfAGroupWithAnUnfinishedAllreduce) {
  const grma::error e = expect_failure(
      [](auto& r) {
        gaspi::handle g(r);
        const gaspi::group_t pair = initialized_with_pair(g);
        const int me = r.rank(grma::world);
        if (me == 1 || me == 2) g.group_commit(pair, gaspi::block);
        // Rank 2 does not take part: rank 1's allreduce returns timeout.
        if (me == 1) {
          long one = 1, total = 0;
          g.allreduce(&one, &total, 1, gaspi::op_sum, gaspi::type_long, pair, gaspi::test);
          g.group_delete(pair);
        }
        g.barrier(gaspi::group_all, gaspi::block);
      },
      3);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_group_delete: group 1 has a gaspi_allreduce that returned "
               "timeout: call it again, with the same arguments, first");
}

TEST(Errors, GaspiSegmentOfAWrappingSize) {
  const grma::error e = expect_failure(gaspi_program([](auto& g) {
    g.segment_create(1, ~std::size_t{0} - 4096, gaspi::group_all, gaspi::block);
  }));
  EXPECT_EQ(e.code(), grma::errc::argument_range);
  // A size is named as it was given, unsigned.
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_segment_create: segment size 18446744073709547519 is outside 0 "
               "to 9223372036854767615");
}

TEST(Errors, GaspiSegmentIdsThatDiffer) {
  const grma::error e = expect_failure([](auto& r) {
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    g.segment_create(r.rank(grma::world) == 1 ? 3 : 2, 256, gaspi::group_all, gaspi::block);
    g.barrier(gaspi::group_all, gaspi::block);
  });
  EXPECT_THAT(e.what(),
              HasSubstr("gaspi_segment_create: segment_create's id differs between ranks (they "
                        "create the same ids in the same order); another rank's: "));
}

// Sizes and configs that differ between ranks are named by the GASPI call
// and the argument, before the heap sees them. Every rank fails; each names
// the value of another rank: the highest or the lowest.
TEST(Errors, GaspiSegmentSizesThatDiffer) {
  const grma::error e = expect_failure([](auto& r) {
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    g.segment_create(0, r.rank(grma::world) == 1 ? 128 : 64, gaspi::group_all, gaspi::block);
    g.barrier(gaspi::group_all, gaspi::block);
  });
  EXPECT_EQ(e.code(), grma::errc::argument_refused);
  EXPECT_THAT(e.what(),
              AnyOf(HasSubstr("rank 0: gaspi_segment_create: segment_create's size differs between "
                              "ranks (every rank passes the same); another rank's: 128"),
                    HasSubstr("rank 1: gaspi_segment_create: segment_create's size differs between "
                              "ranks (every rank passes the same); another rank's: 64")));
}

TEST(Errors, GaspiConfigsThatDiffer) {
  const grma::error e = expect_failure([](auto& r) {
    gaspi::handle g(r);
    gaspi::config c = g.config_get();
    if (r.rank(grma::world) == 1) c.passive_transfer_size_max = 4096;
    g.proc_init(c, gaspi::block);
    g.proc_term(gaspi::block);
  });
  EXPECT_EQ(e.code(), grma::errc::argument_refused);
  EXPECT_THAT(e.what(), AnyOf(HasSubstr("rank 0: gaspi_proc_init: config.passive_transfer_size_max "
                                        "differs between ranks (every rank passes the same); "
                                        "another rank's: 4096"),
                              HasSubstr("rank 1: gaspi_proc_init: config.passive_transfer_size_max "
                                        "differs between ranks (every rank passes the same); "
                                        "another rank's: 2048")));
}

// A segment too large for the heap fails the layer's call; the bytes asked
// for are its size and its notification slots' (1024 of 8 bytes).
TEST(Errors, GaspiSegmentLargerThanTheHeap) {
  const grma::error e = expect_failure([](auto& r) {
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    g.segment_create(1, std::size_t{1} << 30, gaspi::group_all, gaspi::block);
    g.proc_term(gaspi::block);
  });
  EXPECT_EQ(e.code(), grma::errc::symmetric_exhausted);
  EXPECT_THAT(e.what(),
              HasSubstr("gaspi_segment_create: cannot allocate 1073750016 symmetric bytes: "
                        "each rank's slice of "));
}

TEST(Errors, GaspiPassiveMessageLargerThanTheReceive) {
  const grma::error e = expect_failure([](auto& r) {
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    g.segment_create(0, 256, gaspi::group_all, gaspi::block);
    gaspi::rank_t sender = -1;
    if (r.rank(grma::world) == 0) g.passive_send(0, 0, 1, 100, gaspi::block);
    if (r.rank(grma::world) == 1) g.passive_receive(0, 0, &sender, 64, gaspi::block);
    g.barrier(gaspi::group_all, gaspi::block);
  });
  EXPECT_EQ(e.code(), grma::errc::passive_message_size);
  EXPECT_STREQ(e.what(),
               "grma: rank 1: gaspi_passive_receive: the passive message of 100 bytes from rank 0 "
               "does not fit the 64 bytes passive_receive was given");
}

// The team of team_split_strided(team_world, 0, 1, 1), as rank 0 holds it:
// a handle for a rank outside it to misuse.
grma::team rank0s_team() {
  grma::team theirs = grma::team_world;
  theirs.slot = 3;
  theirs.generation = 1;
  theirs.size = 1;
  return theirs;
}

TEST(Errors, CollectiveOfATeamThisRankIsNotIn) {
  const grma::error e = expect_failure([](auto& r) {
    grma::team first = r.team_split_strided(grma::team_world, 0, 1, 1);
    if (r.rank(grma::world) == 1) r.barrier(rank0s_team());
    r.barrier(grma::team_world);
    r.team_destroy(first);
  });
  EXPECT_STREQ(e.what(), "grma: rank 1: barrier: this rank is not a member of the team (slot 3, 1 members)");
}

TEST(Errors, TeamUsedAfterDestroy) {
  const grma::error e = expect_failure([](auto& r) {
    grma::team t = r.team_split_strided(grma::team_world, 0, 1, 2);
    const grma::team kept = t;
    r.team_destroy(t);
    if (r.rank(grma::world) == 0) r.barrier(kept);
    r.barrier(grma::team_world);
  });
  EXPECT_STREQ(e.what(),
               "grma: rank 0: barrier: team 3 (generation 1) is not a live team (used after "
               "team_destroy, or never created)");
}

// Every collective names itself when its team is bad, the ones that size
// their buffers by the team's members too.
TEST(Errors, CollectivesOverADestroyedTeamNameThemselves) {
  const auto after_destroy = [](auto collective) {
    return expect_failure([collective](auto& r) {
      auto* block = static_cast<std::int64_t*>(r.alloc_symmetric(64));
      grma::team t = r.team_split_strided(grma::team_world, 0, 1, 2);
      const grma::team kept = t;
      r.team_destroy(t);
      if (r.rank(grma::world) == 0) collective(r, kept, block);
      r.barrier(grma::team_world);
    });
  };
  const std::string stale =
      ": team 3 (generation 1) is not a live team (used after team_destroy, or never created)";
  EXPECT_EQ(after_destroy([](auto& r, grma::team t, std::int64_t* b) {
              r.allreduce(t, b + 4, b, 2, grma::reduce_op::sum);
            }).what(),
            "grma: rank 0: allreduce" + stale);
  EXPECT_EQ(after_destroy([](auto& r, grma::team t, std::int64_t* b) {
              r.alltoall(t, b + 4, b, 8);
            }).what(),
            "grma: rank 0: alltoall" + stale);
  EXPECT_EQ(after_destroy([](auto& r, grma::team t, std::int64_t* b) {
              r.alltoalls(t, b + 4, b, 1, 1, 1);
            }).what(),
            "grma: rank 0: alltoalls" + stale);
}

// A broadcast's root is a member of the team: out of range, the message
// gives the team's members, not a communicator.
TEST(Errors, BroadcastRootOutsideTheTeam) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<std::int64_t*>(r.alloc_symmetric(64));
    grma::team t = r.team_split_strided(grma::team_world, 0, 1, 2);
    if (r.rank(grma::world) == 1) r.broadcast(t, block + 4, block, 2, 2);
    r.barrier(grma::team_world);
  });
  EXPECT_EQ(e.code(), grma::errc::argument_range);
  EXPECT_STREQ(e.what(), "grma: rank 1: broadcast: root 2 is outside 0 to 1");
}

TEST(Errors, SplitOutsideTheParent) {
  const grma::error e = expect_failure([](auto& r) {
    if (r.rank(grma::world) == 0) r.team_split_strided(grma::team_world, 1, 2, 2);
    r.barrier(grma::team_world);
  });
  EXPECT_STREQ(e.what(),
               "grma: rank 0: team_split_strided: start 1, stride 2 and size 2 do not name members "
               "of a parent team of 2 (start >= 0, size >= 1, start + (size - 1) * stride < parent "
               "size, and stride >= 1 where size > 1)");
  const grma::error reversed = expect_failure([](auto& r) {
    if (r.rank(grma::world) == 0) r.team_split_strided(grma::team_world, 1, -1, 2);
    r.barrier(grma::team_world);
  });
  EXPECT_THAT(reversed.what(), HasSubstr("team_split_strided: start 1, stride -1 and size 2 do not "
                                         "name members of a parent team of 2"));
}

TEST(Errors, Split2DWithoutColumns) {
  const grma::error e = expect_failure([](auto& r) {
    grma::team row = grma::team_none, column = grma::team_none;
    if (r.rank(grma::world) == 0) r.team_split_2d(grma::team_world, 0, row, column);
    r.barrier(grma::team_world);
  });
  EXPECT_STREQ(
      e.what(),
      "grma: rank 0: team_split_2d: xrange 0 is less than 1 (a row of the parent team of 2 "
      "has xrange members)");
}

TEST(Errors, TeamSlotsRunOut) {
  const grma::error e = expect_failure([](auto& r) {
    for (int i = 0; i < 30; ++i) r.team_split_strided(grma::team_world, 0, 1, 2);
  });
  EXPECT_THAT(e.what(), HasSubstr("team_split_strided: no team slot is free on every node of the parent "
                                  "team's members (a node has 29; team_destroy frees one)"));
}

// Rank 0 broadcasts `size0` elements from `root0`, rank 1 `size1` from
// `root1`: each member checks the one before it, so either finds the
// other's call, and the message names both members' size and root.
void expect_broadcast_mismatch(std::size_t size0, int root0, std::size_t size1, int root1) {
  const grma::error e = expect_failure([=](auto& r) {
    auto* block = static_cast<std::uint64_t*>(r.calloc_symmetric(8, 8));
    const bool first = r.rank(grma::world) == 0;
    r.broadcast(grma::team_world, block + 4, block, first ? size0 : size1, first ? root0 : root1);
  });
  const auto seen_by = [](int me, int member, std::size_t size, int root, std::size_t own_size,
                          int own_root) {
    return "rank " + std::to_string(me) +
           ": broadcast: every member of team 0 must make the same collective call: member " +
           std::to_string(member) + " called broadcast with size " + std::to_string(size) +
           " and root " + std::to_string(root) + ", this rank with size " +
           std::to_string(own_size) + " and root " + std::to_string(own_root);
  };
  EXPECT_THAT(e.what(), AnyOf(HasSubstr(seen_by(1, 0, size0, root0, size1, root1)),
                              HasSubstr(seen_by(0, 1, size1, root1, size0, root0))));
}

TEST(Errors, MembersCallDifferentCollectives) {
  expect_broadcast_mismatch(16, 0, 8, 0);
}

TEST(Errors, MembersCallBroadcastWithDifferentRoots) {
  expect_broadcast_mismatch(8, 1, 8, 0);
}

// A reduction's operation and element type are part of the call: members
// that reduce the same count with another operation or type fail the job
// (they would each combine a mix of the two).
TEST(Errors, MembersReduceWithDifferentOperationsOrTypes) {
  const grma::error op = expect_failure([](auto& r) {
    auto* block = static_cast<std::int32_t*>(r.calloc_symmetric(8, 4));
    r.allreduce(grma::team_world, block + 4, block, 4,
                r.rank(grma::world) == 0 ? grma::reduce_op::max : grma::reduce_op::sum);
  });
  EXPECT_THAT(op.what(),
              AnyOf(HasSubstr("rank 1: allreduce: every member of team 0 must make the same "
                              "collective call: member 0 called allreduce with size 4, max of "
                              "4-byte signed integers and root 0, this rank with size 4, sum of "
                              "4-byte signed integers and root 0"),
                    HasSubstr("rank 0: allreduce: every member of team 0 must make the same "
                              "collective call: member 1 called allreduce with size 4, sum of "
                              "4-byte signed integers and root 0, this rank with size 4, max of "
                              "4-byte signed integers and root 0")));
  const grma::error type = expect_failure([](auto& r) {
    auto* block = r.calloc_symmetric(8, 8);
    if (r.rank(grma::world) == 0)
      r.allreduce(grma::team_world, static_cast<double*>(block) + 4, static_cast<double*>(block), 2,
                  grma::reduce_op::sum);
    else
      r.allreduce(grma::team_world, static_cast<std::uint64_t*>(block) + 4,
                  static_cast<std::uint64_t*>(block), 2, grma::reduce_op::sum);
  });
  EXPECT_THAT(type.what(),
              AnyOf(HasSubstr("member 0 called allreduce with size 2, sum of 8-byte floating "
                              "point and root 0, this rank with size 2, sum of 8-byte unsigned "
                              "integers and root 0"),
                    HasSubstr("member 1 called allreduce with size 2, sum of 8-byte unsigned "
                              "integers and root 0, this rank with size 2, sum of 8-byte "
                              "floating point and root 0")));
}

// Counts that differ only above their low 24 bits differ too (a reduction's
// kind travels beside its count, not in its bits).
TEST(Errors, MembersReduceCountsThatDifferAboveTheLow24Bits) {
  const grma::error e = expect_failure([](auto& r) {
    constexpr std::size_t big = (std::size_t{1} << 24) + 4;
    auto* block = static_cast<std::uint8_t*>(r.calloc_symmetric(big, 1));
    r.allreduce(grma::team_world, block, block, r.rank(grma::world) == 0 ? 4 : big,
                grma::reduce_op::sum);
  });
  EXPECT_THAT(e.what(),
              AnyOf(HasSubstr("member 0 called allreduce with size 4, sum of 1-byte unsigned "
                              "integers and root 0, this rank with size 16777220, sum of "
                              "1-byte unsigned integers and root 0"),
                    HasSubstr("member 1 called allreduce with size 16777220, sum of 1-byte "
                              "unsigned integers and root 0, this rank with size 4, sum of "
                              "1-byte unsigned integers and root 0")));
}

// A strided split's stride and alltoalls' strides are part of the call:
// members that differ only there would make different teams or move
// different elements.
TEST(Errors, MembersSplitWithDifferentStrides) {
  const grma::error e = expect_failure(
      [](auto& r) {
        r.team_split_strided(grma::team_world, 0, r.rank(grma::world) == 0 ? 1 : 2, 2);
      },
      4);
  EXPECT_THAT(
      e.what(),
      AnyOf(HasSubstr("rank 1: team_split_strided: every member of team 0 must make the "
                      "same collective call: member 0 called team_split_strided with size "
                      "2, start 0 and stride 1, this rank with size 2, start 0 and stride 2"),
            HasSubstr("rank 0: team_split_strided: every member of team 0 must make the "
                      "same collective call: member 3 called team_split_strided with size "
                      "2, start 0 and stride 2, this rank with size 2, start 0 and stride 1")));
}

TEST(Errors, MembersSplit2DWithDifferentRows) {
  const grma::error e = expect_failure([](auto& r) {
    grma::team row = grma::team_none, column = grma::team_none;
    r.team_split_2d(grma::team_world, r.rank(grma::world) == 0 ? 1 : 2, row, column);
  });
  EXPECT_THAT(e.what(),
              AnyOf(HasSubstr("rank 1: team_split_2d: every member of team 0 must make the same "
                              "collective call: member 0 called team_split_2d with xrange 1, this "
                              "rank with xrange 2"),
                    HasSubstr("rank 0: team_split_2d: every member of team 0 must make the same "
                              "collective call: member 1 called team_split_2d with xrange 2, this "
                              "rank with xrange 1")));
}

// What a split gives the ranks outside it is no team to call on.
TEST(Errors, CollectiveOnTeamNone) {
  const grma::error e = expect_failure([](auto& r) {
    grma::team first = r.team_split_strided(grma::team_world, 0, 1, 1);
    if (r.rank(grma::world) == 1) r.barrier(first);
    r.barrier(grma::team_world);
    r.team_destroy(first);
  });
  EXPECT_EQ(e.code(), grma::errc::team_invalid);
  EXPECT_STREQ(
      e.what(),
      "grma: rank 1: barrier: team_none (shmem's team_invalid: what a split gives the ranks "
      "outside the team it makes) is no team to call on");
}

TEST(Errors, MembersCallAlltoallsWithDifferentStrides) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<std::uint32_t*>(r.calloc_symmetric(64, 4));
    const bool first = r.rank(grma::world) == 0;
    r.alltoalls(grma::team_world, block + 32, block, first ? 1 : 3, first ? 2 : 1, 2);
  });
  EXPECT_THAT(e.what(),
              AnyOf(HasSubstr("rank 1: alltoalls: every member of team 0 must make the same "
                              "collective call: member 0 called alltoalls with size 2, dest "
                              "stride 1 and source stride 2, this rank with size 2, dest stride 3 "
                              "and source stride 1"),
                    HasSubstr("rank 0: alltoalls: every member of team 0 must make the same "
                              "collective call: member 1 called alltoalls with size 2, dest "
                              "stride 3 and source stride 1, this rank with size 2, dest stride 1 "
                              "and source stride 2")));
}

// Members that make different calls, one a strided split: the message
// shows the split's stride whichever member finds it.
TEST(Errors, MembersSplitOrBroadcast) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<std::uint64_t*>(r.calloc_symmetric(8, 8));
    if (r.rank(grma::world) == 0)
      r.team_split_strided(grma::team_world, 0, 3, 1);
    else
      r.broadcast(grma::team_world, block + 4, block, 2, 0);
  });
  EXPECT_THAT(e.what(),
              AnyOf(HasSubstr("rank 1: broadcast: every member of team 0 must make the same "
                              "collective call: member 0 called team_split_strided with size 1, "
                              "start 0 and stride 3, this rank with size 2 and root 0"),
                    HasSubstr("rank 0: team_split_strided: every member of team 0 must make the "
                              "same collective call: member 1 called broadcast with size 2 and "
                              "root 0, this rank with size 1, start 0 and stride 3")));
}

// A member in a barrier where the other reduces: the barrier hands
// nothing, so the member after it finds no call to compare and names it a
// barrier; on one node, and over a team that spans two (a split, whose
// barrier is the team's own, where team_world's is the job's world barrier).
TEST(Errors, MemberInABarrierWhereTheOtherReduces) {
  for (int nodes : {1, 2}) {
    grma::settings s = small_job(nodes == 1 ? 2 : 1);
    s.nodes = nodes;
    s.devices = nodes;
    const grma::error e = expect_failure(
        [](auto& r) {
          auto* block = static_cast<std::int64_t*>(r.calloc_symmetric(4, 8));
          grma::team both = r.team_split_strided(grma::team_world, 0, 1, 2);
          if (r.rank(grma::world) == 0)
            r.barrier(both);
          else
            r.allreduce(both, block + 2, block, 2, grma::reduce_op::sum);
          r.team_destroy(both);
        },
        s);
    EXPECT_EQ(e.code(), grma::errc::team_collective_mismatch) << nodes << " nodes";
    EXPECT_THAT(e.what(),
                HasSubstr("rank 1: allreduce: every member of team 3 must make the same "
                          "collective call: member 0 called barrier or another call that "
                          "hands nothing (team_destroy, a later step of a collective), this "
                          "rank allreduce with size 2, sum of 8-byte signed integers and "
                          "root 0"))
        << nodes << " nodes";
  }
}

// The same after the member before last signed the same call 256 barriers
// ago (the epoch tag of its signature alone would match again).
TEST(Errors, MemberInABarrierWhereTheOtherReducesAsItDid256BarriersAgo) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<std::int64_t*>(r.calloc_symmetric(4, 8));
    grma::team both = r.team_split_strided(grma::team_world, 0, 1, 2);
    r.allreduce(both, block + 2, block, 2, grma::reduce_op::sum);  // its barriers: 2 epochs
    for (int i = 0; i < 254; ++i) r.barrier(both);
    if (r.rank(grma::world) == 0)
      r.barrier(both);
    else
      r.allreduce(both, block + 2, block, 2, grma::reduce_op::sum);
    r.team_destroy(both);
  });
  EXPECT_EQ(e.code(), grma::errc::team_collective_mismatch);
  EXPECT_THAT(e.what(), HasSubstr("rank 1: allreduce: every member of team 3 must make the same "
                                  "collective call: member 0 called barrier or another call"));
}

TEST(Errors, TeamFreeOfAWorldBlock) {
  const grma::error e = expect_failure([](auto& r) {
    void* block = r.alloc_symmetric(64);
    grma::team all = r.team_split_strided(grma::team_world, 0, 1, 2);
    r.free_symmetric(all, block);
  });
  EXPECT_THAT(e.what(), HasSubstr(": free_symmetric: the symmetric block at 0x"));
  EXPECT_THAT(e.what(), HasSubstr(" was allocated over another team (or over world): free it over the "
                                  "team that allocated it"));
}

TEST(Errors, TeamAllocationsWithDifferentSizes) {
  const grma::error e = expect_failure([](auto& r) {
    grma::team all = r.team_split_strided(grma::team_world, 0, 1, 2);
    r.alloc_symmetric(all, r.rank(grma::world) == 0 ? 128 : 64);
  });
  EXPECT_THAT(e.what(),
              AnyOf(HasSubstr("rank 1: alloc_symmetric: every member of team 3 must make the "
                              "same collective call: member 0 called alloc_symmetric for 128 "
                              "bytes at alignment 64, this rank for 64 bytes at alignment 64"),
                    HasSubstr("rank 0: alloc_symmetric: every member of team 3 must make the "
                              "same collective call: member 1 called alloc_symmetric for 64 "
                              "bytes at alignment 64, this rank for 128 bytes at alignment 64")));
}

TEST(Errors, RowsOfA2DSplitFreeOnlyTheirOwnBlocks) {
  // Rows share a slot and a generation: member 0's rank tells their blocks apart.
  const grma::error e = expect_failure(
      [](auto& r) {
        grma::team row = grma::team_none, column = grma::team_none;
        r.team_split_2d(grma::team_world, 2, row, column);  // rows {0, 1} and {2, 3}
        const bool first_row = r.rank(grma::world) < 2;
        unsigned char* block = nullptr;
        if (first_row) block = static_cast<unsigned char*>(r.alloc_symmetric(row, 64));
        r.barrier(grma::team_world);
        if (!first_row) block = static_cast<unsigned char*>(r.alloc_symmetric(row, 64));
        // The second row's block is the 64 bytes after the first's: it
        // names the first row's block.
        if (!first_row) r.free_symmetric(row, block - 64);
        r.barrier(grma::team_world);
      },
      4);
  EXPECT_THAT(e.what(), HasSubstr(": free_symmetric: the symmetric block at 0x"));
  EXPECT_THAT(e.what(), HasSubstr(" was allocated over another team (or over world)"));
}

TEST(Errors, TeamDestroyedWithLiveBlocks) {
  const grma::error e = expect_failure([](auto& r) {
    grma::team all = r.team_split_strided(grma::team_world, 0, 1, 2);
    r.alloc_symmetric(all, 64);
    r.team_destroy(all);
  });
  EXPECT_THAT(e.what(), HasSubstr("rank 0: team_destroy: team 3 still holds 1 symmetric blocks: "
                                  "free_symmetric them over the team before team_destroy"));
}

TEST(Errors, TeamAllocationByANonMember) {
  const grma::error e = expect_failure([](auto& r) {
    grma::team first = r.team_split_strided(grma::team_world, 0, 1, 1);
    if (r.rank(grma::world) == 1) r.alloc_symmetric(rank0s_team(), 64);
    r.barrier(grma::team_world);
    r.team_destroy(first);
  });
  EXPECT_STREQ(e.what(),
               "grma: rank 1: alloc_symmetric: this rank is not a member of the team (slot 3, 1 members)");
}

TEST(Errors, BitwiseReductionOfFloats) {
  const grma::error e = expect_failure([](auto& r) {
    auto* block = static_cast<float*>(r.calloc_symmetric(8, sizeof(float)));
    r.allreduce(grma::team_world, block + 4, block, 4, grma::reduce_op::bit_or);
  });
  EXPECT_THAT(e.what(), HasSubstr("allreduce: invalid reduce_op 5 for a floating-point type "
                                  "(bitwise ops take integers)"));
}

TEST(Errors, AssertionNamesFileLineAndExpression) {
  int line = 0;
  const grma::error e = expect_failure([&](auto& r) {
    const int me = r.rank(grma::world);
    if (me == 1) line = __LINE__ + 1;
    GRMA_ASSERT(r, me != 1);
  });
  EXPECT_EQ(e.code(), grma::errc::assertion_failed);
  EXPECT_EQ(e.what(), "grma: rank 1: GRMA_ASSERT: assertion failed: integration/test_errors.cpp:" +
                          std::to_string(line) + ": me != 1");
}

// The message keeps a long expression whole, however deep the source folder
// (the file is named by its last two path components).
TEST(Errors, AssertionKeepsALongExpression) {
  int line = 0;
  const grma::error e = expect_failure([&](auto& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    if (me == 0) line = __LINE__ + 1;
    GRMA_ASSERT(r, me != 0 || (n > 1000 && me * n + 1 < n - 1 && me + me + me + me + me + me != n + n + n + n + n + n + n + n));
  });
  EXPECT_EQ(e.what(), "grma: rank 0: GRMA_ASSERT: assertion failed: integration/test_errors.cpp:" +
                          std::to_string(line) +
                          ": me != 0 || (n > 1000 && me * n + 1 < n - 1 && me + me + me + me + me + me != n + n + n + n + n + n + n + n)");
}

TEST(Errors, FailureReleasesRanksBlockedElsewhere) {
  // Rank 0 fails while the others wait in a barrier: they leave at once, and
  // the run reports rank 0's error, not an abort or a timeout.
  grma::settings s = small_job(4);
  s.timeout_seconds = 0;  // no watchdog: only the abort can end the waits
  const grma::error e = expect_failure([](auto& r) {
    if (r.rank(grma::world) == 0) r.alloc(std::size_t(1) << 30);
    r.barrier(grma::world);
  }, s);
  EXPECT_EQ(e.code(), grma::errc::heap_exhausted);
  EXPECT_EQ(e.rank(), 0);
}

TEST(Errors, ExceptionFromRankCodePropagates) {
  grma::runtime rt(small_job(3));
  EXPECT_THROW(rt.run([](auto& r) {
    if (r.rank(grma::world) == 2) throw std::logic_error("rank program failed");
    r.barrier(grma::world);
  }), std::logic_error);
}

TEST(Errors, BadUserdataArguments) {
  grma::runtime rt(small_job(2));
  try {
    rt.run([](auto&) {}, {.userdata = nullptr, .userdata_size = 8});
    FAIL() << "no error";
  } catch (const grma::error& e) {
    EXPECT_STREQ(e.what(), "grma: userdata is null but userdata_size is 8");
  }
}

TEST(Errors, CudaBackendRequestedWithoutAGpu) {
  grma::settings s;
  s.backend = grma::backend_kind::cuda;
  try {
    grma::runtime rt(s);
    GTEST_SKIP() << "a GPU is visible: the CUDA backend is available";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::backend_unavailable);
#if GRMA_HAVE_CUDA
    EXPECT_STREQ(e.what(), "grma: GRMA_BACKEND=cuda, but no CUDA device is visible");
#else
    EXPECT_STREQ(e.what(), "grma: GRMA_BACKEND=cuda, but this build of grma has no CUDA backend");
#endif
  }
}

TEST(Errors, CudaBackendForAProgramCompiledWithoutCuda) {
  // This file is compiled by the C++ compiler, not nvcc: its rank programs
  // cannot run on a GPU, which is an error only when cuda is asked for.
  grma::settings s = small_job(2);
  s.backend = grma::backend_kind::cuda;
  std::unique_ptr<grma::runtime> rt;
  try {
    rt = std::make_unique<grma::runtime>(s);
  } catch (const grma::error&) {
    GTEST_SKIP() << "no GPU here";
  }
  try {
    rt->run([](auto&) {});
    FAIL() << "no error";
  } catch (const grma::error& e) {
    EXPECT_THAT(e.what(), HasSubstr("this rank program was compiled without CUDA"));
  }
}

// A wait that lasts longer than the timeout is not stuck while what it
// waits for keeps coming (rank 1 computes 0.15 s between its sends, against
// a timeout of 0.5 s): notifications taken into the waiting rank's list,
// then the signals of the sender's calls alone.
TEST(Watchdog, SlowArrivalsAreProgress) {
  grma::settings s = small_job(2);
  s.timeout_seconds = 0.5;
  grma::runtime rt(s);
  rt.run(with_window([](auto& r, grma::window w, unsigned char* m) {
    constexpr int sends = 6;
    for (int i = 0; i < 64; ++i) m[i] = 0;
    r.barrier(grma::world);
    const auto pause = [&] {
      for (const double start = r.wtime(); r.wtime() < start + 0.15;) {
      }
    };
    if (r.rank(grma::world) == 1) {
      for (int k = 0; k < sends; ++k) {
        pause();
        r.put_notify(w, 0, 0, 8, m, 3);
      }
      for (int k = 0; k < sends; ++k) {
        pause();
        r.put_signal(w, 0, 0, 0, m, 8, 1, grma::signal_op::add);
      }
    } else {
      r.wait_notifications(w, 1, 3, sends);
      r.wait_signal(w, 8, grma::cmp::ge, std::uint64_t(sends));
    }
  }));
}

// A team's barrier is a dissemination barrier: each member's report names
// the member whose store it waits for, so the one that never came is named
// (with 4 members and rank 2 absent: ranks 3 and 0 wait for it, rank 1 for
// rank 3).
TEST(Watchdog, ATeamBarrierNamesTheMemberItWaitsFor) {
  grma::settings s = small_job(4);
  s.timeout_seconds = 0.3;
  grma::runtime rt(s);
  testing::internal::CaptureStderr();
  try {
    rt.run(with_window([](auto& r, grma::window w, unsigned char*) {
      if (r.rank(grma::world) == 2)
        r.wait_signal(w, 8, grma::cmp::ge, 5);
      else
        r.barrier(grma::team_world);
    }));
    testing::internal::GetCapturedStderr();
    FAIL() << "the watchdog did not end the run";
  } catch (const grma::error& e) {
    testing::internal::GetCapturedStderr();
    const std::string report = e.what();
    for (const char* line : {"\n  rank 0: barrier over a team (slot 0, collective #",
                             "\n  rank 1: barrier over a team (slot 0, collective #",
                             "\n  rank 3: barrier over a team (slot 0, collective #"})
      EXPECT_THAT(report, HasSubstr(line));
    EXPECT_THAT(report,
                ContainsRegex("rank 0: barrier over a team [^\n]*waiting for rank 2 to arrive"));
    EXPECT_THAT(report,
                ContainsRegex("rank 1: barrier over a team [^\n]*waiting for rank 3 to arrive"));
    EXPECT_THAT(report,
                ContainsRegex("rank 3: barrier over a team [^\n]*waiting for rank 2 to arrive"));
  }
}

TEST(Watchdog, ReportsStuckRanksAndTheirUnmatchedNotifications) {
  grma::settings s = small_job(3);
  s.timeout_seconds = 0.3;
  grma::runtime rt(s);
  testing::internal::CaptureStderr();
  try {
    rt.run(with_window([](auto& r, grma::window w, unsigned char* m) {
      const int me = r.rank(grma::world);
      if (me == 0) r.put_notify(w, 1, 0, 8, m, 3);  // rank 1 waits for tag 7 instead
      if (me == 1) r.wait_notifications(w, 0, 7, 1);
      if (me == 2) r.wait_signal(w, 8, grma::cmp::ge, 5);
    }));
    testing::internal::GetCapturedStderr();
    FAIL() << "the watchdog did not end the run";
  } catch (const grma::error& e) {
    const std::string printed = testing::internal::GetCapturedStderr();
    EXPECT_EQ(e.code(), grma::errc::timeout);
    const std::string report = e.what();
    EXPECT_THAT(report, StartsWith("grma: watchdog: no progress for "));
    EXPECT_THAT(report, HasSubstr("\n  rank 0: window_free on communicator world (collective #2), "
                                  "waiting for rank 1 to arrive; unmatched notifications: 0"));
    EXPECT_THAT(report, HasSubstr("\n  rank 1: wait_notifications(window 0, source 0, tag 7, count 1); "
                                  "unmatched notifications: 1 [window 0 from 0 tag 3]"));
    EXPECT_THAT(report, HasSubstr("\n  rank 2: wait_signal(window 0, offset 8, until word >= 5); "
                                  "unmatched notifications: 0"));
    EXPECT_THAT(printed, HasSubstr(report));  // printed as it fires, too
  }
}

// A wait in a device's collective names world ranks: the one it waits
// for, and the one that releases it.
TEST(Watchdog, ADeviceCollectiveNamesWorldRanks) {
  grma::settings s = small_job(3);
  s.devices = 2;
  s.timeout_seconds = 1;
  grma::runtime rt(s);
  testing::internal::CaptureStderr();
  try {
    rt.run([](auto& r) {
      if (r.rank(grma::world) != 5) r.barrier(grma::device);  // device 1 is ranks 3, 4, 5
    });
    testing::internal::GetCapturedStderr();
    FAIL() << "the watchdog did not end the run";
  } catch (const grma::error& e) {
    testing::internal::GetCapturedStderr();
    const std::string report = e.what();
    EXPECT_THAT(report, HasSubstr("\n  rank 3: barrier on communicator device (collective #1), "
                                  "waiting for rank 5 to arrive"));
    EXPECT_THAT(report, HasSubstr("\n  rank 4: barrier on communicator device (collective #1), "
                                  "waiting for rank 3 to release it"));
    EXPECT_THAT(report, HasSubstr("\n  rank 5: returned"));
  }
}

// A process that plays two nodes (GRMA_NODES) names every rank of both in
// the report it throws, whichever node's watchdog fired: the ranks of the
// node with the stuck wait, and the returned one after all blocked ones.
TEST(Watchdog, ReportsTheRanksOfEveryNodeOfTheProcess) {
  grma::settings s = small_job(2);
  s.nodes = 2;
  s.devices = 2;
  s.timeout_seconds = 1;  // four rank threads, each in its wait or returned by then
  grma::runtime rt(s);
  testing::internal::CaptureStderr();
  try {
    rt.run([](auto& r) {
      const int me = r.rank(grma::world);
      if (me == 2) return;
      if (me == 3) {
        auto* word = static_cast<std::uint64_t*>(r.alloc(8));
        *word = 0;
        r.wait_until(word, grma::cmp::ge, std::uint64_t{5});  // nobody sets it
      }
      r.barrier(grma::world);
    });
    testing::internal::GetCapturedStderr();
    FAIL() << "the watchdog did not end the run";
  } catch (const grma::error& e) {
    testing::internal::GetCapturedStderr();
    EXPECT_EQ(e.code(), grma::errc::timeout);
    const std::string report = e.what();
    EXPECT_THAT(report, HasSubstr("\n  rank 0: barrier on communicator world"));
    EXPECT_THAT(report, HasSubstr("\n  rank 1: barrier on communicator world"));
    EXPECT_THAT(report, HasSubstr("\n  rank 3: wait_until(word 0x"));
    EXPECT_THAT(report,
                HasSubstr(", until word >= 5); unmatched notifications: 0\n  rank 2: returned"));
  }
}

// Nodes that one process plays (GRMA_NODES) split its devices evenly, and
// only the loopback transport joins them; a transport not built is named.
TEST(Errors, NodesInAProcessSplitItsDevicesEvenly) {
  grma::settings s = small_job(2);
  s.nodes = 2;
  s.devices = 3;
  EXPECT_STREQ(expect_failure([](grma::cpu_rank&) {}, s).what(),
               "grma: GRMA_NODES=2 splits the process's devices evenly among its nodes, and it has "
               "3 (GRMA_DEVICES)");
}

// A transport that was built joins processes, not the nodes of one; one
// that was not built is refused whatever the job, when the runtime is made.
TEST(Errors, NodesInAProcessTakeOnlyTheLoopbackTransport) {
  const std::vector<grma::transport_kind> built = grma::transports_built();
  std::string these = "auto";
  for (grma::transport_kind k : built) these += std::string(", ") + grma::to_string(k);
  const auto refusal = [](const grma::settings& s) -> std::string {
    try {
      grma::runtime rt(s);
      rt.run([](grma::cpu_rank&) {});
    } catch (const grma::error& e) {
      return e.what();
    }
    return "no error";
  };
  for (grma::transport_kind t : {grma::transport_kind::mpi, grma::transport_kind::ucx}) {
    grma::settings s = small_job(2);
    s.nodes = 2;
    s.devices = 2;
    s.transport = t;
    const bool is_built = std::find(built.begin(), built.end(), t) != built.end();
    const std::string not_built =
        std::string("grma: GRMA_TRANSPORT=\"") + grma::to_string(t) +
        "\" is invalid: expected a transport this grma was built with: " + these;
    EXPECT_EQ(refusal(s), is_built ? std::string("grma: GRMA_TRANSPORT=") + grma::to_string(t) +
                                         " joins processes, and the 2 nodes of GRMA_NODES are all "
                                         "in this one: only the loopback transport joins them"
                                   : not_built)
        << grma::to_string(t);
    s.nodes = 1;
    s.devices = 1;
    EXPECT_EQ(refusal(s), is_built ? "no error" : not_built) << grma::to_string(t);
  }
}

TEST(Watchdog, QuietWhileRanksMakeProgress) {
  // Ranks that keep exchanging for several timeouts, each step shorter than
  // the timeout, are not stopped.
  grma::settings s = small_job(2);
  s.timeout_seconds = 0.2;
  grma::runtime rt(s);
  rt.run(with_window([](auto& r, grma::window w, unsigned char* m) {
    const int me = r.rank(grma::world);
    for (int round = 0; round < 100; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // "compute"
      r.put_notify(w, 1 - me, 0, 8, m + 32, round % 4);  // the peer writes [0, 8) of m
      r.wait_notifications(w, 1 - me, round % 4, 1);
    }
  }));
}

}  // namespace
