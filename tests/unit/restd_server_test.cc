// shoalrestd's HTTP layer in process, with a fake Backend: routing errors, authentication,
// body and rate limits, over TCP and a unix socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "restd/http_server.h"

namespace shoal::restd {
namespace {

class FakeBackend : public Backend {
 public:
  Result<pb::Response> CallController(const Caller& caller, const pb::Request&) override {
    // Tokens other than "good" are refused, as the controller would.
    if (!caller.local && caller.jwt != "good")
      return Error(ErrorCode::kAuthFailure, "invalid token signature");
    pb::Response r;
    r.mutable_ping()->set_controller("fake");
    return r;
  }
  Result<pb::Response> CallControllerRaw(const Caller& c, const pb::Request& q) override {
    return CallController(c, q);
  }
  Result<pb::DbdResponse> CallDbd(const Caller&, const pb::DbdRequest&) override {
    return Error(ErrorCode::kUnavailable, "no dbd");
  }
  std::string ClusterName() const override { return "fake"; }
};

// Sends raw bytes to a unix socket or "127.0.0.1:port" and returns what comes back until EOF.
std::string Exchange(const std::string& address, const std::string& request) {
  int fd = -1;
  if (address.rfind("unix:", 0) == 0) {
    fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::string path = address.substr(5);
    std::memcpy(sa.sun_path, path.data(), path.size());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return "connect failed";
  } else {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + address.rfind(':') + 1)));
    sa.sin_addr.s_addr = htonl(0x7f000001);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return "connect failed";
  }
  size_t off = 0;
  while (off < request.size()) {
    ssize_t w = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (w <= 0) break;  // the server may answer (413) and close before reading it all
    off += static_cast<size_t>(w);
  }
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

int StatusOf(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0) return -1;
  return std::atoi(response.c_str() + 9);
}

std::string Get(const std::string& path, const std::string& headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + "\r\n";
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/restd-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    RegisterSlurmEndpoints(router_);
    RegisterOpenApiEndpoints(router_);
    ServerOptions opt;
    opt.listen = {"127.0.0.1:0", "unix:" + dir_ + "/s.sock"};
    opt.threads = 2;
    opt.limits.max_body_bytes = 1024;
    opt.limits.rate_per_user = 1;
    opt.limits.burst_per_user = 3;
    auto s = HttpServer::Start(opt, &router_, [] { return std::make_unique<FakeBackend>(); });
    ASSERT_TRUE(s) << s.error();
    server_ = std::move(*s);
    tcp_ = server_->addresses()[0];
    unix_ = server_->addresses()[1];
  }
  void TearDown() override {
    server_.reset();
    ::rmdir(dir_.c_str());
  }
  std::string dir_, tcp_, unix_;
  Router router_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(ServerTest, RoutingAuthAndLimits) {
  EXPECT_EQ(unix_, "unix:" + dir_ + "/s.sock");
  ASSERT_EQ(tcp_.rfind("127.0.0.1:", 0), 0u);
  // Local peer: no token needed.
  std::string r = Exchange(unix_, Get("/slurm/v0.0.44/ping/"));
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(r.find("\"hostname\":\"fake\""), std::string::npos);
  EXPECT_EQ(StatusOf(Exchange(unix_, Get("/slurm/v0.0.44/nope"))), 404);
  EXPECT_EQ(StatusOf(Exchange(unix_,
                              "PUT /slurm/v0.0.44/ping HTTP/1.1\r\nHost: x\r\n"
                              "Connection: close\r\nContent-Length: 0\r\n\r\n")),
            405);
  // Rate: the bucket held 3, one per second comes back.
  int limited = 0;
  for (int i = 0; i < 3; ++i)
    limited += StatusOf(Exchange(unix_, Get("/slurm/v0.0.44/ping/"))) == 429;
  EXPECT_GE(limited, 1);

  // TCP: a token is required, and the controller's refusal is a 401 with the error.
  r = Exchange(tcp_, Get("/slurm/v0.0.44/ping/"));
  EXPECT_EQ(StatusOf(r), 401) << r;
  EXPECT_NE(r.find("\"errors\":[{"), std::string::npos);
  EXPECT_NE(r.find("\"pings\":[]"), std::string::npos);  // the schema's required field
  r = Exchange(tcp_, Get("/slurm/v0.0.44/ping/", "X-SLURM-USER-TOKEN: bad\r\n"));
  EXPECT_EQ(StatusOf(r), 401) << r;
  EXPECT_NE(r.find("invalid token signature"), std::string::npos);
  r = Exchange(tcp_, Get("/slurm/v0.0.44/ping/", "Authorization: Bearer good\r\n"));
  EXPECT_EQ(StatusOf(r), 200) << r;
  // The OpenAPI document needs no token.
  EXPECT_EQ(StatusOf(Exchange(tcp_, Get("/openapi/v3"))), 200);
}

TEST_F(ServerTest, BodyLimits) {
  std::string big(4096, 'x');
  std::string r = Exchange(unix_,
                           "POST /slurm/v0.0.44/job/submit HTTP/1.1\r\nHost: x\r\n"
                           "Connection: close\r\nContent-Length: 4096\r\n\r\n" +
                               big);
  EXPECT_EQ(StatusOf(r), 413) << r;
  // Chunked, no length declared: read up to the limit, then refused.
  std::string chunked =
      "POST /slurm/v0.0.44/job/submit HTTP/1.1\r\nHost: x\r\n"
      "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) chunked += "400\r\n" + std::string(1024, 'y') + "\r\n";
  chunked += "0\r\n\r\n";
  r = Exchange(unix_, chunked);
  EXPECT_EQ(StatusOf(r), 413) << r;
  r = Exchange(unix_,
               "POST /slurm/v0.0.44/job/submit HTTP/1.1\r\nHost: x\r\n"
               "Connection: close\r\nContent-Length: 9\r\n\r\n{\"job\": [");
  EXPECT_EQ(StatusOf(r), 400) << r;
}

}  // namespace
}  // namespace shoal::restd
