#include "ucx_baselines.hpp"

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {
namespace {

void check(ucs_status_t s, const char* what) {
  if (s != UCS_OK)
    throw std::runtime_error(std::string("UCX baseline: ") + what + ": " + ucs_status_string(s));
}

// Bytes sent to the other process, and as many received from it.
std::vector<char> exchange(const void* mine, std::size_t bytes, int other) {
  unsigned long long n = bytes, theirs = 0;
  MPI_Sendrecv(&n, 1, MPI_UNSIGNED_LONG_LONG, other, 30, &theirs, 1, MPI_UNSIGNED_LONG_LONG, other,
               30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::vector<char> got(theirs);
  MPI_Sendrecv(mine, int(bytes), MPI_BYTE, other, 31, got.data(), int(theirs), MPI_BYTE, other, 31,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return got;
}

// Waits for a request of UCX's (null: done at once), progressing the worker.
void wait(ucp_worker_h worker, ucs_status_ptr_t r, const char* what) {
  if (r == nullptr) return;
  if (UCS_PTR_IS_ERR(r)) check(UCS_PTR_STATUS(r), what);
  ucs_status_t s;
  while ((s = ucp_request_check_status(r)) == UCS_INPROGRESS) ucp_worker_progress(worker);
  ucp_request_free(r);
  check(s, what);
}

}  // namespace

// One mapped region: this process's memory, and the peer's address and key.
struct region {
  void* local = nullptr;
  ucp_mem_h memory = nullptr;
  std::uint64_t remote = 0;
  ucp_rkey_h key = nullptr;
  ucs_memory_type_t type = UCS_MEMORY_TYPE_HOST;
};

struct ucx_puts::state {
  int me = 0, other = 0;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  bool cuda = false;
  std::vector<unsigned char> host_memory;
  region host, device;

  void map(region& r, void* at, std::size_t bytes, ucs_memory_type_t type) {
    r.local = at;
    r.type = type;
    ucp_mem_map_params_t p{};
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                   UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    p.address = at;
    p.length = bytes;
    p.memory_type = type;
    check(ucp_mem_map(context, &p, &r.memory), "ucp_mem_map");
    void* packed = nullptr;
    std::size_t packed_bytes = 0;
    check(ucp_rkey_pack(context, r.memory, &packed, &packed_bytes), "ucp_rkey_pack");
    const std::vector<char> key = exchange(packed, packed_bytes, other);
    ucp_rkey_buffer_release(packed);
    const auto address = std::uint64_t(reinterpret_cast<std::uintptr_t>(at));
    MPI_Sendrecv(&address, 1, MPI_UINT64_T, other, 32, &r.remote, 1, MPI_UINT64_T, other, 32,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check(ucp_ep_rkey_unpack(ep, key.data(), &r.key), "ucp_ep_rkey_unpack");
  }

  void unmap(region& r) {
    if (r.key != nullptr) ucp_rkey_destroy(r.key);
    if (r.memory != nullptr) ucp_mem_unmap(context, r.memory);
  }

  // Process 0 times `issue` from when both are ready until its flush is
  // done; the peer progresses its worker until process 0 says so.
  double timed(const std::function<void()>& issue) {
    char none = 0;
    if (me != 0) {
      MPI_Send(&none, 0, MPI_BYTE, other, 33, MPI_COMM_WORLD);
      MPI_Request done;
      MPI_Irecv(&none, 0, MPI_BYTE, other, 34, MPI_COMM_WORLD, &done);
      for (int finished = 0; !finished; MPI_Test(&done, &finished, MPI_STATUS_IGNORE))
        ucp_worker_progress(worker);
      return 0;
    }
    MPI_Recv(&none, 0, MPI_BYTE, other, 33, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const double start = MPI_Wtime();
    issue();
    ucp_request_param_t p{};
    wait(worker, ucp_worker_flush_nbx(worker, &p), "ucp_worker_flush_nbx");
    const double seconds = MPI_Wtime() - start;
    MPI_Send(&none, 0, MPI_BYTE, other, 34, MPI_COMM_WORLD);
    return seconds;
  }

  void put(const region& r, std::size_t bytes) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.memory_type = r.type;
    ucs_status_ptr_t s = ucp_put_nbx(ep, r.local, bytes, r.remote, r.key, &p);
    if (UCS_PTR_IS_ERR(s)) check(UCS_PTR_STATUS(s), "ucp_put_nbx");
    if (s != nullptr) ucp_request_free(s);  // the flush after it waits for it
  }
};

ucx_puts::ucx_puts(int peer, std::size_t bytes, void* device_region) : s_(new state) {
  state& s = *s_;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.me);
  s.other = s.me == 0 ? peer : 0;
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA;
  const ucs_status_t made = ucp_init(&params, config, &s.context);
  ucp_config_release(config);
  check(made, "ucp_init");
  ucp_context_attr_t attributes{};
  attributes.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  check(ucp_context_query(s.context, &attributes), "ucp_context_query");
  // GPU memory where both ends have it and their UCX reaches it: they
  // map alike, or their exchanges would not pair.
  const int mine =
      device_region != nullptr && (attributes.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  int other_has = 0;
  MPI_Sendrecv(&mine, 1, MPI_INT, s.other, 29, &other_has, 1, MPI_INT, s.other, 29, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  s.cuda = mine != 0 && other_has != 0;
  ucp_worker_params_t worker{};
  worker.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker.thread_mode = UCS_THREAD_MODE_SINGLE;
  check(ucp_worker_create(s.context, &worker, &s.worker), "ucp_worker_create");
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  check(ucp_worker_get_address(s.worker, &address, &length), "ucp_worker_get_address");
  const std::vector<char> theirs = exchange(address, length, s.other);
  ucp_worker_release_address(s.worker, address);
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  ep.address = reinterpret_cast<const ucp_address_t*>(theirs.data());
  check(ucp_ep_create(s.worker, &ep, &s.ep), "ucp_ep_create");
  s.host_memory.assign(bytes, 1);
  s.map(s.host, s.host_memory.data(), bytes, UCS_MEMORY_TYPE_HOST);
  if (s.cuda) s.map(s.device, device_region, bytes, UCS_MEMORY_TYPE_CUDA);
}

ucx_puts::~ucx_puts() {
  state& s = *s_;
  s.unmap(s.device);
  s.unmap(s.host);
  // Flushed (a forced close is for endpoints with peer error handling),
  // for a second at most; then both ends let go of their workers together.
  ucp_request_param_t close{};
  ucs_status_ptr_t r = ucp_ep_close_nbx(s.ep, &close);
  if (UCS_PTR_IS_PTR(r)) {
    const double give_up = MPI_Wtime() + 1;
    while (ucp_request_check_status(r) == UCS_INPROGRESS && MPI_Wtime() < give_up)
      ucp_worker_progress(s.worker);
    ucp_request_free(r);
  }
  char none = 0;
  MPI_Sendrecv(&none, 0, MPI_BYTE, s.other, 35, &none, 0, MPI_BYTE, s.other, 35, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  ucp_worker_destroy(s.worker);
  ucp_cleanup(s.context);
}

bool ucx_puts::on_device() const {
  return s_->cuda;
}

double ucx_puts::rate(int puts, int window) {
  state& s = *s_;
  const double seconds = s.timed([&] {
    ucp_request_param_t p{};
    for (int done = 0; done < puts; done += window) {
      for (int i = 0; i < window && done + i < puts; ++i) s.put(s.host, 8);
      wait(s.worker, ucp_worker_flush_nbx(s.worker, &p), "ucp_worker_flush_nbx");
    }
  });
  return s.me == 0 ? puts / seconds : NAN;  // process 0's figure
}

double ucx_puts::gbs(std::size_t bytes, int iterations) {
  state& s = *s_;
  const region& r = s.cuda ? s.device : s.host;
  const double seconds = s.timed([&] {
    for (int i = 0; i < iterations; ++i) s.put(r, bytes);
  });
  return s.me == 0 ? double(bytes) * iterations / seconds / 1e9 : NAN;
}

}  // namespace bench
