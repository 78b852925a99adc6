// PlanController (config changes reconfigure, never restart), PlanToken (signed, refreshed),
// PlanRestApi, PlanAccounting, PlanLoginSet.
#include <gtest/gtest.h>

#include "common/jwt.h"
#include "common/slurm_conf.h"
#include "operator/model/desired.h"
#include "operator/model/plan.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

constexpr int64_t kNow = 1767323045;
using K = Action::Kind;

Json Cr(const std::string& kind, const std::string& name, Json spec) {
  return Json{{"apiVersion", "shoal.dev/v1alpha1"},
              {"kind", kind},
              {"metadata", {{"name", name}, {"namespace", "hpc"}, {"uid", "u"}, {"generation", 1}}},
              {"spec", spec}};
}

std::vector<const Action*> Of(const Plan& p, K kind) {
  std::vector<const Action*> out;
  for (const Action& a : p.actions)
    if (a.kind == kind) out.push_back(&a);
  return out;
}

const Json* Applied(const Plan& p, const std::string& kind, const std::string& name) {
  for (const Action* a : Of(p, K::kApply))
    if (Str(a->object, "kind") == kind && Str(a->object, "metadata.name") == name)
      return &a->object;
  return nullptr;
}

Json Running(Json pod) {
  pod["status"] = {{"phase", "Running"},
                   {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}};
  return pod;
}

// Applies a plan's status update to the CR, as the API server would.
void Commit(const Plan& p, Json* cr) {
  for (const Action* a : Of(p, K::kUpdateStatus)) (*cr)["status"] = a->object["status"];
}

TEST(PlanController, CreatesObjectsThenReconfiguresWithoutRestart) {
  Json cr =
      Cr("Controller", "c", {{"clusterName", "lab"}, {"configFileRefs", {{{"name", "extra"}}}}});
  Observed o;
  o.cr = cr;
  o.now = kNow;
  o.related["ConfigMap/extra"] = {{"data", {{"gres.conf", "NodeName=w-0 Name=gpu"}}}};
  o.related["NodeSets"] = Json::array({Cr("NodeSet", "w", {{"controllerRef", {{"name", "c"}}}})});
  Plan p = PlanController(o);
  const Json* cm = Applied(p, "ConfigMap", "c-config");
  ASSERT_NE(cm, nullptr);
  EXPECT_EQ((*cm)["data"]["gres.conf"], "NodeName=w-0 Name=gpu");
  std::string conf = (*cm)["data"]["slurm.conf"];
  auto parsed = ParseSlurmConf(conf, "slurm.conf", nullptr, nullptr);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->partitions.at(0).name, "w");
  EXPECT_NE(Applied(p, "Service", "c"), nullptr);
  EXPECT_NE(Applied(p, "Service", "c-headless"), nullptr);
  EXPECT_NE(Applied(p, "PersistentVolumeClaim", "c-state"), nullptr);
  ASSERT_NE(Applied(p, "Pod", "c-0"), nullptr);
  EXPECT_TRUE(Of(p, K::kReconfigure).empty());  // a new pod reads the file at start
  Commit(p, &o.cr);
  Json pod = Running(*Applied(p, "Pod", "c-0"));
  o.pods = {pod};
  o.owned = {*cm};

  // Steady state: nothing to do but apply (idempotent), no reconfigure, no delete.
  p = PlanController(o);
  EXPECT_TRUE(Of(p, K::kReconfigure).empty());
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  EXPECT_EQ(Applied(p, "Pod", "c-0"), nullptr);
  Commit(p, &o.cr);
  EXPECT_EQ(o.cr["status"]["leader"], "c-0");

  // A config-only change: the ConfigMap changes, the pod is not touched, reconfigure follows
  // once the new ConfigMap exists, and once more after the kubelet sync period.
  o.cr["spec"]["extraConf"] = "MaxJobCount=777";
  p = PlanController(o);
  const Json* cm2 = Applied(p, "ConfigMap", "c-config");
  ASSERT_NE(cm2, nullptr);
  EXPECT_NE(std::string((*cm2)["data"]["slurm.conf"]).find("MaxJobCount=777"), std::string::npos);
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  EXPECT_EQ(Applied(p, "Pod", "c-0"), nullptr);
  Commit(p, &o.cr);
  o.owned = {*cm2};
  o.now += 2;
  p = PlanController(o);
  EXPECT_EQ(Of(p, K::kReconfigure).size(), 1u);
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  Commit(p, &o.cr);
  o.now += 10;
  p = PlanController(o);
  EXPECT_TRUE(Of(p, K::kReconfigure).empty());
  EXPECT_GT(p.requeue_after_s, 0);
  Commit(p, &o.cr);
  o.now += 70;
  p = PlanController(o);
  EXPECT_EQ(Of(p, K::kReconfigure).size(), 1u);
  Commit(p, &o.cr);
  p = PlanController(o);
  EXPECT_TRUE(Of(p, K::kReconfigure).empty());

  // An image change replaces the pod (state lives on the volume); a lost pod is recreated.
  o.cr["spec"]["image"] = "shoal/controller:2";
  p = PlanController(o);
  ASSERT_EQ(Of(p, K::kDelete).size(), 1u);
  EXPECT_EQ(Of(p, K::kDelete)[0]->object["metadata"]["name"], "c-0");
  o.pods.clear();
  p = PlanController(o);
  ASSERT_NE(Applied(p, "Pod", "c-0"), nullptr);
  EXPECT_NE(Applied(p, "Pod", "c-0")->dump().find("c-state"), std::string::npos);
}

TEST(PlanController, MissingConfigMapWaitsWithoutTouchingConfig) {
  Observed o;
  o.cr = Cr("Controller", "c", {{"clusterName", "lab"}, {"prologScriptRefs", {{{"name", "pro"}}}}});
  o.now = kNow;
  Plan p = PlanController(o);
  EXPECT_TRUE(Of(p, K::kApply).empty());
  ASSERT_EQ(Of(p, K::kUpdateStatus).size(), 1u);
  EXPECT_EQ(Of(p, K::kUpdateStatus)[0]->object["status"]["conditions"][0]["reason"],
            "MissingReference");
  o.related["ConfigMap/pro"] = {{"data", {{"prolog.sh", "#!/bin/sh\nexit 0\n"}}}};
  p = PlanController(o);
  const Json* cm = Applied(p, "ConfigMap", "c-config");
  ASSERT_NE(cm, nullptr);
  EXPECT_NE(std::string((*cm)["data"]["slurm.conf"]).find("Prolog=/etc/shoal/conf/prolog.sh"),
            std::string::npos);
}

TEST(PlanController, HaCreatesTwoPods) {
  Observed o;
  o.cr = Cr("Controller", "c", {{"clusterName", "lab"}, {"ha", {{"enabled", true}}}});
  o.now = kNow;
  Plan p = PlanController(o);
  EXPECT_NE(Applied(p, "Pod", "c-0"), nullptr);
  EXPECT_NE(Applied(p, "Pod", "c-1"), nullptr);
  EXPECT_EQ((*Applied(p, "PersistentVolumeClaim", "c-state"))["spec"]["accessModes"][0],
            "ReadWriteMany");
}

TEST(PlanToken, SignsAndRefreshesBeforeExpiry) {
  Observed o;
  o.cr = Cr("Token", "t",
            {{"jwtKeyRef", {{"name", "jwt"}, {"key", "jwt.key"}}},
             {"username", "alice"},
             {"lifetime", "10m"}});
  o.now = kNow;
  Plan p = PlanToken(o);
  EXPECT_TRUE(Of(p, K::kApply).empty());  // no key: wait
  EXPECT_GT(p.requeue_after_s, 0);
  o.related["jwtKey"] = "0123456789abcdef0123456789abcdef";
  p = PlanToken(o);
  const Json* secret = Applied(p, "Secret", "t");
  ASSERT_NE(secret, nullptr);
  auto token = Base64Decode(std::string((*secret)["data"]["auth-token"]));
  ASSERT_TRUE(token.has_value());
  auto claims = jwt::Verify("0123456789abcdef0123456789abcdef", *token, kNow);
  ASSERT_TRUE(claims.ok()) << claims.error();
  EXPECT_EQ(claims->user, "alice");
  EXPECT_EQ(claims->iat, kNow);
  EXPECT_EQ(claims->exp, kNow + 600);
  EXPECT_EQ(p.requeue_after_s, 600 - 120);  // refresh with a fifth of the lifetime left
  Commit(p, &o.cr);
  EXPECT_EQ(o.cr["status"]["issuedAt"], FormatRfc3339(kNow));
  o.owned = {*secret};
  o.now = kNow + 300;
  p = PlanToken(o);
  EXPECT_EQ(Applied(p, "Secret", "t"), nullptr);  // still fresh
  o.now = kNow + 481;
  p = PlanToken(o);
  ASSERT_NE(Applied(p, "Secret", "t"), nullptr);
  auto renewed = jwt::Verify(
      "0123456789abcdef0123456789abcdef",
      *Base64Decode(std::string((*Applied(p, "Secret", "t"))["data"]["auth-token"])), o.now);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed->exp, kNow + 481 + 600);
}

TEST(PlanRestApi, PodsServiceAndScaleDown) {
  Observed o;
  o.cr = Cr("RestApi", "r", {{"controllerRef", {{"name", "c"}}}, {"replicas", 2}});
  o.now = kNow;
  Plan p = PlanRestApi(o);
  EXPECT_TRUE(Of(p, K::kApply).empty());  // controller unknown: wait
  o.related["Controller"] =
      Cr("Controller", "c", {{"clusterName", "lab"}, {"jwtKeyRef", {{"name", "jwt"}}}});
  p = PlanRestApi(o);
  ASSERT_NE(Applied(p, "Pod", "r-0"), nullptr);
  ASSERT_NE(Applied(p, "Pod", "r-1"), nullptr);
  EXPECT_NE(Applied(p, "Service", "r"), nullptr);
  EXPECT_NE(Applied(p, "Pod", "r-0")->dump().find("\"secretName\":\"jwt\""), std::string::npos);
  o.pods = {Running(*Applied(p, "Pod", "r-0")), Running(*Applied(p, "Pod", "r-1"))};
  o.cr["spec"]["replicas"] = 1;
  p = PlanRestApi(o);
  ASSERT_EQ(Of(p, K::kDelete).size(), 1u);
  EXPECT_EQ(Of(p, K::kDelete)[0]->object["metadata"]["name"], "r-1");
}

TEST(PlanAccounting, ConfigSecretFromPasswordSecret) {
  Observed o;
  o.cr = Cr("Accounting", "a",
            {{"storageConfig",
              {{"host", "db"},
               {"username", "slurm"},
               {"passwordKeyRef", {{"name", "dbpw"}, {"key", "password"}}}}}});
  o.now = kNow;
  Plan p = PlanAccounting(o);
  EXPECT_TRUE(Of(p, K::kApply).empty());
  o.related["Secret/dbpw"] = {{"data", {{"password", Base64Encode("pw1")}}}};
  p = PlanAccounting(o);
  const Json* s = Applied(p, "Secret", "a-config");
  ASSERT_NE(s, nullptr);
  std::string conf = *Base64Decode(std::string((*s)["data"]["slurmdbd.conf"]));
  EXPECT_NE(conf.find("StoragePass=pw1"), std::string::npos);
  EXPECT_NE(Applied(p, "Pod", "a-0"), nullptr);
  EXPECT_NE(Applied(p, "Service", "a"), nullptr);
  // A password change replaces the pod (shoaldbd reads its config at start).
  o.pods = {Running(*Applied(p, "Pod", "a-0"))};
  EXPECT_TRUE(Of(PlanAccounting(o), K::kDelete).empty());
  o.related["Secret/dbpw"] = {{"data", {{"password", Base64Encode("pw2")}}}};
  EXPECT_EQ(Of(PlanAccounting(o), K::kDelete).size(), 1u);
}

TEST(PlanLoginSet, SurgeReplacesOldTemplate) {
  Observed o;
  o.cr = Cr("LoginSet", "l", {{"controllerRef", {{"name", "c"}}}, {"replicas", 1}});
  o.related["Controller"] = Cr("Controller", "c", {{"clusterName", "lab"}});
  o.now = kNow;
  Plan p = PlanLoginSet(o);
  EXPECT_NE(Applied(p, "Service", "l"), nullptr);
  EXPECT_NE(Applied(p, "ConfigMap", "l-sshd"), nullptr);
  const Json* first = nullptr;
  for (const Action* a : Of(p, K::kApply))
    if (a->object["kind"] == "Pod") first = &a->object;
  ASSERT_NE(first, nullptr);
  Json old_pod = Running(*first);
  o.pods = {old_pod};
  EXPECT_TRUE(Of(PlanLoginSet(o), K::kDelete).empty());
  // New template: new pod first, the old one goes only once the new one is ready.
  o.cr["spec"]["extraSshdConfig"] = "MaxSessions 4";
  p = PlanLoginSet(o);
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  const Json* fresh = nullptr;
  for (const Action* a : Of(p, K::kApply))
    if (a->object["kind"] == "Pod") fresh = &a->object;
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE((*fresh)["metadata"]["name"], old_pod["metadata"]["name"]);
  o.pods = {old_pod, Running(*fresh)};
  p = PlanLoginSet(o);
  ASSERT_EQ(Of(p, K::kDelete).size(), 1u);
  EXPECT_EQ(Of(p, K::kDelete)[0]->object["metadata"]["name"], old_pod["metadata"]["name"]);
}

}  // namespace
}  // namespace shoal::op
