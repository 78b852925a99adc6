// Desired login and accounting pods: what the end-to-end run with the real sshd and shoaldbd
// showed they need (tests/integration/test_operator_login_acct.py).
#include <gtest/gtest.h>

#include <string>

#include "operator/model/crd_types.h"
#include "operator/model/desired.h"

namespace shoal::op {
namespace {

Json Cr(const std::string& kind, const std::string& name, Json spec) {
  return Json{
      {"apiVersion", "shoal.dev/v1alpha1"},
      {"kind", kind},
      {"metadata", {{"name", name}, {"namespace", "hpc"}, {"uid", "u-" + name}, {"generation", 1}}},
      {"spec", spec}};
}

const Json* Mount(const Json& container, const std::string& path) {
  for (const Json& m : container["volumeMounts"])
    if (m["mountPath"] == path) return &m;
  return nullptr;
}

const Json* Volume(const Json& pod, const std::string& name) {
  for (const Json& v : pod["spec"]["volumes"])
    if (v["name"] == name) return &v;
  return nullptr;
}

TEST(OperatorAccountingPod, CopiesTheConfigOwnerOnlyForShoaldbd) {
  Json a = Cr("Accounting", "a",
              {{"storageConfig",
                {{"host", "db"}, {"username", "u"}, {"passwordKeyRef", {{"name", "p"}}}}}});
  Json pod = AccountingPod(a, *ParseAccountingSpec(a));
  // shoaldbd reads /etc/shoal/dbd/slurmdbd.conf from an emptyDir...
  const Json& main = pod["spec"]["containers"][0];
  ASSERT_NE(Mount(main, "/etc/shoal/dbd"), nullptr);
  const Json* config = Volume(pod, (*Mount(main, "/etc/shoal/dbd"))["name"]);
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(config->contains("emptyDir")) << config->dump();
  // ...where an init container put the Secret's copy, mode 0600 and owned by the pod's user.
  ASSERT_EQ(pod["spec"]["initContainers"].size(), 1u);
  const Json& init = pod["spec"]["initContainers"][0];
  std::string cmd = init["command"].dump();
  EXPECT_NE(cmd.find("install -m 0600 /etc/shoal/dbd-secret/slurmdbd.conf "
                     "/etc/shoal/dbd/slurmdbd.conf"),
            std::string::npos)
      << cmd;
  const Json* secret = Volume(pod, (*Mount(init, "/etc/shoal/dbd-secret"))["name"]);
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ((*secret)["secret"]["secretName"], "a-config");
  // The init container is as restricted as the main one.
  EXPECT_EQ(init["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(init["securityContext"]["capabilities"]["drop"], Json::array({"ALL"}));
}

TEST(OperatorLoginPod, StartsSshdWithItsDirectoryKeysAndARestartedLoginDaemon) {
  Json l = Cr("LoginSet", "l", {{"controllerRef", {{"name", "c"}}}});
  Json pod = LoginPod(l, *ParseLoginSetSpec(l), "c.hpc.svc:6817", "key", "l-x-0");
  std::string sh = pod["spec"]["containers"][0]["command"][2];
  EXPECT_EQ(sh.find("mkdir -p -m 0755 /run/sshd && ssh-keygen -A"), 0u) << sh;
  EXPECT_NE(sh.find("while :; do shoalsackd -D --conf-server c.hpc.svc:6817 --key "),
            std::string::npos)
      << sh;
  EXPECT_NE(sh.find("& exec /usr/sbin/sshd -D -e"), std::string::npos) << sh;
}

TEST(OperatorLoginSshd, AdminRootPolicyIsNotOverriddenByTheMatchBlock) {
  Json l = Cr("LoginSet", "l",
              {{"controllerRef", {{"name", "c"}}},
               {"extraSshdConfig", "PermitRootLogin no"},
               {"rootSshAuthorizedKeys", "ssh-ed25519 AAAA root@x"}});
  Json cm = LoginSshdConfigMap(l, *ParseLoginSetSpec(l));
  std::string conf = cm["data"]["shoal.conf"];
  auto match = conf.find("Match User root");
  ASSERT_NE(match, std::string::npos) << conf;
  EXPECT_LT(conf.find("PermitRootLogin no"), match) << conf;
  // Inside the Match block (which overrides the global section) only root's keys file.
  EXPECT_EQ(conf.substr(match),
            "Match User root\n  AuthorizedKeysFile /etc/ssh/shoal/authorized_keys\n");
  EXPECT_EQ(cm["data"]["authorized_keys"], "ssh-ed25519 AAAA root@x");
}

}  // namespace
}  // namespace shoal::op
