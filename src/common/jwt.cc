#include "common/jwt.h"

#include <fcntl.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace shoal::jwt {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr size_t kMaxKeyBytes = 64 * 1024;

Status Fail(std::string why) { return Error(ErrorCode::kAuthFailure, std::move(why)); }

std::string HmacSha256(std::string_view key, std::string_view msg) {
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, key.size(), reinterpret_cast<const uint8_t*>(key.data()));
  hmac_sha256_update(&ctx, msg.size(), reinterpret_cast<const uint8_t*>(msg.data()));
  std::string out(SHA256_DIGEST_SIZE, '\0');
  hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

int DecodeChar(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// A JSON object from one base64url segment; nlohmann's non-throwing parse.
Result<nlohmann::json> DecodeObject(std::string_view segment, const char* what) {
  auto raw = Base64UrlDecode(segment);
  if (!raw) return Fail(std::string("malformed token ") + what);
  auto j = nlohmann::json::parse(*raw, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Fail(std::string("malformed token ") + what);
  return j;
}

}  // namespace

std::string Base64UrlEncode(std::string_view data) {
  std::string out;
  out.reserve((data.size() * 4 + 2) / 3);
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(data[k])); };
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = data.size() - i;
  if (rest == 1) {
    uint32_t v = byte(i) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (rest == 2) {
    uint32_t v = (byte(i) << 16) | (byte(i + 1) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

Result<std::string> Base64UrlDecode(std::string_view text) {
  if (text.size() % 4 == 1) return InvalidArgument("bad base64url length");
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int d = DecodeChar(c);
    if (d < 0) return InvalidArgument("bad base64url character");
    acc = (acc << 6) | static_cast<uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  // Leftover bits must be zero, so every token has exactly one spelling.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return InvalidArgument("bad base64url padding");
  return out;
}

std::string Sign(std::string_view key, const Claims& claims) {
  nlohmann::json payload = {{"exp", claims.exp}, {"iat", claims.iat}, {"sun", claims.user}};
  std::string signing_input =
      Base64UrlEncode(R"({"alg":"HS256","typ":"JWT"})") + "." +
      Base64UrlEncode(payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return signing_input + "." + Base64UrlEncode(HmacSha256(key, signing_input));
}

Result<Claims> Verify(std::string_view key, std::string_view token, int64_t now) {
  if (token.empty()) return Fail("empty token");
  if (token.size() > kMaxTokenBytes) return Fail("token too long");
  size_t dot1 = token.find('.');
  size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
    return Fail("malformed token");
  auto header = DecodeObject(token.substr(0, dot1), "header");
  if (!header) return header.status();
  // The algorithm is fixed by the configuration, never chosen by the token: this is what
  // turns away "alg":"none" and an RS256 token signed with the HS256 key taken as a public key.
  auto alg = header->find("alg");
  if (alg == header->end() || !alg->is_string() || alg->get<std::string>() != "HS256")
    return Fail("unsupported token algorithm (only HS256 is accepted)");
  auto sig = Base64UrlDecode(token.substr(dot2 + 1));
  if (!sig) return Fail("malformed token signature");
  std::string expect = HmacSha256(key, token.substr(0, dot2));
  if (sig->size() != expect.size() || !nettle_memeql_sec(sig->data(), expect.data(), expect.size()))
    return Fail("invalid token signature");
  auto payload = DecodeObject(token.substr(dot1 + 1, dot2 - dot1 - 1), "payload");
  if (!payload) return payload.status();
  Claims claims;
  auto sun = payload->find("sun");
  if (sun == payload->end() || !sun->is_string() || sun->get<std::string>().empty())
    return Fail("token has no user name (sun)");
  claims.user = sun->get<std::string>();
  auto exp = payload->find("exp");
  if (exp == payload->end() || !exp->is_number_integer()) return Fail("token has no expiry (exp)");
  claims.exp = exp->get<int64_t>();
  if (auto iat = payload->find("iat"); iat != payload->end() && iat->is_number_integer())
    claims.iat = iat->get<int64_t>();
  if (claims.exp <= now) return Fail("token expired");
  return claims;
}

Result<std::string> LoadJwtKey(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Fail("jwt_key " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Fail("jwt_key " + path + ": not a regular file");
  }
  if (st.st_mode & S_IRWXO) {
    ::close(fd);
    return Fail("jwt_key " + path + " is accessible by others: chmod 600 " + path);
  }
  std::string data;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return Fail("jwt_key " + path + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > kMaxKeyBytes) {
      ::close(fd);
      return Fail("jwt_key " + path + ": file too large for a key");
    }
  }
  ::close(fd);
  if (data.empty()) return Fail("jwt_key " + path + " is empty");
  return data;
}

}  // namespace shoal::jwt
