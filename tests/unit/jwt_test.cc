#include "common/jwt.h"

#include <gtest/gtest.h>
#include <nettle/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "common/jwt_auth.h"
#include "dbd/dbd_conf.h"

namespace shoal {
namespace {

const std::string kKey(32, 'j');

std::string Segment(const std::string& json) { return jwt::Base64UrlEncode(json); }

// A token over any header and payload, validly signed with `key` (HMAC-SHA256 by nettle).
std::string SignRaw(const std::string& header, const std::string& payload, const std::string& key) {
  std::string input = Segment(header) + "." + Segment(payload);
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, key.size(), reinterpret_cast<const uint8_t*>(key.data()));
  hmac_sha256_update(&ctx, input.size(), reinterpret_cast<const uint8_t*>(input.data()));
  std::string mac(SHA256_DIGEST_SIZE, '\0');
  hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, reinterpret_cast<uint8_t*>(mac.data()));
  return input + "." + jwt::Base64UrlEncode(mac);
}

TEST(Base64Url, RoundTripsAllLengths) {
  std::string data;
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(*jwt::Base64UrlDecode(jwt::Base64UrlEncode(data)), data);
    data.push_back(static_cast<char>(i * 37 + 200));
  }
  EXPECT_EQ(jwt::Base64UrlEncode("\xfb\xff"), "-_8");
  EXPECT_FALSE(jwt::Base64UrlDecode("ab=c").ok());
  EXPECT_FALSE(jwt::Base64UrlDecode("a").ok());
  EXPECT_FALSE(jwt::Base64UrlDecode("ab+/").ok());
}

TEST(Jwt, SignThenVerify) {
  jwt::Claims c{"alice", 1000, 2800};
  std::string token = jwt::Sign(kKey, c);
  auto v = jwt::Verify(kKey, token, 1500);
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_EQ(v->user, "alice");
  EXPECT_EQ(v->iat, 1000);
  EXPECT_EQ(v->exp, 2800);
  // The header is Slurm's: HS256, typ JWT.
  EXPECT_EQ(token.substr(0, token.find('.')), Segment(R"({"alg":"HS256","typ":"JWT"})"));
}

// RFC 7515 appendix A.1: a reference HS256 token. Its payload has no "sun", so getting past the
// signature to the claim check proves the HMAC and base64url match other implementations.
TEST(Jwt, Rfc7515ExampleSignatureVerifies) {
  std::string key = *jwt::Base64UrlDecode(
      "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow");
  std::string token =
      "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9."
      "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVl"
      "fQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
  auto v = jwt::Verify(key, token, 0);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error(), "token has no user name (sun)");
  std::string bad = token;
  bad[bad.size() - 5] = bad[bad.size() - 5] == 'A' ? 'B' : 'A';  // a middle character
  EXPECT_EQ(jwt::Verify(key, bad, 0).error(), "invalid token signature");
}

TEST(Jwt, ForgedSignatureRejected) {
  std::string token = jwt::Sign(std::string(32, 'x'), {"root", 0, 5000});
  auto v = jwt::Verify(kKey, token, 10);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kAuthFailure);
  EXPECT_EQ(v.error(), "invalid token signature");
}

TEST(Jwt, TamperedPayloadRejected) {
  std::string token = jwt::Sign(kKey, {"alice", 0, 5000});
  size_t d1 = token.find('.'), d2 = token.rfind('.');
  std::string other = jwt::Sign(kKey, {"root", 0, 5000});
  std::string spliced = token.substr(0, d1) + other.substr(d1, other.rfind('.') - d1) +
                        token.substr(d2);  // root's payload with alice's signature
  EXPECT_EQ(jwt::Verify(kKey, spliced, 10).error(), "invalid token signature");
}

TEST(Jwt, ExpiredRejected) {
  std::string token = jwt::Sign(kKey, {"alice", 100, 200});
  EXPECT_TRUE(jwt::Verify(kKey, token, 199).ok());
  EXPECT_EQ(jwt::Verify(kKey, token, 200).error(), "token expired");
  EXPECT_EQ(jwt::Verify(kKey, token, 10'000).error(), "token expired");
}

TEST(Jwt, AlgNoneRejected) {
  std::string payload = Segment(R"({"exp":5000,"iat":0,"sun":"root"})");
  for (const char* header : {R"({"alg":"none","typ":"JWT"})", R"({"alg":"None"})",
                             R"({"typ":"JWT"})", R"({"alg":"hs256"})"}) {
    for (const std::string& sig : {std::string(), std::string("AAAA")}) {
      std::string token = Segment(header) + "." + payload + "." + sig;
      auto v = jwt::Verify(kKey, token, 10);
      ASSERT_FALSE(v.ok()) << header;
      EXPECT_EQ(v.error(), "unsupported token algorithm (only HS256 is accepted)") << header;
    }
  }
}

TEST(Jwt, Rs256Rejected) {
  // An RS256 header over a payload "signed" with the HMAC of the key (the classic confusion
  // attack): the header's algorithm is never trusted.
  std::string good = jwt::Sign(kKey, {"root", 0, 5000});
  std::string rs = Segment(R"({"alg":"RS256","typ":"JWT"})") + good.substr(good.find('.'));
  EXPECT_EQ(jwt::Verify(kKey, rs, 10).error(),
            "unsupported token algorithm (only HS256 is accepted)");
}

TEST(Jwt, MalformedRejected) {
  std::string good = jwt::Sign(kKey, {"alice", 0, 5000});
  for (const std::string& t :
       {std::string(), std::string("abc"), std::string("a.b"), good + ".x", std::string(".."),
        std::string("!!!.@@@.###"), Segment("[1,2]") + ".e30.AAAA",
        Segment("{\"alg\":") + ".e30.AAAA", std::string(9000, 'a') + ".b.c"}) {
    auto v = jwt::Verify(kKey, t, 10);
    EXPECT_FALSE(v.ok()) << t;
    EXPECT_EQ(v.status().code(), ErrorCode::kAuthFailure);
  }
}

TEST(Jwt, ClaimsChecked) {
  const std::string h = R"({"alg":"HS256","typ":"JWT"})";
  EXPECT_TRUE(jwt::Verify(kKey, SignRaw(h, R"({"sun":"a","exp":50})", kKey), 10).ok());
  EXPECT_EQ(jwt::Verify(kKey, SignRaw(h, R"({"exp":50})", kKey), 10).error(),
            "token has no user name (sun)");
  EXPECT_EQ(jwt::Verify(kKey, SignRaw(h, R"({"sun":"","exp":50})", kKey), 10).error(),
            "token has no user name (sun)");
  EXPECT_EQ(jwt::Verify(kKey, SignRaw(h, R"({"sun":7,"exp":50})", kKey), 10).error(),
            "token has no user name (sun)");
  EXPECT_EQ(jwt::Verify(kKey, SignRaw(h, R"({"sun":"a"})", kKey), 10).error(),
            "token has no expiry (exp)");
  EXPECT_EQ(jwt::Verify(kKey, SignRaw(h, R"({"sun":"a","exp":"50"})", kKey), 10).error(),
            "token has no expiry (exp)");
  EXPECT_EQ(jwt::Verify(kKey, SignRaw(h, "not json", kKey), 10).error(), "malformed token payload");
  // alg none with a valid HMAC anyway: still refused.
  EXPECT_FALSE(
      jwt::Verify(kKey, SignRaw(R"({"alg":"none"})", R"({"sun":"a","exp":50})", kKey), 10).ok());
  // Python's jwt.encode spelling (other key order, spaces) verifies too.
  EXPECT_TRUE(jwt::Verify(kKey,
                          SignRaw(R"({"typ": "JWT", "alg": "HS256"})",
                                  R"({"sun": "a", "iat": 1, "exp": 50})", kKey),
                          10)
                  .ok());
}

TEST(JwtKey, RefusesKeyOthersCanRead) {
  char path[] = "/tmp/jwt_key_testXXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, kKey.data(), kKey.size()), static_cast<ssize_t>(kKey.size()));
  ::close(fd);
  ::chmod(path, 0600);
  auto ok = jwt::LoadJwtKey(path);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(*ok, kKey);
  ::chmod(path, 0604);
  auto bad = jwt::LoadJwtKey(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("accessible by others"), std::string::npos);
  ::chmod(path, 0600);
  ::truncate(path, 0);
  EXPECT_FALSE(jwt::LoadJwtKey(path).ok());
  ::unlink(path);
  EXPECT_FALSE(jwt::LoadJwtKey("/nonexistent/jwt.key").ok());
}

// ---- jwt_auth ----------------------------------------------------------------------------------

JwtVerifier TestVerifier() {
  JwtVerifier v;
  v.key = kKey;
  v.slurm_user_uid = 64030;
  static const std::map<std::string, UserIdentity> users = {
      {"root", {0, 0}}, {"slurm", {64030, 64030}}, {"alice", {1001, 1001}}, {"bob", {1002, 100}}};
  v.lookup = [](const std::string& name) -> std::optional<UserIdentity> {
    auto it = users.find(name);
    if (it == users.end()) return std::nullopt;
    return it->second;
  };
  return v;
}

const ClusterKey kClusterKey = ClusterKey::FromBytes(std::string(32, 'c'));

TEST(JwtAuth, HmacCredentialPassesThrough) {
  auto v = TestVerifier();
  pb::Credential cred = kClusterKey.Sign(1001, 1001, "body", 100);
  pb::Credential scratch;
  auto r = AuthenticateCredential(kClusterKey, v, cred, "body", 100, &scratch);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r, &cred);
}

TEST(JwtAuth, TokenActsAsItsUser) {
  auto v = TestVerifier();
  pb::Credential cred;
  cred.set_jwt(jwt::Sign(kKey, {"bob", 100, 2000}));
  pb::Credential scratch;
  auto r = AuthenticateCredential(kClusterKey, v, cred, "any body", 150, &scratch);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r, &scratch);
  EXPECT_EQ((*r)->uid(), 1002u);
  EXPECT_EQ((*r)->gid(), 100u);
  EXPECT_TRUE((*r)->jwt().empty());
}

TEST(JwtAuth, TokenCredentialNeverReadsAsRoot) {
  auto v = TestVerifier();
  // A token credential whose uid fields claim root, with a forged token: rejected, and the HMAC
  // path is never tried even though the uid fields are set.
  pb::Credential cred = kClusterKey.Sign(0, 0, "body", 100);
  cred.set_jwt(jwt::Sign(std::string(32, 'z'), {"root", 100, 2000}));
  pb::Credential scratch;
  EXPECT_FALSE(AuthenticateCredential(kClusterKey, v, cred, "body", 100, &scratch).ok());
  // A valid token for alice with uid 0 in the credential acts as alice.
  cred.set_jwt(jwt::Sign(kKey, {"alice", 100, 2000}));
  auto r = AuthenticateCredential(kClusterKey, v, cred, "body", 100, &scratch);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->uid(), 1001u);
  // jwt_user without a token is refused rather than ignored.
  pb::Credential hmac = kClusterKey.Sign(1001, 1001, "body", 100);
  hmac.set_jwt_user("root");
  EXPECT_FALSE(AuthenticateCredential(kClusterKey, v, hmac, "body", 100, &scratch).ok());
}

TEST(JwtAuth, RejectsWhenJwtNotConfigured) {
  auto v = TestVerifier();
  v.key.clear();
  pb::Credential cred;
  cred.set_jwt(jwt::Sign(kKey, {"alice", 100, 2000}));
  pb::Credential scratch;
  auto r = AuthenticateCredential(kClusterKey, v, cred, "", 150, &scratch);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kAuthFailure);
}

TEST(JwtAuth, UnknownTokenUserRejected) {
  auto v = TestVerifier();
  pb::Credential cred;
  cred.set_jwt(jwt::Sign(kKey, {"mallory", 100, 2000}));
  pb::Credential scratch;
  EXPECT_EQ(AuthenticateCredential(kClusterKey, v, cred, "", 150, &scratch).error(),
            "token user mallory does not exist");
}

TEST(JwtAuth, ImpersonationOnlyForRootAndSlurmUser) {
  auto v = TestVerifier();
  pb::Credential scratch;
  for (const char* admin : {"root", "slurm"}) {
    pb::Credential cred;
    cred.set_jwt(jwt::Sign(kKey, {admin, 100, 2000}));
    cred.set_jwt_user("alice");
    auto r = AuthenticateCredential(kClusterKey, v, cred, "", 150, &scratch);
    ASSERT_TRUE(r.ok()) << admin << ": " << r.error();
    EXPECT_EQ((*r)->uid(), 1001u);
    cred.set_jwt_user("nobody-here");
    EXPECT_FALSE(AuthenticateCredential(kClusterKey, v, cred, "", 150, &scratch).ok());
  }
  pb::Credential cred;
  cred.set_jwt(jwt::Sign(kKey, {"alice", 100, 2000}));
  cred.set_jwt_user("bob");
  auto r = AuthenticateCredential(kClusterKey, v, cred, "", 150, &scratch);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kAuthFailure);
  cred.set_jwt_user("root");
  EXPECT_FALSE(AuthenticateCredential(kClusterKey, v, cred, "", 150, &scratch).ok());
  cred.set_jwt_user("alice");  // naming oneself is fine
  auto self = AuthenticateCredential(kClusterKey, v, cred, "", 150, &scratch);
  ASSERT_TRUE(self.ok());
  EXPECT_EQ((*self)->uid(), 1001u);
}

TEST(JwtSettings, Parses) {
  auto s = ParseJwtSettings("auth/jwt", "jwt_key=/etc/k,disable_token_creation", "/var/spool");
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.key_path, "/etc/k");
  EXPECT_TRUE(s.disable_token_creation);
  auto d = ParseJwtSettings("auth/foo, auth/jwt", "max_token_lifespan=600", "/var/spool");
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.key_path, "/var/spool/jwt_hs256.key");
  EXPECT_EQ(d.max_token_lifespan, 600);
  EXPECT_FALSE(ParseJwtSettings("", "", "/x").enabled);
}

TEST(JwtSettings, SlurmdbdConfKeys) {
  auto conf = dbd::ParseDbdConf(
      "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key=/etc/slurm/jwt_hs256.key\n", "dbd.conf");
  ASSERT_TRUE(conf.ok()) << conf.error();
  EXPECT_TRUE(conf->warnings.empty());
  auto s = ParseJwtSettings(conf->auth_alt_types, conf->auth_alt_params, "");
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.key_path, "/etc/slurm/jwt_hs256.key");
  // slurmdbd has no StateSaveLocation: without jwt_key= there is no key to load.
  auto none = ParseJwtSettings("auth/jwt", "", "");
  auto v = LoadJwtVerifier(none, 0);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().find("jwt_key"), std::string::npos);
  EXPECT_TRUE(LoadJwtVerifier(ParseJwtSettings("", "", ""), 0)->key.empty());
}

TEST(IssueToken, Rules) {
  JwtSettings settings = ParseJwtSettings("auth/jwt", "", "/x");
  auto v = TestVerifier();
  TokenPolicy p;
  p.settings = &settings;
  p.key = &v.key;
  p.caller_name = "alice";
  p.lookup = v.lookup;
  auto own = IssueToken(p, "", 0, 1000);
  ASSERT_TRUE(own.ok()) << own.error();
  auto c = jwt::Verify(kKey, *own, 1001);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->user, "alice");
  EXPECT_EQ(c->exp, 1000 + kDefaultTokenLifespan);
  EXPECT_EQ(jwt::Verify(kKey, *IssueToken(p, "alice", 60, 1000), 1001)->exp, 1060);
  auto other = IssueToken(p, "bob", 0, 1000);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), ErrorCode::kAccessDenied);
  p.caller_is_admin = true;
  EXPECT_TRUE(IssueToken(p, "bob", 0, 1000).ok());
  EXPECT_EQ(IssueToken(p, "nosuchuser", 0, 1000).error(), "Invalid user id");
  // disable_token_creation: only admins.
  settings.disable_token_creation = true;
  EXPECT_TRUE(IssueToken(p, "", 0, 1000).ok());
  p.caller_is_admin = false;
  EXPECT_EQ(IssueToken(p, "", 0, 1000).status().code(), ErrorCode::kAccessDenied);
  settings.disable_token_creation = false;
  // max_token_lifespan caps users.
  settings.max_token_lifespan = 100;
  EXPECT_EQ(jwt::Verify(kKey, *IssueToken(p, "", 5000, 1000), 1001)->exp, 1100);
  // Not configured.
  std::string empty;
  p.key = &empty;
  EXPECT_EQ(IssueToken(p, "", 0, 1000).status().code(), ErrorCode::kDisabled);
  // A token cannot mint tokens.
  p.key = &v.key;
  p.caller_used_token = true;
  EXPECT_FALSE(IssueToken(p, "", 0, 1000).ok());
}

}  // namespace
}  // namespace shoal
