// Path matching: patterns split into segments, "{name}" segments capture one path segment.
#include "restd/router.h"

#include <strings.h>

namespace shoal::restd {
namespace {

std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));  // empty segments ("//", trailing /)
    i = j + 1;
  }
  return out;
}

bool IsParam(const std::string& seg) {
  return seg.size() >= 2 && seg.front() == '{' && seg.back() == '}';
}

// Percent-decodes one path segment ("%2F" stays a character, not a separator).
std::string Decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int a = hex(s[i + 1]), b = hex(s[i + 2]);
      if (a >= 0 && b >= 0) {
        out.push_back(static_cast<char>(a * 16 + b));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

Method ParseMethod(std::string_view name) {
  if (name == "GET") return Method::kGet;
  if (name == "POST") return Method::kPost;
  if (name == "DELETE") return Method::kDelete;
  if (name == "PUT") return Method::kPut;
  if (name == "PATCH") return Method::kPatch;
  if (name == "HEAD") return Method::kHead;
  return Method::kOther;
}

std::optional<std::string> HttpRequest::Query(const std::string& key) const {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

const std::string& HttpRequest::Param(const std::string& key) const {
  static const std::string kEmpty;
  auto it = params.find(key);
  return it == params.end() ? kEmpty : it->second;
}

void Router::Add(Method method, const std::string& pattern, Handler handler, json defaults) {
  routes_.push_back(Route{method, Split(pattern), std::move(handler), std::move(defaults)});
}

Router::Match Router::Find(Method method, std::string_view path) const {
  // Literal segments beat parameters ("job/submit" before "job/{job_id}") whatever the order
  // routes were added in.
  Match m;
  m.status = 404;
  int best = -1;
  std::vector<std::string> segs = Split(path);
  for (const Route& r : routes_) {
    if (r.segments.size() != segs.size()) continue;
    std::map<std::string, std::string> params;
    bool ok = true;
    int literals = 0;
    for (size_t i = 0; i < segs.size() && ok; ++i) {
      const std::string& p = r.segments[i];
      if (IsParam(p)) {
        std::string v = Decode(segs[i]);
        if (v.empty()) ok = false;
        params[p.substr(1, p.size() - 2)] = std::move(v);
      } else {
        ok = p == segs[i];
        ++literals;
      }
    }
    if (!ok) continue;
    // HEAD is answered like GET (without the body, by the HTTP layer).
    bool method_ok = r.method == method || (method == Method::kHead && r.method == Method::kGet);
    if (!method_ok) {
      if (m.handler == nullptr) m.status = 405;
      continue;
    }
    if (literals <= best) continue;
    best = literals;
    m.handler = &r.handler;
    m.defaults = &r.defaults;
    m.status = 200;
    m.params = std::move(params);
  }
  return m;
}

const std::vector<std::string>& ApiVersions() {
  // v0.0.43/v0.0.42 share v0.0.44's shapes for everything served here.
  static const std::vector<std::string> kVersions = {"v0.0.44", "v0.0.43", "v0.0.42"};
  return kVersions;
}

}  // namespace shoal::restd
