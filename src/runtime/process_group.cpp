#include "process_group.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "grma/error.hpp"

#if GRMA_HAVE_MPI
#include <mpi.h>
#endif

namespace grma::detail {
namespace {

#if GRMA_HAVE_MPI
// Whether a launcher started this process as part of a larger job.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

void check_mpi(int status, const char* what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw error(errc::invalid_config, -1, call::runtime,
              std::string("grma: ") + what + " failed: " + std::string(text, std::size_t(length)));
}

// The end-of-run vote's request and buffers. MPI may write into them after
// end_of_run_vote has left (a vote left unfinished), until this process
// completes the vote: so they live as long as the process.
struct vote {
  MPI_Request request = MPI_REQUEST_NULL;
  int mine = 0;
  int all = 0;
  bool left_for_a_loss = false;  // left unfinished because a process was lost
};
vote pending_vote;

// Completes a vote that end_of_run_vote left unfinished: before any other
// collective, which MPI matches in the same order on every process, and
// before MPI_Finalize (a program that initialized MPI itself finalizes it
// too: it must not do so while a run's error leaves a vote unfinished).
void settle() {
  if (pending_vote.request != MPI_REQUEST_NULL)
    check_mpi(MPI_Wait(&pending_vote.request, MPI_STATUS_IGNORE), "MPI_Wait");
  pending_vote.left_for_a_loss = false;
}

// How many ranks_running live (runs of this process whose ranks run); read
// at exit by whichever thread called exit() (sequentially consistent: a
// count read there is the run's, which began before its ranks could exit).
std::atomic<int> runs_with_ranks{0};
int job_processes = 1;  // MPI_COMM_WORLD's size, set when the group is made

// At exit. In a job of several processes, not where ranks still run (a rank
// called exit()): the others wait for this process's vote. Not where a vote
// was left unfinished for a process taken for lost, or is still unfinished
// after a while: finalizing would wait for that process for ever. Either
// way the process leaves MPI as a lost process does (before any MPI call
// from the exiting thread).
void finalize_mpi() {
  if (job_processes > 1 && runs_with_ranks.load() != 0) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (pending_vote.request != MPI_REQUEST_NULL) {
    // A slow process's vote comes within the watch's silence and a margin;
    // one taken for lost votes only if it has already (it was slow).
    const auto give_up =
        std::chrono::steady_clock::now() +
        (pending_vote.left_for_a_loss ? std::chrono::seconds(0) : std::chrono::seconds(10));
    int done = 0;
    while (MPI_Test(&pending_vote.request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done &&
           std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!done) return;
  }
  MPI_Finalize();
}
#endif

}  // namespace

process_group::ranks_running::ranks_running() {
#if GRMA_HAVE_MPI
  runs_with_ranks.fetch_add(1);
#endif
}

process_group::ranks_running::~ranks_running() {
#if GRMA_HAVE_MPI
  runs_with_ranks.fetch_sub(1);
#endif
}

process_group& process_group::get() {
  static process_group group;
  return group;
}

process_group::process_group() {
#if GRMA_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (!launched_by_mpi()) return;
    // grma's MPI calls come from one thread at a time (the one in run()).
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread");
    std::atexit(finalize_mpi);
  }
  // The network engine makes MPI calls from its own thread while the
  // thread in run() waits for the ranks (never both at once).
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED)
    throw error(errc::invalid_config, -1, call::runtime,
                "grma: MPI provides thread level " + std::to_string(provided) +
                    ", grma needs MPI_THREAD_SERIALIZED (initialize MPI with MPI_Init_thread)");
  MPI_Comm_rank(MPI_COMM_WORLD, &index_);
  MPI_Comm_size(MPI_COMM_WORLD, &count_);
  job_processes = count_;
#endif
}

void process_group::all_gather(const void* mine, std::size_t bytes, void* all) const {
#if GRMA_HAVE_MPI
  if (count_ > 1) {
    settle();
    check_mpi(MPI_Allgather(mine, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE, MPI_COMM_WORLD),
              "MPI_Allgather");
    return;
  }
#endif
  std::memcpy(all, mine, bytes);
}

void process_group::barrier() const {
#if GRMA_HAVE_MPI
  if (count_ > 1) {
    settle();
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }
#endif
}

unsigned long long process_group::run_tag() const {
  static unsigned long long runs = 0;
  return broadcast((static_cast<unsigned long long>(getpid()) << 20) | (++runs & 0xfffff));
}

bool process_group::any(bool failed) const {
#if GRMA_HAVE_MPI
  if (count_ > 1) {
    settle();
    int mine = failed ? 1 : 0, all = 0;
    check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return all != 0;
  }
#endif
  return failed;
}

std::optional<bool> process_group::end_of_run_vote(
    bool failed, std::string& lost, const std::function<std::string()>& lost_now) const {
  const bool voted_failed = failed || !lost.empty();
#if GRMA_HAVE_MPI
  if (count_ > 1) {
    settle();
    vote& v = pending_vote;
    v.mine = voted_failed ? 1 : 0;
    check_mpi(MPI_Iallreduce(&v.mine, &v.all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &v.request),
              "MPI_Iallreduce");
    // As long as the watch's silence: a process that stalled that long and
    // then votes is slow, not lost.
    constexpr auto late_vote = std::chrono::seconds(5);
    const auto voted = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point lost_since{};
    for (;;) {
      int done = 0;
      check_mpi(MPI_Test(&v.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return v.all != 0;
      if (lost.empty()) {
        lost = lost_now();
        lost_since = std::chrono::steady_clock::now();
      }
      const auto now = std::chrono::steady_clock::now();
      if (!lost.empty() && (voted_failed || now - lost_since > late_vote)) {
        v.left_for_a_loss = true;
        return std::nullopt;
      }
      // Having failed with no loss seen (its watchdog fired, say, and its
      // network engine stopped before it saw a process of another node
      // gone): the live processes learned of the failure and vote; one
      // that has not after as long is gone or stuck, and this process's own
      // failure is the run's.
      if (voted_failed && now - voted > late_vote) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
#endif
  (void)lost_now;
  return voted_failed;
}

void process_group::checkpoint(std::exception_ptr mine, const char* step) const {
  if (!any(mine != nullptr)) return;
  if (mine) std::rethrow_exception(mine);
  throw error(errc::process_failed, -1, call::runtime,
              std::string("grma: another process of the job failed ") + step);
}

unsigned long long process_group::broadcast(unsigned long long value) const {
#if GRMA_HAVE_MPI
  if (count_ > 1) {
    settle();
    check_mpi(MPI_Bcast(&value, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }
#endif
  return value;
}

std::vector<int> process_group::group_by_name(const std::string& name) const {
  constexpr std::size_t width = 64;
  char mine[width] = {};
  if (!name.empty())
    std::strncpy(mine, name.c_str(), width - 1);
  else
    gethostname(mine, width - 1);
  std::vector<char> all(width * std::size_t(count_));
  all_gather(mine, width, all.data());
  std::vector<std::string> names;
  std::vector<int> group(static_cast<std::size_t>(count_));
  for (int p = 0; p < count_; ++p) {
    const std::string each(&all[width * std::size_t(p)]);
    std::size_t i = 0;
    while (i < names.size() && names[i] != each) ++i;
    if (i == names.size()) names.push_back(each);
    group[std::size_t(p)] = int(i);
  }
  return group;
}

std::vector<int> process_group::nodes(const std::string& node_id) const {
  if (!nodes_.empty() && nodes_for_ == node_id) return nodes_;
  nodes_ = group_by_name(node_id);
  nodes_for_ = node_id;
  return nodes_;
}

const std::vector<int>& process_group::hosts() const {
  if (hosts_.empty()) hosts_ = group_by_name("");
  return hosts_;
}

int process_group::host_index() const {
  const std::vector<int>& host = hosts();
  return int(std::count(host.begin(), host.begin() + index_, host[std::size_t(index_)]));
}

}  // namespace grma::detail
