#include "mpi_transport.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "grma/error.hpp"

#if GRMA_HAVE_MPI
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support
#endif
#endif

namespace grma::detail {

#if GRMA_HAVE_MPI
namespace {

// The largest piece of one message: MPI counts in int.
constexpr std::size_t piece_bytes = std::size_t{1} << 28;

[[noreturn]] void mpi_failed(int status, const std::string& what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw error(errc::process_failed, -1, call::runtime,
              "grma: network: " + what + " failed: " + std::string(text, std::size_t(length)));
}

// grma's own communicator, made once per process (collective: every process
// makes its first transport at the same step of its first job across nodes).
MPI_Comm network_comm() {
  static MPI_Comm comm = [] {
    MPI_Comm c = MPI_COMM_NULL;
    const int status = MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (status != MPI_SUCCESS) mpi_failed(status, "MPI_Comm_dup");
    // Errors come back as codes, to end the job with a message.
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return c;
  }();
  return comm;
}

}  // namespace

struct mpi_transport::state {
  // One message (a send, or a receive), in pieces; done when all pieces are.
  struct transfer {
    std::vector<MPI_Request> pieces;
    std::size_t next = 0;  // pieces before it are complete
    int source = -1;
    bool receiving = false;
    bool any_source = false;
    std::function<void(int)> done;
  };
  MPI_Comm comm = network_comm();
  int first_tag = 0;  // of this run's channels
  std::vector<transfer> open;

  int tag(channel c) const { return first_tag + int(c); }
};

mpi_transport::mpi_transport(unsigned run) : s_(std::make_unique<state>()) {
  // MPI guarantees tags up to 32767; channels take 1 to 3.
  s_->first_tag = int(run % 8000u) * 4;
}

mpi_transport::~mpi_transport() { abandon(); }

bool mpi_transport::reaches_cuda_memory() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;  // built with CUDA and running with it
#else
  return false;
#endif
}

void mpi_transport::send(int to, channel c, const void* buffer, std::size_t bytes,
                         std::function<void()> done) {
  state::transfer t;
  t.source = to;
  t.done = [done = std::move(done)](int) { done(); };
  const auto* p = static_cast<const unsigned char*>(buffer);
  std::size_t at = 0;
  do {
    const std::size_t n = std::min(piece_bytes, bytes - at);
    MPI_Request r = MPI_REQUEST_NULL;
    const int status = MPI_Isend(p + at, int(n), MPI_BYTE, to, s_->tag(c), s_->comm, &r);
    if (status != MPI_SUCCESS) mpi_failed(status, "sending to process " + std::to_string(to));
    t.pieces.push_back(r);
    at += n;
  } while (at < bytes);
  s_->open.push_back(std::move(t));
}

void mpi_transport::receive(int from, channel c, void* buffer, std::size_t bytes,
                            std::function<void(int)> done) {
  state::transfer t;
  t.source = from;
  t.receiving = true;
  t.any_source = from < 0;
  t.done = std::move(done);
  auto* p = static_cast<unsigned char*>(buffer);
  std::size_t at = 0;
  do {
    const std::size_t n = std::min(piece_bytes, bytes - at);
    MPI_Request r = MPI_REQUEST_NULL;
    const int status = MPI_Irecv(p + at, int(n), MPI_BYTE, from < 0 ? MPI_ANY_SOURCE : from,
                                 s_->tag(c), s_->comm, &r);
    if (status != MPI_SUCCESS) mpi_failed(status, "receiving from process " + std::to_string(from));
    t.pieces.push_back(r);
    at += n;
  } while (at < bytes);
  s_->open.push_back(std::move(t));
}

bool mpi_transport::poll() {
  std::vector<state::transfer> finished;
  for (std::size_t i = 0; i < s_->open.size();) {
    state::transfer& t = s_->open[i];
    while (t.next < t.pieces.size()) {
      int flag = 0;
      MPI_Status st;
      const int status = MPI_Test(&t.pieces[t.next], &flag, &st);
      if (status != MPI_SUCCESS)
        mpi_failed(status, "a transfer with process " + std::to_string(t.source));
      if (!flag) break;
      if (t.any_source) t.source = st.MPI_SOURCE;
      ++t.next;
    }
    if (t.next == t.pieces.size()) {
      finished.push_back(std::move(t));
      s_->open.erase(s_->open.begin() + std::ptrdiff_t(i));
    } else {
      ++i;
    }
  }
  // In the order they were started, so a pair's messages are handled in order.
  for (state::transfer& t : finished) t.done(t.source);
  return !finished.empty();
}

bool mpi_transport::idle() const {
  return std::all_of(s_->open.begin(), s_->open.end(),
                     [](const state::transfer& t) { return t.any_source; });
}

void mpi_transport::abandon() {
  // A send left to MPI may still read its buffer, and a cancelled receive
  // that had already matched may still write it: what keeps the buffer
  // alive (the completion's captures) is kept for the process's lifetime.
  // Only a failed run leaves anything here.
  static auto* kept = new std::vector<std::function<void(int)>>;
  for (state::transfer& t : s_->open) {
    for (std::size_t i = t.next; i < t.pieces.size(); ++i) {
      if (t.receiving) MPI_Cancel(&t.pieces[i]);
      MPI_Request_free(&t.pieces[i]);
    }
    kept->push_back(std::move(t.done));
  }
  s_->open.clear();
}

#else

struct mpi_transport::state {};

mpi_transport::mpi_transport(unsigned) {
  throw error(errc::invalid_config, -1, call::runtime,
              "grma: a job across nodes needs MPI, and this grma was built without it");
}
mpi_transport::~mpi_transport() = default;
bool mpi_transport::reaches_cuda_memory() { return false; }
void mpi_transport::send(int, channel, const void*, std::size_t, std::function<void()>) {}
void mpi_transport::receive(int, channel, void*, std::size_t, std::function<void(int)>) {}
bool mpi_transport::poll() { return false; }
bool mpi_transport::idle() const { return true; }
void mpi_transport::abandon() {}

#endif

}  // namespace grma::detail
