// The processes of a job. One process unless the program was started by an MPI
// launcher (mpirun, srun) and grma has MPI; then MPI_COMM_WORLD's processes,
// with MPI initialized by grma if the program has not done it (and finalized
// at exit). Only the thread that calls runtime::run makes its MPI calls; the
// exit handler (which may run in a rank's thread) makes none while that
// thread's ranks run.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace grma::detail {

class process_group {
 public:
  static process_group& get();

  // While one lives, this process's ranks run, and the other processes
  // will wait for its end-of-run vote: a process that exits then (a rank
  // called exit()) leaves MPI without finalizing it, as a lost process does
  // (finalizing would wait for the others, which wait for its vote).
  class ranks_running {
   public:
    ranks_running();
    ~ranks_running();
    ranks_running(const ranks_running&) = delete;
    ranks_running& operator=(const ranks_running&) = delete;
  };

  int index() const { return index_; }
  int count() const { return count_; }

  // Every process's `bytes` from `mine`, in process order, into `all`.
  void all_gather(const void* mine, std::size_t bytes, void* all) const;
  void barrier() const;
  // Collective: whether `failed` holds on any process. A step every process
  // reaches whether or not it failed, so one process's failure cannot leave
  // the others waiting in a barrier it skipped.
  bool any(bool failed) const;
  // The vote that ends a run: any(failed || a process is lost). `lost`
  // names a process taken for lost (gone, or silent for 5 s: perhaps only
  // slow) before the vote, or, while the vote waits, from `lost_now()`.
  // Such a process may never vote, so this process may leave with its vote
  // cast and no result (nullopt), and completes the vote at its next
  // collective: the others' vote still ends, whether it was lost or slow.
  // Having voted "failed" it leaves at once where it saw a loss, else after
  // 5 s: every process learns that vote. Having voted "ran", it waits 5 s
  // more first, so that a late vote, whose result every process sees,
  // decides.
  std::optional<bool> end_of_run_vote(bool failed, std::string& lost,
                                      const std::function<std::string()>& lost_now) const;
  // Collective checkpoint: returns when no process failed since the last
  // one; else rethrows this process's failure, or throws an error saying
  // another process failed.
  void checkpoint(std::exception_ptr mine, const char* step) const;
  // Process 0's value, to all.
  unsigned long long broadcast(unsigned long long value) const;
  // Collective: a number no other run on this node uses (process 0's pid and
  // its run count), for naming the run's shared-memory segments.
  unsigned long long run_tag() const;

  // Which node each process is on: `node_id` (GRMA_NODE_ID), else the host
  // name. Collective the first time (and when node_id changes); then kept.
  // Returns the node of each process, numbered in order of first appearance.
  std::vector<int> nodes(const std::string& node_id) const;
  // Whether nodes(node_id) is kept (a call of it would not be collective).
  bool nodes_known(const std::string& node_id) const {
    return !nodes_.empty() && nodes_for_ == node_id;
  }

  // The host of each process (by host name, whatever GRMA_NODE_ID says),
  // numbered in order of first appearance. Collective the first time; then
  // kept.
  const std::vector<int>& hosts() const;
  // This process's place among the processes on its host: which of the
  // host's GPUs it takes. Collective as hosts().
  int host_index() const;

 private:
  process_group();
  int index_ = 0;
  int count_ = 1;
  // The last answer of nodes() and the node id it was for: a process stays
  // on its node, so later calls need no gathering.
  mutable std::string nodes_for_;
  mutable std::vector<int> nodes_;
  mutable std::vector<int> hosts_;

  // Collective: each process's group by `name` (empty: the host name),
  // numbered in order of first appearance.
  std::vector<int> group_by_name(const std::string& name) const;
};

// Runs `step` on this process, then checks at a checkpoint that it worked on
// every process (`what` says where, for the others' message).
template <class Step>
void on_all_processes(const process_group& group, const char* what, Step&& step) {
  std::exception_ptr failed;
  try {
    step();
  } catch (...) {
    failed = std::current_exception();
  }
  group.checkpoint(failed, what);
}

}  // namespace grma::detail
