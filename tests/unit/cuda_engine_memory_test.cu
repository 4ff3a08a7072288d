// The CUDA engine memory on a GPU (label gpu): the engine's writes land in
// call order, also where its proxy applies several in one trip.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "backend/cuda/cuda_engine_memory.hpp"

namespace {

using grma::signal_op;
using grma::detail::engine_memory;
using grma::detail::make_cuda_engine_memory;

class CudaEngineMemory : public testing::TestWithParam<bool> {};  // the proxy, or copies

std::uint64_t value_of(int k) {
  return 0x5a5a000000000000ull + std::uint64_t(k);
}

// A signal set on a word, then a write over it, on several words back to
// back: each write lands last. With the proxy they share a trip (its first
// trip reads one slot; the operations pushed meanwhile come in the next),
// where each write is the first step of the operation after the signal's.
// (A proxy that wrote a trip's first steps before one fence for all its
// second steps failed here: seven of the eight words kept the signal.)
TEST_P(CudaEngineMemory, AWriteOverAWordJustSignalledLandsLast) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  constexpr int words = 8;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::uint64_t* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), 2 * words * sizeof(std::uint64_t)), cudaSuccess);
  ASSERT_EQ(cudaMemset(device, 0, 2 * words * sizeof(std::uint64_t)), cudaSuccess);
  {
    std::unique_ptr<engine_memory> memory = make_cuda_engine_memory(0, {}, GetParam(), false);
    memory->bind();
    // The first operation (a write and a signal after it), alone in the
    // proxy's first trip.
    const std::uint64_t first = 1;
    memory->write(&device[words], &first, sizeof first);
    memory->signal(device[words + 1], signal_op::set, first);
    for (int k = 0; k < words; ++k) {
      memory->signal(device[k], signal_op::set, std::uint64_t(k) + 1);
      const std::uint64_t v = value_of(k);
      memory->write(&device[k], &v, sizeof v);
    }
    memory->signal(device[words + 2], signal_op::add, 1);  // joins the last write
    memory->flush();
    memory->unbind();
  }
  std::uint64_t got[2 * words] = {};
  ASSERT_EQ(cudaMemcpy(got, device, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaFree(device), cudaSuccess);
  for (int k = 0; k < words; ++k) EXPECT_EQ(got[k], value_of(k)) << "word " << k;
  EXPECT_EQ(got[words], 1u);
  EXPECT_EQ(got[words + 1], 1u);
  EXPECT_EQ(got[words + 2], 1u);
}

INSTANTIATE_TEST_SUITE_P(Engine, CudaEngineMemory, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& p) { return p.param ? "proxy" : "copies"; });

}  // namespace
