// Rank exchange (papers/000 Listings 2.7-2.8): the leader, world rank 0,
// learns the world rank of a peer rank on its own device, of the first rank
// on a peer device of its node and of the first rank on a peer node, each
// present or not. The leader sees its node through team_node (its members
// go device by device) and tells every other rank which of the three it is,
// if any, in a notification's immediate; those ranks answer with their
// world rank. Any shape: devices of one process or of several, nodes played
// by one process or each its own.
#include <cstdio>

#include <grma/grma.hpp>

struct learned_ranks {
  int rank[3];  // written by the leader: peer rank, peer device, peer node (-1: none)
};

struct rank_exchange {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int rank = r.rank(grma::world), ranks = r.size(grma::world);
    auto* config = static_cast<int*>(r.alloc(3 * sizeof(int)));
    GRMA_ASSERT(r, config != nullptr);
    grma::window config_win = r.window_create(grma::world, config, 3 * sizeof(int));
    constexpr int role_tag = 1, answer_tag = 0;

    if (rank == 0) {
      const int per_device = r.size(grma::device);
      int role[3] = {per_device > 1 ? 1 : -1, -1, -1};
      if (r.team_size(grma::team_node) > per_device)
        role[1] = r.team_translate(grma::team_node, per_device, grma::team_world);
      for (int w = 1; w < ranks && role[2] < 0; ++w)
        if (r.team_translate(grma::team_world, w, grma::team_node) < 0) role[2] = w;
      int peers = 0;
      for (int w = 1; w < ranks; ++w) {
        int slot = -1;
        for (int i = 0; i < 3; ++i)
          if (role[i] == w) slot = i;
        peers += slot >= 0 ? 1 : 0;
        r.put_notify(config_win, w, 0, 0, config, role_tag, std::uint64_t(slot + 1));
      }
      r.log() << "LEADER: waiting for " << peers << " rank IDs";
      if (peers > 0) r.wait_notifications(config_win, grma::any_source, answer_tag, peers);
      const char* names[3] = {"peer rank", "1st peer device", "1st peer node"};
      auto* out = r.template userdata<learned_ranks>();
      for (int i = 0; i < 3; ++i) {
        const int learned = role[i] >= 0 ? r.read(&config[i]) : -1;
        if (r.thread() == 0) out->rank[i] = learned;
        if (role[i] >= 0) r.log() << "LEADER: " << names[i] << " is rank " << learned;
      }
    } else {
      const int slot = int(r.wait_notification(config_win, 0, role_tag).immediate) - 1;
      if (slot >= 0) {
        config[0] = rank;
        r.sync_threads();  // the rank's threads copy the source: all of it is written
        r.put_notify(config_win, 0, std::size_t(slot) * sizeof(int), sizeof(int), config,
                     answer_tag);
      }
    }
    r.window_free(config_win);
    r.free(config);
  }
};

int main(int argc, char** argv) try {
  grma::runtime rt(argc, argv);
  const grma::rank_info info = rt.info(rank_exchange{});
  learned_ranks learned{};
  rt.run(rank_exchange{}, {.userdata = &learned, .userdata_size = sizeof(learned)});
  if (info.rank_start == 0)
    std::printf("host: the leader learned peer rank %d, peer device rank %d, peer node rank %d\n",
                learned.rank[0], learned.rank[1], learned.rank[2]);
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
