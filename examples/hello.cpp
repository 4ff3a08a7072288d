// Hello world (papers/000 Listing 2.6): the host prints what it runs, every
// rank logs one line.
#include <cstdio>

#include <grma/grma.hpp>

struct hello {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    r.log() << "Hello World! I am rank " << r.rank(grma::world) << "/" << r.size(grma::world) << ".";
  }
};

int main(int argc, char** argv) try {
  grma::runtime rt(argc, argv);
  const grma::rank_info info = rt.info(hello{});
  std::printf("Hello!\n"
              " - I manage ranks %d-%d out of %d ranks.\n"
              " - I run device %d out of %d on node %d.\n"
              " - Total node count: %d\n",
              info.rank_start, info.rank_start + info.rank_responsible - 1, info.rank_count,
              info.device_index, info.device_count, info.node_index, info.node_count);
  std::fflush(stdout);
  rt.run(hello{});
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
