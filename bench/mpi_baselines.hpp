// The MPI floors grma-bench measures the path between nodes against, in the same
// run: a ping-pong and a stream of host buffers between MPI_COMM_WORLD
// process 0 and process `peer` (only those two call them); with `stage`,
// of device buffers staged through the host buffers.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <vector>

namespace bench {

// Data that lives in device memory while MPI (not CUDA-aware) sends host
// buffers: each message is copied to the host buffer before it is sent and
// to the device after it arrived.
struct staging {
  std::function<void(void* host, std::size_t bytes)> to_host;
  std::function<void(const void* host, std::size_t bytes)> to_device;
};

inline int process() {
  int p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &p);
  return p;
}

// Whether process 0 and process `peer` run on one host (only those two
// call it).
inline bool same_host(int peer) {
  char mine[256] = {}, theirs[256] = {};
  gethostname(mine, sizeof mine - 1);
  const int other = process() == 0 ? peer : 0;
  MPI_Sendrecv(mine, int(sizeof mine), MPI_CHAR, other, 14, theirs, int(sizeof theirs), MPI_CHAR,
               other, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return std::strcmp(mine, theirs) == 0;
}

// An empty message to or from `other`: lines the two processes up.
inline void empty_message(bool send, int other, int tag) {
  if (send)
    MPI_Send(nullptr, 0, MPI_BYTE, other, tag, MPI_COMM_WORLD);
  else
    MPI_Recv(nullptr, 0, MPI_BYTE, other, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

// MPI_Send/MPI_Recv round trip, in microseconds (after 20 for warm-up).
inline double mpi_round_trip_us(std::size_t bytes, int iterations, int peer,
                                const staging* stage = nullptr) {
  std::vector<unsigned char> buffer(bytes == 0 ? 1 : bytes, 1);
  const int me = process(), other = me == 0 ? peer : 0;
  auto send = [&] {
    if (stage) stage->to_host(buffer.data(), bytes);
    MPI_Send(buffer.data(), int(bytes), MPI_BYTE, other, 7, MPI_COMM_WORLD);
  };
  auto receive = [&] {
    MPI_Recv(buffer.data(), int(bytes), MPI_BYTE, other, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (stage) stage->to_device(buffer.data(), bytes);
  };
  double start = 0;
  for (int it = -20; it < iterations; ++it) {
    if (it == 0) start = MPI_Wtime();
    if (me == 0) {
      send();
      receive();
    } else {
      receive();
      send();
    }
  }
  return (MPI_Wtime() - start) / iterations * 1e6;
}

// Process 0 sends `iterations` rounds of `window` messages of `bytes` to
// `peer`, each round's from buffers of their own and all in flight at once,
// and the peer answers the last with an empty one: GB/s. A window of as many
// messages as grma's pairs put at once moves as much memory as they do (one
// buffer sent again and again stays in the caches where theirs do not). An
// empty message first lines them up.
inline double mpi_stream_gbs(std::size_t bytes, int iterations, int peer,
                             const staging* stage = nullptr, int window = 1) {
  const std::size_t round = bytes * std::size_t(window);
  std::vector<unsigned char> buffer(round, 1);
  std::vector<MPI_Request> requests(static_cast<std::size_t>(window));
  const int me = process(), other = me == 0 ? peer : 0;
  empty_message(me != 0, other, 10);
  const double start = MPI_Wtime();
  // A staged message passes through the device's buffer of `bytes` on its own.
  for (int it = 0; it < iterations; ++it) {
    for (int i = 0; i < window; ++i) {
      unsigned char* slot = buffer.data() + bytes * std::size_t(i);
      if (me == 0) {
        if (stage) stage->to_host(slot, bytes);
        MPI_Isend(slot, int(bytes), MPI_BYTE, other, 8, MPI_COMM_WORLD, &requests[std::size_t(i)]);
      } else {
        MPI_Irecv(slot, int(bytes), MPI_BYTE, other, 8, MPI_COMM_WORLD, &requests[std::size_t(i)]);
      }
    }
    MPI_Waitall(window, requests.data(), MPI_STATUSES_IGNORE);
    if (me != 0 && stage)
      for (int i = 0; i < window; ++i)
        stage->to_device(buffer.data() + bytes * std::size_t(i), bytes);
  }
  empty_message(me != 0, other, 9);
  return double(round) * iterations / (MPI_Wtime() - start) / 1e9;
}

// MPI's own message rate, as osu_mbw_mr measures it: process 0 sends
// `messages` messages of `bytes` to `peer`, `window` of them in flight at a
// time (the peer posts as many receives), and the peer answers the last
// window with an empty message: messages per second.
inline double mpi_message_rate(std::size_t bytes, int messages, int window, int peer) {
  std::vector<unsigned char> buffer(bytes * std::size_t(window), 1);
  std::vector<MPI_Request> requests(static_cast<std::size_t>(window));
  const int me = process(), other = me == 0 ? peer : 0;
  empty_message(me != 0, other, 11);
  const double start = MPI_Wtime();
  for (int done = 0; done < messages; done += window) {
    const int n = messages - done < window ? messages - done : window;
    for (int i = 0; i < n; ++i) {
      unsigned char* slot = buffer.data() + bytes * std::size_t(i);
      if (me == 0)
        MPI_Isend(slot, int(bytes), MPI_BYTE, other, 12, MPI_COMM_WORLD, &requests[std::size_t(i)]);
      else
        MPI_Irecv(slot, int(bytes), MPI_BYTE, other, 12, MPI_COMM_WORLD, &requests[std::size_t(i)]);
    }
    MPI_Waitall(n, requests.data(), MPI_STATUSES_IGNORE);
  }
  empty_message(me != 0, other, 13);
  return double(messages) / (MPI_Wtime() - start);
}

}  // namespace bench
