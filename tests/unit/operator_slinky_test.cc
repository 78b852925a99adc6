// Slinky compatibility (src/operator/model/slinky.h): resources as SchedMD Slinky's `slurm`
// chart renders them (slinky.slurm.net/v1beta1, default values) give the same objects as their
// shoal.dev equivalents; fields Shoal cannot honour are rejected with the field named; status
// comes back in Slinky's shape.
#include <gtest/gtest.h>

#include "common/slurm_conf.h"
#include "operator/kube/client.h"
#include "operator/manager.h"
#include "operator/model/plan.h"
#include "operator/model/slinky.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

constexpr int64_t kNow = 1767323045;
using K = Action::Kind;

// ---- Slinky's chart output (release "slurm" in namespace "slurm", one NodeSet and one
// LoginSet named "slinky", accounting on), as JSON.

const char* kSlinkyController = R"({
  "apiVersion": "slinky.slurm.net/v1beta1", "kind": "Controller",
  "metadata": {"name": "slurm", "namespace": "slurm", "uid": "u-ctl", "generation": 1,
               "labels": {"app.kubernetes.io/name": "slurm", "app.kubernetes.io/instance": "slurm"}},
  "spec": {
    "accountingRef": {"name": "slurm"},
    "slurmKeyRef": {"name": "slurm-auth-slurm", "key": "slurm.key"},
    "jwtKeyRef": {"name": "slurm-auth-jwt", "key": "jwt.key"},
    "external": false,
    "extraConf": "PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED",
    "configFileRefs": [], "prologScriptRefs": [], "epilogScriptRefs": [],
    "prologSlurmctldScriptRefs": [], "epilogSlurmctldScriptRefs": [],
    "slurmctld": {"image": "ghcr.io/slinkyproject/slurmctld:26.05-ubuntu26.04",
                  "imagePullPolicy": "IfNotPresent", "args": [], "resources": {}},
    "inplaceReconfigure": false,
    "reconfigure": {"image": "ghcr.io/slinkyproject/slurmctld:26.05-ubuntu26.04",
                    "imagePullPolicy": "IfNotPresent", "resources": {}},
    "logfile": {"image": "docker.io/library/alpine:latest", "imagePullPolicy": "IfNotPresent",
                "resources": {}},
    "template": {"metadata": {"labels": {"app.kubernetes.io/name": "slurm"}},
                 "spec": {"resources": {}, "initContainers": [],
                          "nodeSelector": {"kubernetes.io/os": "linux"}, "affinity": {},
                          "tolerations": [], "imagePullSecrets": [], "priorityClassName": ""}},
    "ha": {"enabled": false, "backups": 1},
    "persistence": {"enabled": true, "existingClaim": "", "storageClassName": null,
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "4Gi"}}},
    "service": {"metadata": {}, "spec": {}},
    "metrics": {"enabled": false,
                "serviceMonitor": {"enabled": false, "annotations": {}, "labels": {},
                                   "interval": "30s", "scrapeTimeout": "25s",
                                   "endpoints": [{"path": "/metrics/jobs"}]}}}})";

const char* kSlinkyNodeSet = R"({
  "apiVersion": "slinky.slurm.net/v1beta1", "kind": "NodeSet",
  "metadata": {"name": "slurm-worker-slinky", "namespace": "slurm", "uid": "u-ns",
               "generation": 1},
  "spec": {
    "controllerRef": {"name": "slurm"},
    "partition": {"enabled": true},
    "scalingMode": "StatefulSet", "replicas": 2,
    "slurmd": {"image": "ghcr.io/slinkyproject/slurmd:26.05-ubuntu26.04",
               "imagePullPolicy": "IfNotPresent", "args": [], "env": [], "resources": {},
               "volumeMounts": []},
    "logfile": {"image": "docker.io/library/alpine:latest", "imagePullPolicy": "IfNotPresent",
                "resources": {}},
    "template": {"metadata": {"labels": {"app.kubernetes.io/instance": "slurm"}},
                 "spec": {"resources": {}, "initContainers": [],
                          "nodeSelector": {"kubernetes.io/os": "linux"}, "affinity": {},
                          "tolerations": [], "volumes": [], "imagePullSecrets": [],
                          "priorityClassName": "", "hostname": "slinky-"}},
    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"},
                       "scheduledUpdate": {}},
    "ordinalPadding": 0, "pinToNode": false, "workloadDisruptionProtection": true,
    "pruneSlurmNodeRecords": "Never", "oversubscribeNode": false}})";

const char* kSlinkyLoginSet = R"({
  "apiVersion": "slinky.slurm.net/v1beta1", "kind": "LoginSet",
  "metadata": {"name": "slurm-login-slinky", "namespace": "slurm", "uid": "u-ls",
               "generation": 1},
  "spec": {
    "controllerRef": {"name": "slurm"},
    "sssdConfRef": {"name": "slurm-sssd-conf", "key": "sssd.conf"},
    "replicas": 1,
    "login": {"image": "ghcr.io/slinkyproject/login:26.05-ubuntu26.04",
              "imagePullPolicy": "IfNotPresent", "env": [],
              "securityContext": {"privileged": false}, "resources": {}, "volumeMounts": []},
    "template": {"spec": {"resources": {}, "initContainers": [],
                          "nodeSelector": {"kubernetes.io/os": "linux"}, "affinity": {},
                          "tolerations": [], "volumes": [], "imagePullSecrets": [],
                          "priorityClassName": ""}},
    "initconf": {"image": "docker.io/library/alpine:latest", "imagePullPolicy": "IfNotPresent",
                 "resources": {}},
    "service": {"metadata": {}, "spec": {"type": "LoadBalancer"}}}})";

const char* kSlinkyRestApi = R"({
  "apiVersion": "slinky.slurm.net/v1beta1", "kind": "RestApi",
  "metadata": {"name": "slurm", "namespace": "slurm", "uid": "u-ra", "generation": 1},
  "spec": {
    "controllerRef": {"name": "slurm"}, "replicas": 1,
    "slurmrestd": {"image": "ghcr.io/slinkyproject/slurmrestd:26.05-ubuntu26.04",
                   "imagePullPolicy": "IfNotPresent", "env": [], "args": [], "resources": {}},
    "template": {"spec": {"resources": {}, "initContainers": [],
                          "nodeSelector": {"kubernetes.io/os": "linux"}, "affinity": {},
                          "tolerations": [], "imagePullSecrets": [], "priorityClassName": ""}},
    "service": {"metadata": {}, "spec": {}}}})";

const char* kSlinkyAccounting = R"({
  "apiVersion": "slinky.slurm.net/v1beta1", "kind": "Accounting",
  "metadata": {"name": "slurm", "namespace": "slurm", "uid": "u-acct", "generation": 1},
  "spec": {
    "slurmKeyRef": {"name": "slurm-auth-slurm", "key": "slurm.key"},
    "jwtKeyRef": {"name": "slurm-auth-jwt", "key": "jwt.key"},
    "slurmdbd": {"image": "ghcr.io/slinkyproject/slurmdbd:26.05-ubuntu26.04",
                 "imagePullPolicy": "IfNotPresent", "args": [], "resources": {}},
    "template": {"spec": {"resources": {}, "initContainers": [],
                          "nodeSelector": {"kubernetes.io/os": "linux"}, "affinity": {},
                          "tolerations": [], "imagePullSecrets": [], "priorityClassName": ""}},
    "storageConfig": {"host": "mariadb", "port": 3306, "database": "slurm_acct_db",
                      "username": "slurm",
                      "passwordKeyRef": {"name": "mariadb-password", "key": "password"}},
    "service": {"metadata": {}, "spec": {}}}})";

const char* kSlinkyToken = R"({
  "apiVersion": "slinky.slurm.net/v1beta1", "kind": "Token",
  "metadata": {"name": "tok", "namespace": "slurm", "uid": "u-tok", "generation": 1},
  "spec": {"jwtHs256KeyRef": {"name": "slurm-auth-jwt", "key": "jwt.key"},
           "username": "slurm", "lifetime": "1h0m0s"}})";

// ---- their shoal.dev equivalents, written by hand.

Json Shoal(const std::string& kind, const std::string& name, const std::string& uid, Json spec) {
  return Json{
      {"apiVersion", "shoal.dev/v1alpha1"},
      {"kind", kind},
      {"metadata", {{"name", name}, {"namespace", "slurm"}, {"uid", uid}, {"generation", 1}}},
      {"spec", std::move(spec)}};
}

const Json kOsLinux = {{"nodeSelector", {{"kubernetes.io/os", "linux"}}}};

Json ShoalController() {
  return Shoal(
      "Controller", "slurm", "u-ctl",
      {{"clusterName", "slurm-slurm"},
       {"accountingRef", {{"name", "slurm"}}},
       {"slurmKeyRef", {{"name", "slurm-auth-slurm"}, {"key", "slurm.key"}}},
       {"jwtKeyRef", {{"name", "slurm-auth-jwt"}, {"key", "jwt.key"}}},
       // Slinky names the NodeSet, its feature and its partition after template.spec.hostname.
       {"extraConf",
        "NodeSet=slinky Feature=slinky\nPartitionName=slinky Nodes=slinky\n"
        "PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED"},
       {"image", "shoal/controller:latest"},
       {"imagePullPolicy", "IfNotPresent"},
       {"template",
        {{"metadata", {{"labels", {{"app.kubernetes.io/name", "slurm"}}}}}, {"spec", kOsLinux}}},
       {"persistence", {{"enabled", true}, {"size", "4Gi"}}}});
}

Json WorkerAntiAffinity() {
  return Json::parse(R"({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
      {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchExpressions": [
        {"key": "app.kubernetes.io/name", "operator": "In", "values": ["shoal-worker"]}]}}]}})");
}

Json ShoalNodeSet() {
  Json tspec = kOsLinux;
  tspec["affinity"] = WorkerAntiAffinity();
  return Shoal(
      "NodeSet", "slurm-worker-slinky", "u-ns",
      {{"controllerRef", {{"name", "slurm"}}},
       {"replicas", 2},
       {"scalingMode", "StatefulSet"},
       {"image", "shoal/worker:latest"},
       {"imagePullPolicy", "IfNotPresent"},
       {"template",
        {{"metadata", {{"labels", {{"app.kubernetes.io/instance", "slurm"}}}}}, {"spec", tspec}}},
       {"features", {"slinky"}},
       {"partition", {{"enabled", false}}},
       {"updateStrategy",
        {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", "25%"}}}}},
       {"workloadDisruptionProtection", true},
       {"pruneNodeRecords", "Never"}});
}

Json ShoalLoginSet() {
  return Shoal("LoginSet", "slurm-login-slinky", "u-ls",
               {{"controllerRef", {{"name", "slurm"}}},
                {"replicas", 1},
                {"image", "shoal/login:latest"},
                {"imagePullPolicy", "IfNotPresent"},
                {"template", {{"spec", kOsLinux}}},
                {"sssdConfRef", {{"name", "slurm-sssd-conf"}, {"key", "sssd.conf"}}},
                {"service", {{"type", "LoadBalancer"}}}});
}

Json ShoalRestApi() {
  return Shoal("RestApi", "slurm", "u-ra",
               {{"controllerRef", {{"name", "slurm"}}},
                {"replicas", 1},
                {"image", "shoal/restapi:latest"},
                {"imagePullPolicy", "IfNotPresent"},
                {"template", {{"spec", kOsLinux}}}});
}

Json ShoalAccounting() {
  return Shoal("Accounting", "slurm", "u-acct",
               {{"slurmKeyRef", {{"name", "slurm-auth-slurm"}, {"key", "slurm.key"}}},
                {"jwtKeyRef", {{"name", "slurm-auth-jwt"}, {"key", "jwt.key"}}},
                {"image", "shoal/accounting:latest"},
                {"imagePullPolicy", "IfNotPresent"},
                {"template", {{"spec", kOsLinux}}},
                {"storageConfig",
                 {{"host", "mariadb"},
                  {"port", 3306},
                  {"database", "slurm_acct_db"},
                  {"username", "slurm"},
                  {"passwordKeyRef", {{"name", "mariadb-password"}, {"key", "password"}}}}}});
}

Json ShoalToken() {
  return Shoal("Token", "tok", "u-tok",
               {{"jwtKeyRef", {{"name", "slurm-auth-jwt"}, {"key", "jwt.key"}}},
                {"username", "slurm"},
                {"lifetime", "1h0m0s"},
                {"refresh", true},
                {"secretRef", {{"name", "tok-jwt-slurm"}, {"key", "SLURM_JWT"}}}});
}

// ---- helpers

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

// The Kubernetes objects a plan makes or touches, without what tells the two API groups apart
// (the owner's apiVersion and so the spec hash).
std::vector<Json> Objects(const Plan& p) {
  std::vector<Json> out;
  for (const Action& a : p.actions) {
    if (a.kind == K::kUpdateStatus || a.kind == K::kEvent) continue;
    Json o = a.object;
    if (Json* anns = &o["metadata"]["annotations"]; anns->is_object())
      anns->erase(kSpecHashAnnotation);
    if (Json* refs = &o["metadata"]["ownerReferences"]; refs->is_array())
      for (Json& r : *refs) r["apiVersion"] = "-";
    out.push_back({{"action", KindName(a.kind)}, {"object", o}, {"node", a.node}});
  }
  return out;
}

Observed Base(const Json& cr) {
  Observed o;
  o.cr = cr;
  o.now = kNow;
  o.related["Secret/mariadb-password"] = {{"data", {{"password", Base64Encode("s3cret")}}}};
  o.related["jwtKey"] = "0123456789abcdef0123456789abcdef";
  return o;
}

Json Parse(const char* text) { return Json::parse(text); }

// A Slinky resource and its shoal.dev equivalent plan the same objects.
void ExpectSameObjects(const Observed& slinky, const Observed& shoal, const PlanFn& planner) {
  Plan a = PlanSlinky(slinky, planner, SlinkyOptions{});
  Plan b = planner(shoal);
  std::vector<Json> got = Objects(a), want = Objects(b);
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(got.size(), want.size()) << Json(got).dump(1) << "\n---\n" << Json(want).dump(1);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
  // Owned by the Slinky object.
  for (const Action* ap : Of(a, K::kApply)) {
    const Json& ref = ap->object["metadata"]["ownerReferences"][0];
    EXPECT_EQ(ref["apiVersion"], kSlinkyGroupVersion);
    EXPECT_EQ(ref["kind"], slinky.cr["kind"]);
    EXPECT_EQ(ref["uid"], slinky.cr["metadata"]["uid"]);
  }
}

// ---- kinds

TEST(Slinky, KindNames) {
  EXPECT_EQ(SlinkyKind("NodeSet"), "NodeSet.slinky.slurm.net");
  EXPECT_TRUE(IsSlinkyKind("NodeSet.slinky.slurm.net"));
  EXPECT_FALSE(IsSlinkyKind("NodeSet"));
  EXPECT_EQ(BaseKind("NodeSet.slinky.slurm.net"), "NodeSet");
  EXPECT_EQ(BaseKind("Pod"), "Pod");
  EXPECT_EQ(SlinkyKinds().size(), 6u);
  EXPECT_TRUE(IsSlinky(Parse(kSlinkyToken)));
  EXPECT_FALSE(IsSlinky(ShoalToken()));
  // The Kubernetes client routes each group to its own paths.
  for (const std::string& kind : SlinkyKinds()) {
    const kube::ResourceType* t = kube::LookupKind(kind);
    ASSERT_NE(t, nullptr) << kind;
    EXPECT_EQ(t->api_version, "slinky.slurm.net/v1beta1");
  }
  EXPECT_EQ(*kube::PathFor("NodeSet.slinky.slurm.net", "hpc", "cpu", "status"),
            "/apis/slinky.slurm.net/v1beta1/namespaces/hpc/nodesets/cpu/status");
  EXPECT_EQ(*kube::PathFor("NodeSet", "hpc", "cpu"),
            "/apis/shoal.dev/v1alpha1/namespaces/hpc/nodesets/cpu");
  EXPECT_EQ(kube::KindKey("slinky.slurm.net/v1beta1", "NodeSet"), "NodeSet.slinky.slurm.net");
  EXPECT_EQ(kube::KindKey("shoal.dev/v1alpha1", "NodeSet"), "NodeSet");
  EXPECT_EQ(kube::KindKey("v1", "Pod"), "Pod");
}

TEST(Slinky, WatchEventsEnqueueSlinkyKeys) {
  Json ns = Parse(kSlinkyNodeSet);
  auto keys = KeysForObject("NodeSet.slinky.slurm.net", ns);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].kind, "NodeSet.slinky.slurm.net");
  EXPECT_EQ(keys[1].kind, "Controller.slinky.slurm.net");
  EXPECT_EQ(keys[1].name, "slurm");
  Json pod{{"metadata",
            {{"name", "slurm-worker-slinky-0"},
             {"namespace", "slurm"},
             {"ownerReferences", Json::array({{{"apiVersion", "slinky.slurm.net/v1beta1"},
                                               {"kind", "NodeSet"},
                                               {"name", "slurm-worker-slinky"},
                                               {"controller", true}}})}}}};
  keys = KeysForObject("Pod", pod);
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].kind, "NodeSet.slinky.slurm.net");
  EXPECT_EQ(keys[0].name, "slurm-worker-slinky");
}

// ---- the chart's resources give the same objects as their shoal.dev equivalents

TEST(Slinky, ChartResourcesAreHonouredInFull) {
  for (const char* text : {kSlinkyController, kSlinkyNodeSet, kSlinkyLoginSet, kSlinkyRestApi,
                           kSlinkyAccounting, kSlinkyToken}) {
    SlinkyTranslation t = TranslateSlinky(Parse(text), Json::object(), SlinkyOptions{});
    std::string all;
    for (const auto& p : t.problems) all += p.field + ": " + p.why + "\n";
    EXPECT_TRUE(t.problems.empty()) << Str(t.cr, "kind") << "\n" << all;
  }
}

TEST(Slinky, ControllerSameAsShoal) {
  Observed slinky = Base(Parse(kSlinkyController));
  slinky.related["NodeSets"] = Json::array({Parse(kSlinkyNodeSet)});
  slinky.related["Accounting"] = Parse(kSlinkyAccounting);
  Observed shoal = Base(ShoalController());
  shoal.related["NodeSets"] = Json::array({ShoalNodeSet()});
  shoal.related["Accounting"] = ShoalAccounting();
  ExpectSameObjects(slinky, shoal, PlanController);

  // The slurm.conf: Slinky's NodeSet, feature and partition names, and no implicit default.
  Plan p = PlanSlinky(slinky, PlanController, SlinkyOptions{});
  const Json* cm = Applied(p, "ConfigMap", "slurm-config");
  ASSERT_NE(cm, nullptr);
  std::string text = (*cm)["data"]["slurm.conf"];
  auto conf = ParseSlurmConf(text, "slurm.conf", nullptr, nullptr);
  ASSERT_TRUE(conf.ok()) << conf.error() << "\n" << text;
  EXPECT_NE(text.find("ClusterName=slurm-slurm\n"), std::string::npos);
  EXPECT_NE(text.find("NodeSet=slinky Feature=slinky\n"), std::string::npos);
  EXPECT_NE(text.find("PartitionName=slinky Nodes=slinky\n"), std::string::npos);
  EXPECT_EQ(text.find("Default=YES State=UP"), std::string::npos);
  EXPECT_NE(text.find("AccountingStorageHost=slurm.slurm.svc"), std::string::npos);
  ASSERT_NE(Applied(p, "Pod", "slurm-0"), nullptr);
  EXPECT_EQ((*Applied(p, "Pod", "slurm-0"))["spec"]["containers"][0]["image"],
            "shoal/controller:latest");
}

TEST(Slinky, NodeSetSameAsShoal) {
  Observed slinky = Base(Parse(kSlinkyNodeSet));
  slinky.related["Controller"] = Parse(kSlinkyController);
  Observed shoal = Base(ShoalNodeSet());
  shoal.related["Controller"] = ShoalController();
  ExpectSameObjects(slinky, shoal, PlanNodeSet);
  Plan p = PlanSlinky(slinky, PlanNodeSet, SlinkyOptions{});
  const Json* pod = Applied(p, "Pod", "slurm-worker-slinky-0");
  ASSERT_NE(pod, nullptr);
  EXPECT_NE(pod->dump().find("Features=slurm-worker-slinky,slinky"), std::string::npos);
  EXPECT_NE(Applied(p, "Pod", "slurm-worker-slinky-1"), nullptr);
}

TEST(Slinky, LoginSetRestApiAccountingTokenSameAsShoal) {
  Observed ls = Base(Parse(kSlinkyLoginSet));
  ls.related["Controller"] = Parse(kSlinkyController);
  Observed ls2 = Base(ShoalLoginSet());
  ls2.related["Controller"] = ShoalController();
  ExpectSameObjects(ls, ls2, PlanLoginSet);

  Observed ra = Base(Parse(kSlinkyRestApi));
  ra.related["Controller"] = Parse(kSlinkyController);
  Observed ra2 = Base(ShoalRestApi());
  ra2.related["Controller"] = ShoalController();
  ExpectSameObjects(ra, ra2, PlanRestApi);

  ExpectSameObjects(Base(Parse(kSlinkyAccounting)), Base(ShoalAccounting()), PlanAccounting);

  Observed tok = Base(Parse(kSlinkyToken));
  ExpectSameObjects(tok, Base(ShoalToken()), PlanToken);
  // Slinky's Secret name and key.
  Plan p = PlanSlinky(tok, PlanToken, SlinkyOptions{});
  const Json* secret = Applied(p, "Secret", "tok-jwt-slurm");
  ASSERT_NE(secret, nullptr);
  EXPECT_TRUE((*secret)["data"].contains("SLURM_JWT"));
}

// ---- images

TEST(Slinky, SlurmImagesBecomeShoalImages) {
  auto image_of = [](const char* image, const SlinkyOptions& o) {
    Json ns = Parse(kSlinkyNodeSet);
    ns["spec"]["slurmd"]["image"] = image;
    return Str(TranslateSlinky(ns, Json::object(), o).cr, "spec.image");
  };
  SlinkyOptions def;
  SlinkyOptions reg;
  reg.image_registry = "registry.example.com";
  reg.image_tag = "1.2.3";
  EXPECT_EQ(image_of("ghcr.io/slinkyproject/slurmd:25.11", def), "shoal/worker:latest");
  EXPECT_EQ(image_of("ghcr.io/slinkyproject/slurmd:25.11", reg),
            "registry.example.com/shoal/worker:1.2.3");
  EXPECT_EQ(image_of("registry.example.com/shoal/worker:9", def),
            "registry.example.com/shoal/worker:9");
  EXPECT_EQ(image_of("shoal/worker@sha256:abc", def), "shoal/worker@sha256:abc");
  EXPECT_EQ(image_of("localhost:5000/shoal/worker", def), "localhost:5000/shoal/worker");
  EXPECT_EQ(image_of("example.com/notshoal/worker:1", def), "shoal/worker:latest");
}

// ---- fields merged onto the desired objects

TEST(Slinky, ServiceClaimAndServiceMonitorExtras) {
  Json ctl = Parse(kSlinkyController);
  ctl["spec"]["service"] = Json::parse(R"({"port": 7000, "nodePort": 30817,
      "metadata": {"annotations": {"lb.example.com/internal": "true"}},
      "spec": {"type": "NodePort", "externalTrafficPolicy": "Local"}})");
  ctl["spec"]["persistence"]["accessModes"] = {"ReadWriteOncePod"};
  ctl["spec"]["persistence"]["storageClassName"] = "fast";
  ctl["spec"]["metrics"] = Json::parse(R"({"enabled": true, "serviceMonitor": {
      "enabled": true, "labels": {"release": "prom"}, "interval": "15s",
      "endpoints": [{"path": "/metrics/jobs"}, {"path": "/metrics/nodes", "interval": "1m"}]}})");
  Observed o = Base(ctl);
  o.related["Accounting"] = Parse(kSlinkyAccounting);
  Plan p = PlanSlinky(o, PlanController, SlinkyOptions{});
  const Json* svc = Applied(p, "Service", "slurm");
  ASSERT_NE(svc, nullptr);
  EXPECT_EQ((*svc)["spec"]["type"], "NodePort");
  EXPECT_EQ((*svc)["spec"]["externalTrafficPolicy"], "Local");
  EXPECT_EQ((*svc)["spec"]["ports"][0]["port"], 7000);
  EXPECT_EQ((*svc)["spec"]["ports"][0]["nodePort"], 30817);
  EXPECT_EQ((*svc)["metadata"]["annotations"]["lb.example.com/internal"], "true");
  // The hash covers the merged fields (a changed annotation updates the Service).
  Json rehashed = *svc;
  rehashed["metadata"]["annotations"].erase(kSpecHashAnnotation);
  StampSpecHash(&rehashed);
  EXPECT_EQ(rehashed, *svc);
  const Json* pvc = Applied(p, "PersistentVolumeClaim", "slurm-state");
  ASSERT_NE(pvc, nullptr);
  EXPECT_EQ((*pvc)["spec"]["accessModes"], Json::array({"ReadWriteOncePod"}));
  EXPECT_EQ((*pvc)["spec"]["storageClassName"], "fast");
  const Json* sm = Applied(p, "ServiceMonitor", "slurm");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ((*sm)["metadata"]["labels"]["release"], "prom");
  ASSERT_EQ((*sm)["spec"]["endpoints"].size(), 2u);
  EXPECT_EQ((*sm)["spec"]["endpoints"][0]["path"], "/metrics/jobs");
  EXPECT_EQ((*sm)["spec"]["endpoints"][0]["interval"], "15s");
  EXPECT_EQ((*sm)["spec"]["endpoints"][1]["interval"], "1m");
  EXPECT_EQ((*sm)["spec"]["endpoints"][1]["port"], "shoalctld");
}

TEST(Slinky, ContainerAndTemplateFields) {
  Json ns = Parse(kSlinkyNodeSet);
  ns["spec"]["slurmd"]["resources"] = {{"limits", {{"cpu", "4"}}}};
  ns["spec"]["slurmd"]["env"] = Json::array({{{"name", "A"}, {"value", "1"}}});
  ns["spec"]["slurmd"]["volumeMounts"] = Json::array({{{"name", "scratch"}, {"mountPath", "/s"}}});
  ns["spec"]["template"]["spec"]["volumes"] =
      Json::array({{{"name", "scratch"}, {"emptyDir", Json::object()}}});
  ns["spec"]["template"]["spec"]["tolerations"] =
      Json::array({{{"key", "gpu"}, {"operator", "Exists"}}});
  ns["spec"]["extraConf"] = "features=a,b Gres=gpu:2 Weight=7";
  ns["spec"]["oversubscribeNode"] = true;
  Observed o = Base(ns);
  o.related["Controller"] = Parse(kSlinkyController);
  Plan p = PlanSlinky(o, PlanNodeSet, SlinkyOptions{});
  const Json* pod = Applied(p, "Pod", "slurm-worker-slinky-0");
  ASSERT_NE(pod, nullptr);
  const Json& c = (*pod)["spec"]["containers"][0];
  EXPECT_EQ(c["resources"]["limits"]["cpu"], "4");
  EXPECT_NE(c["env"].dump().find("\"A\""), std::string::npos);
  EXPECT_NE(c["volumeMounts"].dump().find("/s"), std::string::npos);
  EXPECT_NE((*pod)["spec"]["volumes"].dump().find("scratch"), std::string::npos);
  EXPECT_EQ((*pod)["spec"]["tolerations"][0]["key"], "gpu");
  EXPECT_FALSE((*pod)["spec"].contains("affinity"));  // oversubscribeNode
  EXPECT_NE(c.dump().find("Features=slurm-worker-slinky,a,b,slinky Gres=gpu:2 Weight=7"),
            std::string::npos)
      << c.dump();
  EXPECT_TRUE(c["securityContext"]["privileged"]);
}

TEST(Slinky, ControllerScriptsAndDefaults) {
  Json ctl = Parse(kSlinkyController);
  ctl["spec"]["prologSlurmctldScriptRefs"] = Json::array({{{"name", "pro"}}});
  ctl["spec"].erase("jwtKeyRef");
  ctl["spec"]["jwtHs256KeyRef"] = {{"name", "old-jwt"}, {"key", "jwt.key"}};
  ctl["spec"]["clusterName"] = "linux";
  Json related = {{"ConfigMap/pro", {{"data", {{"a.sh", "#!/bin/sh\n"}, {"b.sh", "exit 0\n"}}}}}};
  SlinkyTranslation t = TranslateSlinky(ctl, related, SlinkyOptions{});
  ASSERT_TRUE(t.problems.empty());
  EXPECT_EQ(t.cr["spec"]["clusterName"], "linux");
  EXPECT_EQ(t.cr["spec"]["jwtKeyRef"]["name"], "old-jwt");
  EXPECT_EQ(t.cr["spec"]["configFileRefs"], Json::array({{{"name", "pro"}}}));
  std::string extra = t.cr["spec"]["extraConf"];
  EXPECT_NE(
      extra.find("PrologSlurmctld=/etc/shoal/conf/a.sh\nPrologSlurmctld=/etc/shoal/conf/b.sh\n"),
      std::string::npos);
  ctl["spec"]["ha"] = {{"enabled", true}, {"backups", 2}};
  ctl["spec"]["persistence"]["existingClaim"] = "shared";
  t = TranslateSlinky(ctl, related, SlinkyOptions{});
  ASSERT_TRUE(t.problems.empty());
  EXPECT_EQ(t.cr["spec"]["ha"], Json({{"enabled", true}, {"replicas", 3}}));
  EXPECT_EQ(t.cr["spec"]["persistence"]["existingClaim"], "shared");
}

// ---- rejections

struct RejectCase {
  const char* resource;
  const char* patch;  // merged into spec
  const char* field;
};

class SlinkyRejects : public ::testing::TestWithParam<RejectCase> {};

TEST_P(SlinkyRejects, NamesTheField) {
  const RejectCase& c = GetParam();
  Json cr = Parse(c.resource);
  Json patch = Json::parse(c.patch);
  cr["spec"].merge_patch(patch);
  SlinkyTranslation t = TranslateSlinky(cr, Json::object(), SlinkyOptions{});
  bool found = false;
  for (const SlinkyProblem& p : t.problems) found = found || p.field == c.field;
  EXPECT_TRUE(found) << c.field << " not in " << t.problems.size() << " problems";

  // The plan: only the status and the Events, no object made.
  Observed o = Base(cr);
  o.related["Controller"] = Parse(kSlinkyController);
  Plan p = PlanSlinky(o, PlanNodeSet, SlinkyOptions{});
  EXPECT_TRUE(Of(p, K::kApply).empty());
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  ASSERT_EQ(Of(p, K::kUpdateStatus).size(), 1u);
  const Json& cond = Of(p, K::kUpdateStatus)[0]->object["status"]["conditions"][0];
  EXPECT_EQ(cond["type"], "Ready");
  EXPECT_EQ(cond["status"], "False");
  EXPECT_EQ(cond["reason"], "UnsupportedField");
  EXPECT_NE(std::string(cond["message"]).find(c.field), std::string::npos);
  auto events = Of(p, K::kEvent);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0]->object["reason"], "UnsupportedField");
  EXPECT_EQ(events[0]->object["type"], "Warning");
}

INSTANTIATE_TEST_SUITE_P(
    Fields, SlinkyRejects,
    ::testing::Values(
        RejectCase{kSlinkyController, R"({"external": true, "externalConfig": {"host": "h",
                   "port": 6817}})",
                   "spec.external"},
        RejectCase{kSlinkyController, R"({"jwksKeyRef": {"name": "j", "key": "jwks.json"}})",
                   "spec.jwksKeyRef"},
        RejectCase{kSlinkyController, R"({"ha": {"enabled": true, "backups": 3}})",
                   "spec.ha.backups"},
        RejectCase{kSlinkyController, R"({"slurmctld": {"args": ["-vvv"]}})",
                   "spec.slurmctld.args"},
        RejectCase{kSlinkyController, R"({"template": {"spec": {"hostNetwork": true}}})",
                   "spec.template.spec.hostNetwork"},
        RejectCase{kSlinkyController,
                   R"({"template": {"spec": {"initContainers": [{"name": "x"}]}}})",
                   "spec.template.spec.initContainers"},
        RejectCase{kSlinkyController, R"({"service": {"spec": {"selector": {"a": "b"}}}})",
                   "spec.service.spec.selector"},
        RejectCase{kSlinkyNodeSet, R"({"pinToNode": true})", "spec.pinToNode"},
        RejectCase{kSlinkyNodeSet, R"({"ordinalPadding": 3})", "spec.ordinalPadding"},
        RejectCase{kSlinkyNodeSet, R"({"ssh": {"enabled": true, "sssdConfRef": {"name": "s",
                   "key": "sssd.conf"}}})",
                   "spec.ssh.enabled"},
        RejectCase{kSlinkyNodeSet, R"({"extraConf": "RealMemory=1000"})", "spec.extraConf"},
        RejectCase{kSlinkyNodeSet, R"({"extraConf": "Weight=heavy"})", "spec.extraConf"},
        RejectCase{kSlinkyNodeSet, R"({"updateStrategy": {"scheduledUpdate": {"flags":
                   ["DAILY"]}}})",
                   "spec.updateStrategy.scheduledUpdate.flags"},
        RejectCase{kSlinkyNodeSet, R"({"slurmd": {"securityContext": {"runAsUser": 5}}})",
                   "spec.slurmd.securityContext"},
        RejectCase{kSlinkyNodeSet, R"({"slurmd": {"livenessProbe": {"exec": {}}, "ports":
                   [{"containerPort": 1}]}})",
                   "spec.slurmd.ports"},
        RejectCase{kSlinkyNodeSet, R"({"template": {"spec": {"hostname": "gpu!-"}}})",
                   "spec.template.spec.hostname"},
        RejectCase{kSlinkyNodeSet, R"({"template": {"spec": {"containers": [{"name": "x"}]}}})",
                   "spec.template.spec.containers"},
        RejectCase{kSlinkyLoginSet, R"({"strategy": {"type": "Recreate"}})", "spec.strategy.type"},
        RejectCase{kSlinkyLoginSet, R"({"service": {"spec": {"type": "ExternalName"}}})",
                   "spec.service.spec.type"},
        RejectCase{kSlinkyRestApi, R"({"template": {"spec": {"hostname": "api"}}})",
                   "spec.template.spec.hostname"},
        RejectCase{kSlinkyAccounting, R"({"external": true})", "spec.external"},
        RejectCase{kSlinkyAccounting, R"({"storageConfig": {"username": null}})",
                   "spec.storageConfig.username"}));

TEST(Slinky, RejectionSaysItOnce) {
  Json cr = Parse(kSlinkyNodeSet);
  cr["spec"]["pinToNode"] = true;
  cr["spec"]["ordinalPadding"] = 2;
  Observed o = Base(cr);
  Plan p = PlanSlinky(o, PlanNodeSet, SlinkyOptions{});
  ASSERT_EQ(Of(p, K::kEvent).size(), 2u);  // one per field
  const Json& status = Of(p, K::kUpdateStatus)[0]->object["status"];
  EXPECT_TRUE(status.contains("selector"));  // required by the status schema
  EXPECT_TRUE(status.contains("nodeSetHash"));
  o.cr["status"] = status;
  p = PlanSlinky(o, PlanNodeSet, SlinkyOptions{});
  EXPECT_TRUE(p.actions.empty());  // nothing new to say
  // Fixed: planned as usual, the condition follows.
  o.cr["spec"]["pinToNode"] = false;
  o.cr["spec"]["ordinalPadding"] = 0;
  o.related["Controller"] = Parse(kSlinkyController);
  p = PlanSlinky(o, PlanNodeSet, SlinkyOptions{});
  EXPECT_NE(Applied(p, "Pod", "slurm-worker-slinky-0"), nullptr);
}

// ---- status

TEST(Slinky, NodeSetStatusInSlinkyShape) {
  Json cr = Parse(kSlinkyNodeSet);
  Json shoal_status = {{"replicas", 2},
                       {"readyReplicas", 2},
                       {"availableReplicas", 1},
                       {"updatedReplicas", 2},
                       {"selector", "x=y"},
                       {"nodeSetHash", "h"},
                       {"nodeIdle", 1},
                       {"nodeAllocated", 0},
                       {"nodeMixed", 1},
                       {"nodeDown", 0},
                       {"nodeDrain", 1},
                       {"observedGeneration", 1},
                       {"conditions", Json::array()}};
  Json s = SlinkyStatusOf(cr, shoal_status);
  EXPECT_EQ(s["slurmIdle"], 1);
  EXPECT_EQ(s["slurmAllocated"], 1);  // ALLOCATED or MIXED
  EXPECT_EQ(s["slurmDown"], 0);
  EXPECT_EQ(s["slurmDrain"], 1);
  EXPECT_EQ(s["desired"], 2);
  EXPECT_EQ(s["unavailableReplicas"], 1);
  for (const char* k : {"nodeIdle", "nodeAllocated", "nodeMixed", "nodeDown", "nodeDrain"})
    EXPECT_FALSE(s.contains(k)) << k;
  // Read back for the planner, and written again the same.
  cr["status"] = s;
  Json back = ShoalStatusOf(cr);
  EXPECT_EQ(back["nodeIdle"], 1);
  EXPECT_EQ(back["nodeAllocated"], 1);
  EXPECT_EQ(SlinkyStatusOf(cr, back), s);

  // From a plan: the planner's status goes out in Slinky's shape.
  Observed o = Base(Parse(kSlinkyNodeSet));
  o.related["Controller"] = Parse(kSlinkyController);
  o.shoal_nodes = std::vector<ShoalNode>{};
  Plan p = PlanSlinky(o, PlanNodeSet, SlinkyOptions{});
  ASSERT_EQ(Of(p, K::kUpdateStatus).size(), 1u);
  const Json& st = Of(p, K::kUpdateStatus)[0]->object["status"];
  for (const char* k :
       {"replicas", "readyReplicas", "availableReplicas", "slurmIdle", "slurmAllocated",
        "slurmDown", "slurmDrain", "desired", "selector", "nodeSetHash", "conditions"})
    EXPECT_TRUE(st.contains(k)) << k << " in " << st.dump();
  EXPECT_FALSE(st.contains("nodeIdle"));
}

}  // namespace
}  // namespace shoal::op
