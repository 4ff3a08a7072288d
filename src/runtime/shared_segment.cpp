#include "shared_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "grma/error.hpp"

namespace grma::detail {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& name) {
  throw error(errc::invalid_config, -1, call::runtime,
              "grma: " + what + " of shared-memory segment " + name + " failed: " +
                  std::strerror(errno));
}

unsigned char* map(int fd, std::size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) fail("mmap", name);
  return static_cast<unsigned char*>(p);
}

}  // namespace

std::string shared_segment::name(unsigned long long run_tag, const char* what, int index) {
  return "/grma-" + std::to_string(run_tag) + "-" + what + "-" + std::to_string(index);
}

shared_segment shared_segment::create(const std::string& name, std::size_t bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) fail("shm_open", name);
  // Reserve the pages now: a full /dev/shm is an error here, not a SIGBUS in
  // a rank later.
  const int reserved = ftruncate(fd, off_t(bytes)) == 0 ? posix_fallocate(fd, 0, off_t(bytes)) : errno;
  if (reserved != 0) {
    close(fd);
    shm_unlink(name.c_str());
    errno = reserved;
    fail("reserving " + std::to_string(bytes) + " bytes (posix_fallocate)", name);
  }
  try {
    return shared_segment(name, map(fd, bytes, name), bytes, true);  // new pages are zero
  } catch (...) {
    shm_unlink(name.c_str());
    throw;
  }
}

shared_segment shared_segment::open(const std::string& name, std::size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) fail("shm_open", name);
  return shared_segment(name, map(fd, bytes, name), bytes, false);
}

shared_segment::shared_segment(std::string name, unsigned char* data, std::size_t bytes,
                               bool owner)
    : name_(std::move(name)), data_(data), bytes_(bytes), owner_(owner) {}

shared_segment::shared_segment(shared_segment&& other) noexcept
    : name_(std::move(other.name_)), data_(other.data_), bytes_(other.bytes_), owner_(other.owner_) {
  other.data_ = nullptr;
  other.owner_ = false;
}

shared_segment::~shared_segment() {
  unlink();
  if (data_ != nullptr) munmap(data_, bytes_);
}

void shared_segment::unlink() {
  if (owner_) shm_unlink(name_.c_str());
  owner_ = false;
}

}  // namespace grma::detail
