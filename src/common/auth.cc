#include "common/auth.h"

#include <fcntl.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/rpc.h"

namespace shoal {
namespace {

constexpr size_t kKeyBytes = 32;

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

Result<std::string> ReadSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error(ErrorCode::kAuthFailure, path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Error(ErrorCode::kAuthFailure, path + ": " + std::strerror(errno));
  }
  // Group read is allowed (a Kubernetes Secret volume with fsGroup is 0440, like MUNGE's
  // tolerance for a group-readable key); group write and any access by others are not.
  if (st.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) {
    ::close(fd);
    return Error(ErrorCode::kAuthFailure,
                 path + " is writable by group or accessible by others: chmod 600 " + path);
  }
  std::string data(4096, '\0');
  ssize_t n = ::read(fd, data.data(), data.size());
  ::close(fd);
  if (n < 0) return Error(ErrorCode::kAuthFailure, path + ": " + std::strerror(errno));
  data.resize(static_cast<size_t>(n));
  return data;
}

// Kernel randomness (getrandom(2)): no library state to initialize, which keeps a command's
// start-up short (OpenSSL 3's DRBG and provider setup cost more than the whole request).
bool RandomBytes(unsigned char* out, size_t n) {
  while (n > 0) {
    ssize_t got = ::getrandom(out, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

// Nettle rather than OpenSSL: the same primitives (SHA-256, HMAC-SHA256) without OpenSSL 3's
// per-process provider initialization, which dominated the CPU time of a command.
std::string Sha256(std::string_view data) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, data.size(), reinterpret_cast<const uint8_t*>(data.data()));
  std::string out(SHA256_DIGEST_SIZE, '\0');
  sha256_digest(&ctx, SHA256_DIGEST_SIZE, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

Result<ClusterKey> ClusterKey::Load(const std::string& path) {
  auto data = ReadSmallFile(path);
  if (!data) return data.status();
  if (data->size() < 16)
    return Error(ErrorCode::kAuthFailure, path + ": key too short (need at least 16 bytes)");
  return ClusterKey(std::move(*data));
}

Status ClusterKey::Generate(const std::string& path) {
  unsigned char bytes[kKeyBytes];
  if (!RandomBytes(bytes, sizeof(bytes)))
    return Error(ErrorCode::kInternal, "no randomness for the key");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Error(ErrorCode::kIoError, path + ": " + std::strerror(errno));
  ssize_t w = ::write(fd, bytes, sizeof(bytes));
  ::fsync(fd);
  ::close(fd);
  if (w != static_cast<ssize_t>(sizeof(bytes)))
    return Error(ErrorCode::kIoError, path + ": short write");
  return Status::Ok();
}

std::string ClusterKey::Mac(const pb::Credential& cred) const {
  std::string msg = "shoal-cred-v1";
  PutU64(msg, cred.uid());
  PutU64(msg, cred.gid());
  PutU64(msg, static_cast<uint64_t>(cred.expires()));
  PutU64(msg, cred.nonce().size());
  msg += cred.nonce();
  PutU64(msg, cred.body_sha256().size());
  msg += cred.body_sha256();
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, key_.size(), reinterpret_cast<const uint8_t*>(key_.data()));
  hmac_sha256_update(&ctx, msg.size(), reinterpret_cast<const uint8_t*>(msg.data()));
  std::string out(SHA256_DIGEST_SIZE, '\0');
  hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

pb::Credential ClusterKey::Sign(uint32_t uid, uint32_t gid, std::string_view body,
                                int64_t now) const {
  return SignDigest(uid, gid, Sha256(body), now);
}

pb::Credential ClusterKey::SignDigest(uint32_t uid, uint32_t gid, std::string body_sha256,
                                      int64_t now) const {
  pb::Credential cred;
  cred.set_uid(uid);
  cred.set_gid(gid);
  cred.set_expires(now + kCredentialTtlSeconds);
  unsigned char nonce[8] = {};
  RandomBytes(nonce, sizeof(nonce));  // getrandom(2) does not fail for 8 bytes once seeded
  cred.set_nonce(std::string(reinterpret_cast<char*>(nonce), sizeof(nonce)));
  cred.set_body_sha256(std::move(body_sha256));
  cred.set_hmac(Mac(cred));
  return cred;
}

Status ClusterKey::Verify(const pb::Credential& cred, std::string_view body, int64_t now) const {
  if (cred.hmac().empty()) return Error(ErrorCode::kAuthFailure, "missing credential");
  std::string expect = Mac(cred);
  if (expect.size() != cred.hmac().size() ||
      !nettle_memeql_sec(expect.data(), cred.hmac().data(), expect.size()))
    return Error(ErrorCode::kAuthFailure, "invalid credential signature");
  if (cred.expires() < now) return Error(ErrorCode::kAuthFailure, "credential expired");
  if (cred.expires() > now + 2 * kCredentialTtlSeconds)
    return Error(ErrorCode::kAuthFailure, "credential valid too far in the future");
  if (cred.body_sha256() != Sha256(body))
    return Error(ErrorCode::kAuthFailure, "credential does not match the request");
  return Status::Ok();
}

Result<pb::Credential> CredentialSource::For(std::string_view body) {
  int64_t now = ::time(nullptr);
  if (!key_tried_) {
    key_tried_ = true;
    // Only try the key when we can read it; an unreadable key is the normal case for users.
    if (::access(key_path_.c_str(), R_OK) == 0) {
      auto key = ClusterKey::Load(key_path_);
      if (key) key_ = std::move(*key);
    }
  }
  if (key_) return key_->Sign(::getuid(), ::getgid(), body, now);
  auto client = RpcClient::Connect("unix:" + agent_socket_, 5000);
  if (!client)
    return Error(ErrorCode::kAuthFailure,
                 "cannot reach the auth agent at " + agent_socket_ + ": " + client.error());
  pb::Request req;
  req.mutable_auth()->set_body_sha256(Sha256(body));
  auto resp = client->Call(req, pb::Credential(), 5000);
  if (!resp) return Error(ErrorCode::kAuthFailure, "auth agent: " + resp.error());
  if (resp->rc() != 0) return Error(ErrorCode::kAuthFailure, "auth agent: " + resp->error());
  return resp->auth().cred();
}

AuthPaths AuthPathsFor(const std::string& slurm_conf_path, const std::string& auth_info) {
  AuthPaths paths;
  // Absolute, so a daemon started with "-f etc/slurm.conf" hands its children a usable path.
  std::string conf = slurm_conf_path;
  if (!conf.empty() && conf[0] != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd))) conf = std::string(cwd) + "/" + conf;
  }
  std::string dir = ".";
  if (auto slash = conf.rfind('/'); slash != std::string::npos)
    dir = conf.substr(0, slash == 0 ? 1 : slash);
  paths.key_file = dir + "/slurm.key";
  paths.agent_socket = "/run/shoal/auth.sock";
  // AuthInfo is a comma-separated list of key=value options.
  size_t pos = 0;
  while (pos <= auth_info.size()) {
    size_t comma = auth_info.find(',', pos);
    std::string item =
        auth_info.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.rfind("socket=", 0) == 0) paths.agent_socket = item.substr(7);
    if (item.rfind("key=", 0) == 0) paths.key_file = item.substr(4);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return paths;
}

}  // namespace shoal
