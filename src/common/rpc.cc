// Framing, the blocking command-side client, and the asio daemon-side connections.
#include "common/rpc.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>

#include "common/name_service.h"
#include "common/prefault.h"
#include "common/varint.h"

namespace shoal {
namespace {

void PutLength(std::string& out, uint32_t n) {
  out[0] = static_cast<char>(n & 0xff);
  out[1] = static_cast<char>((n >> 8) & 0xff);
  out[2] = static_cast<char>((n >> 16) & 0xff);
  out[3] = static_cast<char>((n >> 24) & 0xff);
}

uint32_t GetLength(const unsigned char* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

// Splits "host:port" / "unix:/path". IPv6 literals may be bracketed: "[::1]:6817".
struct Address {
  bool is_unix = false;
  std::string host;
  std::string port;
  std::string path;
};

Result<Address> ParseAddress(const std::string& address) {
  Address a;
  if (address.rfind("unix:", 0) == 0) {
    a.is_unix = true;
    a.path = address.substr(5);
    if (a.path.empty() || a.path.size() >= sizeof(sockaddr_un::sun_path))
      return InvalidArgument("bad unix socket path '" + a.path + "'");
    return a;
  }
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size())
    return InvalidArgument("bad address '" + address + "' (expected host:port)");
  a.host = address.substr(0, colon);
  a.port = address.substr(colon + 1);
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']')
    a.host = a.host.substr(1, a.host.size() - 2);
  return a;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits for fd to become readable/writable before `deadline_ms`.
Status WaitFd(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    int64_t left = deadline_ms - NowMs();
    if (left <= 0) return Error(ErrorCode::kUnavailable, "timed out");
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r > 0) return Status::Ok();
    if (r == 0) return Error(ErrorCode::kUnavailable, "timed out");
    if (errno != EINTR) return Error(ErrorCode::kIoError, std::strerror(errno));
  }
}

Status WriteAll(int fd, const char* data, size_t n, int64_t deadline_ms) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w > 0) {
      data += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Status s = WaitFd(fd, POLLOUT, deadline_ms); !s.ok()) return s;
      continue;
    }
    return Error(ErrorCode::kIoError, std::string("send: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Status ReadAll(int fd, char* data, size_t n, int64_t deadline_ms) {
  while (n > 0) {
    ssize_t r = ::recv(fd, data, n, 0);
    if (r > 0) {
      data += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return Error(ErrorCode::kIoError, "connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Status s = WaitFd(fd, POLLIN, deadline_ms); !s.ok()) return s;
      continue;
    }
    return Error(ErrorCode::kIoError, std::string("recv: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Result<int> ConnectBlocking(const Address& a, int timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  int fd = -1;
  int rc = -1;
  if (a.is_unix) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return Error(ErrorCode::kIoError, std::strerror(errno));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, a.path.data(), a.path.size());
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  } else {
    // Numeric IPv4 is the common case (loopback, NodeAddr): skip the resolver.
    sockaddr_storage ss{};
    socklen_t len = 0;
    sockaddr_in* sin = reinterpret_cast<sockaddr_in*>(&ss);
    std::string host = a.host == "localhost" || a.host.empty() ? "127.0.0.1" : a.host;
    char* end = nullptr;
    long port = std::strtol(a.port.c_str(), &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535)
      return InvalidArgument("bad port '" + a.port + "'");
    if (::inet_pton(AF_INET, host.c_str(), &sin->sin_addr) == 1) {
      sin->sin_family = AF_INET;
      sin->sin_port = htons(static_cast<uint16_t>(port));
      len = sizeof(sockaddr_in);
    } else {
      addrinfo hints{};
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      int e = ::getaddrinfo(host.c_str(), a.port.c_str(), &hints, &res);
      if (e != 0 || !res) {
        // A statically linked command asks getent for names beyond files and DNS.
        if (auto addr = HostAddressFallback(host)) {
          hints.ai_flags = AI_NUMERICHOST;
          if (::getaddrinfo(addr->c_str(), a.port.c_str(), &hints, &res) == 0 && res) e = 0;
        }
      }
      if (e != 0 || !res)
        return Error(ErrorCode::kUnavailable, "cannot resolve " + host + ": " + gai_strerror(e));
      std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
      len = res->ai_addrlen;
      ::freeaddrinfo(res);
    }
    fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return Error(ErrorCode::kIoError, std::strerror(errno));
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&ss), len);
  }
  if (rc < 0 && errno == EINPROGRESS) {
    Status s = WaitFd(fd, POLLOUT, deadline);
    int err = 0;
    socklen_t elen = sizeof(err);
    if (s.ok()) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
    if (!s.ok() || err != 0) {
      ::close(fd);
      return Error(ErrorCode::kUnavailable,
                   s.ok() ? std::strerror(err) : std::string("connect timed out"));
    }
  } else if (rc < 0) {
    int err = errno;
    ::close(fd);
    return Error(ErrorCode::kUnavailable, std::strerror(err));
  }
  return fd;
}

}  // namespace

std::string EncodeFrame(const pb::Frame& frame) {
  size_t n = frame.ByteSizeLong();
  std::string out(4 + n, '\0');
  PutLength(out, static_cast<uint32_t>(n));
  frame.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + 4));
  return out;
}

std::string EncodeResponseFrameHead(uint64_t id, size_t body_size) {
  pb::Frame head;
  head.set_id(id);
  head.set_is_response(true);
  std::string out(4, '\0');
  head.AppendToString(&out);
  // Frame.body = 4, length-delimited, written last as protobuf writes fields in number order
  // (Frame.cred = 3 is not set on responses).
  AppendVarint(out, (4u << 3) | 2);
  AppendVarint(out, body_size);
  PutLength(out, static_cast<uint32_t>(out.size() - 4 + body_size));
  return out;
}

std::optional<bool> TakeTrailingResponseBody(std::string& frame, uint64_t id) {
  // Frame: id = 1 (varint), is_response = 2 (varint), cred = 3, body = 4 (length-delimited).
  uint64_t frame_id = 0;
  bool is_response = false;
  size_t pos = 0;
  while (pos < frame.size()) {
    uint64_t tag = 0, v = 0;
    if (!ReadVarint(frame, pos, tag)) return std::nullopt;
    if ((tag & 7) == 0) {
      if (!ReadVarint(frame, pos, v)) return std::nullopt;
      if (tag >> 3 == 1) frame_id = v;
      if (tag >> 3 == 2) is_response = v != 0;
      continue;
    }
    if ((tag & 7) != 2 || !ReadVarint(frame, pos, v) || v > frame.size() - pos) return std::nullopt;
    if (tag >> 3 != 4 || pos + v != frame.size()) {
      pos += v;  // a credential, or a body that is not last: leave it to the parser
      if (tag >> 3 == 4) return std::nullopt;
      continue;
    }
    if (!is_response || frame_id != id) return false;
    frame.erase(0, pos);
    return true;
  }
  return std::nullopt;  // no body: an empty answer, for the parser
}

Result<pb::Frame> DecodeFrameBody(std::string_view bytes) {
  pb::Frame frame;
  if (!frame.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Error(ErrorCode::kProtocol, "malformed frame");
  return frame;
}

pb::Response ErrorResponse(ErrorCode code, std::string message) {
  pb::Response r;
  r.set_rc(static_cast<int32_t>(code));
  r.set_error(std::move(message));
  return r;
}

// ---------------------------------------------------------------------------------------------
// RpcClient
// ---------------------------------------------------------------------------------------------

RpcClient::~RpcClient() {
  if (fd_ >= 0) ::close(fd_);
}

RpcClient::RpcClient(RpcClient&& other) noexcept : fd_(other.fd_), next_id_(other.next_id_) {
  other.fd_ = -1;
}

RpcClient& RpcClient::operator=(RpcClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    next_id_ = other.next_id_;
    other.fd_ = -1;
  }
  return *this;
}

Result<RpcClient> RpcClient::Connect(const std::string& address, int timeout_ms) {
  auto a = ParseAddress(address);
  if (!a) return a.status();
  auto fd = ConnectBlocking(*a, timeout_ms);
  if (!fd) return fd.status();
  RpcClient c;
  c.fd_ = *fd;
  return c;
}

Result<pb::Response> RpcClient::Call(const pb::Request& request, const pb::Credential& cred,
                                     int timeout_ms) {
  return CallRaw(request.SerializeAsString(), cred, timeout_ms);
}

Result<pb::Response> RpcClient::CallRaw(const std::string& body, const pb::Credential& cred,
                                        int timeout_ms) {
  auto id = SendRaw(body, cred, timeout_ms);
  if (!id) return id.status();
  return Receive(*id, timeout_ms);
}

Result<uint64_t> RpcClient::SendRaw(const std::string& body, const pb::Credential& cred,
                                    int timeout_ms) {
  if (fd_ < 0) return Error(ErrorCode::kUnavailable, "not connected");
  int64_t deadline = NowMs() + timeout_ms;
  pb::Frame frame;
  uint64_t id = next_id_++;
  frame.set_id(id);
  *frame.mutable_cred() = cred;
  frame.set_body(body);
  std::string wire = EncodeFrame(frame);
  if (Status s = WriteAll(fd_, wire.data(), wire.size(), deadline); !s.ok()) return s;
  return id;
}

bool RpcClient::Readable(int timeout_ms) {
  if (fd_ < 0) return true;
  pollfd p{fd_, POLLIN, 0};
  int r = ::poll(&p, 1, timeout_ms);
  return r != 0;
}

void Responder::Raw(std::string response_bytes) const {
  if (raw_) {
    raw_(std::move(response_bytes));
    return;
  }
  pb::Response response;
  if (!response.ParseFromString(response_bytes)) {
    response.Clear();
    response.set_rc(static_cast<int32_t>(ErrorCode::kProtocol));
    response.set_error("malformed response");
  }
  (*this)(response);
}

Result<pb::Response> RpcClient::Receive(uint64_t id, int timeout_ms) {
  auto body = ReceiveBody(id, timeout_ms);
  if (!body) return body.status();
  pb::Response response;
  if (!response.ParseFromString(*body)) return Error(ErrorCode::kProtocol, "malformed response");
  return response;
}

Status RpcClient::ReceiveParts(uint64_t id, int timeout_ms,
                               const std::function<Result<bool>(std::string& body)>& part) {
  if (fd_ < 0) return Error(ErrorCode::kUnavailable, "not connected");
  int64_t deadline = NowMs() + timeout_ms;
  std::string body;  // one buffer for every part: its pages are faulted in once
  for (;;) {
    if (Status s = ReceiveBodyInto(id, deadline, body); !s.ok()) return s;
    Result<bool> more = part(body);
    if (!more) return more.status();
    if (!*more) return Status::Ok();
  }
}

Result<std::string> RpcClient::ReceiveBody(uint64_t id, int timeout_ms) {
  std::string body;
  if (Status s = ReceiveBodyInto(id, NowMs() + timeout_ms, body); !s.ok()) return s;
  return body;
}

Status RpcClient::ReceiveBodyInto(uint64_t id, int64_t deadline, std::string& buf) {
  if (fd_ < 0) return Error(ErrorCode::kUnavailable, "not connected");
  for (;;) {
    unsigned char hdr[4];
    if (Status s = ReadAll(fd_, reinterpret_cast<char*>(hdr), 4, deadline); !s.ok()) return s;
    uint32_t n = GetLength(hdr);
    if (n > kMaxFrameBytes) return Error(ErrorCode::kProtocol, "oversized frame");
    if (buf.capacity() < n) {
      buf.clear();
      buf.reserve(n);
      PrefaultForWrite(buf.data(), n);
    }
    buf.resize(n);
    if (Status s = ReadAll(fd_, buf.data(), n, deadline); !s.ok()) return s;
    // A large answer (squeue over a full queue) is not copied out of the frame: fresh memory
    // costs a page fault per 4 KB, more than the copy itself.
    if (std::optional<bool> ours = TakeTrailingResponseBody(buf, id)) {
      if (*ours) return Status::Ok();
      continue;
    }
    auto reply = DecodeFrameBody(buf);
    if (!reply) return reply.status();
    if (!reply->is_response() || reply->id() != id) continue;  // not ours: ignore
    buf = std::move(*reply->mutable_body());
    return Status::Ok();
  }
}

// ---------------------------------------------------------------------------------------------
// asio connections
// ---------------------------------------------------------------------------------------------

namespace {

template <typename Socket>
class AsioConnection final : public RpcConnection {
 public:
  AsioConnection(Socket socket, RequestHandler handler, HttpHandler http = nullptr)
      : socket_(std::move(socket)), handler_(std::move(handler)), http_(std::move(http)) {}

  void Start(int64_t peer_uid, int64_t peer_gid, std::string peer) {
    peer_uid_ = peer_uid;
    peer_gid_ = peer_gid;
    peer_ = std::move(peer);
    ReadHeader();
  }

  void Send(const pb::Request& request, const pb::Credential& cred,
            ResponseCallback done) override {
    if (closed_) {
      if (done) done(Error(ErrorCode::kUnavailable, "connection closed"));
      return;
    }
    pb::Frame frame;
    uint64_t id = next_id_++;
    frame.set_id(id);
    *frame.mutable_cred() = cred;
    frame.set_body(request.SerializeAsString());
    if (done) pending_.emplace(id, std::move(done));
    Write(EncodeFrame(frame));
  }

  void Post(const pb::Request& request) override {
    if (closed_) return;
    pb::Frame frame;
    frame.set_body(request.SerializeAsString());
    Write(EncodeFrame(frame));
  }

  size_t pending_write_bytes() const override { return pending_bytes_; }

  void Close() override {
    if (closed_) return;
    closed_ = true;
    asio::error_code ec;
    socket_.close(ec);
    if (http_timer_) http_timer_->cancel();
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, cb] : pending) cb(Error(ErrorCode::kUnavailable, "connection closed"));
    auto on_close = std::move(on_close_);
    on_close_.clear();
    for (auto& fn : on_close) fn();
  }

  bool closed() const override { return closed_; }
  int64_t peer_uid() const override { return peer_uid_; }
  int64_t peer_gid() const override { return peer_gid_; }
  std::string peer() const override { return peer_; }
  void OnClose(std::function<void()> fn) override {
    if (closed_) {
      fn();
      return;
    }
    on_close_.push_back(std::move(fn));
  }

 private:
  void ReadHeader() {
    auto self = std::static_pointer_cast<AsioConnection>(shared_from_this());
    asio::async_read(socket_, asio::buffer(header_, 4), [self](const asio::error_code& ec, size_t) {
      if (ec) return self->Close();
      uint32_t n = GetLength(self->header_);
      if (n > kMaxFrameBytes) {
        // An HTTP request line read as a length is far over the cap: probes and scrapers.
        if (self->http_ && !self->framed_ && LooksLikeHttp(self->header_)) return self->StartHttp();
        return self->Close();
      }
      self->framed_ = true;
      self->body_.resize(n);
      self->ReadBody();
    });
  }

  void ReadBody() {
    auto self = std::static_pointer_cast<AsioConnection>(shared_from_this());
    asio::async_read(socket_, asio::buffer(body_.data(), body_.size()),
                     [self](const asio::error_code& ec, size_t) {
                       if (ec) return self->Close();
                       self->Dispatch();
                       if (!self->closed_) self->ReadHeader();
                     });
  }

  // --- HTTP on the RPC port: one request, one answer, then close.
  void StartHttp() {
    http_in_.assign(reinterpret_cast<const char*>(header_), 4);
    http_timer_ = std::make_unique<asio::steady_timer>(socket_.get_executor());
    http_timer_->expires_after(std::chrono::seconds(10));
    std::weak_ptr<AsioConnection> weak =
        std::static_pointer_cast<AsioConnection>(shared_from_this());
    http_timer_->async_wait([weak](const asio::error_code& ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->Close();  // a slow or silent client
    });
    ReadHttpHead();
  }

  void ReadHttpHead() {
    auto self = std::static_pointer_cast<AsioConnection>(shared_from_this());
    http_chunk_.resize(1024);
    socket_.async_read_some(asio::buffer(http_chunk_.data(), http_chunk_.size()),
                            [self](const asio::error_code& ec, size_t n) {
                              if (ec || self->closed_) return self->Close();
                              self->http_in_.append(self->http_chunk_.data(), n);
                              // The head ends at the first blank line (CRLF, or a bare LF as
                              // lenient servers allow).
                              size_t end = self->http_in_.find("\r\n\r\n");
                              if (end != std::string::npos) {
                                end += 4;
                              } else if (end = self->http_in_.find("\n\n");
                                         end != std::string::npos) {
                                end += 2;
                              }
                              if (end != std::string::npos && end <= kMaxHttpHeadBytes) {
                                self->http_in_.resize(end);
                                return self->AnswerHttp();
                              }
                              if (self->http_in_.size() >= kMaxHttpHeadBytes)
                                return self->WriteHttp(FormatHttpResponse(HttpError(431), false));
                              self->ReadHttpHead();
                            });
  }

  void AnswerHttp() {
    auto req = ParseHttpHead(http_in_);
    http_in_.clear();
    if (!req) return WriteHttp(FormatHttpResponse(HttpError(400), false));
    bool head = req->method == "HEAD";
    if (req->method != "GET" && !head) {
      HttpResponse r = HttpError(405);
      r.headers.emplace_back("Allow", "GET, HEAD");
      return WriteHttp(FormatHttpResponse(r, false));
    }
    WriteHttp(FormatHttpResponse(http_(*req), head));
  }

  void WriteHttp(std::string bytes) {
    http_out_ = std::move(bytes);
    auto self = std::static_pointer_cast<AsioConnection>(shared_from_this());
    asio::async_write(socket_, asio::buffer(http_out_), [self](const asio::error_code&, size_t) {
      asio::error_code ignored;
      self->socket_.shutdown(asio::socket_base::shutdown_send, ignored);
      self->Close();
    });
  }

  void Dispatch() {
    pb::Frame frame;
    if (!frame.ParseFromArray(body_.data(), static_cast<int>(body_.size()))) {
      // Garbage on the socket: drop this connection only; the daemon carries on.
      return Close();
    }
    if (frame.is_response()) {
      auto it = pending_.find(frame.id());
      if (it == pending_.end()) return;
      auto cb = std::move(it->second);
      pending_.erase(it);
      pb::Response response;
      if (!response.ParseFromString(frame.body())) {
        cb(Error(ErrorCode::kProtocol, "malformed response"));
      } else {
        cb(std::move(response));
      }
      return;
    }
    uint64_t id = frame.id();
    std::weak_ptr<AsioConnection> weak =
        std::static_pointer_cast<AsioConnection>(shared_from_this());
    auto send = [weak, id](std::string body) {
      auto self = weak.lock();
      if (!self || self->closed_ || id == 0) return;
      // A large answer (a listing of thousands of jobs) is not copied into its frame: the
      // frame's head goes out first, then the body as it is. A copy of megabytes costs a page
      // fault per 4 KB of fresh memory, more than the second write.
      constexpr size_t kSendBodyApart = 64 * 1024;
      if (body.size() >= kSendBodyApart) {
        self->Write(EncodeResponseFrameHead(id, body.size()));
        self->Write(std::move(body));
        return;
      }
      pb::Frame out;
      out.set_id(id);
      out.set_is_response(true);
      out.set_body(std::move(body));
      self->Write(EncodeFrame(out));
    };
    // A streamed answer's parts leave as they are made: the client decodes the first while the
    // rest are encoded.
    auto part = [weak, id](std::string body) {
      auto self = weak.lock();
      if (!self || self->closed_ || id == 0) return;
      std::string head = EncodeResponseFrameHead(id, body.size());
      self->WriteNow(std::move(head), std::move(body));
    };
    Responder respond([send](const pb::Response& response) { send(response.SerializeAsString()); },
                      send, part);
    handler_(shared_from_this(), frame.cred(), frame.body(), std::move(respond));
  }

  void Write(std::string bytes) {
    bool idle = writes_.empty();
    pending_bytes_ += bytes.size();
    writes_.push_back(std::move(bytes));
    if (idle) WriteNext();
  }

  // head + body, written to the socket at once when nothing is queued before them (the caller
  // may hold the io_context thread for a while: queued writes only move when it returns). What
  // the socket does not take now is queued; nothing blocks.
  void WriteNow(std::string head, std::string body) {
    if (writes_.empty()) {
      iovec iov[2] = {{head.data(), head.size()}, {body.data(), body.size()}};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = 2;
      ssize_t n;
      do {
        n = ::sendmsg(socket_.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      } while (n < 0 && errno == EINTR);
      size_t sent = n > 0 ? static_cast<size_t>(n) : 0;
      if (sent >= head.size()) {
        body.erase(0, sent - head.size());
        head.clear();
      } else {
        head.erase(0, sent);
      }
      if (head.empty() && body.empty()) return;
    }
    if (!head.empty()) Write(std::move(head));
    Write(std::move(body));
  }

  void WriteNext() {
    auto self = std::static_pointer_cast<AsioConnection>(shared_from_this());
    asio::async_write(socket_, asio::buffer(writes_.front()),
                      [self](const asio::error_code& ec, size_t) {
                        if (ec) {
                          self->writes_.clear();
                          self->pending_bytes_ = 0;
                          return self->Close();
                        }
                        self->pending_bytes_ -= self->writes_.front().size();
                        self->writes_.pop_front();
                        if (!self->writes_.empty()) self->WriteNext();
                      });
  }

  Socket socket_;
  RequestHandler handler_;
  HttpHandler http_;
  bool framed_ = false;  // a frame was read: this is an RPC stream, never HTTP
  std::string http_in_, http_out_;
  std::string http_chunk_;
  std::unique_ptr<asio::steady_timer> http_timer_;
  unsigned char header_[4] = {};
  std::string body_;
  std::deque<std::string> writes_;
  std::unordered_map<uint64_t, ResponseCallback> pending_;
  std::vector<std::function<void()>> on_close_;
  uint64_t next_id_ = 1;
  size_t pending_bytes_ = 0;
  bool closed_ = false;
  int64_t peer_uid_ = -1;
  int64_t peer_gid_ = -1;
  std::string peer_;
};

using TcpConnection = AsioConnection<asio::ip::tcp::socket>;
using UnixConnection = AsioConnection<asio::local::stream_protocol::socket>;

// The kernel's word on who is at the other end of a unix socket.
std::pair<int64_t, int64_t> PeerIds(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return {-1, -1};
  return {cred.uid, cred.gid};
}

class TcpServer final : public RpcServer {
 public:
  TcpServer(asio::io_context& io, RequestHandler handler, HttpHandler http)
      : acceptor_(io), handler_(std::move(handler)), http_(std::move(http)) {}

  Status Listen(const Address& a) {
    asio::error_code ec;
    std::string host = a.host.empty() || a.host == "*" ? "0.0.0.0" : a.host;
    if (host == "localhost") host = "127.0.0.1";
    auto addr = asio::ip::make_address(host, ec);
    if (ec) {
      asio::ip::tcp::resolver resolver(acceptor_.get_executor());
      auto results = resolver.resolve(host, a.port, ec);
      if (ec || results.empty())
        return Error(ErrorCode::kInvalidArgument, "cannot resolve " + host);
      addr = results.begin()->endpoint().address();
    }
    asio::ip::tcp::endpoint ep(addr, static_cast<uint16_t>(std::atoi(a.port.c_str())));
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(1024, ec);
    if (ec)
      return Error(ErrorCode::kIoError, "listen on " + host + ":" + a.port + ": " + ec.message());
    Accept();
    return Status::Ok();
  }

  uint16_t port() const override { return acceptor_.local_endpoint().port(); }
  void Stop() override {
    asio::error_code ec;
    acceptor_.close(ec);
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        asio::error_code ignored;
        socket.set_option(asio::ip::tcp::no_delay(true), ignored);
        auto ep = socket.remote_endpoint(ignored);
        auto conn = std::make_shared<TcpConnection>(std::move(socket), handler_, http_);
        conn->Start(-1, -1, ep.address().to_string() + ":" + std::to_string(ep.port()));
      }
      Accept();
    });
  }

  asio::ip::tcp::acceptor acceptor_;
  RequestHandler handler_;
  HttpHandler http_;
};

class UnixServer final : public RpcServer {
 public:
  UnixServer(asio::io_context& io, RequestHandler handler, HttpHandler http)
      : acceptor_(io), handler_(std::move(handler)), http_(std::move(http)) {}

  Status Listen(const Address& a, int mode) {
    ::unlink(a.path.c_str());
    asio::error_code ec;
    asio::local::stream_protocol::endpoint ep(a.path);
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(1024, ec);
    if (ec) return Error(ErrorCode::kIoError, "listen on " + a.path + ": " + ec.message());
    ::chmod(a.path.c_str(), static_cast<mode_t>(mode));
    path_ = a.path;
    Accept();
    return Status::Ok();
  }

  uint16_t port() const override { return 0; }
  void Stop() override {
    asio::error_code ec;
    acceptor_.close(ec);
  }

 private:
  void Accept() {
    acceptor_.async_accept(
        [this](const asio::error_code& ec, asio::local::stream_protocol::socket socket) {
          if (ec == asio::error::operation_aborted) return;
          if (!ec) {
            auto [uid, gid] = PeerIds(socket.native_handle());
            auto conn = std::make_shared<UnixConnection>(std::move(socket), handler_, http_);
            conn->Start(uid, gid, "unix:" + path_);
          }
          Accept();
        });
  }

  asio::local::stream_protocol::acceptor acceptor_;
  RequestHandler handler_;
  HttpHandler http_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<RpcServer>> RpcServer::Listen(asio::io_context& io,
                                                     const std::string& address,
                                                     RequestHandler handler, int unix_mode,
                                                     HttpHandler http) {
  auto a = ParseAddress(address);
  if (!a) return a.status();
  if (a->is_unix) {
    auto server = std::make_unique<UnixServer>(io, std::move(handler), std::move(http));
    if (Status s = server->Listen(*a, unix_mode); !s.ok()) return s;
    return std::unique_ptr<RpcServer>(std::move(server));
  }
  auto server = std::make_unique<TcpServer>(io, std::move(handler), std::move(http));
  if (Status s = server->Listen(*a); !s.ok()) return s;
  return std::unique_ptr<RpcServer>(std::move(server));
}

void RpcConnect(asio::io_context& io, const std::string& address, RequestHandler handler,
                std::function<void(Result<RpcConnectionPtr>)> done) {
  auto a = ParseAddress(address);
  if (!a) {
    asio::post(io, [done, s = a.status()] { done(s); });
    return;
  }
  if (a->is_unix) {
    auto socket = std::make_shared<asio::local::stream_protocol::socket>(io);
    socket->async_connect(
        asio::local::stream_protocol::endpoint(a->path),
        [socket, handler, done, path = a->path](const asio::error_code& ec) {
          if (ec) return done(Error(ErrorCode::kUnavailable, path + ": " + ec.message()));
          auto conn = std::make_shared<UnixConnection>(std::move(*socket), handler);
          conn->Start(-1, -1, "unix:" + path);
          done(RpcConnectionPtr(conn));
        });
    return;
  }
  // Resolve synchronously: addresses are numeric or local names in practice.
  asio::error_code ec;
  std::string host = a->host == "localhost" ? "127.0.0.1" : a->host;
  asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(host, a->port, ec);
  if (ec || results.empty()) {
    asio::post(
        io, [done, address] { done(Error(ErrorCode::kUnavailable, "cannot resolve " + address)); });
    return;
  }
  auto socket = std::make_shared<asio::ip::tcp::socket>(io);
  socket->async_connect(
      results.begin()->endpoint(), [socket, handler, done, address](const asio::error_code& ec) {
        if (ec) return done(Error(ErrorCode::kUnavailable, address + ": " + ec.message()));
        asio::error_code ignored;
        socket->set_option(asio::ip::tcp::no_delay(true), ignored);
        auto conn = std::make_shared<TcpConnection>(std::move(*socket), handler);
        conn->Start(-1, -1, address);
        done(RpcConnectionPtr(conn));
      });
}

}  // namespace shoal
