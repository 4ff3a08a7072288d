#include "engine_context.hpp"

#include <utility>

namespace grma::detail {
namespace {

// Staging memory each lane (process and direction) may hold: 16 chunks in
// flight keep the network and the copies busy (data_lanes).
constexpr std::uint64_t staging_per_lane = std::uint64_t{16} << 20;

// Data moves in chunks, each its own message (both sides split alike):
// where it is staged, the copy of one chunk overlaps the network's moving
// of the one before, and the receiver's copy of it.
constexpr std::uint64_t chunk_bytes = std::uint64_t{1} << 20;

// Calls chunk(offset, bytes, chunk_done) for each chunk of `bytes`; `done`
// runs once every chunk_done has (at once when there are none).
template <class F>
void for_each_chunk(std::uint64_t bytes, std::function<void()> done, F&& chunk) {
  if (bytes == 0) return done();
  auto left = std::make_shared<std::uint64_t>((bytes + chunk_bytes - 1) / chunk_bytes);
  const std::function<void()> chunk_done = [left, done] {
    if (--*left == 0) done();
  };
  for (std::uint64_t at = 0; at < bytes; at += chunk_bytes)
    chunk(at, bytes - at < chunk_bytes ? bytes - at : chunk_bytes, chunk_done);
}

}  // namespace

engine_context::engine_context(const job_nodes& n, std::vector<const device_view*> v,
                               std::unique_ptr<engine_memory> m, std::unique_ptr<transport> t)
    : nodes(n),
      views(std::move(v)),
      lanes(n.processes, staging_per_lane,
            [this](std::size_t bytes) { return memory->staging(bytes); }),
      memory(std::move(m)),
      net(std::move(t)) {
  for (int d = 0; d < nodes.devices_per_process; ++d)
    own.push_back(views[std::size_t(nodes.process * nodes.devices_per_process + d)]);
  ranks_per_device = own[0]->ranks;
  world_size = own[0]->world_size;
  for (const device_view* view : views)
    if (view != nullptr) {
      first = view;
      break;
    }
}

void engine_context::send_data(int to, const unsigned char* at, std::uint64_t bytes,
                               std::function<void()> released, memory_kind kind) {
  const bool host = kind == memory_kind::host;
  for_each_chunk(bytes, std::move(released), [&](std::uint64_t offset, std::uint64_t n, auto chunk_done) {
    // In the lane even unstaged: the pair's data messages go in header order.
    const unsigned char* from = at + offset;
    const bool staged = !host && !memory->network_moves(from, n);
    lanes.enqueue(to, lane_direction::out, staged ? n : 0,
                  [this, to, from, n, chunk_done, host](auto stage) {
                    if (host)
                      return net->send(to, channel::data, from, n, memory_place::host, chunk_done);
                    if (!stage) {
                      memory->flush();  // the network reads the device itself: earlier writes first
                      return net->send(to, channel::data, from, n, memory->devices_place(),
                                       chunk_done);
                    }
                    memory->read(stage.get(), from, n);  // sees every earlier write
                    net->send(to, channel::data, stage.get(), n, memory_place::host, [stage] {});
                    chunk_done();
                  });
  });
}

void engine_context::drop_data(int from, std::uint64_t bytes, std::function<void()> done) {
  const data_lanes::stager host_buffer = [](std::size_t n) {
    return std::shared_ptr<unsigned char>(new unsigned char[n],
                                          std::default_delete<unsigned char[]>());
  };
  for_each_chunk(bytes, std::move(done), [&](std::uint64_t, std::uint64_t n, auto chunk_done) {
    lanes.enqueue(
        from, lane_direction::in, n,
        [this, from, n, chunk_done](auto buffer) {
          net->receive(from, channel::data, buffer.get(), n, memory_place::host,
                       [buffer, chunk_done](int, std::size_t) { chunk_done(); });
        },
        host_buffer);
  });
}

void engine_context::receive_data(int from, unsigned char* at, std::uint64_t bytes,
                                  std::function<void()> done, memory_kind kind) {
  const bool host = kind == memory_kind::host;
  for_each_chunk(
      bytes, std::move(done), [&](std::uint64_t offset, std::uint64_t n, auto chunk_done) {
        unsigned char* to = at + offset;
        const bool staged = !host && !memory->network_moves(to, n);
        lanes.enqueue(from, lane_direction::in, staged ? n : 0,
                      [this, from, to, n, chunk_done, host](auto stage) {
                        if (!stage) {
                          // The network writes the device itself: no earlier write lands over it.
                          if (!host) memory->flush();
                          return net->receive(from, channel::data, to, n,
                                              host ? memory_place::host : memory->devices_place(),
                                              [chunk_done](int, std::size_t) { chunk_done(); });
                        }
                        net->receive(from, channel::data, stage.get(), n, memory_place::host,
                                     [this, stage, to, n, chunk_done](int, std::size_t) {
                                       // Lands before anything written after it (engine_memory);
                                       // the stage returns to its lane when the copy is done.
                                       memory->write_staged(to, stage, n);
                                       chunk_done();
                                     });
                      });
      });
}

}  // namespace grma::detail
