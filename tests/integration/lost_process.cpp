// A job of two processes (mpirun -np 2) in which process 1 is killed (or,
// with the argument `stop`, stopped) while rank 0, in process 0, waits for
// it: process 0 must not hang. It ends with a message naming process 1 and a
// nonzero status (for a kill the launcher may be first; a stopped process
// only grma's watch can notice), and the job leaves nothing in /dev/shm.
// With `resume`, process 1 is stopped for 12 s and then continued, as a
// starved process on a loaded machine might be: process 0 takes it for
// lost, the run fails on both processes, and both must still agree on what
// comes next: a second run of the job works on the CPU backend; on GPUs
// (whose failed kernels trapped) it fails at once on both with a message
// that says why. Both exit 0.
// The same program runs on the CPU backend and on GPUs (one per process):
// rank 1 says it is past the barrier through host memory, and a host thread
// of its process then signals the whole process, as a crash would.
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#endif

#include <grma/grma.hpp>

// Sets the flag a host thread of this process polls.
GRMA_HOST_DEVICE inline void raise_flag(int* flag) {
#if GRMA_DEVICE_CODE
  *static_cast<volatile int*>(flag) = 1;  // mapped host memory, read by the host
#else
  std::atomic_ref<int>(*flag).store(1, std::memory_order_release);
#endif
}

struct killed_midway {
  int* started;  // host memory that ranks write (mapped pinned memory on a GPU)

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    r.barrier(grma::world);
    if (r.rank(grma::world) == 1 && r.thread() == 0) raise_flag(started);
    if (r.rank(grma::world) == 0) r.wait_notifications(w, 1, 0, 1);  // never sent
    r.window_free(w);  // rank 1 waits here for rank 0 until its process goes
  }
};

// A flag ranks of this process can write and its host threads read.
int* host_flag(const grma::runtime& rt) {
#if defined(__CUDACC__)
  if (rt.backend() == grma::backend_kind::cuda) {
    void* p = nullptr;
    if (cudaHostAlloc(&p, sizeof(int), cudaHostAllocMapped) != cudaSuccess) return nullptr;
    *static_cast<int*>(p) = 0;
    return static_cast<int*>(p);  // unified addressing: the same pointer on the GPU
  }
#endif
  (void)rt;
  static int flag = 0;
  return &flag;
}

struct barrier_only {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    r.barrier(grma::world);
  }
};

int main(int argc, char** argv) {
  grma::runtime rt(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool resume = mode == "resume";
  const int signal = mode == "stop" || resume ? SIGSTOP : SIGKILL;
  int* started = host_flag(rt);
  if (started == nullptr) return 2;
  // Only the process that runs rank 1 ever sees the flag set.
  std::thread([started, signal, resume] {
    while (std::atomic_ref<int>(*started).load(std::memory_order_acquire) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // A shell continues this process later (spawned: a fork would copy an
    // MPI process's memory).
    if (resume) {
      const std::string line = "sleep 12; kill -CONT " + std::to_string(getpid());
      char* spawned[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                         const_cast<char*>(line.c_str()), nullptr};
      pid_t shell = 0;
      if (posix_spawnp(&shell, "sh", nullptr, nullptr, spawned, environ) != 0) std::abort();
    }
    raise(signal);
  }).detach();
  if (!resume) {
    rt.run(killed_midway{started}, {.ranks_per_device = 1});
    return 0;
  }
  try {
    rt.run(killed_midway{started}, {.ranks_per_device = 1});
    std::printf("first run: did not fail\n");
    return 1;
  } catch (const grma::error& e) {
    std::printf("first run: %s\n", e.what());
    std::fflush(stdout);  // before the other process's lines
  }
  // On a GPU the first run's kernels trapped, which leaves CUDA nothing to
  // run in this process: the second run must say so (the test expects it).
  try {
    rt.run(barrier_only{}, {.ranks_per_device = 1});
    std::printf("second run: ok\n");
  } catch (const grma::error& e) {
    std::printf("second run: %s\n", e.what());
  }
  return 0;
}
