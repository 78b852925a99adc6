#include "common/auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace shoal {
namespace {

ClusterKey TestKey(char fill = 'k') { return ClusterKey::FromBytes(std::string(32, fill)); }

TEST(Auth, SignedCredentialVerifies) {
  auto key = TestKey();
  auto cred = key.Sign(1000, 1000, "body", 100);
  EXPECT_TRUE(key.Verify(cred, "body", 100).ok());
}

TEST(Auth, TamperedUidIsRejected) {
  auto key = TestKey();
  auto cred = key.Sign(1000, 1000, "body", 100);
  cred.set_uid(0);
  auto s = key.Verify(cred, "body", 100);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kAuthFailure);
}

TEST(Auth, CredentialIsBoundToItsBody) {
  auto key = TestKey();
  auto cred = key.Sign(1000, 1000, "cancel my job", 100);
  EXPECT_FALSE(key.Verify(cred, "cancel another job", 100).ok());
}

TEST(Auth, ExpiredCredentialIsRejected) {
  auto key = TestKey();
  auto cred = key.Sign(1000, 1000, "b", 100);
  EXPECT_FALSE(key.Verify(cred, "b", 100 + kCredentialTtlSeconds + 1).ok());
}

TEST(Auth, OtherKeyIsRejected) {
  auto cred = TestKey('a').Sign(0, 0, "b", 100);
  EXPECT_FALSE(TestKey('b').Verify(cred, "b", 100).ok());
  pb::Credential empty;
  EXPECT_FALSE(TestKey('a').Verify(empty, "b", 100).ok());
}

TEST(Auth, DigestSigningMatchesBodySigning) {
  auto key = TestKey();
  auto cred = key.SignDigest(5, 6, Sha256("payload"), 100);
  EXPECT_TRUE(key.Verify(cred, "payload", 100).ok());
}

TEST(Auth, KeyFileMustBePrivate) {
  char dir[] = "/tmp/shoal-auth-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/slurm.key";
  ASSERT_TRUE(ClusterKey::Generate(path).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(ClusterKey::Load(path).ok());
  EXPECT_FALSE(ClusterKey::Generate(path).ok()) << "must not overwrite an existing key";
  ::chmod(path.c_str(), 0644);
  auto loaded = ClusterKey::Load(path);
  EXPECT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().find("chmod 600"), std::string::npos);
  ::chmod(path.c_str(), 0660);
  EXPECT_FALSE(ClusterKey::Load(path).ok()) << "group-writable";
  // Group-readable is accepted: a Kubernetes Secret volume with an fsGroup is mode 0440.
  ::chmod(path.c_str(), 0440);
  EXPECT_TRUE(ClusterKey::Load(path).ok());
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(Auth, PathsFromAuthInfo) {
  auto p = AuthPathsFor("/etc/slurm/slurm.conf", "");
  EXPECT_EQ(p.key_file, "/etc/slurm/slurm.key");
  EXPECT_EQ(p.agent_socket, "/run/shoal/auth.sock");
  p = AuthPathsFor("/x/slurm.conf", "socket=/tmp/a.sock,key=/k/key");
  EXPECT_EQ(p.key_file, "/k/key");
  EXPECT_EQ(p.agent_socket, "/tmp/a.sock");
}

}  // namespace
}  // namespace shoal

// FIPS 180-2 known answers: the digest credentials bind bodies with.
TEST(Auth, Sha256KnownAnswers) {
  auto hex = [](const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
      out += digits[c >> 4];
      out += digits[c & 15];
    }
    return out;
  };
  EXPECT_EQ(hex(shoal::Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(shoal::Sha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
