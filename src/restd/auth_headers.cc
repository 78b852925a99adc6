#include "restd/auth_headers.h"

#include <strings.h>

#include <nlohmann/json.hpp>

namespace shoal::restd {
namespace {

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, e - b + 1);
}

std::string Base64UrlDecode(const std::string& in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-' || c == '+') return 62;
    if (c == '_' || c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0, acc = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = val(c);
    if (v < 0) return "";
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace

std::optional<TokenAuth> TokenFromHeaders(const char* x_slurm_user_token,
                                          const char* x_slurm_user_name,
                                          const char* authorization) {
  TokenAuth t;
  if (x_slurm_user_name) t.user_name = Trim(x_slurm_user_name);
  if (x_slurm_user_token) t.token = Trim(x_slurm_user_token);
  if (t.token.empty() && authorization) {
    std::string a = Trim(authorization);
    if (a.size() > 7 && strncasecmp(a.c_str(), "Bearer ", 7) == 0) t.token = Trim(a.substr(7));
  }
  if (t.token.empty()) return std::nullopt;
  return t;
}

std::string UnverifiedJwtUser(const std::string& token) {
  size_t a = token.find('.');
  if (a == std::string::npos) return "";
  size_t b = token.find('.', a + 1);
  if (b == std::string::npos) return "";
  auto payload =
      nlohmann::json::parse(Base64UrlDecode(token.substr(a + 1, b - a - 1)), nullptr, false);
  if (payload.is_discarded() || !payload.is_object()) return "";
  auto it = payload.find("sun");
  if (it == payload.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace shoal::restd
