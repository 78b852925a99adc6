#include "restd/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/log.h"
#include "restd/auth_headers.h"

namespace shoal::restd {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string UserName(uint32_t uid) {
  struct passwd pw, *res = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res) return pw.pw_name;
  return std::to_string(uid);
}

// One request in flight on a connection (MHD's con_cls).
struct RequestState {
  std::string body;
  bool too_large = false;
};

class MhdServer;

// What one MHD daemon serves: its address and whether peers are local (unix socket).
struct Listener {
  MhdServer* server = nullptr;
  bool is_unix = false;
  std::string address;
  std::string unix_path;
  MHD_Daemon* daemon = nullptr;
};

Result<int> BindTcp(const std::string& spec, std::string* bound) {
  auto colon = spec.rfind(':');
  if (colon == std::string::npos) return InvalidArgument("bad listen address '" + spec + "'");
  std::string host = spec.substr(0, colon), port = spec.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int e = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
      e != 0 || !res)
    return InvalidArgument("cannot resolve '" + spec + "': " + gai_strerror(e));
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return Error(ErrorCode::kIoError, std::strerror(errno));
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, res->ai_addr, res->ai_addrlen) < 0 || ::listen(fd, 1024) < 0) {
    int err = errno;
    ::freeaddrinfo(res);
    ::close(fd);
    return Error(ErrorCode::kIoError, "cannot listen on " + spec + ": " + std::strerror(err));
  }
  ::freeaddrinfo(res);
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  char ip[INET6_ADDRSTRLEN] = "";
  uint16_t p = 0;
  if (ss.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
    p = ntohs(s6->sin6_port);
    *bound = "[" + std::string(ip) + "]:" + std::to_string(p);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
    p = ntohs(s4->sin_port);
    *bound = std::string(ip) + ":" + std::to_string(p);
  }
  return fd;
}

Result<int> BindUnix(const std::string& path) {
  sockaddr_un sa{};
  if (path.empty() || path.size() >= sizeof(sa.sun_path))
    return InvalidArgument("bad unix socket path '" + path + "'");
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Error(ErrorCode::kIoError, std::strerror(errno));
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.data(), path.size());
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0 || ::listen(fd, 1024) < 0) {
    int err = errno;
    ::close(fd);
    return Error(ErrorCode::kIoError, "cannot listen on unix:" + path + ": " + std::strerror(err));
  }
  // Any local user may connect: each acts as itself (SO_PEERCRED), as with the auth agent.
  ::chmod(path.c_str(), 0666);
  return fd;
}

MHD_Result QueueJson(MHD_Connection* conn, const HttpResponse& r) {
  MHD_Response* resp = MHD_create_response_from_buffer(
      r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  MHD_Result rc = MHD_queue_response(conn, static_cast<unsigned>(r.status), resp);
  MHD_destroy_response(resp);
  return rc;
}

MHD_Result CollectQuery(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* q = static_cast<std::map<std::string, std::string>*>(cls);
  if (key) (*q)[key] = value ? value : "";
  return MHD_YES;
}

class MhdServer final : public HttpServer {
 public:
  MhdServer(const ServerOptions& options, const Router* router,
            std::function<std::unique_ptr<Backend>()> make_backend)
      : options_(options),
        router_(router),
        make_backend_(std::move(make_backend)),
        limiter_(options.limits.rate_per_user, options.limits.burst_per_user) {}
  ~MhdServer() override { Stop(); }

  Status Open() {
    unsigned threads = options_.threads;
    if (threads == 0) threads = std::max(2u, 2 * std::thread::hardware_concurrency());
    for (const std::string& spec : options_.listen) {
      auto l = std::make_unique<Listener>();
      l->server = this;
      Result<int> fd = InvalidArgument("");
      if (spec.rfind("unix:", 0) == 0) {
        l->is_unix = true;
        l->unix_path = spec.substr(5);
        l->address = spec;
        fd = BindUnix(l->unix_path);
      } else {
        fd = BindTcp(spec, &l->address);
      }
      if (!fd) return fd.status();
      unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
      l->daemon = MHD_start_daemon(
          flags, 0, nullptr, nullptr, &MhdServer::Access, l.get(), MHD_OPTION_LISTEN_SOCKET, *fd,
          MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
          options_.limits.max_connections, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
          options_.limits.max_header_bytes, MHD_OPTION_CONNECTION_TIMEOUT,
          options_.limits.connection_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, &MhdServer::Completed,
          l.get(), MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
      if (!l->daemon) {
        ::close(*fd);
        return Error(ErrorCode::kIoError, "cannot start the HTTP server on " + spec);
      }
      listeners_.push_back(std::move(l));
    }
    return Status::Ok();
  }

  std::vector<std::string> addresses() const override {
    std::vector<std::string> out;
    for (const auto& l : listeners_) out.push_back(l->address);
    return out;
  }

  void Stop() override {
    for (auto& l : listeners_) {
      if (!l->daemon) continue;
      MHD_stop_daemon(l->daemon);  // joins the workers and closes the listening socket
      l->daemon = nullptr;
      if (l->is_unix) ::unlink(l->unix_path.c_str());
    }
  }

 private:
  static void Completed(void* cls, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
    delete static_cast<RequestState*>(*con_cls);
    *con_cls = nullptr;
  }

  static MHD_Result Access(void* cls, MHD_Connection* conn, const char* url, const char* method,
                           const char* version, const char* upload_data, size_t* upload_data_size,
                           void** con_cls) {
    auto* l = static_cast<Listener*>(cls);
    return l->server->Handle(*l, conn, url, method, upload_data, upload_data_size, con_cls);
  }

  MHD_Result Handle(const Listener& l, MHD_Connection* conn, const char* url, const char* method,
                    const char* upload_data, size_t* upload_data_size, void** con_cls) {
    const size_t max_body = options_.limits.max_body_bytes;
    if (*con_cls == nullptr) {
      auto* st = new RequestState;
      *con_cls = st;
      // Refuse a declared oversized body before reading any of it.
      if (const char* cl =
              MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        unsigned long long n = std::strtoull(cl, nullptr, 10);
        if (n > max_body) return QueueJson(conn, TooLarge(l, url));
      }
      return MHD_YES;
    }
    auto* st = static_cast<RequestState*>(*con_cls);
    if (*upload_data_size != 0) {
      if (!st->too_large && st->body.size() + *upload_data_size <= max_body)
        st->body.append(upload_data, *upload_data_size);
      else
        st->too_large = true;  // chunked upload past the limit: drain and answer 413 at the end
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (st->too_large) return QueueJson(conn, TooLarge(l, url));
    HttpResponse r = Dispatch(l, conn, url, method, std::move(st->body));
    return QueueJson(conn, r);
  }

  HttpResponse TooLarge(const Listener& l, const char* url) {
    HttpRequest req;
    req.path = url ? url : "";
    req.cluster = options_.cluster_name;
    req.caller.source = l.address;
    return ErrorReply(req, 413, 9001,
                      "Request body exceeds the " + std::to_string(options_.limits.max_body_bytes) +
                          " byte limit",
                      "http");
  }

  HttpResponse Dispatch(const Listener& l, MHD_Connection* conn, const char* url,
                        const char* method, std::string body) {
    HttpRequest req;
    req.method = ParseMethod(method ? method : "");
    req.path = url ? url : "/";
    req.body = std::move(body);
    req.cluster = options_.cluster_name;
    if (const char* ct =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))
      req.content_type = ct;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, &CollectQuery, &req.query);

    // Who is calling.
    if (l.is_unix) {
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
      ucred uc{};
      socklen_t len = sizeof(uc);
      if (!info || ::getsockopt(info->connect_fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0)
        return ErrorReply(req, 401, 1007, "Unable to read the peer's credentials", "auth/local");
      req.caller.local = true;
      req.caller.uid = uc.uid;
      req.caller.gid = uc.gid;
      req.caller.user = UserName(uc.uid);
      req.caller.source = l.address;
    } else {
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
      if (info && info->client_addr) {
        char ip[INET6_ADDRSTRLEN] = "";
        const sockaddr* sa = info->client_addr;
        if (sa->sa_family == AF_INET6) {
          auto* s6 = reinterpret_cast<const sockaddr_in6*>(sa);
          ::inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
          req.caller.source = "[" + std::string(ip) + "]:" + std::to_string(ntohs(s6->sin6_port));
        } else if (sa->sa_family == AF_INET) {
          auto* s4 = reinterpret_cast<const sockaddr_in*>(sa);
          ::inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
          req.caller.source = std::string(ip) + ":" + std::to_string(ntohs(s4->sin_port));
        }
      }
      auto token = TokenFromHeaders(
          MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-SLURM-USER-TOKEN"),
          MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-SLURM-USER-NAME"),
          MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
      if (token) {
        req.caller.jwt = token->token;
        req.caller.jwt_user = token->user_name;
        req.caller.user =
            token->user_name.empty() ? UnverifiedJwtUser(token->token) : token->user_name;
      }
    }

    Router::Match m = router_->Find(req.method, req.path);
    if (!m.handler) {
      if (m.status == 405)
        return ErrorReply(
            req, 405, 9000,
            "Method " + std::string(method ? method : "") + " not allowed for " + req.path, "http");
      return ErrorReply(req, 404, 9000, "Unable to find path " + req.path, "http");
    }
    return WithDefaults(Authorized(req, m, method), *m.defaults);
  }

  HttpResponse Authorized(HttpRequest& req, Router::Match& m, const char* method) {
    // The OpenAPI document is public; everything else needs a user.
    bool is_openapi = req.path.rfind("/openapi", 0) == 0;
    if (!is_openapi && !req.caller.local && req.caller.jwt.empty())
      return ErrorReply(req, 401, 1007,
                        "Authentication required: send X-SLURM-USER-TOKEN (or Authorization: "
                        "Bearer) with a token from `scontrol token`",
                        "auth/jwt");
    // Token callers are limited per token, not per the (not yet verified) name inside it: a
    // forged token naming someone must not use up that user's requests.
    std::string rate_key =
        req.caller.local ? "uid:" + std::to_string(req.caller.uid) : "jwt:" + req.caller.jwt;
    if (!limiter_.Allow(rate_key, NowSeconds()))
      return ErrorReply(req, 429, 9000, "Too many requests: rate limit exceeded", "http");
    req.params = std::move(m.params);

    thread_local std::unique_ptr<Backend> backend;
    thread_local const MhdServer* backend_owner = nullptr;
    if (!backend || backend_owner != this) {
      backend = make_backend_();
      backend_owner = this;
    }
    // A handler must not throw, but a json access it forgot to guard must not take the daemon
    // down either: answer 500 instead.
    try {
      return (*m.handler)(req, *backend);
    } catch (const std::exception& e) {
      LogError("handler for %s %s threw: %s", method ? method : "", req.path.c_str(), e.what());
      return ErrorReply(req, 500, -1, std::string("Internal error: ") + e.what(), "shoalrestd");
    }
  }

  ServerOptions options_;
  const Router* router_;
  std::function<std::unique_ptr<Backend>()> make_backend_;
  RateLimiter limiter_;
  std::vector<std::unique_ptr<Listener>> listeners_;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(
    const ServerOptions& options, const Router* router,
    std::function<std::unique_ptr<Backend>()> make_backend) {
  auto server = std::make_unique<MhdServer>(options, router, std::move(make_backend));
  if (Status s = server->Open(); !s.ok()) return s;
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace shoal::restd
