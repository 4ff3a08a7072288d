// Teams and the collectives that carry data, portable: the predefined teams
// and strided and 2D splits number their members as documented, translate
// between each other and are reusable after team_destroy (suite Teams);
// barrier, broadcast, fcollect, alltoall, reduce, allreduce and
// reduce_scatter match a reference for every op and type, on teams of 1, 2,
// 3, an odd number, all the node's ranks and all the world's (suite
// DataCollectives). Teams are split from team_node and from team_world,
// whose teams span nodes where the job does.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "support.hpp"

namespace conformance {
namespace {

class Teams : public testing::TestWithParam<config> {};
class DataCollectives : public testing::TestWithParam<config> {};

struct team_splits {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* word = static_cast<std::uint64_t*>(r.calloc_symmetric(1, sizeof(std::uint64_t)));
    const int ns = node_size(r, word);
    CONF_EXPECT(r, rec, r.team_rank(grma::team_world) == me && r.team_size(grma::team_world) == n, 1,
                r.team_rank(grma::team_world), r.team_size(grma::team_world));
    CONF_EXPECT(r, rec, r.team_rank(grma::team_device) == r.rank(grma::device) &&
                            r.team_size(grma::team_device) == r.size(grma::device),
                2, r.team_rank(grma::team_device), r.team_size(grma::team_device));
    CONF_EXPECT(r, rec, r.team_size(grma::team_node) == ns && r.team_rank(grma::team_node) >= 0, 3,
                r.team_size(grma::team_node), r.team_rank(grma::team_node));
    CONF_EXPECT(r, rec, r.team_translate(grma::team_node, r.team_rank(grma::team_node), grma::team_world) == me,
                4, r.team_rank(grma::team_node), me);
    // The predefined teams and communicators passed on as a conditional's
    // result (a reference to the constant; in device code, to its device copy).
    for (int c = 0; c < 2; ++c)
      CONF_EXPECT(r, rec,
                  r.team_rank(c != 0 ? grma::team_device : grma::team_world) ==
                          r.rank(c != 0 ? grma::device : grma::world) &&
                      r.team_size(c != 0 ? grma::team_node : grma::team_world) == (c != 0 ? ns : n),
                  17, c, r.team_rank(c != 0 ? grma::team_device : grma::team_world));
    // Splits of the node's team, and of world's (across nodes where the job is).
    const grma::team parents[2] = {grma::team_node, grma::team_world};
    for (const grma::team parent : parents)
      for (int pass = 0; pass < 2; ++pass) check_splits(r, rec, parent, pass);
    r.free_symmetric(word);
  }

  template <class Rank>
  GRMA_HOST_DEVICE static void check_splits(Rank& r, rank_record& rec, grma::team parent, int pass) {
    const int k = r.team_rank(parent), ns = r.team_size(parent);
    // Evens and odds of the parent.
    grma::team evens = r.team_split_strided(parent, 0, 2, (ns + 1) / 2);
    grma::team odds = grma::team_none;
    if (ns > 1) odds = r.team_split_strided(parent, 1, 2, ns / 2);
    grma::team& mine = k % 2 == 0 ? evens : odds;
    const grma::team other = k % 2 == 0 ? odds : evens;
    CONF_EXPECT(r, rec, other == grma::team_none, 5, pass, k);
    // The queries of team_none (the split of the ranks outside it) answer -1.
    CONF_EXPECT(r, rec, r.team_rank(other) == -1 && r.team_size(other) == -1, 15, pass, k);
    CONF_EXPECT(r, rec, r.team_translate(other, 0, parent) == -1 && r.team_translate(parent, k, other) == -1,
                16, pass, k);
    CONF_EXPECT(r, rec, r.team_rank(mine) == k / 2, 6, r.team_rank(mine), k);
    CONF_EXPECT(r, rec, r.team_size(mine) == (k % 2 == 0 ? (ns + 1) / 2 : ns / 2), 7, r.team_size(mine), ns);
    for (int i = 0; i < r.team_size(mine); ++i)
      CONF_EXPECT(r, rec, r.team_translate(mine, i, parent) == 2 * i + k % 2, 8, i,
                  r.team_translate(mine, i, parent));
    r.barrier(mine);
    // A team of one member takes any stride (0, or negative).
    grma::team last = r.team_split_strided(parent, ns - 1, pass == 0 ? 0 : -3, 1);
    CONF_EXPECT(r, rec,
                k == ns - 1 ? r.team_rank(last) == 0 && r.team_size(last) == 1 &&
                                  r.team_translate(last, 0, parent) == k
                            : last == grma::team_none,
                18, pass, r.team_size(last));
    if (k == ns - 1) r.barrier(last);
    r.team_destroy(last);
    // A grid of rows of 3.
    grma::team row = grma::team_none, column = grma::team_none;
    r.team_split_2d(parent, 3, row, column);
    CONF_EXPECT(r, rec, r.team_rank(row) == k % 3 && r.team_rank(column) == k / 3, 9,
                r.team_rank(row), r.team_rank(column));
    CONF_EXPECT(r, rec, r.team_size(row) == min_of(3, ns - k / 3 * 3), 10, r.team_size(row), ns);
    CONF_EXPECT(r, rec, r.team_size(column) == (ns - k % 3 + 2) / 3, 11, r.team_size(column), ns);
    CONF_EXPECT(r, rec, r.team_translate(row, 0, column) == (k % 3 == 0 ? k / 3 : -1), 12,
                r.team_translate(row, 0, column), k);
    // Rows and columns at once: sums over each.
    auto* sums = static_cast<long long*>(r.alloc_symmetric(2 * sizeof(long long)));
    if (r.thread() == 0) sums[0] = sums[1] = k;
    r.sync_threads();
    r.allreduce(row, sums, sums, 1, grma::reduce_op::sum);
    r.allreduce(column, sums + 1, sums + 1, 1, grma::reduce_op::sum);
    long long row_sum = 0, column_sum = 0;
    for (int i = k / 3 * 3; i < min_of(ns, k / 3 * 3 + 3); ++i) row_sum += i;
    for (int i = k % 3; i < ns; i += 3) column_sum += i;
    CONF_EXPECT(r, rec, sums[0] == row_sum && sums[1] == column_sum, 13, sums[0], sums[1]);
    r.free_symmetric(sums);
    r.team_destroy(row);
    r.team_destroy(column);
    r.team_destroy(mine);
    CONF_EXPECT(r, rec, mine == grma::team_none && row == grma::team_none, 14, pass, 0);
    tally(r, rec, 0);
  }
};

TEST_P(Teams, SplitsNumberTranslateAndEnd) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(team_splits{});
  j.prepare();
  if (j.run(team_splits{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 4u; }, "passes");
  }
}

// Splits and allocations of different teams at once, again and again: every
// row of a 2D split of world's splits itself and allocates over the new team
// at the same time as the other rows (different teams locking the same
// nodes' tables, across nodes where the job spans them), a member checks
// its neighbour's copy, and everything is freed and destroyed. 16 rounds of
// three to six slots each: a slot a destroy failed to free on some node
// would run the table out.
struct team_churn {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    for (int round = 0; round < 16; ++round) {
      // At most four rows (each copy takes a slot of its own) of a quarter
      // of the ranks or a little more.
      grma::team row = grma::team_none, column = grma::team_none;
      r.team_split_2d(grma::team_world, (r.size(grma::world) + 3) / 4 + round % 3, row, column);
      grma::team copy = r.team_split_strided(row, 0, 1, r.team_size(row));
      const int k = r.team_rank(copy), m = r.team_size(copy);
      CONF_EXPECT(r, rec, k == r.team_rank(row) && m == r.team_size(row), round, k, m);
      const std::size_t bytes = 64 + 64 * std::size_t(round);
      auto* block = static_cast<unsigned char*>(r.alloc_symmetric(copy, bytes));
      fill(r, block, bytes, mix(std::uint64_t(r.rank(grma::world)), std::uint64_t(round)));
      r.barrier(copy);
      const int next = r.team_translate(copy, (k + 1) % m, grma::team_world);
      auto* theirs = static_cast<unsigned char*>(r.alloc(bytes));
      r.get(theirs, block, bytes, next);
      CONF_CHECK_PATTERN(r, rec, theirs, bytes, mix(std::uint64_t(next), std::uint64_t(round)), 0, round);
      r.free(theirs);
      r.barrier(copy);  // every member has read its neighbour's copy
      r.free_symmetric(copy, block);
      r.team_destroy(copy);
      r.team_destroy(column);
      r.team_destroy(row);
      tally(r, rec, 0);
    }
  }
};

TEST_P(Teams, SplitsAndAllocationsOfManyTeamsAtOnceFreeEverySlot) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(team_churn{});
  j.prepare();
  if (j.run(team_churn{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 16u; }, "rounds");
  }
}

// ---- data collectives ---------------------------------------------------------------------

// Per member: what the largest team (thousands of GPU ranks) fits in a slice.
constexpr std::size_t broadcast_bytes = 100, collect_bytes = 8, exchange_bytes = 8;
constexpr std::size_t reduce_count = 37, scatter_count = 2;

// Member `member`'s element e for `op`: small integers where sums and
// extremes must be exact in every type, +-1 for products (no overflow), any
// bits for the bitwise ops.
template <class T>
GRMA_HOST_DEVICE T contribution(grma::reduce_op op, int member, std::size_t e) {
  if (op == grma::reduce_op::prod) return (std::size_t(member) + e) % 3 == 0 ? T(-1) : T(1);
  if (op == grma::reduce_op::bit_and || op == grma::reduce_op::bit_or || op == grma::reduce_op::bit_xor)
    return T(mix(std::uint64_t(member), e));
  return T((std::size_t(member) * 7 + e * 3) % 29) - T(op == grma::reduce_op::min ? 5 : 0);
}

template <class T>
GRMA_HOST_DEVICE T reference(grma::reduce_op op, int members, std::size_t e) {
  T v = contribution<T>(op, 0, e);
  for (int i = 1; i < members; ++i) {
    const T c = contribution<T>(op, i, e);
    switch (op) {
      case grma::reduce_op::sum: v = T(v + c); break;
      case grma::reduce_op::prod: v = T(v * c); break;
      case grma::reduce_op::min: v = c < v ? c : v; break;
      case grma::reduce_op::max: v = v < c ? c : v; break;
      default:
        if constexpr (std::is_integral_v<T>) {
          if (op == grma::reduce_op::bit_and) v = T(v & c);
          else if (op == grma::reduce_op::bit_or) v = T(v | c);
          else v = T(v ^ c);
        }
    }
  }
  return v;
}

// allreduce, reduce (root: the last member) and reduce_scatter of every op
// of T over team t, checked against the reference.
template <class T, class Rank>
GRMA_HOST_DEVICE void check_reductions(Rank& r, rank_record& rec, grma::team t, void* source_block,
                                       void* dest_block, int line) {
  const int me = r.team_rank(t), size = r.team_size(t);
  auto* source = static_cast<T*>(source_block);
  auto* dest = static_cast<T*>(dest_block);
  const int ops = std::is_integral_v<T> ? 7 : 4;
  for (int o = 0; o < ops; ++o) {
    const auto op = grma::reduce_op(o);
    const std::size_t total = max_of(reduce_count, scatter_count * std::size_t(size));
    for (std::size_t e = std::size_t(r.thread()); e < total; e += std::size_t(r.threads()))
      source[e] = contribution<T>(op, me, e);
    r.sync_threads();
    r.allreduce(t, dest, source, reduce_count, op);
    for (std::size_t e = 0; e < reduce_count; ++e)
      if (r.thread() == 0 && !(dest[e] == reference<T>(op, size, e))) record_failure(rec, line, o, (long long)e, 1);
    r.sync_threads();
    r.reduce(t, dest, source, reduce_count, op, size - 1);
    if (me == size - 1)
      for (std::size_t e = 0; e < reduce_count; ++e)
        if (r.thread() == 0 && !(dest[e] == reference<T>(op, size, e))) record_failure(rec, line, o, (long long)e, 2);
    r.sync_threads();
    r.reduce_scatter(t, dest, source, scatter_count, op);
    for (std::size_t e = 0; e < scatter_count; ++e)
      if (r.thread() == 0 && !(dest[e] == reference<T>(op, size, std::size_t(me) * scatter_count + e)))
        record_failure(rec, line, o, (long long)e, 3);
    r.barrier(t);  // the sources are rewritten next
  }
}

// alltoall over t (a member of it calls) of `bytes` per pair: block j of
// member i's source goes to member j, checked byte for byte; the closing
// barrier keeps the sources from being refilled while a member reads them.
template <class Rank>
GRMA_HOST_DEVICE void check_alltoall(Rank& r, rank_record& rec, grma::team t, unsigned char* source,
                                     unsigned char* dest, std::size_t bytes, int salt) {
  const int me = r.team_rank(t), size = r.team_size(t);
  for (int j = 0; j < size; ++j)
    fill(r, source + std::size_t(j) * bytes, bytes,
         mix(std::uint64_t(salt), std::uint64_t(me * 4096 + j), 3));
  r.alltoall(t, dest, source, bytes);
  for (int i = 0; i < size; ++i)
    CONF_CHECK_PATTERN(r, rec, dest + std::size_t(i) * bytes, bytes,
                       mix(std::uint64_t(salt), std::uint64_t(i * 4096 + me), 3), 0, salt * 10 + 3);
  r.barrier(t);
}

template <class Rank>
GRMA_HOST_DEVICE void check_team(Rank& r, rank_record& rec, grma::team t, unsigned char* source,
                                 unsigned char* dest, int salt) {
  if (t == grma::team_none) return;
  const int me = r.team_rank(t), size = r.team_size(t);
  const int root = size - 1;
  // broadcast
  fill(r, source, broadcast_bytes, mix(std::uint64_t(salt), std::uint64_t(me)));
  r.broadcast(t, dest, source, broadcast_bytes, root);
  CONF_CHECK_PATTERN(r, rec, dest, broadcast_bytes, mix(std::uint64_t(salt), std::uint64_t(root)), 0, salt * 10 + 1);
  r.barrier(t);
  // fcollect
  fill(r, source, collect_bytes, mix(std::uint64_t(salt), std::uint64_t(me), 2));
  r.fcollect(t, dest, source, collect_bytes);
  for (int i = 0; i < size; ++i)
    CONF_CHECK_PATTERN(r, rec, dest + std::size_t(i) * collect_bytes, collect_bytes,
                       mix(std::uint64_t(salt), std::uint64_t(i), 2), 0, salt * 10 + 2);
  r.barrier(t);
  check_alltoall(r, rec, t, source, dest, exchange_bytes, salt);
  check_reductions<std::int32_t>(r, rec, t, source, dest, __LINE__);
  check_reductions<std::uint32_t>(r, rec, t, source, dest, __LINE__);
  check_reductions<std::int64_t>(r, rec, t, source, dest, __LINE__);
  check_reductions<std::uint64_t>(r, rec, t, source, dest, __LINE__);
  check_reductions<float>(r, rec, t, source, dest, __LINE__);
  check_reductions<double>(r, rec, t, source, dest, __LINE__);
  tally(r, rec, 0);
}

// Empty collectives take any pointers (null here); every member of an
// allreduce gets the same bits, also where the op's result depends on the
// order of its operands (a float min or max of -0 and +0, or of a NaN,
// whose lanes on a GPU combine in different orders).
struct edge_collectives {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    auto* block = static_cast<float*>(r.calloc_symmetric(4, sizeof(float)));
    const grma::team t = grma::team_world;
    const int me = r.team_rank(t), size = r.team_size(t);
    float* none = nullptr;
    r.allreduce(t, none, none, 0, grma::reduce_op::sum);
    r.reduce(t, none, none, 0, grma::reduce_op::max, 0);
    r.reduce_scatter(t, none, none, 0, grma::reduce_op::min);
    r.broadcast(t, nullptr, nullptr, 0, 0);
    r.fcollect(t, nullptr, nullptr, 0);
    r.alltoall(t, nullptr, nullptr, 0);
    const std::uint32_t nan_bits = 0x7fc00000u;
    float nan = 0;
    __builtin_memcpy(&nan, &nan_bits, 4);
    for (int o = 0; o < 2; ++o) {
      const auto op = o == 0 ? grma::reduce_op::min : grma::reduce_op::max;
      if (r.thread() == 0) {
        block[0] = me % 2 == 0 ? 0.0f : -0.0f;
        block[1] = me % 3 == 1 ? nan : float(me % 5);
      }
      r.sync_threads();
      r.allreduce(t, block + 2, block, 2, op);
      r.barrier(t);
      // Member 0's results (a g: member 0 may be on another node), checked by thread 0.
      const int first = r.team_translate(t, 0, grma::team_world);
      for (int e = 2; e < 4; ++e) {
        std::uint32_t mine = 0, theirs = 0;
        __builtin_memcpy(&mine, block + e, 4);
        if (r.thread() == 0) {
          const float value = r.g(block + e, first);
          __builtin_memcpy(&theirs, &value, 4);
        }
        CONF_EXPECT(r, rec, mine == theirs, o, e, (long long)mine * 4294967296LL + theirs);
      }
      r.barrier(t);  // member 0's results are read before the next op's
    }
    tally(r, rec, 0, unsigned(size));
    r.free_symmetric(block);
  }
};

TEST_P(DataCollectives, EmptyCollectivesAndOrderDependentResultsAgree) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(edge_collectives{});
  j.prepare();
  if (j.run(edge_collectives{})) j.expect_no_failures(__FILE__);
}

struct data_collectives {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int n = r.size(grma::world);
    // Room for the largest team: alltoall's blocks, reduce_scatter's vector,
    // fcollect's result.
    const std::size_t bytes = round64(max_of(max_of(exchange_bytes, collect_bytes),
                                             scatter_count * sizeof(double)) * std::size_t(n) +
                                      max_of(broadcast_bytes, reduce_count * sizeof(double)));
    auto* source = static_cast<unsigned char*>(r.alloc_symmetric(bytes));
    auto* dest = static_cast<unsigned char*>(r.alloc_symmetric(bytes));
    int salt = 0;
    const grma::team parents[2] = {grma::team_node, grma::team_world};
    for (const grma::team parent : parents) {
      for (int x = 1; x <= 3; ++x) {  // rows of 1, 2, 3 members; columns of the rest
        grma::team row = grma::team_none, column = grma::team_none;
        r.team_split_2d(parent, x, row, column);
        check_team(r, rec, row, source, dest, ++salt);
        check_team(r, rec, column, source, dest, ++salt);
        r.team_destroy(column);
        r.team_destroy(row);
      }
      check_team(r, rec, parent, source, dest, ++salt);
    }
    r.barrier(grma::team_world);
    r.free_symmetric(dest);
    r.free_symmetric(source);
  }
};

TEST_P(DataCollectives, EveryOpAndTypeOnTeamsOfEverySize) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(data_collectives{});
  j.prepare();
  if (j.run(data_collectives{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 14u; }, "teams checked");
  }
}

// Collectives over team_world while split teams are live: evens (strided)
// and rows and columns of 3 (2D), each used, then alltoall over world with
// blocks of an odd size (33 bytes: a byte-wise copy, not lines) checked
// byte for byte, several times over the same buffers with the teams made
// anew each time.
constexpr std::size_t odd_block = 33;
constexpr int live_rounds = 3;
constexpr int column_rounds = 8;

struct world_while_splits_live {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int n = r.size(grma::world);
    auto* source = static_cast<unsigned char*>(r.alloc_symmetric(std::size_t(n) * odd_block));
    auto* dest = static_cast<unsigned char*>(r.alloc_symmetric(std::size_t(n) * odd_block));
    for (int round = 0; round < live_rounds; ++round) {
      grma::team evens = r.team_split_strided(grma::team_world, 0, 2, (n + 1) / 2);
      grma::team row = grma::team_none, column = grma::team_none;
      r.team_split_2d(grma::team_world, 3, row, column);
      if (evens != grma::team_none) r.barrier(evens);
      r.barrier(row);
      r.barrier(column);
      check_alltoall(r, rec, grma::team_world, source, dest, odd_block, round);
      r.team_destroy(evens);
      r.team_destroy(column);
      r.team_destroy(row);
      tally(r, rec, 0);
    }
    r.free_symmetric(dest);
    r.free_symmetric(source);
  }
};

TEST_P(DataCollectives, WorldAlltoallWhileSplitTeamsAreLive) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(world_while_splits_live{});
  j.prepare();
  if (j.run(world_while_splits_live{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return unsigned(live_rounds); }, "rounds checked");
  }
}

// Every column of a 2D split (or its one row, where that is fewer teams)
// splits itself at once, each split taking a slot of its own: the members
// use their team (barrier, alltoall of 33-byte blocks checked byte for
// byte, world collectives between), then destroy it while the other
// columns' teams live on, for x = 2, 3, 4 and all; twice over.
struct splits_of_every_column {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int n = r.size(grma::world);
    const int widths[4] = {2, 3, 4, n};
    auto* source = static_cast<unsigned char*>(r.alloc_symmetric(std::size_t(n) * odd_block));
    auto* dest = static_cast<unsigned char*>(r.alloc_symmetric(std::size_t(n) * odd_block));
    for (int round = 0; round < column_rounds; ++round) {
      const int x = widths[round % 4] < n ? widths[round % 4] : n;
      grma::team row = grma::team_none, column = grma::team_none;
      r.team_split_2d(grma::team_world, x, row, column);
      // x columns, ceil(n / x) rows: split whichever are fewer.
      const grma::team parent = x <= (n + x - 1) / x ? column : row;
      const int ps = r.team_size(parent), pk = r.team_rank(parent), start = 1 % ps;
      grma::team sub = r.team_split_strided(parent, start, 2, (ps - start + 1) / 2);
      const int k = r.team_rank(sub);
      const bool member = pk >= start && (pk - start) % 2 == 0;
      CONF_EXPECT(r, rec, (k >= 0) == member && (!member || k == (pk - start) / 2), round, pk, k);
      if (member) {
        r.barrier(sub);
        check_alltoall(r, rec, sub, source, dest, odd_block, round);
      }
      r.alltoall(grma::team_world, dest, source, 1);
      r.team_destroy(sub);
      r.barrier(row);
      r.team_destroy(column);
      r.team_destroy(row);
      tally(r, rec, 0);
    }
    r.barrier(grma::team_world);
    r.free_symmetric(dest);
    r.free_symmetric(source);
  }
};

TEST_P(Teams, SplitsOfEveryColumnAtOnce) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(splits_of_every_column{});
  j.prepare();
  if (j.run(splits_of_every_column{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return unsigned(column_rounds); }, "rounds checked");
  }
}

// An allreduce of more elements than a member fetches at once across nodes
// (its rank-private 16 KiB): every member's share in several chunks where
// the team spans nodes, and on one node the on-node reduction.
constexpr std::size_t long_count = 2100;

struct long_allreduce {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const grma::team t = grma::team_world;
    const int me = r.team_rank(t), size = r.team_size(t);
    auto* source = static_cast<std::int64_t*>(r.alloc_symmetric(2 * long_count * sizeof(std::int64_t)));
    std::int64_t* const dest = source + long_count;
    const grma::reduce_op ops[2] = {grma::reduce_op::sum, grma::reduce_op::max};
    for (const grma::reduce_op op : ops) {
      for (std::size_t e = std::size_t(r.thread()); e < long_count; e += std::size_t(r.threads()))
        source[e] = contribution<std::int64_t>(op, me, e);
      r.sync_threads();
      r.allreduce(t, dest, source, long_count, op);
      for (std::size_t e = std::size_t(r.thread()); e < long_count; e += std::size_t(r.threads()))
        CONF_EXPECT_EACH(rec, dest[e] == reference<std::int64_t>(op, size, e), int(op), e, dest[e]);
      r.barrier(t);  // the sources are rewritten next
      tally(r, rec, 0);
    }
    r.free_symmetric(source);
  }
};

TEST_P(DataCollectives, AllreduceLongerThanAShareOfPrivateMemory) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(long_allreduce{});
  j.prepare();
  if (j.run(long_allreduce{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 2u; }, "allreduces checked");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Teams, testing::ValuesIn(suite_configs()), config_name);
INSTANTIATE_TEST_SUITE_P(Conformance, DataCollectives, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
