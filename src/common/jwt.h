// auth/jwt tokens (RFC 7519), HS256 only, as Slurm's AuthAltTypes=auth/jwt issues and accepts
// them: header {"alg":"HS256","typ":"JWT"}, claims "sun" (the user name), "iat" and "exp".
// Signing and verification are pure; only LoadJwtKey touches the file system.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shoal::jwt {

// Longest token accepted; a real one is ~150 bytes.
inline constexpr size_t kMaxTokenBytes = 8192;

struct Claims {
  std::string user;  // "sun"
  int64_t iat = 0;
  int64_t exp = 0;
};

// "<header>.<payload>.<signature>", each base64url without padding.
std::string Sign(std::string_view key, const Claims& claims);

// Checks form, algorithm (HS256 only: "none", RS256 and the rest are refused), signature
// (constant time) and expiry. Errors are kAuthFailure with a short reason.
Result<Claims> Verify(std::string_view key, std::string_view token, int64_t now);

// Reads the key file (jwt_key=). Refuses a file that others can access, as Slurm does
// ("must not be accessible by 'other'"), and an empty one.
Result<std::string> LoadJwtKey(const std::string& path);

// base64url without padding (exposed for tests).
std::string Base64UrlEncode(std::string_view data);
Result<std::string> Base64UrlDecode(std::string_view text);

}  // namespace shoal::jwt
