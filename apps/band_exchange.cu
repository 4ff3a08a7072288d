#include <stdexcept>
#include <string>

#include "band_exchange.hpp"

namespace apps {

band_exchange::band_exchange(const layout& l) : l_(l) {
  if (l.devices < 1 || l.devices > most_devices)
    throw std::runtime_error("baseline: 1 to " + std::to_string(most_devices) + " GPUs a process");
  if (l.channels < 1 || l.channels > most_channels)
    throw std::runtime_error("baseline: 1 to " + std::to_string(most_channels) + " channels");
  if (across_processes() && !with_mpi)
    throw std::runtime_error("baseline: exchanging halos between processes needs a build with MPI");
  const device_restorer keep;
  if (across_processes())
    for (int c = 0; c < l.channels; ++c)
      check_cuda(cudaMallocHost(&edges_[c], 4 * l.row_elements * sizeof(double)), "cudaMallocHost");
  for (int d = 0; d < l.devices; ++d) {
    check_cuda(cudaSetDevice(l.first_device + d), "cudaSetDevice");
    for (int e : {d - 1, d + 1})
      if (e >= 0 && e < l.devices) enable_peer_access(l.first_device + e);
    for (int c = 0; c < l.channels; ++c) {
      check_cuda(cudaEventCreateWithFlags(&computed_[c][d], cudaEventDisableTiming),
                 "cudaEventCreate");
      check_cuda(cudaEventCreateWithFlags(&pushed_[c][d], cudaEventDisableTiming),
                 "cudaEventCreate");
    }
  }
}

band_exchange::~band_exchange() {
  for (double* e : edges_) cudaFreeHost(e);
  for (int c = 0; c < l_.channels; ++c)
    for (int d = 0; d < l_.devices; ++d) {
      cudaEventDestroy(computed_[c][d]);
      cudaEventDestroy(pushed_[c][d]);
    }
}

void band_exchange::exchange(int channel, double* const* blocks, const cudaStream_t* streams,
                             bool above, bool below, int tag) {
  between_devices(channel, blocks, streams, above, below);
  between_processes(channel, blocks, streams, above, below, tag);
}

void band_exchange::meet_processes() const {
#if APPS_WITH_MPI
  if (across_processes()) check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

// Each GPU pushes its edge rows into the neighbours' halo rows once both
// have computed them (so the neighbour has also finished reading the rows
// they replace), and its later kernels wait for the neighbours' pushes.
void band_exchange::between_devices(int c, double* const* blocks, const cudaStream_t* streams,
                                    bool above, bool below) {
  if (l_.devices == 1) return;
  const std::size_t n = l_.row_elements, bytes = n * sizeof(double), last = l_.rows * n;
  const int first = l_.first_device;
  for (int d = 0; d < l_.devices; ++d) {
    check_cuda(cudaSetDevice(first + d), "cudaSetDevice");
    check_cuda(cudaEventRecord(computed_[c][d], streams[d]), "cudaEventRecord");
  }
  for (int d = 0; d < l_.devices; ++d) {
    check_cuda(cudaSetDevice(first + d), "cudaSetDevice");
    const cudaStream_t q = streams[d];
    for (int e : {d - 1, d + 1})
      if (e >= 0 && e < l_.devices) check_cuda(cudaStreamWaitEvent(q, computed_[c][e]), "wait");
    if (above && d + 1 < l_.devices)  // my last row: the halo above the next GPU's rows
      check_cuda(
          cudaMemcpyPeerAsync(blocks[d + 1], first + d + 1, blocks[d] + last, first + d, bytes, q),
          "cudaMemcpyPeerAsync");
    if (below && d > 0)  // my first row: the halo below the previous GPU's rows
      check_cuda(cudaMemcpyPeerAsync(blocks[d - 1] + last + n, first + d - 1, blocks[d] + n,
                                     first + d, bytes, q),
                 "cudaMemcpyPeerAsync");
    check_cuda(cudaEventRecord(pushed_[c][d], q), "cudaEventRecord");
  }
  for (int d = 0; d < l_.devices; ++d) {
    check_cuda(cudaSetDevice(first + d), "cudaSetDevice");
    for (int e : {d - 1, d + 1})
      if (e >= 0 && e < l_.devices)
        check_cuda(cudaStreamWaitEvent(streams[d], pushed_[c][e]), "wait");
  }
}

// The edge rows come to the host once the work before them on the streams
// is done (the host waits on the streams), travel by MPI, and are copied
// into the halo rows on the same streams (after the kernels that still
// read the rows they replace, which the streams hold earlier). Work on a
// program's other streams runs meanwhile.
void band_exchange::between_processes(int c, double* const* blocks, const cudaStream_t* streams,
                                      bool above, bool below, int tag) {
#if APPS_WITH_MPI
  const bool up = l_.process_above >= 0, down = l_.process_below >= 0;
  const bool send_up = below && up, send_down = above && down;
  const bool from_above = above && up, from_below = below && down;
  if (!send_up && !send_down && !from_above && !from_below) return;
  const std::size_t n = l_.row_elements, bytes = n * sizeof(double), last = l_.rows * n;
  double* const rows = edges_[c];
  const int top = 0, bottom = l_.devices - 1;
  if (send_up) {  // my first row: the halo below the upper process's rows
    check_cuda(cudaSetDevice(l_.first_device + top), "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(rows, blocks[top] + n, bytes, cudaMemcpyDeviceToHost, streams[top]),
               "cudaMemcpyAsync (edge row to the host)");
  }
  if (send_down) {  // my last row: the halo above the lower process's rows
    check_cuda(cudaSetDevice(l_.first_device + bottom), "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(rows + n, blocks[bottom] + last, bytes, cudaMemcpyDeviceToHost,
                               streams[bottom]),
               "cudaMemcpyAsync (edge row to the host)");
  }
  // Every earlier copy out of rows + 2n.. (the last exchange's halos) is
  // also done: the streams held it before.
  check_cuda(cudaStreamSynchronize(streams[top]), "edge rows to the host");
  check_cuda(cudaStreamSynchronize(streams[bottom]), "edge rows to the host");
  // A row travelling down carries tag 2 * tag, one travelling up 2 * tag + 1.
  const int t = 2 * tag;
  MPI_Request requests[4];
  int count = 0;
  if (from_above)
    check_mpi(MPI_Irecv(rows + 2 * n, int(n), MPI_DOUBLE, l_.process_above, t, MPI_COMM_WORLD,
                        &requests[count++]),
              "MPI_Irecv");
  if (from_below)
    check_mpi(MPI_Irecv(rows + 3 * n, int(n), MPI_DOUBLE, l_.process_below, t + 1, MPI_COMM_WORLD,
                        &requests[count++]),
              "MPI_Irecv");
  if (send_down)
    check_mpi(MPI_Isend(rows + n, int(n), MPI_DOUBLE, l_.process_below, t, MPI_COMM_WORLD,
                        &requests[count++]),
              "MPI_Isend");
  if (send_up)
    check_mpi(MPI_Isend(rows, int(n), MPI_DOUBLE, l_.process_above, t + 1, MPI_COMM_WORLD,
                        &requests[count++]),
              "MPI_Isend");
  check_mpi(MPI_Waitall(count, requests, MPI_STATUSES_IGNORE), "MPI_Waitall");
  if (from_above) {
    check_cuda(cudaSetDevice(l_.first_device + top), "cudaSetDevice");
    check_cuda(
        cudaMemcpyAsync(blocks[top], rows + 2 * n, bytes, cudaMemcpyHostToDevice, streams[top]),
        "cudaMemcpyAsync (halo row to the device)");
  }
  if (from_below) {
    check_cuda(cudaSetDevice(l_.first_device + bottom), "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(blocks[bottom] + last + n, rows + 3 * n, bytes,
                               cudaMemcpyHostToDevice, streams[bottom]),
               "cudaMemcpyAsync (halo row to the device)");
  }
#else
  (void)c, (void)blocks, (void)streams, (void)above, (void)below, (void)tag;
#endif
}

}  // namespace apps
