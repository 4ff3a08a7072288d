// The processes of an NVSHMEM program, one per GPU (PE i on GPU i), for the
// comparisons that run NVSHMEM beside grma in the same run (grma-bench's
// peer path, grma-jacobi2d). Each is started with our environment and
// NVSHMEM's libraries first on its library path, writes its output to a log
// in a directory of its own, and is waited for within a bound; whatever
// happens, nothing is left running and the directory is removed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace bench {

class nvshmem_pes {
 public:
  // `count` processes (1 or 2); `seconds`: how long they may take together.
  nvshmem_pes(int count, int seconds);
  ~nvshmem_pes();
  nvshmem_pes(const nvshmem_pes&) = delete;
  nvshmem_pes& operator=(const nvshmem_pes&) = delete;

  // A file in the processes' directory (their outputs); it is removed with
  // the directory.
  std::string file(const std::string& name);

  // Starts PE `pe` as program args[0] with `--pe PE --pes COUNT --id-file
  // FILE` (what nvshmem_join needs), then args[1..].
  void start(int pe, const std::vector<std::string>& args);

  // Waits for all; the failure (with the end of their output), or empty. One
  // that fails ends the others: they would wait for it in NVSHMEM's barrier.
  std::string wait();

  // The last lines each PE printed.
  std::string output() const;

 private:
  std::string log(int pe) const;

  std::string dir_;
  std::string id_;  // NVSHMEM's unique id, from PE 0 to the others
  int seconds_;
  std::vector<pid_t> pids_;
  std::vector<std::string> files_;
};

}  // namespace bench
