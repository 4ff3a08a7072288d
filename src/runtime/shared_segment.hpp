// A POSIX shared-memory segment that processes of one node map: the CPU
// backend's analogue of CUDA IPC. Segments are private to the user (mode
// 0600); their names are removed as soon as every process has mapped them, so
// nothing is left in /dev/shm after the job, even when a process is killed.
#pragma once

#include <cstddef>
#include <string>

namespace grma::detail {

class shared_segment {
 public:
  // The name of a job's segment: its run tag (process_group::run_tag), what
  // it holds and whose it is.
  static std::string name(unsigned long long run_tag, const char* what, int index);

  // Creates `name` (it must not exist) with `bytes` zeroed bytes and maps it.
  static shared_segment create(const std::string& name, std::size_t bytes);
  // Maps the existing segment `name` of `bytes` bytes.
  static shared_segment open(const std::string& name, std::size_t bytes);

  shared_segment(shared_segment&& other) noexcept;
  shared_segment& operator=(shared_segment&&) = delete;
  shared_segment(const shared_segment&) = delete;
  ~shared_segment();  // unmaps (and removes the name if still there and ours)

  unsigned char* data() const { return data_; }
  // Removes the name; the mapping stays valid.
  void unlink();

 private:
  shared_segment(std::string name, unsigned char* data, std::size_t bytes, bool owner);
  std::string name_;
  unsigned char* data_;
  std::size_t bytes_;
  bool owner_;  // created it, and its name is not removed yet
};

}  // namespace grma::detail
