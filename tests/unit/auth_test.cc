#include "common/auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/name_service.h"

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

namespace shoal {
namespace {

TEST(NameService, ParsesGetentLines) {
  auto u = ParsePasswdLine("alice:x:1001:1002:Alice A,room 4:/home/alice:/bin/zsh\n");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->name, "alice");
  EXPECT_EQ(u->uid, 1001u);
  EXPECT_EQ(u->gid, 1002u);
  EXPECT_EQ(u->gecos, "Alice A,room 4");
  EXPECT_EQ(u->home, "/home/alice");
  EXPECT_EQ(u->shell, "/bin/zsh");
  EXPECT_FALSE(ParsePasswdLine("alice:x:1001:1002:/home/alice:/bin/zsh"));  // 6 fields
  EXPECT_FALSE(ParsePasswdLine("alice:x:-1:1002::/h:/s"));
  EXPECT_FALSE(ParsePasswdLine("alice:x:4294967296:1::/h:/s"));
  EXPECT_FALSE(ParsePasswdLine(":x:1:1::/h:/s"));
  auto g = ParseGroupLine("staff:x:50:alice,bob\n");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->first, "staff");
  EXPECT_EQ(g->second, 50u);
  EXPECT_FALSE(ParseGroupLine("staff:x:fifty:"));
  EXPECT_EQ(ParseAhostsFirst("10.1.2.3      STREAM ctl\n10.1.2.3 DGRAM\n"), "10.1.2.3");
  EXPECT_EQ(ParseAhostsFirst("::1 STREAM localhost\n"), "::1");
  EXPECT_FALSE(ParseAhostsFirst(""));
}

// The fallback asks the real getent, which goes through nsswitch.conf.
TEST(NameService, GetentFallbackFindsWhatGlibcFinds) {
  auto out = RunGetent({"passwd", "0"});
  ASSERT_TRUE(out);
  auto root = ParsePasswdLine(*out);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->name, UserById(0)->name);
  EXPECT_FALSE(RunGetent({"passwd", "no-such-user-shoal"}));
  auto localhost = RunGetent({"ahosts", "localhost"});
  ASSERT_TRUE(localhost);
  EXPECT_TRUE(ParseAhostsFirst(*localhost));
}

TEST(NameService, DynamicProgramsUseGlibcAsIs) {
  EXPECT_FALSE(LinkedStatically());  // this test is linked dynamically
  UseBuiltinNameSources();           // a no-op here
  auto me = UserById(::getuid());
  ASSERT_TRUE(me);
  EXPECT_EQ(UserByName(me->name)->uid, ::getuid());
  EXPECT_FALSE(UserByName("no-such-user-shoal"));
  EXPECT_FALSE(UserByName(""));
  EXPECT_TRUE(GroupNameById(::getgid()));
  EXPECT_FALSE(HostAddressFallback("localhost"));  // only for static programs
}

}  // namespace
}  // namespace shoal
