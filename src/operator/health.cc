#include "operator/health.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/openmetrics.h"

namespace shoal::op {

HttpResponse HealthAnswer(const HttpRequest& request, bool ready, const std::string* metrics) {
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse r = HttpError(405);
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  HttpResponse r;
  if (request.path == "/livez" || request.path == "/healthz") {
    r.body = "ok\n";
  } else if (request.path == "/readyz") {
    r.status = ready ? 200 : 503;
    r.body = ready ? "ok\n" : "not ready\n";
  } else if (request.path == "/metrics" && metrics != nullptr) {
    r.content_type = kOpenMetricsContentType;
    r.body = *metrics;
  } else {
    r = HttpError(404);
  }
  return r;
}

HealthServer::~HealthServer() { Stop(); }

Status HealthServer::Start(int port, std::function<bool()> ready,
                           std::function<std::string()> metrics) {
  ready_ = std::move(ready);
  metrics_ = std::move(metrics);
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Error(ErrorCode::kIoError, std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 16) != 0) {
    std::string err = std::strerror(errno);
    close(fd_);
    fd_ = -1;
    return Error(ErrorCode::kIoError, "health port " + std::to_string(port) + ": " + err);
  }
  socklen_t len = sizeof addr;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void HealthServer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void HealthServer::Loop() {
  while (!stop_.load()) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    // One short request per connection, read within 2 s.
    std::string head;
    char buf[1024];
    while (head.size() < kMaxHttpHeadBytes && head.find("\r\n\r\n") == std::string::npos &&
           head.find("\n\n") == std::string::npos) {
      pollfd q{c, POLLIN, 0};
      if (poll(&q, 1, 2000) <= 0) break;
      ssize_t n = recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    auto req = ParseHttpHead(head);
    std::string text;  // the metrics document, when asked for
    std::string out = req ? FormatHttpResponse(HealthAnswer(*req, ready_ && ready_(),
                                                            metrics_ && req->path == "/metrics"
                                                                ? &(text = metrics_())
                                                                : nullptr),
                                               req->method == "HEAD")
                          : FormatHttpResponse(HttpError(400), false);
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = send(c, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(c);
  }
}

}  // namespace shoal::op
