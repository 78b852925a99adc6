// RPC round trip over loopback: the blocking RpcClient the commands use against an asio
// RpcServer on its own thread (what every sbatch/squeue pays once), over TCP and over a unix
// socket; plus signing and verifying a request credential (HMAC-SHA256), which every request
// carries.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <asio.hpp>
#include <memory>
#include <string>
#include <thread>

#include "common/auth.h"
#include "common/rpc.h"

namespace {

namespace pb = shoal::pb;

struct PingServer {
  asio::io_context io;
  std::unique_ptr<shoal::RpcServer> server;
  std::thread loop;
  std::string address;

  bool Start(const std::string& listen) {
    auto s = shoal::RpcServer::Listen(
        io, listen,
        [](const shoal::RpcConnectionPtr&, const pb::Credential&, const std::string& body,
           shoal::Responder respond) {
          pb::Request req;
          pb::Response resp;
          if (!req.ParseFromString(body)) {
            respond(shoal::ErrorResponse(shoal::ErrorCode::kProtocol, "bad request"));
            return;
          }
          resp.mutable_ping()->set_controller("bench");
          respond(resp);
        });
    if (!s) return false;
    server = std::move(*s);
    address =
        listen.rfind("unix:", 0) == 0 ? listen : "127.0.0.1:" + std::to_string(server->port());
    loop = std::thread([this] {
      auto guard = asio::make_work_guard(io);
      io.run();
    });
    return true;
  }
  ~PingServer() {
    io.stop();
    if (loop.joinable()) loop.join();
  }
};

void RoundTrip(benchmark::State& state, const std::string& listen) {
  PingServer srv;
  if (!srv.Start(listen)) {
    state.SkipWithError("listen failed");
    return;
  }
  auto client = shoal::RpcClient::Connect(srv.address, 2000);
  if (!client) {
    state.SkipWithError("connect failed");
    return;
  }
  pb::Request req;
  req.mutable_ping();
  pb::Credential cred;
  cred.set_uid(0);
  for (auto _ : state) {
    auto r = client->Call(req, cred, 2000);
    if (!r) {
      state.SkipWithError("call failed");
      break;
    }
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_RpcRoundTripTcp(benchmark::State& state) { RoundTrip(state, "127.0.0.1:0"); }
BENCHMARK(BM_RpcRoundTripTcp)->UseRealTime();

void BM_RpcRoundTripUnix(benchmark::State& state) {
  RoundTrip(state, "unix:/tmp/shoal-rpc-bench-" + std::to_string(getpid()) + ".sock");
  ::unlink(("/tmp/shoal-rpc-bench-" + std::to_string(getpid()) + ".sock").c_str());
}
BENCHMARK(BM_RpcRoundTripUnix)->UseRealTime();

// Connect + one call + close: what one command invocation does on the wire.
void BM_RpcConnectAndCall(benchmark::State& state) {
  PingServer srv;
  if (!srv.Start("127.0.0.1:0")) {
    state.SkipWithError("listen failed");
    return;
  }
  pb::Request req;
  req.mutable_ping();
  pb::Credential cred;
  for (auto _ : state) {
    auto client = shoal::RpcClient::Connect(srv.address, 2000);
    if (!client) {
      state.SkipWithError("connect failed");
      break;
    }
    auto r = client->Call(req, cred, 2000);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_RpcConnectAndCall)->UseRealTime();

void BM_CredentialSignVerify(benchmark::State& state) {
  auto key = shoal::ClusterKey::FromBytes(std::string(32, 'k'));
  std::string body(static_cast<size_t>(state.range(0)), 'b');
  int64_t now = 1795323468;
  for (auto _ : state) {
    pb::Credential cred = key.Sign(0, 0, body, now);
    auto st = key.Verify(cred, body, now);
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_CredentialSignVerify)->Arg(256)->Arg(4096);

}  // namespace

BENCHMARK_MAIN();
