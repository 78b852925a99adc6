// shoalrestd's HTTP front end: libmicrohttpd with its internal epoll and a thread pool, one MHD
// daemon per listen address ("host:port" or "unix:/path"). Each request is authenticated
// (unix socket: SO_PEERCRED; TCP: a JWT), rate limited, size limited and routed; handlers run
// on the pool thread with that thread's Backend.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "restd/limits.h"
#include "restd/router.h"

namespace shoal::restd {

struct ServerOptions {
  std::vector<std::string> listen;  // "host:port", ":port", "unix:/path"
  unsigned threads = 0;             // per listen address; 0 = 2 x cores
  Limits limits;
  std::string cluster_name;
};

class HttpServer {
 public:
  // make_backend is called once on each worker thread, the first time it serves a request.
  static Result<std::unique_ptr<HttpServer>> Start(
      const ServerOptions& options, const Router* router,
      std::function<std::unique_ptr<Backend>()> make_backend);
  virtual ~HttpServer() = default;
  // "host:port" (the real port when 0 was asked) or "unix:/path", in listen order.
  virtual std::vector<std::string> addresses() const = 0;
  virtual void Stop() = 0;
};

}  // namespace shoal::restd
