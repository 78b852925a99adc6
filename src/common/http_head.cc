#include "common/http_head.h"

#include <algorithm>
#include <cctype>

namespace shoal {
namespace {

// RFC 9110 token characters (method and header names).
bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Next line of the head without its CRLF (a bare LF is accepted, as most servers do).
bool NextLine(std::string_view& rest, std::string_view* line) {
  size_t lf = rest.find('\n');
  if (lf == std::string_view::npos) return false;
  std::string_view l = rest.substr(0, lf);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  *line = l;
  rest.remove_prefix(lf + 1);
  return true;
}

}  // namespace

std::string HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return "";
}

bool LooksLikeHttp(const unsigned char* p) {
  for (int i = 0; i < 3; ++i)
    if (p[i] < 'A' || p[i] > 'Z') return false;
  return (p[3] >= 'A' && p[3] <= 'Z') || p[3] == ' ';
}

Result<HttpRequest> ParseHttpHead(std::string_view head) {
  HttpRequest req;
  std::string_view rest = head;
  std::string_view line;
  if (!NextLine(rest, &line)) return InvalidArgument("no request line");
  // request-line = method SP request-target SP HTTP-version
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return InvalidArgument("bad request line");
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return InvalidArgument("bad request line");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  for (char c : method)
    if (!IsTokenChar(c)) return InvalidArgument("bad method");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return InvalidArgument("bad HTTP version");
  // origin-form only (absolute-form is for proxies); no control characters or spaces.
  if (target.empty() || target.front() != '/') return InvalidArgument("bad request target");
  for (char c : target) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return InvalidArgument("bad request target");
  }
  req.method = std::string(method);
  req.target = std::string(target);
  req.version = std::string(version);
  size_t q = target.find('?');
  req.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
  if (auto hash = req.path.find('#'); hash != std::string::npos) req.path.resize(hash);

  for (;;) {
    if (!NextLine(rest, &line)) return InvalidArgument("unterminated head");
    if (line.empty()) break;  // end of the head
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return InvalidArgument("bad header line");
    std::string_view name = line.substr(0, colon);
    for (char c : name)
      if (!IsTokenChar(c)) return InvalidArgument("bad header name");
    std::string lower(name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = Trim(line.substr(colon + 1));
    for (char c : value) {
      auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7f) return InvalidArgument("bad header value");
    }
    req.headers.emplace_back(std::move(lower), std::string(value));
  }
  // HTTP/1.1 requires Host (RFC 9112 3.2); its value may be empty.
  if (req.version == "HTTP/1.1" && std::none_of(req.headers.begin(), req.headers.end(),
                                                [](const auto& h) { return h.first == "host"; }))
    return InvalidArgument("missing Host header");
  return req;
}

const char* HttpReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

std::string FormatHttpResponse(const HttpResponse& response, bool head_only) {
  std::string out;
  out.reserve(160 + (head_only ? 0 : response.body.size()));
  out += "HTTP/1.1 ";
  out += std::to_string(response.status);
  out += ' ';
  out += HttpReason(response.status);
  out += "\r\nContent-Type: ";
  out += response.content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(response.body.size());
  out += "\r\nConnection: close\r\n";
  for (const auto& [k, v] : response.headers) {
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  out += "\r\n";
  if (!head_only) out += response.body;
  return out;
}

HttpResponse HttpError(int status) {
  HttpResponse r;
  r.status = status;
  r.body = std::to_string(status) + " " + HttpReason(status) + "\n";
  return r;
}

}  // namespace shoal
