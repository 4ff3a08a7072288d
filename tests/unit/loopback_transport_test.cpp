// The loopback transport: messages of one sender and channel are received
// in the order they were sent, whatever order the receives name senders in;
// a receive from any process takes the earliest message of its channel and
// learns its sender; a send's buffer is the caller's again at once; a
// message longer than its receive is an error that says so.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "grma/error.hpp"
#include "runtime/loopback_transport.hpp"

namespace {

using grma::detail::channel;
using grma::detail::make_loopback_hub;
using grma::detail::make_loopback_transport;
using grma::detail::memory_place;
using grma::detail::transport;

struct three_endpoints {
  std::shared_ptr<grma::detail::loopback_hub> hub = make_loopback_hub(3);
  std::unique_ptr<transport> a = make_loopback_transport(hub, 0);
  std::unique_ptr<transport> b = make_loopback_transport(hub, 1);
  std::unique_ptr<transport> c = make_loopback_transport(hub, 2);
};

void send_word(transport& t, int to, channel c, std::uint64_t value, int& sent) {
  t.send(to, c, &value, sizeof value, memory_place::host, [&sent] { ++sent; });
  value = ~value;  // the buffer is the caller's again: the message keeps what was sent
}

TEST(LoopbackTransport, OneSendersMessagesOfAChannelArriveInOrder) {
  three_endpoints e;
  int sent = 0;
  for (std::uint64_t i = 0; i < 5; ++i) send_word(*e.a, 1, channel::data, 100 + i, sent);
  send_word(*e.a, 1, channel::record, 7, sent);
  EXPECT_TRUE(e.a->poll());
  EXPECT_EQ(sent, 6);
  EXPECT_TRUE(e.a->idle());

  std::uint64_t record = 0;
  std::vector<std::uint64_t> data(5, 0);
  std::vector<int> from;
  e.b->receive(0, channel::record, &record, sizeof record, memory_place::host,
               [&](int f, std::size_t) { from.push_back(f); });
  for (auto& word : data)
    e.b->receive(0, channel::data, &word, sizeof word, memory_place::host,
                 [&](int f, std::size_t) { from.push_back(f); });
  EXPECT_FALSE(e.b->idle());
  EXPECT_TRUE(e.b->poll());
  EXPECT_EQ(record, 7u);
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(data[i], 100 + i);
  EXPECT_EQ(from, std::vector<int>(6, 0));
  EXPECT_TRUE(e.b->idle());
  EXPECT_FALSE(e.b->poll());
}

TEST(LoopbackTransport, AnyProcessTakesTheEarliestAndLearnsItsSender) {
  three_endpoints e;
  int sent = 0;
  send_word(*e.c, 1, channel::header, 3, sent);
  send_word(*e.a, 1, channel::header, 1, sent);
  std::uint64_t first = 0, second = 0, third = 0;
  int first_from = -1, second_from = -1;
  e.b->receive(-1, channel::header, &first, sizeof first, memory_place::host,
               [&](int f, std::size_t) { first_from = f; });
  e.b->receive(-1, channel::header, &second, sizeof second, memory_place::host,
               [&](int f, std::size_t) { second_from = f; });
  e.b->receive(-1, channel::header, &third, sizeof third, memory_place::host,
               [](int, std::size_t) { FAIL() << "nothing was sent"; });
  EXPECT_TRUE(e.b->poll());
  EXPECT_EQ(first, 3u);
  EXPECT_EQ(first_from, 2);
  EXPECT_EQ(second, 1u);
  EXPECT_EQ(second_from, 0);
  EXPECT_TRUE(e.b->idle()) << "only a receive from any process is open";
}

TEST(LoopbackTransport, AReceiveWaitsForItsOwnSender) {
  three_endpoints e;
  int sent = 0;
  std::uint64_t word = 0;
  int from = -1;
  e.b->receive(2, channel::data, &word, sizeof word, memory_place::host,
               [&](int f, std::size_t) { from = f; });
  send_word(*e.a, 1, channel::data, 5, sent);
  EXPECT_FALSE(e.b->poll());
  send_word(*e.c, 1, channel::data, 9, sent);
  EXPECT_TRUE(e.b->poll());
  EXPECT_EQ(word, 9u);
  EXPECT_EQ(from, 2);
}

TEST(LoopbackTransport, AReceiveLearnsHowManyBytesCame) {
  three_endpoints e;
  const std::uint64_t words[3] = {4, 5, 6};
  e.a->send(1, channel::header, words, 2 * sizeof(std::uint64_t), memory_place::host, [] {});
  std::uint64_t room[3] = {};
  std::size_t came = 0;
  e.b->receive(-1, channel::header, room, sizeof room, memory_place::host,
               [&](int, std::size_t bytes) { came = bytes; });
  EXPECT_TRUE(e.b->poll());
  EXPECT_EQ(came, 2 * sizeof(std::uint64_t));
  EXPECT_EQ(room[1], 5u);
  EXPECT_EQ(room[2], 0u);
}

TEST(LoopbackTransport, AMessageLongerThanItsReceiveIsAnError) {
  three_endpoints e;
  const std::uint64_t words[2] = {1, 2};
  e.a->send(1, channel::record, words, sizeof words, memory_place::host, [] {});
  std::uint64_t one = 0;
  e.b->receive(0, channel::record, &one, sizeof one, memory_place::host, [](int, std::size_t) {});
  try {
    e.b->poll();
    FAIL() << "no error";
  } catch (const grma::error& err) {
    EXPECT_EQ(std::string(err.what()),
              "grma: network (loopback): a message of 16 bytes from process 0 for a receive of 8");
  }
}

}  // namespace
