// How a TCP request names its user: X-SLURM-USER-TOKEN (+ X-SLURM-USER-NAME), or
// "Authorization: Bearer <token>". Pure.
#pragma once

#include <optional>
#include <string>

namespace shoal::restd {

struct TokenAuth {
  std::string token;
  std::string user_name;  // X-SLURM-USER-NAME, may be empty
};

// nullopt when the request carries no token at all.
std::optional<TokenAuth> TokenFromHeaders(const char* x_slurm_user_token,
                                          const char* x_slurm_user_name, const char* authorization);

// The "sun" (Slurm user name) claim of a JWT, read WITHOUT verifying it: only for naming the
// caller in meta and for rate limiting before the controller checks the token. "" if none.
std::string UnverifiedJwtUser(const std::string& token);

}  // namespace shoal::restd
