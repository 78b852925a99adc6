#include "common/rpc.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <thread>

namespace shoal {
namespace {

TEST(Rpc, FrameRoundTrip) {
  pb::Frame f;
  f.set_id(42);
  f.set_body("hello");
  std::string wire = EncodeFrame(f);
  ASSERT_EQ(wire.size(), 4 + f.ByteSizeLong());
  EXPECT_EQ(static_cast<unsigned char>(wire[0]), f.ByteSizeLong());
  auto back = DecodeFrameBody(std::string_view(wire).substr(4));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id(), 42u);
  EXPECT_EQ(back->body(), "hello");
}

// A large answer goes out as a separate head and body; together they are the frame itself.
TEST(Rpc, ResponseFrameHeadPlusBodyIsTheFrame) {
  for (size_t size : {size_t{5}, size_t{127}, size_t{128}, size_t{300000}}) {
    for (uint64_t id : {uint64_t{1}, uint64_t{300}, uint64_t{1} << 40}) {
      pb::Frame f;
      f.set_id(id);
      f.set_is_response(true);
      f.set_body(std::string(size, 'y'));
      EXPECT_EQ(EncodeResponseFrameHead(id, size) + f.body(), EncodeFrame(f))
          << "body " << size << " id " << id;
    }
  }
}

TEST(Rpc, GarbageIsAnErrorNotACrash) { EXPECT_FALSE(DecodeFrameBody("\xff\xff\xff\xff\xff")); }

// The client cuts a large answer out of its frame in place; any other layout goes to the parser.
TEST(Rpc, TrailingResponseBodyTakenInPlace) {
  pb::Frame f;
  f.set_id(7);
  f.set_is_response(true);
  f.set_body(std::string(300000, 'x') + "end");
  std::string frame = f.SerializeAsString();
  ASSERT_EQ(TakeTrailingResponseBody(frame, 7), std::optional<bool>(true));
  EXPECT_EQ(frame, f.body());

  frame = f.SerializeAsString();  // another request's answer: not ours
  EXPECT_EQ(TakeTrailingResponseBody(frame, 8), std::optional<bool>(false));

  f.set_is_response(false);  // a request is never our answer
  frame = f.SerializeAsString();
  EXPECT_EQ(TakeTrailingResponseBody(frame, 7), std::optional<bool>(false));

  f.set_is_response(true);  // a credential before the body is skipped
  f.mutable_cred()->set_uid(5);
  f.set_body("abc");
  frame = f.SerializeAsString();
  ASSERT_EQ(TakeTrailingResponseBody(frame, 7), std::optional<bool>(true));
  EXPECT_EQ(frame, "abc");

  pb::Frame empty;  // no body field at all (an empty answer): left to the parser
  empty.set_id(7);
  empty.set_is_response(true);
  frame = empty.SerializeAsString();
  EXPECT_EQ(TakeTrailingResponseBody(frame, 7), std::nullopt);

  frame = f.SerializeAsString() + "\x08\x01";  // a field after the body: left to the parser
  EXPECT_EQ(TakeTrailingResponseBody(frame, 7), std::nullopt);
  frame = f.SerializeAsString();
  frame.pop_back();  // truncated
  EXPECT_EQ(TakeTrailingResponseBody(frame, 7), std::nullopt);
}

// A server on loopback answers a blocking client; garbage from another client closes only that
// connection.
TEST(Rpc, ClientServerAndGarbage) {
  asio::io_context io;
  auto server =
      RpcServer::Listen(io, "127.0.0.1:0",
                        [](const RpcConnectionPtr&, const pb::Credential& cred,
                           const std::string& body, Responder respond) {
                          pb::Request req;
                          pb::Response resp;
                          if (!req.ParseFromString(body) || !req.has_ping()) {
                            respond(ErrorResponse(ErrorCode::kProtocol, "bad"));
                            return;
                          }
                          resp.mutable_ping()->set_controller("uid" + std::to_string(cred.uid()));
                          respond(resp);
                        });
  ASSERT_TRUE(server) << server.error();
  uint16_t port = (*server)->port();
  std::thread loop([&] { io.run(); });

  // Garbage first.
  {
    auto c = RpcClient::Connect("127.0.0.1:" + std::to_string(port), 2000);
    ASSERT_TRUE(c);
    const char junk[] = "\x05\x00\x00\x00GARBAGE-GARBAGE";
    ASSERT_GT(::send(c->fd(), junk, sizeof(junk), MSG_NOSIGNAL), 0);
  }
  auto c = RpcClient::Connect("127.0.0.1:" + std::to_string(port), 2000);
  ASSERT_TRUE(c);
  pb::Request req;
  req.mutable_ping();
  pb::Credential cred;
  cred.set_uid(77);
  auto r = c->Call(req, cred, 2000);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->ping().controller(), "uid77");
  io.stop();
  loop.join();
}

// Answers over and under the size that is sent as head and body apart arrive whole and in order.
TEST(Rpc, LargeAndSmallAnswersArriveWhole) {
  asio::io_context io;
  auto server = RpcServer::Listen(
      io, "127.0.0.1:0",
      [](const RpcConnectionPtr&, const pb::Credential&, const std::string& body,
         Responder respond) {
        pb::Request req;
        req.ParseFromString(body);
        pb::Response resp;
        size_t k = req.job_query().names_size() ? req.job_query().names(0).size() : 0;
        resp.set_error(std::string(k * 1000, 'e') + "!");
        respond(resp);
      });
  ASSERT_TRUE(server) << server.error();
  std::thread loop([&] { io.run(); });
  auto c = RpcClient::Connect("127.0.0.1:" + std::to_string((*server)->port()), 2000);
  ASSERT_TRUE(c);
  for (size_t k : {size_t{1}, size_t{700}, size_t{3}, size_t{2000}, size_t{65}, size_t{64}}) {
    pb::Request req;
    req.mutable_job_query()->add_names(std::string(k, 'n'));
    auto r = c->Call(req, pb::Credential(), 5000);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->error().size(), k * 1000 + 1);
    EXPECT_EQ(r->error().back(), '!');
  }
  io.stop();
  loop.join();
}

// A streamed answer: parts sent from inside the handler, some larger than the socket takes at
// once, then the final answer; the client gets every part whole and in order, then the last.
TEST(Rpc, StreamedPartsArriveWholeAndInOrder) {
  asio::io_context io;
  const std::vector<size_t> sizes = {10, 300000, 1, 40000, 2000000, 7};
  bool could_stream = false;
  auto server = RpcServer::Listen(
      io, "127.0.0.1:0",
      [&](const RpcConnectionPtr&, const pb::Credential&, const std::string&, Responder respond) {
        could_stream = respond.can_stream();
        for (size_t i = 0; i + 1 < sizes.size(); ++i) {
          pb::Response part;
          part.set_error(std::string(sizes[i], static_cast<char>('a' + i)));
          respond.Part(part.SerializeAsString());
        }
        pb::Response last;
        last.set_error(std::string(sizes.back(), 'z'));
        respond(last);
      });
  ASSERT_TRUE(server) << server.error();
  std::thread loop([&] { io.run(); });
  auto c = RpcClient::Connect("127.0.0.1:" + std::to_string((*server)->port()), 2000);
  ASSERT_TRUE(c);
  auto id = c->SendRaw(pb::Request().SerializeAsString(), pb::Credential(), 5000);
  ASSERT_TRUE(id) << id.error();
  std::vector<std::string> got;
  Status s = c->ReceiveParts(*id, 5000, [&](std::string& body) -> Result<bool> {
    pb::Response r;
    if (!r.ParseFromString(body)) return Error(ErrorCode::kProtocol, "malformed");
    got.push_back(r.error());
    return got.size() < sizes.size();
  });
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(got.size(), sizes.size());
  for (size_t i = 0; i + 1 < sizes.size(); ++i)
    EXPECT_EQ(got[i], std::string(sizes[i], static_cast<char>('a' + i))) << "part " << i;
  EXPECT_EQ(got.back(), std::string(sizes.back(), 'z'));
  // The connection carries on: a plain call afterwards is answered.
  auto r = c->Call(pb::Request(), pb::Credential(), 5000);
  EXPECT_TRUE(r) << r.error();
  io.stop();
  loop.join();
  EXPECT_TRUE(could_stream);  // written on the loop's thread: read after the join
}

// An error from the caller's part function ends the receive with that error.
TEST(Rpc, StreamedPartErrorStopsTheReceive) {
  asio::io_context io;
  auto server = RpcServer::Listen(
      io, "127.0.0.1:0",
      [&](const RpcConnectionPtr&, const pb::Credential&, const std::string&, Responder respond) {
        respond.Part(pb::Response().SerializeAsString());
        respond(pb::Response());
      });
  ASSERT_TRUE(server) << server.error();
  std::thread loop([&] { io.run(); });
  auto c = RpcClient::Connect("127.0.0.1:" + std::to_string((*server)->port()), 2000);
  ASSERT_TRUE(c);
  auto id = c->SendRaw(pb::Request().SerializeAsString(), pb::Credential(), 5000);
  ASSERT_TRUE(id);
  int calls = 0;
  Status s = c->ReceiveParts(*id, 5000, [&](std::string&) -> Result<bool> {
    ++calls;
    return Error(ErrorCode::kProtocol, "bad part");
  });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "bad part");
  EXPECT_EQ(calls, 1);
  io.stop();
  loop.join();
}

TEST(Rpc, ConnectFailureIsReported) {
  auto c = RpcClient::Connect("127.0.0.1:1", 500);
  EXPECT_FALSE(c);
  EXPECT_FALSE(RpcClient::Connect("no-port", 500));
}

}  // namespace
}  // namespace shoal
