// A minimal HTTP/1.x request-head parser and response writer (pure, no I/O) for the probes and
// metrics the daemons serve on their RPC ports: requests are small GETs from scrapers and load
// balancers, so there is no body, no chunking and no keep-alive.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace shoal {

// The most of a request head the daemons read before answering 431.
inline constexpr size_t kMaxHttpHeadBytes = 8192;

struct HttpRequest {
  std::string method;                                        // "GET"
  std::string target;                                        // "/metrics/jobs?x=1"
  std::string path;                                          // "/metrics/jobs"
  std::string query;                                         // "x=1"
  std::string version;                                       // "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  // The first header named `name` (lower case), or "".
  std::string Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones (Allow, ...)
};

// Called on the daemon's event-loop thread for each request head that parsed.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Whether the first four bytes of a connection look like the start of an HTTP request line
// ("GET ", "HEAD", "POST", ...): upper-case letters, the fourth possibly a space.
bool LooksLikeHttp(const unsigned char* first4);

// Parses a complete request head (request line and header lines, through the blank line).
Result<HttpRequest> ParseHttpHead(std::string_view head);

// "OK", "Not Found", ...
const char* HttpReason(int status);

// The bytes to send: status line, Content-Type, Content-Length, Connection: close, the extra
// headers, and the body (left out for HEAD, the length kept).
std::string FormatHttpResponse(const HttpResponse& response, bool head_only);

// A plain-text error answer ("404 Not Found\n").
HttpResponse HttpError(int status);

}  // namespace shoal
