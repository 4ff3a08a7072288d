// Envelopes in a block's shared memory (label gpu): the calls for some
// write them with the first warp's lanes (or the calling warp's leading
// lane) and every thread of the rank (or the warp) reads them.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <grma/grma.hpp>
#include <vector>

namespace {

constexpr int sends = 12;  // from each other rank to rank 0, tags 0..11
constexpr int most = 5;

// What rank 0 saw, per source: how many, and whether every thread read each
// source's tags in order with its immediate.
struct seen {
  int taken[8];
  int wrong;
};

// Ranks 1..n-1 put_notify `sends` empty notifications each to rank 0, which
// takes them with wait_some_notifications into a __shared__ array, at most
// `most` a call: by all its threads, or (`by_warp`) by its second warp
// while the others wait at the block's barrier.
struct into_shared {
  bool by_warp;

  template <class Caller>
  __device__ static void take(Caller& c, grma::window w, grma::envelope* got, int n,
                                    seen& s) {
    int next[8] = {};
    for (int taken = 0; taken < (n - 1) * sends;) {
      const int k = c.wait_some_notifications(w, grma::any_source, grma::any_tag, got, most);
      for (int i = 0; i < k; ++i) {
        const grma::envelope e = got[i];
        const bool right = e.source >= 1 && e.source < n && e.tag == next[e.source] &&
                           e.immediate == std::uint64_t(e.source * 100 + e.tag);
        if (!right) atomicAdd(&s.wrong, 1);
        if (right) ++next[e.source];
      }
      if (c.thread() == 0)
        for (int i = 0; i < k; ++i)
          if (got[i].source >= 1 && got[i].source < n) ++s.taken[got[i].source];
      taken += k;
    }
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
#if GRMA_DEVICE_CODE
    __shared__ grma::envelope got[most];
    const int me = r.rank(grma::world), n = r.size(grma::world);
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    seen& s = *r.template userdata<seen>();
    if (me != 0) {
      for (int tag = 0; tag < sends; ++tag)
        r.put_notify(w, 0, 0, 0, memory, tag, std::uint64_t(me * 100 + tag));
    } else if (!by_warp) {
      take(r, w, got, n, s);
    } else {
      auto warp = r.one_warp();
      r.sync_threads();  // the warp's turn begins
      if (r.thread() / 32 == 1) take(warp, w, got, n, s);
      r.sync_threads();  // the warp's turn ends
    }
    r.barrier(grma::world);
    r.window_free(w);
    r.free(memory);
#else
    (void)r;
#endif
  }
};

void run_into_shared(bool by_warp) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  grma::settings settings;
  settings.backend = grma::backend_kind::cuda;
  settings.ranks_per_device = 8;
  settings.timeout_seconds = 30;
  grma::runtime rt(settings);
  seen s{};
  rt.run(into_shared{by_warp}, {.threads_per_rank = 128, .userdata = &s, .userdata_size = sizeof s});
  for (int source = 1; source < 8; ++source) EXPECT_EQ(s.taken[source], sends) << "source " << source;
  EXPECT_EQ(s.wrong, 0);
}

TEST(CudaSharedEnvelopes, SomeIntoABlocksSharedMemory) {
  run_into_shared(false);
}

TEST(CudaSharedEnvelopes, OneWarpSomeIntoSharedMemory) {
  run_into_shared(true);
}

}  // namespace
