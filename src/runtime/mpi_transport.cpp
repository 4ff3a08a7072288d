#include "mpi_transport.hpp"

#include <algorithm>
#include <cstdint>
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

class mpi_transport final : public transport {
 public:
  explicit mpi_transport(unsigned job) {
    // MPI guarantees tags up to 32767; channels take 1 to 3.
    first_tag = int(job % 8000u) * 4;
  }
  ~mpi_transport() override { abandon(); }
  mpi_transport(const mpi_transport&) = delete;
  mpi_transport& operator=(const mpi_transport&) = delete;

  const char* name() const override { return "mpi"; }
  bool in_one_process() const override { return false; }
  bool reaches_cuda_memory() const override { return mpi_reaches_cuda_memory(); }

  // A CUDA-aware MPI tells device memory by itself.
  void send(int to, channel c, const void* buffer, std::size_t bytes, memory_place,
            std::function<void()> done) override {
    start(to, c, const_cast<void*>(buffer), bytes, false,
          [done = std::move(done)](int, std::size_t) { done(); });
  }
  void receive(int from, channel c, void* buffer, std::size_t bytes, memory_place,
               std::function<void(int, std::size_t)> done) override {
    start(from, c, buffer, bytes, true, std::move(done));
  }
  bool poll() override;
  bool idle() const override {
    return std::all_of(owners.begin(), owners.end(),
                       [this](std::size_t slot) { return transfers[slot].any_source; });
  }
  void abandon() override;

 private:
  // One message (a send, or a receive), in pieces; done when all pieces are.
  struct transfer {
    std::uint64_t start;  // the order `done`s run in
    int peer;             // a receive from any process: its sender, once known
    bool receiving;
    bool any_source;
    std::size_t pieces_left = 0;
    std::size_t received = 0;  // bytes
    std::function<void(int, std::size_t)> done;
  };
  MPI_Comm comm = network_comm();
  int first_tag = 0;  // of this job's channels
  std::uint64_t started = 0;
  // Transfers in slots that are used again (free_slots), so that a steady
  // flow of messages allocates nothing here: a round trip's four messages
  // at each end are most of what its engines do.
  std::vector<transfer> transfers;
  std::vector<std::size_t> free_slots;
  // Every piece in flight beside the slot of the transfer it belongs to,
  // tested by one MPI_Testsome a poll (an MPI_Test each made MPI progress
  // once per request: with thousands in flight, most of the engine's time).
  std::vector<MPI_Request> requests;
  std::vector<std::size_t> owners;
  std::vector<int> indices;
  std::vector<MPI_Status> statuses;
  std::vector<std::size_t> finished;  // a poll's, kept for their room
  std::vector<transfer> done_now;

  int tag(channel c) const { return first_tag + int(c); }
  void start(int peer, channel c, void* buffer, std::size_t bytes, bool receiving,
             std::function<void(int, std::size_t)> done);
};

}  // namespace

std::unique_ptr<transport> make_mpi_transport() {
  static unsigned jobs = 0;  // collective, so every process counts them alike
  return std::make_unique<mpi_transport>(++jobs);
}

bool mpi_reaches_cuda_memory() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;  // built with CUDA and running with it
#else
  return false;
#endif
}

void mpi_transport::start(int peer, channel c, void* buffer, std::size_t bytes, bool receiving,
                          std::function<void(int, std::size_t)> done) {
  std::size_t slot = transfers.size();
  if (free_slots.empty()) {
    transfers.emplace_back();
  } else {
    slot = free_slots.back();
    free_slots.pop_back();
  }
  transfer& t = transfers[slot];
  t = transfer{started++, peer, receiving, peer < 0, 0, 0, std::move(done)};
  auto* p = static_cast<unsigned char*>(buffer);
  std::size_t at = 0;
  do {  // a message of 0 bytes is one piece too
    const std::size_t n = std::min(piece_bytes, bytes - at);
    MPI_Request r = MPI_REQUEST_NULL;
    const int status =
        receiving ? MPI_Irecv(p + at, int(n), MPI_BYTE, peer < 0 ? MPI_ANY_SOURCE : peer, tag(c), comm, &r)
                  : MPI_Isend(p + at, int(n), MPI_BYTE, peer, tag(c), comm, &r);
    if (status != MPI_SUCCESS)
      mpi_failed(status, (receiving ? "receiving from process " : "sending to process ") +
                             std::to_string(peer));
    requests.push_back(r);
    owners.push_back(slot);
    ++t.pieces_left;
    at += n;
  } while (at < bytes);
}

bool mpi_transport::poll() {
  if (requests.empty()) return false;
  indices.resize(requests.size());
  statuses.resize(requests.size());
  int count = 0, status = MPI_SUCCESS;
  // Twice where the first finds nothing: Open MPI's MPI_Testsome makes
  // progress only after it found nothing complete, so what that progress
  // completed is seen by the next call (MPI_Test looks again itself).
  for (int attempt = 0; attempt < 2 && status == MPI_SUCCESS && (count == 0 || count == MPI_UNDEFINED); ++attempt)
    status = MPI_Testsome(int(requests.size()), requests.data(), &count, indices.data(), statuses.data());
  if (count == MPI_UNDEFINED || count == 0) {
    if (status != MPI_SUCCESS) mpi_failed(status, "a transfer");
    return false;
  }
  finished.clear();
  for (int i = 0; i < count; ++i) {
    const auto k = std::size_t(indices[std::size_t(i)]);
    transfer& t = transfers[owners[k]];
    const MPI_Status& st = statuses[std::size_t(i)];
    if (status == MPI_ERR_IN_STATUS && st.MPI_ERROR != MPI_SUCCESS)
      mpi_failed(st.MPI_ERROR, "a transfer with process " + std::to_string(t.peer));
    if (t.receiving) {
      if (t.any_source) t.peer = st.MPI_SOURCE;
      int n = 0;
      MPI_Get_count(&st, MPI_BYTE, &n);
      t.received += std::size_t(n);
    }
    if (--t.pieces_left == 0) finished.push_back(owners[k]);
  }
  if (status != MPI_SUCCESS && status != MPI_ERR_IN_STATUS) mpi_failed(status, "a transfer");
  // Completed requests are MPI_REQUEST_NULL now: keep the others, in order.
  std::size_t kept = 0;
  for (std::size_t k = 0; k < requests.size(); ++k)
    if (requests[k] != MPI_REQUEST_NULL) {
      requests[kept] = requests[k];
      owners[kept++] = owners[k];
    }
  requests.resize(kept);
  owners.resize(kept);
  // In the order they were started, so a pair's messages are handled in
  // order; out of their slots first, as a `done` may start transfers.
  std::sort(finished.begin(), finished.end(), [this](std::size_t a, std::size_t b) {
    return transfers[a].start < transfers[b].start;
  });
  std::vector<transfer> done;
  done.swap(done_now);
  done.clear();
  for (std::size_t slot : finished) {
    done.push_back(std::move(transfers[slot]));
    free_slots.push_back(slot);
  }
  for (transfer& t : done) t.done(t.peer, t.received);
  done.swap(done_now);
  return true;
}

void mpi_transport::abandon() {
  // A send left to MPI may still read its buffer, and a cancelled receive
  // that had already matched may still write it: what keeps the buffer
  // alive (the completion's captures) is kept for the process's lifetime.
  // Only a failed job leaves anything here.
  static auto* kept = new std::vector<std::function<void(int, std::size_t)>>;
  for (std::size_t k = 0; k < requests.size(); ++k) {
    transfer& t = transfers[owners[k]];
    if (t.receiving) MPI_Cancel(&requests[k]);
    MPI_Request_free(&requests[k]);
    if (t.done) kept->push_back(std::move(t.done));  // a transfer's first piece
    t.done = nullptr;
  }
  requests.clear();
  owners.clear();
  transfers.clear();
  free_slots.clear();
}

#else

std::unique_ptr<transport> make_mpi_transport() {
  throw error(errc::invalid_config, -1, call::runtime,
              "grma: GRMA_TRANSPORT=mpi: this grma was built without MPI");
}
bool mpi_reaches_cuda_memory() { return false; }

#endif

}  // namespace grma::detail
