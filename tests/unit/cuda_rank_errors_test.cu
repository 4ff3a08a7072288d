// Bad input that only a GPU rank can give (label gpu): memory that is one
// thread's own where the rank's threads must share it.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <grma/grma.hpp>
#include <string>

namespace {

// A block's threads call wait_some_notifications with an array each thread
// holds itself: the lanes could not hand the others what they took.
struct some_into_a_local_array {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    grma::envelope mine[4];
    if (r.rank(grma::world) == 1) r.test_some_notifications(w, grma::any_source, grma::any_tag, mine, 4);
    r.window_free(w);
    r.free(memory);
  }
};

TEST(CudaRankErrors, SomeIntoOneThreadsOwnArray) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  grma::settings s;
  s.backend = grma::backend_kind::cuda;
  s.ranks_per_device = 2;
  s.timeout_seconds = 30;
  grma::runtime rt(s);
  try {
    rt.run(some_into_a_local_array{}, {.threads_per_rank = 64});
    ADD_FAILURE() << "the run did not fail";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::buffer_not_shared);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("grma: rank 1: test_some_notifications: buffer 0x", 0), 0u) << what;
    EXPECT_NE(what.find(" is one thread's own memory;"), std::string::npos) << what;
  }
}

}  // namespace
