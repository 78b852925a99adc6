// The operator's pure pieces: helpers, CRD parsing, slurm.conf generation (parsed back with
// Shoal's own parsers), desired objects, pod conditions and the scale-in order.
#include <gtest/gtest.h>

#include "common/slurm_conf.h"
#include "dbd/dbd_conf.h"
#include "operator/model/crd_types.h"
#include "operator/model/desired.h"
#include "operator/model/node_conditions.h"
#include "operator/model/scale_in.h"
#include "operator/model/slurm_conf_gen.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

Json Cr(const std::string& kind, const std::string& name, Json spec) {
  return Json{
      {"apiVersion", "shoal.dev/v1alpha1"},
      {"kind", kind},
      {"metadata", {{"name", name}, {"namespace", "hpc"}, {"uid", "u-" + name}, {"generation", 3}}},
      {"spec", spec}};
}

Result<SlurmConf> Parse(const std::string& text) {
  return ParseSlurmConf(
      text, "slurm.conf",
      [](const std::string& p) -> Result<std::string> { return InvalidArgument("no file " + p); },
      [](const std::string& p) { return std::vector<std::string>{p}; });
}

TEST(OperatorUtil, DurationsTimesAndBase64) {
  EXPECT_EQ(*ParseDuration("15m"), 900);
  EXPECT_EQ(*ParseDuration("1h30m"), 5400);
  EXPECT_EQ(*ParseDuration("90"), 90);
  EXPECT_FALSE(ParseDuration("10x").ok());
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(*ParseRfc3339("2026-01-02T03:04:05Z"), 1767323045);
  EXPECT_EQ(*ParseRfc3339("2026-01-02T04:04:05+01:00"), 1767323045);
  EXPECT_EQ(*ParseRfc3339("2026-01-02T03:04:05.123Z"), 1767323045);
  EXPECT_FALSE(ParseRfc3339("yesterday").has_value());
  for (std::string s : {"", "a", "ab", "abc", "hunter22!"})
    EXPECT_EQ(*Base64Decode(Base64Encode(s)), s);
  EXPECT_EQ(Base64Encode("abcd"), "YWJjZA==");
  EXPECT_EQ(OrdinalOf("w-12", "w"), 12);
  EXPECT_FALSE(OrdinalOf("w-01", "w").has_value());
  EXPECT_FALSE(OrdinalOf("wx-1", "w").has_value());
}

TEST(OperatorCrd, NodeSetDefaultsAndErrorsNameTheField) {
  auto s = ParseNodeSetSpec(Cr("NodeSet", "w", {{"controllerRef", {{"name", "c"}}}}));
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->replicas, 1);
  EXPECT_EQ(s->controller_ref.ns, "hpc");
  EXPECT_TRUE(s->partition);
  EXPECT_TRUE(s->protect);
  EXPECT_EQ(s->registration_timeout, 300);
  EXPECT_EQ(ResolveMaxUnavailable(s->max_unavailable, 8), 2);  // 25%
  EXPECT_EQ(ResolveMaxUnavailable(s->max_unavailable, 3), 1);  // at least one

  auto bad =
      ParseNodeSetSpec(Cr("NodeSet", "w", {{"controllerRef", {{"name", "c"}}}, {"replicas", -1}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "spec.replicas: must be >= 0");
  EXPECT_EQ(ParseNodeSetSpec(Cr("NodeSet", "w", Json::object())).error(),
            "spec.controllerRef: required");
  EXPECT_EQ(
      ParseNodeSetSpec(
          Cr("NodeSet", "w", {{"controllerRef", {{"name", "c"}}}, {"scalingMode", "Deployment"}}))
          .error(),
      "spec.scalingMode: must be StatefulSet or DaemonSet");
  EXPECT_EQ(ParseNodeSetSpec(Cr("NodeSet", "w",
                                {{"controllerRef", {{"name", "c"}}},
                                 {"updateStrategy", {{"type", "ScheduledUpdate"}}}}))
                .error(),
            "spec.updateStrategy.scheduledUpdate.startTime: required for ScheduledUpdate");
  EXPECT_FALSE(
      ParseNodeSetSpec(Cr("NodeSet", "w",
                          {{"controllerRef", {{"name", "c"}}},
                           {"updateStrategy", {{"rollingUpdate", {{"maxUnavailable", "0%"}}}}}}))
          .ok());
  EXPECT_TRUE(
      ParseNodeSetSpec(Cr("NodeSet", "w", {{"controllerRef", {{"name", "c"}}}, {"replicas", 0}}))
          .ok());  // scale to zero
}

TEST(OperatorCrd, OtherKinds) {
  EXPECT_EQ(ParseControllerSpec(Cr("Controller", "c", Json::object())).error(),
            "spec.clusterName: required");
  auto c = ParseControllerSpec(Cr("Controller", "c", {{"clusterName", "lab"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, 6817);
  EXPECT_TRUE(c->persistence);
  EXPECT_EQ(
      ParseAccountingSpec(Cr("Accounting", "a", {{"storageConfig", {{"host", "db"}}}})).error(),
      "spec.storageConfig.username: required");
  auto t = ParseTokenSpec(Cr(
      "Token", "t",
      {{"jwtKeyRef", {{"name", "jwt"}, {"key", "k"}}}, {"username", "alice"}, {"lifetime", "1h"}}));
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->lifetime, 3600);
  EXPECT_EQ(t->secret_ref.name, "t");
  EXPECT_EQ(t->secret_ref.key, "auth-token");
  EXPECT_EQ(ParseTokenSpec(Cr("Token", "t", {{"username", "alice"}})).error(),
            "spec.jwtKeyRef: required");
}

TEST(OperatorConf, SlurmConfParsesBackWithShoalsParser) {
  Json c = Cr("Controller", "c",
              {{"clusterName", "lab"},
               {"accountingRef", {{"name", "a"}}},
               {"metrics", {{"enabled", true}}},
               {"extraConf", "MaxJobCount=5000\nSchedulerParameters=bf_continue"}});
  ConfInputs in;
  in.controller = c;
  in.spec = *ParseControllerSpec(c);
  in.nodesets = {Cr("NodeSet", "gpu", {{"partition", {{"config", "MaxTime=60"}}}}),
                 Cr("NodeSet", "cpu", Json::object()),
                 Cr("NodeSet", "hidden", {{"partition", {{"enabled", false}}}})};
  in.accounting = Cr("Accounting", "a", Json::object());
  in.prolog_files = {"prolog.sh"};
  auto text = GenerateSlurmConf(in);
  ASSERT_TRUE(text.ok()) << text.error();
  auto conf = Parse(*text);
  ASSERT_TRUE(conf.ok()) << conf.error() << "\n" << *text;
  EXPECT_TRUE(conf->warnings.empty()) << conf->warnings[0];
  EXPECT_EQ(conf->ClusterName(), "lab");
  EXPECT_EQ(conf->ControllerHost(), "c-0");
  EXPECT_EQ(conf->ControllerAddr(), "c-0.c-headless.hpc.svc");
  EXPECT_EQ(conf->Get("AuthAltTypes"), "auth/jwt");
  EXPECT_EQ(conf->Get("AuthAltParameters"), "jwt_key=/etc/shoal/jwt/jwt.key");
  EXPECT_EQ(conf->Get("SlurmctldParameters"), "enable_configless,shoal_watch_config");
  EXPECT_EQ(conf->StateSaveLocation(), "/var/spool/shoalctld");
  EXPECT_EQ(conf->Get("MetricsType"), "metrics/openmetrics");
  EXPECT_EQ(conf->Get("AccountingStorageType"), "accounting_storage/slurmdbd");
  EXPECT_EQ(conf->Get("AccountingStorageHost"), "a.hpc.svc");
  EXPECT_EQ(conf->Get("Prolog"), "/etc/shoal/conf/prolog.sh");
  EXPECT_EQ(conf->Get("MaxJobCount"), "5000");  // extraConf last, verbatim
  ASSERT_EQ(conf->nodesets.size(), 3u);
  EXPECT_EQ(conf->nodesets[0].name, "cpu");
  EXPECT_EQ(conf->nodesets[0].feature, "cpu");
  ASSERT_EQ(conf->partitions.size(), 2u);  // "hidden" has partition.enabled false
  EXPECT_EQ(conf->partitions[0].name, "cpu");
  EXPECT_TRUE(conf->partitions[0].is_default);
  EXPECT_EQ(conf->partitions[1].name, "gpu");
  EXPECT_EQ(conf->partitions[1].max_time, 60u);
  // extraConf comes after everything the operator writes.
  EXPECT_GT(text->find("MaxJobCount"), text->find("PartitionName=gpu"));

  // Same-named NodeSets in two namespaces: one NodeSet line, the file stays valid.
  Json tenant = Cr("NodeSet", "cpu", Json::object());
  tenant["metadata"]["namespace"] = "tenant";
  in.nodesets.push_back(tenant);
  auto dup = Parse(*GenerateSlurmConf(in));
  ASSERT_TRUE(dup.ok()) << dup.error();
  EXPECT_EQ(dup->nodesets.size(), 3u);

  // HA: two SlurmctldHost lines.
  Json ha = Cr("Controller", "c", {{"clusterName", "lab"}, {"ha", {{"enabled", true}}}});
  in = ConfInputs{};
  in.controller = ha;
  in.spec = *ParseControllerSpec(ha);
  auto ha_conf = Parse(*GenerateSlurmConf(in));
  ASSERT_TRUE(ha_conf.ok());
  EXPECT_EQ(ha_conf->controller_hosts.size(), 2u);
}

TEST(OperatorConf, WorkerNodeConfAndSlurmdbdConfParse) {
  Json w = Cr("NodeSet", "gpu",
              {{"controllerRef", {{"name", "c"}}},
               {"features", {"a100"}},
               {"gres", "gpu:2"},
               {"weight", 5}});
  auto spec = *ParseNodeSetSpec(w);
  std::string keys = WorkerNodeConf("gpu", spec, {"zone-a"});
  EXPECT_EQ(keys, "Features=gpu,a100,k8s/zone-a Gres=gpu:2 Weight=5");
  auto node = ParseNodeConf("gpu-0", keys);
  ASSERT_TRUE(node.ok()) << node.error();
  EXPECT_EQ(node->features, (std::vector<std::string>{"gpu", "a100", "k8s/zone-a"}));
  EXPECT_EQ(node->weight, 5u);

  Json a = Cr("Accounting", "a",
              {{"storageConfig",
                {{"host", "mariadb"},
                 {"username", "slurm"},
                 {"passwordKeyRef", {{"name", "db"}, {"key", "password"}}}}},
               {"jwtKeyRef", {{"name", "jwt"}}}});
  auto as = ParseAccountingSpec(a);
  ASSERT_TRUE(as.ok()) << as.error();
  auto dbd = dbd::ParseDbdConf(GenerateSlurmdbdConf(a, *as, "s3cret"), "slurmdbd.conf");
  ASSERT_TRUE(dbd.ok()) << dbd.error();
  EXPECT_EQ(dbd->storage.type, "accounting_storage/mysql");
  EXPECT_EQ(dbd->storage.host, "mariadb");
  EXPECT_EQ(dbd->storage.port, 3306u);
  EXPECT_EQ(dbd->storage.pass, "s3cret");
  EXPECT_EQ(dbd->storage.loc, "slurm_acct_db");
  EXPECT_EQ(dbd->dbd_port, 6819u);
  EXPECT_TRUE(dbd->warnings.empty());
}

void ExpectOwnedBy(const Json& obj, const Json& cr) {
  ASSERT_TRUE(obj["metadata"]["ownerReferences"].is_array());
  const Json& ref = obj["metadata"]["ownerReferences"][0];
  EXPECT_EQ(ref["uid"], cr["metadata"]["uid"]);
  EXPECT_EQ(ref["kind"], cr["kind"]);
  EXPECT_EQ(ref["controller"], true);
  EXPECT_EQ(ref["blockOwnerDeletion"], true);
  EXPECT_EQ(obj["metadata"]["labels"][kLabelManagedBy], "shoal-operator");
  EXPECT_EQ(obj["metadata"]["labels"][kLabelInstance], cr["metadata"]["name"]);
  EXPECT_TRUE(obj["metadata"]["annotations"].contains(kSpecHashAnnotation));
}

TEST(OperatorDesired, WorkerPodShape) {
  Json w = Cr("NodeSet", "w",
              {{"controllerRef", {{"name", "c"}}},
               {"template",
                {{"metadata", {{"labels", {{"team", "x"}}}}},
                 {"spec", {{"nodeSelector", {{"pool", "hpc"}}}}}}}});
  auto spec = *ParseNodeSetSpec(w);
  WorkerPodInputs in;
  in.ordinal = 2;
  in.controller_host = "c.hpc.svc:6817";
  in.slurm_key_secret = "slurm-key";
  Json pod = WorkerPod(w, spec, in);
  ExpectOwnedBy(pod, w);
  EXPECT_EQ(pod["metadata"]["name"], "w-2");
  EXPECT_EQ(pod["spec"]["hostname"], "w-2");
  EXPECT_EQ(pod["spec"]["subdomain"], "w");
  EXPECT_EQ(pod["metadata"]["labels"][kLabelNodeSet], "w");
  EXPECT_EQ(pod["metadata"]["labels"]["team"], "x");
  EXPECT_EQ(pod["spec"]["nodeSelector"]["pool"], "hpc");
  EXPECT_EQ(pod["metadata"]["labels"][kLabelRevision],
            WorkerRevision(spec, in.controller_host, "slurm-key"));
  const Json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["command"],
            Json::array({"shoald", "-D", "-Z", "-N", "$(POD_NAME)", "--conf-server",
                         "c.hpc.svc:6817", "--agent-socket", "/run/shoal/auth.sock", "--key",
                         "/etc/shoal/auth/slurm.key", "--conf", "Features=w"}));
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"], 6818);
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/livez");
  std::string pre_stop = c["lifecycle"]["preStop"]["exec"]["command"][2];
  EXPECT_EQ(pre_stop.rfind("timeout 10 scontrol update NodeName=\"$POD_NAME\" State=DOWN", 0), 0u);
  EXPECT_NE(pre_stop.find("shoal-operator: pod is terminating"), std::string::npos);
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name");
  EXPECT_EQ(c["env"][2]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
  EXPECT_EQ(c["securityContext"]["privileged"], true);

  // Scaling does not change the revision; an image change does.
  Json w2 = w;
  w2["spec"]["replicas"] = 7;
  EXPECT_EQ(WorkerRevision(*ParseNodeSetSpec(w2), "h", "k"), WorkerRevision(spec, "h", "k"));
  w2["spec"]["image"] = "shoal/worker:2";
  EXPECT_NE(WorkerRevision(*ParseNodeSetSpec(w2), "h", "k"), WorkerRevision(spec, "h", "k"));

  Json pdb = WorkerPdb(w);
  EXPECT_EQ(pdb["metadata"]["name"], "w-protect");
  EXPECT_EQ(pdb["spec"]["maxUnavailable"], 0);
  EXPECT_EQ(pdb["spec"]["selector"]["matchLabels"][kLabelProtect], "true");
  EXPECT_EQ(pdb["spec"]["selector"]["matchLabels"][kLabelNodeSet], "w");
  Json svc = WorkerService(w);
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["metadata"]["name"], "w");
  EXPECT_EQ(WorkerSelector("w"), "app.kubernetes.io/instance=w,shoal.dev/nodeset=w");
}

TEST(OperatorDesired, WorkerTemplatePassesHostNetworkDnsAndInitContainers) {
  // RDMA NICs: host networking, the site's resolver, and an init container before shoald.
  Json tspec = Json::object();
  tspec["hostNetwork"] = true;
  tspec["dnsPolicy"] = "ClusterFirstWithHostNet";
  tspec["dnsConfig"]["nameservers"] = Json::array({"10.0.0.53"});
  tspec["initContainers"] = Json::array({Json{{"name", "load-ib"}, {"image", "site/ib:1"}}});
  Json w = Cr("NodeSet", "w", {{"controllerRef", {{"name", "c"}}}});
  w["spec"]["template"]["spec"] = tspec;
  WorkerPodInputs in;
  in.controller_host = "c.hpc.svc:6817";
  Json pod = WorkerPod(w, *ParseNodeSetSpec(w), in);
  EXPECT_EQ(pod["spec"]["hostNetwork"], true);
  EXPECT_EQ(pod["spec"]["dnsPolicy"], "ClusterFirstWithHostNet");
  EXPECT_EQ(pod["spec"]["dnsConfig"]["nameservers"][0], "10.0.0.53");
  ASSERT_EQ(pod["spec"]["initContainers"].size(), 1u);
  EXPECT_EQ(pod["spec"]["initContainers"][0]["name"], "load-ib");
  // Without them in the template, the pod has none of them.
  Json bare = Cr("NodeSet", "w", {{"controllerRef", {{"name", "c"}}}});
  Json plain = WorkerPod(bare, *ParseNodeSetSpec(bare), in);
  EXPECT_FALSE(plain["spec"].contains("hostNetwork"));
  EXPECT_FALSE(plain["spec"].contains("initContainers"));
}

void ExpectRestricted(const Json& pod) {
  EXPECT_EQ(pod["spec"]["securityContext"]["runAsNonRoot"], true) << pod.dump();
  EXPECT_EQ(pod["spec"]["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  for (const Json& c : pod["spec"]["containers"]) {
    EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
    EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], Json::array({"ALL"}));
  }
}

TEST(OperatorDesired, ControllerAndServicesAreRestricted) {
  Json c = Cr("Controller", "c",
              {{"clusterName", "lab"},
               {"slurmKeyRef", {{"name", "slurm-key"}, {"key", "k"}}},
               {"jwtKeyRef", {{"name", "jwt"}, {"key", "jwt.key"}}}});
  auto spec = *ParseControllerSpec(c);
  Json pod = ControllerPod(c, spec, 0);
  ExpectOwnedBy(pod, c);
  ExpectRestricted(pod);
  EXPECT_EQ(pod["metadata"]["name"], "c-0");
  EXPECT_EQ(pod["spec"]["subdomain"], "c-headless");
  EXPECT_EQ(pod["spec"]["containers"][0]["command"],
            Json::array({"shoalctld", "-D", "-f", "/etc/shoal/conf/slurm.conf"}));
  std::string vols = pod["spec"]["volumes"].dump();
  EXPECT_NE(vols.find("\"claimName\":\"c-state\""), std::string::npos);
  EXPECT_NE(vols.find("\"secretName\":\"slurm-key\""), std::string::npos);
  EXPECT_EQ(ControllerHeadlessService(c, spec)["spec"]["clusterIP"], "None");
  EXPECT_EQ(ControllerService(c, spec)["spec"]["ports"][0]["port"], 6817);
  EXPECT_EQ(ControllerStatePvc(c, spec)["spec"]["resources"]["requests"]["storage"], "4Gi");

  Json r = Cr("RestApi", "r", {{"controllerRef", {{"name", "c"}}}});
  ExpectRestricted(RestApiPod(r, *ParseRestApiSpec(r), "c", "jwt", "jwt.key", 0));
  Json a = Cr("Accounting", "a",
              {{"storageConfig",
                {{"host", "db"}, {"username", "u"}, {"passwordKeyRef", {{"name", "p"}}}}}});
  ExpectRestricted(AccountingPod(a, *ParseAccountingSpec(a)));
}

TEST(OperatorDesired, SpecHashFollowsContent) {
  Json c = Cr("Controller", "c", {{"clusterName", "lab"}});
  Json a = ControllerConfigMap(c, {{"slurm.conf", "A"}});
  Json b = ControllerConfigMap(c, {{"slurm.conf", "B"}});
  EXPECT_NE(a["metadata"]["annotations"][kSpecHashAnnotation],
            b["metadata"]["annotations"][kSpecHashAnnotation]);
  EXPECT_EQ(a, ControllerConfigMap(c, {{"slurm.conf", "A"}}));
}

TEST(OperatorConditions, MapsStatesAndFlags) {
  ShoalNode n;
  n.name = "w-0";
  n.base_state = "IDLE";
  n.flags = {"DRAIN", "NOT_RESPONDING"};
  n.reason = "bad disk";
  auto conds = NodeConditions(n, 100);
  ASSERT_EQ(conds.size(), 3u);
  EXPECT_EQ(conds[0]["type"], "ShoalNodeStateIdle");
  EXPECT_EQ(conds[1]["type"], "ShoalNodeStateDrain");
  EXPECT_EQ(conds[2]["type"], "ShoalNodeStateNotResponding");
  EXPECT_EQ(conds[2]["reason"], "NotResponding");
  EXPECT_EQ(conds[1]["message"], "bad disk");
  EXPECT_EQ(conds[1]["status"], "True");

  Json pod{
      {"metadata", {{"name", "w-0"}, {"namespace", "hpc"}}},
      {"status",
       {{"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}},
                                    {{"type", "ShoalNodeStateAllocated"}, {"status", "True"}}})}}}};
  auto want = DesiredPodConditions(pod, &n, 100);
  ASSERT_TRUE(want.has_value());
  ASSERT_EQ(want->size(), 4u);  // Ready kept, Allocated removed, three added
  EXPECT_EQ((*want)[0]["type"], "Ready");
  pod["status"]["conditions"] = *want;
  EXPECT_FALSE(DesiredPodConditions(pod, &n, 200).has_value());  // stable: no patch
  auto gone = DesiredPodConditions(pod, nullptr, 200);
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->size(), 1u);

  // The drain mirror: only drains the operator did not make.
  EXPECT_EQ(*ForeignDrainAnnotation(n), "bad disk");
  n.reason = "shoal-operator: scale-in";
  EXPECT_FALSE(ForeignDrainAnnotation(n).has_value());
  n.flags = {};
  n.reason = "";
  EXPECT_FALSE(ForeignDrainAnnotation(n).has_value());
  EXPECT_EQ(StateWord("MAINTENANCE"), "Maintenance");
}

TEST(OperatorScaleIn, PickOrder) {
  auto pod = [](const std::string& name, bool ready, int cost = 0) {
    Json p{{"metadata", {{"name", name}, {"annotations", Json::object()}}},
           {"status",
            {{"phase", "Running"},
             {"conditions",
              Json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
    if (cost != 0) p["metadata"]["annotations"][kAnnotDeletionCost] = std::to_string(cost);
    return p;
  };
  ShoalNode late, early;
  late.latest_job_end = 5000;
  early.latest_job_end = 1000;
  std::vector<ScaleInCandidate> c(7);
  c[0] = {pod("w-0", true), &late, false, false, 0};
  c[1] = {pod("w-1", true), &early, false, false, 1};
  c[2] = {pod("w-2", false), &late, false, false, 2};     // not ready: first
  c[3] = {pod("w-3", true, -5), &late, false, false, 3};  // lowest cost: second
  c[4] = {pod("w-4", true), &late, true, false, 4};       // cordoned beats ordinal
  c[5] = {pod("w-5", true), &late, false, false, 5};
  c[6] = {pod("w-6", true, 10), nullptr, false, false, 6};  // highest cost: last
  SortForScaleIn(&c);
  std::vector<std::string> order;
  for (const auto& x : c) order.push_back(PodName(x.pod));
  EXPECT_EQ(order, (std::vector<std::string>{"w-2", "w-3", "w-1", "w-4", "w-5", "w-0", "w-6"}));
}

}  // namespace
}  // namespace shoal::op
