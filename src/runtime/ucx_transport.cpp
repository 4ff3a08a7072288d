#include "ucx_transport.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "grma/error.hpp"
#include "process_group.hpp"

#if GRMA_HAVE_UCX
#include <ucp/api/ucp.h>
#endif

namespace grma::detail {

#if GRMA_HAVE_UCX
namespace {

[[noreturn]] void ucx_failed(ucs_status_t status, const std::string& what) {
  throw error(errc::process_failed, -1, call::runtime,
              "grma: network (ucx): " + what + " failed: " + ucs_status_string(status));
}

// A tag: the job (16 bits), the channel (8) and the sender (32).
constexpr ucp_tag_t sender_bits = 0xffffffffull;
ucp_tag_t tag_of(unsigned job, channel c, int sender) {
  return ucp_tag_t(job & 0xffffu) << 48 | ucp_tag_t(unsigned(c) & 0xffu) << 40 | ucp_tag_t(std::uint32_t(sender));
}

// UCX's context: its transports found and their resources opened, some
// 75 ms that every run of a job would pay again. Where UCX makes it safe
// for workers on several threads (jobs of runtimes that run at once), it
// is the process's: made at its first job and released by its exit, not by
// a cleanup (a rank that calls exit() leaves its job's worker alive). A UCX
// built without that gives each job a context of its own.
struct ucx_context {
  ucp_context_h handle = nullptr;
  bool reaches_cuda = false;  // UCX moves a GPU's data itself
  bool shared = false;        // the process's, for every job
};

ucx_context make_ucx_context() {
  ucx_context made;
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) ucx_failed(s, "ucp_config_read");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = 1;
  s = ucp_init(&params, config, &made.handle);
  ucp_config_release(config);
  if (s != UCS_OK) ucx_failed(s, "ucp_init");
  // A UCX built with CUDA (the libucx-cu13 wheel) moves a GPU's data
  // itself, between a node's GPUs by CUDA IPC: the engine stages only
  // small chunks (cuda_engine_memory).
  ucp_context_attr_t attributes{};
  attributes.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES | UCP_ATTR_FIELD_THREAD_MODE;
  s = ucp_context_query(made.handle, &attributes);
  if (s != UCS_OK) {
    ucp_cleanup(made.handle);
    ucx_failed(s, "ucp_context_query");
  }
  made.reaches_cuda = (attributes.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  made.shared = attributes.thread_mode == UCS_THREAD_MODE_MULTI;
  return made;
}

ucx_context context_for_a_job() {
  static std::mutex making;
  static ucx_context kept;
  const std::lock_guard<std::mutex> lock(making);
  if (kept.shared) return kept;
  const ucx_context made = make_ucx_context();  // a failure throws, and the next job tries again
  if (made.shared) kept = made;
  return made;
}

class ucx_transport final : public transport {
 public:
  explicit ucx_transport(unsigned job) : job_(job) {
    const process_group& group = process_group::get();
    me_ = group.index();
    context_ = context_for_a_job();
    ucp_worker_params_t worker{};
    worker.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // Made on the thread that starts the job, then used by the engine's
    // thread alone.
    worker.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    ucs_status_t s = ucp_worker_create(context_.handle, &worker, &worker_);
    if (s != UCS_OK) ucx_failed(s, "ucp_worker_create");
    ucp_address_t* address = nullptr;
    std::size_t length = 0;
    s = ucp_worker_get_address(worker_, &address, &length);
    if (s != UCS_OK) ucx_failed(s, "ucp_worker_get_address");
    // Every process's address, each in a slot of the longest's size.
    const int n = group.count();
    std::vector<unsigned long long> lengths(static_cast<std::size_t>(n));
    const unsigned long long mine = length;
    group.all_gather(&mine, sizeof mine, lengths.data());
    std::size_t slot = 0;
    for (unsigned long long l : lengths) slot = l > slot ? std::size_t(l) : slot;
    std::vector<unsigned char> own(slot, 0), all(slot * std::size_t(n));
    std::memcpy(own.data(), address, length);
    ucp_worker_release_address(worker_, address);
    group.all_gather(own.data(), slot, all.data());
    endpoints_.assign(std::size_t(n), nullptr);
    peer_errors_.assign(std::size_t(n), false);
    const std::vector<int>& hosts = group.hosts();
    for (int p = 0; p < n; ++p) {
      if (p == me_) continue;
      ucp_ep_params_t ep{};
      ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
      ep.address = reinterpret_cast<const ucp_address_t*>(all.data() + slot * std::size_t(p));
      // To another host a lost peer fails its operations, not the process
      // (PEER). UCX then takes only transports that report a peer's loss,
      // which leaves out shared memory: to a process of this host (nodes
      // played on one machine) every header would go over TCP. There a lost
      // peer is the engines' liveness's to find, as with MPI (decision 026).
      peer_errors_[std::size_t(p)] = hosts[std::size_t(p)] != hosts[std::size_t(me_)];
      ep.err_mode =
          peer_errors_[std::size_t(p)] ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
      s = ucp_ep_create(worker_, &ep, &endpoints_[std::size_t(p)]);
      if (s != UCS_OK) ucx_failed(s, "ucp_ep_create to process " + std::to_string(p));
    }
  }

  ~ucx_transport() override {
    abandon();
    // The job is over: nothing more is sent. A forced close is UCX's only
    // for endpoints with peer error handling; the others flush, all within
    // a second (a lost peer of this host never answers), and are then left
    // to the worker's destruction.
    std::vector<void*> closing;
    for (std::size_t p = 0; p < endpoints_.size(); ++p) {
      if (endpoints_[p] == nullptr) continue;
      ucp_request_param_t close{};
      close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      close.flags = peer_errors_[p] ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      ucs_status_ptr_t r = ucp_ep_close_nbx(endpoints_[p], &close);
      if (UCS_PTR_IS_PTR(r)) closing.push_back(r);
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (void* r : closing) {
      while (ucp_request_check_status(r) == UCS_INPROGRESS &&
             std::chrono::steady_clock::now() < give_up)
        ucp_worker_progress(worker_);
      ucp_request_free(r);
    }
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    if (!context_.shared) ucp_cleanup(context_.handle);
  }
  ucx_transport(const ucx_transport&) = delete;
  ucx_transport& operator=(const ucx_transport&) = delete;

  const char* name() const override { return "ucx"; }
  bool in_one_process() const override { return false; }
  bool reaches_cuda_memory() const override { return context_.reaches_cuda; }

  void send(int to, channel c, const void* buffer, std::size_t bytes, memory_place place,
            std::function<void()> done) override {
    if (to < 0 || std::size_t(to) >= endpoints_.size() || endpoints_[std::size_t(to)] == nullptr)
      throw error(errc::process_failed, -1, call::runtime,
                  "grma: network (ucx): a send to process " + std::to_string(to));
    operation& o = start(to, false, [done = std::move(done)](int, std::size_t) { done(); });
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = [](void*, ucs_status_t status, void* user) {
      static_cast<operation*>(user)->finish(status, 0, -1);
    };
    param.user_data = &o;
    told_where(param, place);
    ucs_status_ptr_t r =
        ucp_tag_send_nbx(endpoints_[std::size_t(to)], buffer, bytes, tag_of(job_, c, me_), &param);
    took(o, r, "sending to process " + std::to_string(to));
  }

  void receive(int from, channel c, void* buffer, std::size_t bytes, memory_place place,
               std::function<void(int, std::size_t)> done) override {
    operation& o = start(from, true, std::move(done));
    ucp_request_param_t param{};
    // Always through the callback: UCX 1.13 leaves recv_info unfilled where
    // a receive completes at once (its sender and length were 0).
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = [](void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
      static_cast<operation*>(user)->finish(status, info->length, int(info->sender_tag & sender_bits));
    };
    param.user_data = &o;
    told_where(param, place);
    const ucp_tag_t mask = from < 0 ? ~sender_bits : ~ucp_tag_t(0);
    ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_, buffer, bytes, tag_of(job_, c, from < 0 ? 0 : from), mask, &param);

    took(o, r, "receiving from process " + std::to_string(from));
  }

  bool poll() override {
    for (int i = 0; i < 16 && ucp_worker_progress(worker_) != 0; ++i) {
    }
    // In the order they were started, so a pair's messages are handled in order.
    std::vector<std::unique_ptr<operation>> finished;
    for (auto it = open_.begin(); it != open_.end();) {
      operation& o = **it;
      if (!o.complete) {
        ++it;
        continue;
      }
      if (o.request != nullptr) ucp_request_free(o.request);
      o.request = nullptr;
      if (o.status != UCS_OK)
        ucx_failed(o.status, std::string(o.receiving ? "a receive from" : "a send to") + " process " +
                                 std::to_string(o.peer));
      finished.push_back(std::move(*it));
      it = open_.erase(it);
    }
    for (auto& o : finished) o->done(o->peer, o->bytes);
    return !finished.empty();
  }

  bool idle() const override {
    for (const auto& o : open_)
      if (!(o->receiving && o->any_source)) return false;
    return true;
  }

  void abandon() override {
    // A cancelled receive completes (UCS_ERR_CANCELED) in a later progress
    // (the engine's header receives, at every job's end); then its request
    // goes back to UCX. What has not completed after a while (a send in
    // flight when a job fails) may still call back into its operation: it
    // is kept for the process's lifetime.
    for (auto& o : open_)
      if (o->request != nullptr && !o->complete) ucp_request_cancel(worker_, o->request);
    auto all_complete = [&] {
      for (const auto& o : open_)
        if (!o->complete) return false;
      return true;
    };
    for (int i = 0; i < 10000 && !all_complete(); ++i) ucp_worker_progress(worker_);
    static auto* kept = new std::vector<std::unique_ptr<operation>>;
    for (auto& o : open_) {
      if (!o->complete) {
        kept->push_back(std::move(o));
      } else if (o->request != nullptr) {
        ucp_request_free(o->request);
      }
    }
    open_.clear();
  }

 private:
  // Said, not looked up: UCX's lookup takes memory it never saw for host
  // memory (transport.hpp).
  static void told_where(ucp_request_param_t& param, memory_place place) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type = place == memory_place::device ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  }

  // One send or receive; UCX's callback finishes it inside progress.
  struct operation {
    int peer;
    bool receiving;
    bool any_source;
    std::function<void(int, std::size_t)> done;
    void* request = nullptr;
    bool complete = false;
    ucs_status_t status = UCS_OK;
    std::size_t bytes = 0;

    void finish(ucs_status_t s, std::size_t length, int sender) {
      complete = true;
      status = s;
      bytes = length;
      if (receiving && any_source && s == UCS_OK) peer = sender;
    }
  };

  operation& start(int peer, bool receiving, std::function<void(int, std::size_t)> done) {
    // On the heap: UCX's callbacks hold its address while others come and go.
    open_.push_back(std::make_unique<operation>(operation{peer, receiving, receiving && peer < 0, std::move(done)}));
    return *open_.back();
  }

  void took(operation& o, ucs_status_ptr_t r, const std::string& what) {
    if (UCS_PTR_IS_ERR(r)) {
      open_.pop_back();
      ucx_failed(UCS_PTR_STATUS(r), what);
    }
    if (r == nullptr) {
      o.complete = true;  // done at once: the buffer is the caller's again
    } else {
      o.request = r;
    }
  }

  unsigned job_;
  int me_ = 0;
  ucx_context context_;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> endpoints_;
  std::vector<bool> peer_errors_;                // by process: its endpoint reports the peer's loss
  std::deque<std::unique_ptr<operation>> open_;  // in start order
};

}  // namespace

std::unique_ptr<transport> make_ucx_transport() {
  static unsigned jobs = 0;  // collective, so every process counts them alike
  return std::make_unique<ucx_transport>(++jobs);
}

#else

std::unique_ptr<transport> make_ucx_transport() {
  throw error(errc::invalid_config, -1, call::runtime, "grma: GRMA_TRANSPORT=ucx: this grma was built without UCX");
}

#endif

}  // namespace grma::detail
