// The operator's I/O helpers that need no server: API paths, kubeconfig parsing, watch-line
// framing, lease decisions, spec hashes, condition merges, work-queue keys and the Shoal node view.
#include <gtest/gtest.h>

#include <thread>

#include "operator/executor.h"
#include "operator/health.h"
#include "operator/kube/client.h"
#include "operator/kube/leader.h"
#include "operator/manager.h"
#include "operator/model/util.h"
#include "operator/shoal_api.h"

namespace shoal {
namespace {

using kube::Json;

TEST(KubePath, CoreGroupAndSubresources) {
  EXPECT_EQ(kube::ResourcePath("v1", "pods", "ns1", "w-0", "status"),
            "/api/v1/namespaces/ns1/pods/w-0/status");
  EXPECT_EQ(kube::ResourcePath("v1", "pods", "", ""), "/api/v1/pods");
  EXPECT_EQ(*kube::PathFor("PodDisruptionBudget", "a", "w-protect"),
            "/apis/policy/v1/namespaces/a/poddisruptionbudgets/w-protect");
  EXPECT_EQ(*kube::PathFor("Lease", "kube-system", "shoal-operator"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/shoal-operator");
  EXPECT_EQ(*kube::PathFor("nodesets", "t1", "w", "scale"),
            "/apis/shoal.dev/v1alpha1/namespaces/t1/nodesets/w/scale");
  // Nodes are cluster-scoped: a namespace given by mistake is dropped.
  EXPECT_EQ(*kube::PathFor("Node", "default", "n1"), "/api/v1/nodes/n1");
  EXPECT_FALSE(kube::PathFor("Widget", "a", "b").ok());
}

TEST(KubePath, QueryStrings) {
  kube::ListOptions o;
  EXPECT_EQ(kube::ListQuery(o, false), "");
  o.label_selector = "app.kubernetes.io/managed-by=shoal-operator,a in (x,y)";
  o.limit = 50;
  o.continue_token = "abc=";
  EXPECT_EQ(kube::ListQuery(o, false),
            "?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dshoal-operator%2Ca%20in%20%28x%2Cy%29"
            "&limit=50&continue=abc%3D");
  kube::ListOptions w;
  w.resource_version = "42";
  w.timeout_seconds = 60;
  EXPECT_EQ(kube::ListQuery(w, true),
            "?watch=1&resourceVersion=42&allowWatchBookmarks=true&timeoutSeconds=60");
  kube::DeleteOptions d;
  d.propagation_policy = "Background";
  d.grace_period_seconds = 0;
  Json b = kube::DeleteBody(d);
  EXPECT_EQ(b["propagationPolicy"], "Background");
  EXPECT_EQ(b["gracePeriodSeconds"], 0);
  EXPECT_EQ(b["kind"], "DeleteOptions");
}

TEST(KubeResponse, ConflictKinds) {
  kube::KubeResponse exists{409, Json{{"kind", "Status"}, {"reason", "AlreadyExists"}}};
  kube::KubeResponse conflict{409, Json{{"kind", "Status"}, {"reason", "Conflict"}}};
  EXPECT_TRUE(kube::IsAlreadyExists(exists));
  EXPECT_FALSE(kube::IsConflict(exists));
  EXPECT_TRUE(kube::IsConflict(conflict));
  EXPECT_TRUE(kube::IsNotFound(kube::KubeResponse{404, nullptr}));
  EXPECT_EQ(kube::DescribeFailure(
                kube::KubeResponse{409, Json{{"reason", "Conflict"}, {"message", "changed"}}}),
            "409 Conflict: changed");
}

constexpr const char* kKubectlConfig = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJU
    server: https://10.1.2.3:6443
  name: prod
- cluster:
    insecure-skip-tls-verify: true
    server: "http://127.0.0.1:8080/"   # the fake
  name: fake
contexts:
- context:
    cluster: prod
    user: admin
  name: prod-ctx
- context:
    cluster: fake
    user: tester
    namespace: default
  name: fake-ctx
current-context: fake-ctx
kind: Config
preferences: {}
users:
- name: admin
  user:
    token: prod-token
    client-certificate: certs/admin.crt
    client-key-data: a2V5
- name: tester
  user:
    token: 'it''s-a-token'
)";

TEST(Kubeconfig, YamlCurrentContext) {
  auto c = kube::ParseKubeconfig(kKubectlConfig);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->server, "http://127.0.0.1:8080");
  EXPECT_EQ(c->token, "it's-a-token");
  EXPECT_TRUE(c->insecure);
  EXPECT_EQ(c->ca_data, "");
}

TEST(Kubeconfig, OtherContextCaDataAndJson) {
  std::string text = kKubectlConfig;
  text.replace(text.find("current-context: fake-ctx"), 25, "current-context: prod-ctx");
  auto c = kube::ParseKubeconfig(text);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->server, "https://10.1.2.3:6443");
  EXPECT_EQ(c->token, "prod-token");
  EXPECT_EQ(c->ca_data, "-----BEGIN CERT");
  EXPECT_EQ(c->client_cert_file, "certs/admin.crt");  // no base dir given
  EXPECT_EQ(c->client_key_data, "key");
  EXPECT_FALSE(c->insecure);

  auto j = kube::ParseKubeconfig(
      R"({"clusters":[{"name":"c","cluster":{"server":"https://h","certificate-authority":"ca.pem"}}],
          "users":[{"name":"u","user":{"token":"t"}}],
          "contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],"current-context":"x"})",
      "/etc/kube");
  ASSERT_TRUE(j.ok()) << j.error();
  EXPECT_EQ(j->server, "https://h");
  EXPECT_EQ(j->ca_file, "/etc/kube/ca.pem");
  EXPECT_EQ(j->token, "t");
}

TEST(Kubeconfig, Errors) {
  EXPECT_FALSE(kube::ParseKubeconfig("current-context: nope\ncontexts: []\n").ok());
  EXPECT_FALSE(kube::ParseKubeconfig("clusters:\n- name: a\n  cluster:\n    x: 1\n").ok());
  EXPECT_FALSE(kube::ParseKubeconfig("{not json").ok());
}

TEST(SimpleYaml, NestedSequencesAndScalars) {
  auto y = kube::ParseSimpleYaml(
      "a:\n  b: \"x\\ty\"\n  list:\n    - 1\n    - two\n    -\n      c: d\n"
      "top:\n- k: v\n  k2: v2\n- plain\n# comment\nflag: false\n");
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ((*y)["a"]["b"], "x\ty");
  EXPECT_EQ((*y)["a"]["list"][0], "1");
  EXPECT_EQ((*y)["a"]["list"][2]["c"], "d");
  EXPECT_EQ((*y)["top"][0]["k2"], "v2");
  EXPECT_EQ((*y)["top"][1], "plain");
  EXPECT_EQ((*y)["flag"], false);
}

TEST(Watch, LinesSpanChunks) {
  kube::LineFramer f;
  std::vector<std::string> lines;
  auto add = [&](std::string_view l) { lines.emplace_back(l); };
  f.Feed("{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n{\"type\":\"MOD", add);
  EXPECT_EQ(lines.size(), 1u);
  f.Feed("IFIED\",\"object\":{}}\r\n\n", add);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "{\"type\":\"MODIFIED\",\"object\":{}}");
  EXPECT_EQ(f.buffered(), 0u);
  auto ev = kube::ParseWatchEvent(lines[0]);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->type, "ADDED");
  EXPECT_EQ(ev->object["a"], 1);
  EXPECT_FALSE(kube::ParseWatchEvent("{\"object\":{}}").ok());
  EXPECT_FALSE(kube::ParseWatchEvent("garbage").ok());
}

TEST(Lease, MicroTime) {
  EXPECT_EQ(kube::FormatMicroTime(1767323045123456), "2026-01-02T03:04:05.123456Z");
  EXPECT_EQ(*op::ParseRfc3339Micros("2026-01-02T03:04:05.123456Z"), 1767323045123456);
  EXPECT_EQ(*op::ParseRfc3339Micros("2026-01-02T03:04:05Z"), 1767323045000000);
  EXPECT_EQ(*op::ParseRfc3339Micros("2026-01-02T05:04:05.5+02:00"), 1767323045500000);
  EXPECT_FALSE(op::ParseRfc3339Micros("2026-01-02 03:04:05").has_value());
}

TEST(Lease, Decisions) {
  const int64_t t0 = 1767323045000000;
  EXPECT_EQ(kube::DecideLease(nullptr, "me", t0), kube::LeaseAction::kCreate);
  Json lease = {{"metadata", {{"resourceVersion", "7"}}},
                {"spec",
                 {{"holderIdentity", "other"},
                  {"leaseDurationSeconds", 15},
                  {"acquireTime", kube::FormatMicroTime(t0 - 60000000)},
                  {"renewTime", kube::FormatMicroTime(t0)},
                  {"leaseTransitions", 2}}}};
  EXPECT_EQ(kube::DecideLease(lease, "me", t0 + 14000000), kube::LeaseAction::kWait);
  EXPECT_EQ(kube::DecideLease(lease, "me", t0 + 16000000), kube::LeaseAction::kTakeOver);
  EXPECT_EQ(kube::DecideLease(lease, "other", t0 + 16000000), kube::LeaseAction::kRenew);
  Json released = lease;
  released["spec"]["holderIdentity"] = "";
  EXPECT_EQ(kube::DecideLease(released, "me", t0), kube::LeaseAction::kTakeOver);

  Json taken = kube::LeaseToWrite(lease, "ns", "shoal-operator", "me", 15, t0 + 16000000,
                                  kube::LeaseAction::kTakeOver);
  EXPECT_EQ(taken["spec"]["holderIdentity"], "me");
  EXPECT_EQ(taken["spec"]["leaseTransitions"], 3);
  EXPECT_EQ(taken["spec"]["acquireTime"], "2026-01-02T03:04:21.000000Z");
  EXPECT_EQ(taken["metadata"]["resourceVersion"], "7");  // the write is conditional
  Json renewed = kube::LeaseToWrite(lease, "ns", "shoal-operator", "other", 15, t0 + 5000000,
                                    kube::LeaseAction::kRenew);
  EXPECT_EQ(renewed["spec"]["leaseTransitions"], 2);
  EXPECT_EQ(renewed["spec"]["acquireTime"], lease["spec"]["acquireTime"]);
  EXPECT_EQ(renewed["spec"]["renewTime"], "2026-01-02T03:04:10.000000Z");
  Json created = kube::LeaseToWrite(nullptr, "ns", "l", "me", 15, t0, kube::LeaseAction::kCreate);
  EXPECT_EQ(created["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(created["metadata"]["namespace"], "ns");
  EXPECT_EQ(created["spec"]["leaseTransitions"], 0);
}

TEST(Executor, SpecHashAndReplace) {
  Json desired = {{"apiVersion", "v1"},
                  {"kind", "Service"},
                  {"metadata", {{"name", "c"}, {"namespace", "ns"}}},
                  {"spec", {{"ports", {{{"port", 6817}}}}}}};
  std::string h = op::DesiredSpecHash(desired);
  EXPECT_EQ(h.size(), 16u);
  Json changed = desired;
  changed["spec"]["ports"][0]["port"] = 6818;
  EXPECT_NE(op::DesiredSpecHash(changed), h);
  Json stamped = desired;
  stamped["metadata"]["annotations"][op::kSpecHashAnnotation] = "given";
  EXPECT_EQ(op::DesiredSpecHash(stamped), "given");

  Json live = desired;
  live["metadata"]["resourceVersion"] = "12";
  live["metadata"]["uid"] = "u-1";
  live["spec"]["clusterIP"] = "10.0.0.5";
  live["status"] = {{"loadBalancer", Json::object()}};
  Json put = op::PrepareReplace(changed, live);
  EXPECT_EQ(put["metadata"]["resourceVersion"], "12");
  EXPECT_EQ(put["metadata"]["uid"], "u-1");
  EXPECT_EQ(put["spec"]["clusterIP"], "10.0.0.5");
  EXPECT_EQ(put["spec"]["ports"][0]["port"], 6818);
  EXPECT_EQ(put["metadata"]["annotations"][op::kSpecHashAnnotation], op::DesiredSpecHash(changed));
}

TEST(Executor, ConditionMergeKeepsOthersAndTransitionTimes) {
  Json live = Json::array(
      {{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "T0"}},
       {{"type", "ShoalNodeStateIdle"}, {"status", "True"}, {"lastTransitionTime", "T1"}},
       {{"type", "ShoalNodeStateDrain"}, {"status", "True"}, {"lastTransitionTime", "T1"}}});
  Json desired = Json::array(
      {{{"type", "ShoalNodeStateIdle"}, {"status", "True"}, {"reason", "Idle"}},
       {{"type", "ShoalNodeStateCompleting"}, {"status", "True"}, {"reason", "Completing"}}});
  Json merged = op::MergeConditions(live, desired, "ShoalNodeState", "T2");
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0]["type"], "Ready");
  EXPECT_EQ(merged[1]["type"], "ShoalNodeStateIdle");
  EXPECT_EQ(merged[1]["lastTransitionTime"], "T1");
  EXPECT_EQ(merged[2]["type"], "ShoalNodeStateCompleting");
  EXPECT_EQ(merged[2]["lastTransitionTime"], "T2");
  EXPECT_FALSE(op::SameConditions(merged, live));  // Drain went, Completing came
  EXPECT_TRUE(
      op::SameConditions(merged, op::MergeConditions(merged, desired, "ShoalNodeState", "T3")));
}

TEST(Executor, EventObject) {
  Json cr = {{"apiVersion", "shoal.dev/v1alpha1"},
             {"kind", "NodeSet"},
             {"metadata", {{"name", "w"}, {"namespace", "t1"}, {"uid", "u9"}}}};
  Json ev = op::BuildEvent(cr, {{"reason", "Scaled"}, {"message", "3 -> 1"}}, "T", "abc");
  EXPECT_EQ(ev["metadata"]["name"], "w.abc");
  EXPECT_EQ(ev["metadata"]["namespace"], "t1");
  EXPECT_EQ(ev["involvedObject"]["kind"], "NodeSet");
  EXPECT_EQ(ev["involvedObject"]["uid"], "u9");
  EXPECT_EQ(ev["type"], "Normal");
  EXPECT_EQ(ev["reason"], "Scaled");
}

TEST(Manager, KeysForEvents) {
  Json ns_obj = {
      {"metadata", {{"name", "w"}, {"namespace", "tenant"}, {"ownerReferences", Json::array()}}},
      {"spec", {{"controllerRef", {{"name", "c"}, {"namespace", "hpc"}}}}}};
  auto k = op::KeysForObject("NodeSet", ns_obj);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0], (op::ObjectKey{"NodeSet", "tenant", "w"}));
  EXPECT_EQ(k[1], (op::ObjectKey{"Controller", "hpc", "c"}));

  Json pod = {
      {"metadata",
       {{"name", "w-0"},
        {"namespace", "tenant"},
        {"labels", {{"app.kubernetes.io/name", "shoal-worker"}}},
        {"ownerReferences",
         {{{"apiVersion", "shoal.dev/v1alpha1"},
           {"kind", "NodeSet"},
           {"name", "w"},
           {"controller", true}},
          {{"apiVersion", "v1"}, {"kind", "Other"}, {"name", "x"}, {"controller", false}}}}}}};
  k = op::KeysForObject("Pod", pod);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0], (op::ObjectKey{"NodeSet", "tenant", "w"}));
  pod["metadata"]["labels"]["app.kubernetes.io/name"] = "shoal-controller";
  EXPECT_EQ(op::KeysForObject("Pod", pod).size(), 2u);  // and every NodeSet
  k = op::KeysForObject("Node", {{"metadata", {{"name", "n1"}}}});
  ASSERT_EQ(k.size(), 2u);  // every NodeSet (cordon, features), every Controller (topology)
  EXPECT_EQ(k[0], (op::ObjectKey{"NodeSet", "*", "*"}));
  EXPECT_EQ(k[1], (op::ObjectKey{"Controller", "*", "*"}));
  EXPECT_TRUE(op::KeysForObject("Service", {{"metadata", {{"name", "s"}}}}).empty());
}

TEST(Manager, Backoff) {
  EXPECT_EQ(op::BackoffFor(1).count(), 1);
  EXPECT_EQ(op::BackoffFor(3).count(), 4);
  EXPECT_EQ(op::BackoffFor(40).count(), 60);
}

TEST(Manager, WorkQueueDeduplicatesAndDelays) {
  op::WorkQueue q;
  op::ObjectKey a{"NodeSet", "ns", "a"}, b{"NodeSet", "ns", "b"};
  q.Add(a, std::chrono::milliseconds(150));
  q.Add(b);
  q.Add(b);
  EXPECT_EQ(q.size(), 2u);
  auto first = q.Pop(std::chrono::milliseconds(10));
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, b);
  EXPECT_FALSE(q.Pop(std::chrono::milliseconds(10)));  // a is not due yet
  q.Add(a);                                            // an earlier time wins
  auto second = q.Pop(std::chrono::milliseconds(10));
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, a);
  // A waiting Pop wakes for a key added meanwhile.
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    q.Add(b);
  });
  auto third = q.Pop(std::chrono::seconds(5));
  t.join();
  ASSERT_TRUE(third);
  EXPECT_EQ(*third, b);
}

TEST(ShoalApi, NodeViewWithJobs) {
  pb::NodeQueryResponse nodes;
  auto* n1 = nodes.add_nodes();
  n1->set_name("w-0");
  n1->set_base_state(pb::NODE_ALLOCATED);
  n1->set_responding(true);
  n1->set_drain(true);
  n1->set_reason("shoal-operator: scale-in");
  n1->set_comment("{\"podName\":\"w-0\"}");
  auto* n2 = nodes.add_nodes();
  n2->set_name("w-1");
  n2->set_base_state(pb::NODE_IDLE);
  n2->set_responding(false);
  auto* n3 = nodes.add_nodes();
  n3->set_name("w-2");
  n3->set_base_state(pb::NODE_IDLE);
  n3->set_responding(true);
  pb::JobQueryResponse jobs;
  auto* j1 = jobs.add_jobs();
  j1->set_state(pb::JOB_RUNNING);
  j1->set_start_time(1000);
  j1->set_time_limit(10);
  j1->add_nodes("w-0");
  auto* j2 = jobs.add_jobs();
  j2->set_state(pb::JOB_RUNNING);
  j2->set_start_time(2000);
  j2->set_time_limit(5);
  j2->add_nodes("w-0");
  auto* j3 = jobs.add_jobs();  // ended, epilog outstanding on w-2 only
  j3->set_state(pb::JOB_COMPLETED);
  j3->set_completing(true);
  j3->add_nodes("w-1");
  j3->add_nodes("w-2");
  j3->add_epilog_pending_nodes("w-2");
  auto* j4 = jobs.add_jobs();  // pending: no node
  j4->set_state(pb::JOB_PENDING);
  auto v = op::ToShoalNodes(nodes, jobs);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].base_state, "ALLOCATED");
  EXPECT_TRUE(v[0].Has("DRAIN"));
  EXPECT_EQ(v[0].running_jobs, 2u);
  EXPECT_EQ(v[0].latest_job_end, 2300);
  EXPECT_EQ(v[0].reason, "shoal-operator: scale-in");
  EXPECT_EQ(v[0].comment, "{\"podName\":\"w-0\"}");
  EXPECT_TRUE(v[1].Has("NOT_RESPONDING"));
  EXPECT_FALSE(v[1].Has("COMPLETING"));
  EXPECT_EQ(v[1].running_jobs, 0u);
  EXPECT_TRUE(v[2].Has("COMPLETING"));
  EXPECT_EQ(v[2].running_jobs, 1u);
  EXPECT_EQ(v[2].base_state, "IDLE");
}

TEST(ShoalApi, ErrorsAreValues) {
  op::ShoalApi none({});
  EXPECT_EQ(none.Ping().code(), ErrorCode::kUnavailable);
  EXPECT_FALSE(none.ListNodes().ok());
  op::ShoalApiConfig c;
  c.address = "127.0.0.1:1";  // nothing listens there
  c.jwt_key = "k";
  c.timeout_ms = 500;
  op::ShoalApi closed(c);
  Status s = closed.Drain("w-0", "shoal-operator: test");
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable);
}

TEST(ShoalApi, MaintReservation) {
  auto args = op::MaintReservationArgs("shoal-w-update", 100, 1800, "w-[0-2]", 200);
  ASSERT_EQ(args.size(), 6u);
  EXPECT_EQ(args[0], "ReservationName=shoal-w-update");
  EXPECT_EQ(args[1], "StartTime=now");
  EXPECT_EQ(args[2], "Duration=30");
  EXPECT_EQ(args[3], "Nodes=w-[0-2]");
  EXPECT_EQ(args[4], "Flags=MAINT,IGNORE_JOBS");
  auto later = op::MaintReservationArgs("r", 10000, 61, "w-0", 200);
  EXPECT_EQ(later[2], "Duration=2");
  EXPECT_EQ(later[1].rfind("StartTime=19", 0), 0u);
}

TEST(Health, Probes) {
  HttpRequest r;
  r.method = "GET";
  r.path = "/livez";
  EXPECT_EQ(op::HealthAnswer(r, false).status, 200);
  r.path = "/readyz";
  EXPECT_EQ(op::HealthAnswer(r, false).status, 503);
  EXPECT_EQ(op::HealthAnswer(r, true).status, 200);
  r.path = "/other";
  EXPECT_EQ(op::HealthAnswer(r, true).status, 404);
  r.method = "POST";
  EXPECT_EQ(op::HealthAnswer(r, true).status, 405);
}

}  // namespace
}  // namespace shoal
