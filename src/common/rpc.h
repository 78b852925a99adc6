// Shoal's RPC: protobuf messages in length-prefixed frames over TCP or unix sockets.
//
// Commands use the small blocking RpcClient (no event loop, so they start in ~2 ms). Daemons use
// asio: RpcServer accepts connections, RpcConnection reads frames and dispatches requests to a
// handler on the owning io_context, and can itself send requests on the same stream (the
// controller commands nodes over the stream each node opened). Handlers run on the io_context
// thread only; nothing here takes a lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/http_head.h"
#include "common/result.h"
#include "shoal.pb.h"

namespace asio {
class io_context;
}

namespace shoal {

inline constexpr uint32_t kMaxFrameBytes = 256u << 20;

// Wire helpers (pure; exposed for tests and fuzzing).
std::string EncodeFrame(const pb::Frame& frame);
// The bytes EncodeFrame writes for a response frame (`id`, is_response) with a body of
// `body_size` bytes, up to where the body begins: head + body is the whole frame. A large answer
// then goes out as it was built, without a copy into a frame.
std::string EncodeResponseFrameHead(uint64_t id, size_t body_size);
// Parses one frame body (without the length prefix).
Result<pb::Frame> DecodeFrameBody(std::string_view bytes);
// When `frame`'s body is its last field (as EncodeFrame writes it), cuts the frame down to the
// body in place and says whether it is the response to `id`; nullopt when the frame has another
// layout (then DecodeFrameBody reads it).
std::optional<bool> TakeTrailingResponseBody(std::string& frame, uint64_t id);

pb::Response ErrorResponse(ErrorCode code, std::string message);

// Blocking client used by the commands. Address is "host:port" or "unix:/path".
class RpcClient {
 public:
  RpcClient() = default;
  ~RpcClient();
  RpcClient(RpcClient&& other) noexcept;
  RpcClient& operator=(RpcClient&& other) noexcept;
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  static Result<RpcClient> Connect(const std::string& address, int timeout_ms);
  // Sends one request with a credential for its body and waits for the response.
  Result<pb::Response> Call(const pb::Request& request, const pb::Credential& cred, int timeout_ms);
  Result<pb::Response> CallRaw(const std::string& body, const pb::Credential& cred, int timeout_ms);
  // The two halves of CallRaw, for a caller that waits in steps (salloc: "queued and waiting").
  Result<uint64_t> SendRaw(const std::string& body, const pb::Credential& cred, int timeout_ms);
  Result<pb::Response> Receive(uint64_t id, int timeout_ms);
  // The same, unparsed (a serialized pb::Response), for callers that parse onto an arena.
  Result<std::string> ReceiveBody(uint64_t id, int timeout_ms);
  // A streamed answer (several response frames for `id`): `part` gets each body, in order, in a
  // buffer it may reuse, and says whether more follow; an error from it ends the call.
  Status ReceiveParts(uint64_t id, int timeout_ms,
                      const std::function<Result<bool>(std::string& body)>& part);
  // Whether something (or EOF) arrives within timeout_ms.
  bool Readable(int timeout_ms);
  int fd() const { return fd_; }

 private:
  // One frame for `id` into `buf` (reused), cut down to its body.
  Status ReceiveBodyInto(uint64_t id, int64_t deadline, std::string& buf);

  int fd_ = -1;
  uint64_t next_id_ = 1;
};

class RpcConnection;
using RpcConnectionPtr = std::shared_ptr<RpcConnection>;

// Replies to one request; may be called later (after a journal commit) but only once.
// Raw() sends an already serialized pb::Response: large query answers are encoded straight from
// the live records instead of being copied into a message first.
// Part() sends one part of a streamed answer ahead of the rest (a response frame for the same
// request, written at once when the socket takes it); the answer ends with operator() or Raw().
class Responder {
 public:
  using Fn = std::function<void(const pb::Response&)>;
  using RawFn = std::function<void(std::string)>;
  Responder() = default;
  template <typename F, typename = std::enable_if_t<std::is_invocable_v<F&, const pb::Response&> &&
                                                    !std::is_same_v<std::decay_t<F>, Responder>>>
  Responder(F fn) : fn_(std::move(fn)) {}  // NOLINT: implicit, like the std::function it wraps
  Responder(Fn fn, RawFn raw, RawFn part = nullptr)
      : fn_(std::move(fn)), raw_(std::move(raw)), part_(std::move(part)) {}

  void operator()(const pb::Response& response) const {
    if (fn_) fn_(response);
  }
  // Without a raw path (an in-process responder) the bytes are parsed and handed to fn.
  void Raw(std::string response_bytes) const;
  // Whether Part() is available (a socket peer; not an in-process responder).
  bool can_stream() const { return static_cast<bool>(part_); }
  void Part(std::string response_bytes) const {
    if (part_) part_(std::move(response_bytes));
  }

 private:
  Fn fn_;
  RawFn raw_;
  RawFn part_;
};
// Called for each request, after the frame is decoded. The handler verifies the credential.
using RequestHandler = std::function<void(const RpcConnectionPtr& conn, const pb::Credential& cred,
                                          const std::string& body, Responder respond)>;
using ResponseCallback = std::function<void(Result<pb::Response>)>;

class RpcConnection : public std::enable_shared_from_this<RpcConnection> {
 public:
  virtual ~RpcConnection() = default;
  // Sends a request on this connection; `done` runs on the io_context with the response, or
  // with an error when the connection closes first.
  virtual void Send(const pb::Request& request, const pb::Credential& cred,
                    ResponseCallback done) = 0;
  // Sends a one-way message (Frame.id = 0, no credential): the step I/O stream, where the
  // connection itself was authenticated when it opened.
  virtual void Post(const pb::Request& request) = 0;
  // Bytes queued for writing and not yet taken by the kernel (for back-pressure).
  virtual size_t pending_write_bytes() const = 0;
  virtual void Close() = 0;
  virtual bool closed() const = 0;
  // Peer identity for unix sockets (SO_PEERCRED); -1 on TCP.
  virtual int64_t peer_uid() const = 0;
  virtual int64_t peer_gid() const = 0;
  virtual std::string peer() const = 0;
  // Called once when the connection closes (either side).
  virtual void OnClose(std::function<void()> fn) = 0;
  // Arbitrary owner data (e.g. the node name a stream belongs to).
  std::string tag;
};

// Connects asynchronously; the result is delivered on the io_context.
void RpcConnect(asio::io_context& io, const std::string& address, RequestHandler handler,
                std::function<void(Result<RpcConnectionPtr>)> done);

class RpcServer {
 public:
  // Listens on "host:port" or "unix:/path" (the socket file is replaced, mode `unix_mode`).
  // With `http`, a connection that opens with an HTTP request line (its first four bytes read
  // as a frame length are far over kMaxFrameBytes) gets one HTTP answer from `http` instead of
  // being dropped: GET/HEAD only, a bounded head (kMaxHttpHeadBytes) read within 10 s.
  static Result<std::unique_ptr<RpcServer>> Listen(asio::io_context& io, const std::string& address,
                                                   RequestHandler handler, int unix_mode = 0666,
                                                   HttpHandler http = nullptr);
  virtual ~RpcServer() = default;
  virtual uint16_t port() const = 0;
  virtual void Stop() = 0;
};

}  // namespace shoal
