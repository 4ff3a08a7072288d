// How the NVSHMEM programs started by nvshmem_pes join: PE 0 makes
// NVSHMEM's unique id and leaves it in a file for the others (no MPI
// needed), then every PE initializes with it, on GPU `pe`, with NVSHMEM's
// settings for one node unless the caller chose: no network transport, and
// NVLink multicast off (shared machines).
#pragma once

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace bench {

// NVSHMEM up on GPU `pe` of `pes`, its symmetric heap `heap_bytes`; throws
// std::runtime_error saying what failed.
inline void nvshmem_join(int pe, int pes, const std::string& id_file, std::size_t heap_bytes) {
  setenv("NVSHMEM_SYMMETRIC_SIZE", std::to_string(heap_bytes).c_str(), 0);
  setenv("NVSHMEM_REMOTE_TRANSPORT", "none", 0);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
  if (cudaSetDevice(pe) != cudaSuccess)
    throw std::runtime_error("cudaSetDevice(" + std::to_string(pe) + ") failed");
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (pe == 0) {
    // Written whole, under another name first: a reader never sees a part.
    nvshmemx_get_uniqueid(&id);
    const std::string part = id_file + ".part";
    std::FILE* f = std::fopen(part.c_str(), "wb");
    if (f == nullptr || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 ||
        std::rename(part.c_str(), id_file.c_str()) != 0)
      throw std::runtime_error("cannot write " + id_file);
  } else {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (bool read = false; !read;) {
      if (std::FILE* f = std::fopen(id_file.c_str(), "rb")) {
        read = std::fread(&id, sizeof id, 1, f) == 1;
        std::fclose(f);
      }
      if (!read && std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("no NVSHMEM id from PE 0 in " + id_file + " after 60 s");
      if (!read) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(pe, pes, &id, &attr);
  if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0)
    throw std::runtime_error("nvshmemx_init_attr failed");
}

}  // namespace bench
