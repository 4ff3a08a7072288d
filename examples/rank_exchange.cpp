// Rank exchange (papers/000 Listings 2.7-2.8): the leader, rank 0 of device 0,
// learns the world rank of a peer rank on its own device, of the first rank on
// a peer device and of the first rank on a peer node, each present or not.
// The host describes the topology through userdata.
#include <cstdio>

#include <grma/grma.hpp>

struct topology {
  int has_peer_rank;    // the device runs more than one rank
  int is_first_device;  // node 0, device 0
  int is_first_peer_device;
  int is_first_peer_node;
  int has_peer_device;
  int has_peer_node;
  int learned[3];  // written by the leader: peer rank, peer device, peer node (-1: none)
};

struct rank_exchange {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int rank = r.rank(grma::world);
    const int local_rank = r.rank(grma::device);
    auto* data = r.template userdata<topology>();

    auto* config = static_cast<int*>(r.alloc(3 * sizeof(int)));
    GRMA_ASSERT(r, config != nullptr);
    grma::window config_win = r.window_create(grma::world, config, 3 * sizeof(int));

    const bool leader = data->is_first_device && local_rank == 0;
    if (leader) {
      const int peers = data->has_peer_rank + data->has_peer_device + data->has_peer_node;
      r.log() << "LEADER: waiting for " << peers << " rank IDs";
      if (peers > 0) r.wait_notifications(config_win, grma::any_source, 0, peers);
      const char* names[3] = {"peer rank", "1st peer device", "1st peer node"};
      const int present[3] = {data->has_peer_rank, data->has_peer_device, data->has_peer_node};
      for (int i = 0; i < 3; ++i) {
        data->learned[i] = present[i] ? r.read(&config[i]) : -1;
        if (present[i]) r.log() << "LEADER: " << names[i] << " is rank " << data->learned[i];
      }
    } else {
      int slot = -1;
      if (data->is_first_device && local_rank == 1) slot = 0;
      if (data->is_first_peer_device && local_rank == 0) slot = 1;
      if (data->is_first_peer_node && local_rank == 0) slot = 2;
      if (slot >= 0) {
        config[0] = rank;
        r.put_notify(config_win, 0, slot * sizeof(int), sizeof(int), config, 0);
      }
    }
    r.window_free(config_win);
    r.free(config);
  }
};

int main(int argc, char** argv) try {
  grma::runtime rt(argc, argv);
  const grma::rank_info info = rt.info(rank_exchange{});
  topology data{};
  data.has_peer_rank = info.ranks_per_device > 1;
  data.is_first_device = info.node_index == 0 && info.device_index == 0;
  data.is_first_peer_device = info.node_index == 0 && info.device_index == 1;
  data.is_first_peer_node = info.node_index == 1 && info.device_index == 0;
  data.has_peer_device = info.device_count > 1;
  data.has_peer_node = info.node_count > 1;
  rt.run(rank_exchange{}, {.userdata = &data, .userdata_size = sizeof(data)});
  if (data.is_first_device)
    std::printf("host: the leader learned peer rank %d, peer device rank %d, peer node rank %d\n",
                data.learned[0], data.learned[1], data.learned[2]);
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
