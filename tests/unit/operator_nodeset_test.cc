// PlanNodeSet: scale-out, drain-then-delete scale-in (never a busy node, never without Shoal
// state), rolling updates within maxUnavailable, cordon sync that respects foreign drains,
// registration timeout, orphan records, status.
#include <gtest/gtest.h>

#include <algorithm>

#include "operator/model/crd_types.h"
#include "operator/model/desired.h"
#include "operator/model/plan.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

constexpr int64_t kNow = 1767323045;  // 2026-01-02T03:04:05Z
using K = Action::Kind;

Json NodeSetCr(Json spec) {
  spec["controllerRef"] = {{"name", "c"}};
  return Json{{"apiVersion", "shoal.dev/v1alpha1"},
              {"kind", "NodeSet"},
              {"metadata", {{"name", "w"}, {"namespace", "hpc"}, {"uid", "u1"}, {"generation", 2}}},
              {"spec", spec}};
}

Json ControllerCr() {
  return Json{{"apiVersion", "shoal.dev/v1alpha1"},
              {"kind", "Controller"},
              {"metadata", {{"name", "c"}, {"namespace", "hpc"}}},
              {"spec", {{"clusterName", "lab"}, {"slurmKeyRef", {{"name", "key"}}}}}};
}

// A running, ready worker pod exactly as the planner would create it (current revision).
Json Worker(const Json& cr, int ordinal, const std::string& k8s_node = "n1") {
  auto spec = *ParseNodeSetSpec(cr);
  WorkerPodInputs in;
  in.ordinal = ordinal;
  in.controller_host = "c.hpc.svc:6817";
  in.slurm_key_secret = "key";
  Json pod = WorkerPod(cr, spec, in);
  pod["spec"]["nodeName"] = k8s_node;
  pod["status"] = {
      {"phase", "Running"},
      {"startTime", FormatRfc3339(kNow - 1000)},
      {"conditions", Json::array({{{"type", "Ready"},
                                   {"status", "True"},
                                   {"lastTransitionTime", FormatRfc3339(kNow - 900)}}})}};
  return pod;
}

ShoalNode Node(const std::string& name, const std::string& state = "IDLE") {
  ShoalNode n;
  n.name = name;
  n.base_state = state;
  n.features = {"w"};
  n.comment = Json{{"namespace", "hpc"}, {"podName", name}, {"node", "n1"}}.dump();
  return n;
}

ShoalNode Busy(const std::string& name, int64_t end) {
  ShoalNode n = Node(name, "ALLOCATED");
  n.running_jobs = 1;
  n.alloc_cpus = 1;
  n.latest_job_end = end;
  return n;
}

ShoalNode Drained(ShoalNode n, const std::string& reason) {
  n.flags.insert("DRAIN");
  n.reason = reason;
  return n;
}

Json K8sNode(const std::string& name, bool cordoned = false) {
  return Json{{"metadata", {{"name", name}, {"labels", Json::object()}}},
              {"spec", {{"unschedulable", cordoned}}}};
}

Observed Obs(const Json& cr, std::vector<Json> pods, std::optional<std::vector<ShoalNode>> nodes) {
  Observed o;
  o.cr = cr;
  o.pods = std::move(pods);
  o.shoal_nodes = std::move(nodes);
  o.k8s_nodes = {K8sNode("n1"), K8sNode("n2")};
  o.related["Controller"] = ControllerCr();
  o.now = kNow;
  return o;
}

std::vector<const Action*> Of(const Plan& p, K kind) {
  std::vector<const Action*> out;
  for (const Action& a : p.actions)
    if (a.kind == kind) out.push_back(&a);
  return out;
}

std::vector<std::string> Names(const Plan& p, K kind) {
  std::vector<std::string> out;
  for (const Action* a : Of(p, kind))
    out.push_back(a->node.empty() ? Str(a->object, "metadata.name") : a->node);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> CreatedPods(const Plan& p) {
  std::vector<std::string> out;
  for (const Action* a : Of(p, K::kApply))
    if (Str(a->object, "kind") == "Pod") out.push_back(Str(a->object, "metadata.name"));
  return out;
}

TEST(PlanNodeSet, CreatesMissingOrdinalsLowestFirstWithServiceAndPdb) {
  Json cr = NodeSetCr({{"replicas", 3}});
  Plan p = PlanNodeSet(Obs(cr, {Worker(cr, 1)}, std::vector<ShoalNode>{Node("w-1")}));
  EXPECT_EQ(CreatedPods(p), (std::vector<std::string>{"w-0", "w-2"}));
  std::vector<std::string> kinds;
  for (const Action* a : Of(p, K::kApply)) kinds.push_back(Str(a->object, "kind"));
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "Service"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "PodDisruptionBudget"), kinds.end());
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  // Comment links the Shoal node to its pod.
  ASSERT_TRUE(Of(p, K::kUpdateStatus).size() == 1);
  const Json& st = Of(p, K::kUpdateStatus)[0]->object["status"];
  EXPECT_EQ(st["replicas"], 1);
  EXPECT_EQ(st["readyReplicas"], 1);
  EXPECT_EQ(st["selector"], "app.kubernetes.io/instance=w,shoal.dev/nodeset=w");
  EXPECT_EQ(st["nodeIdle"], 1);
  EXPECT_EQ(st["observedGeneration"], 2);
}

TEST(PlanNodeSet, ScaleInDrainsIdleFirstAndNeverDeletesBusy) {
  Json cr = NodeSetCr({{"replicas", 1}});
  std::vector<Json> pods = {Worker(cr, 0), Worker(cr, 1), Worker(cr, 2)};
  // w-1 runs a long job; w-0 and w-2 are idle.
  Plan p = PlanNodeSet(
      Obs(cr, pods, std::vector<ShoalNode>{Node("w-0"), Busy("w-1", kNow + 3600), Node("w-2")}));
  EXPECT_EQ(Names(p, K::kDrainNode), (std::vector<std::string>{"w-0", "w-2"}));
  for (const Action* a : Of(p, K::kDrainNode)) EXPECT_EQ(a->reason, "shoal-operator: scale-in");
  EXPECT_TRUE(Of(p, K::kDelete).empty());  // not drained yet
  EXPECT_TRUE(CreatedPods(p).empty());

  // Next round: drained and idle -> deleted; the busy one stays.
  p = PlanNodeSet(Obs(cr, pods,
                      std::vector<ShoalNode>{Drained(Node("w-0"), "shoal-operator: scale-in"),
                                             Busy("w-1", kNow + 3600),
                                             Drained(Node("w-2"), "shoal-operator: scale-in")}));
  EXPECT_EQ(Names(p, K::kDelete), (std::vector<std::string>{"w-0", "w-2"}));
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());
  EXPECT_TRUE(Of(p, K::kUndrainNode).empty());
}

TEST(PlanNodeSet, BusyVictimIsDrainedButDeletedOnlyAfterItsJobs) {
  Json cr = NodeSetCr({{"replicas", 0}});
  std::vector<Json> pods = {Worker(cr, 0)};
  Plan p = PlanNodeSet(Obs(cr, pods, std::vector<ShoalNode>{Busy("w-0", kNow + 60)}));
  EXPECT_EQ(Names(p, K::kDrainNode), (std::vector<std::string>{"w-0"}));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  // Drained but still allocated: wait.
  p = PlanNodeSet(
      Obs(cr, pods,
          std::vector<ShoalNode>{Drained(Busy("w-0", kNow + 60), "shoal-operator: scale-in")}));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  EXPECT_GT(p.requeue_after_s, 0);
  // Completing counts as busy too.
  ShoalNode completing = Drained(Node("w-0"), "shoal-operator: scale-in");
  completing.flags.insert("COMPLETING");
  p = PlanNodeSet(Obs(cr, pods, std::vector<ShoalNode>{completing}));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  // Mixed counts as busy too.
  ShoalNode mixed = Drained(Node("w-0", "MIXED"), "shoal-operator: scale-in");
  p = PlanNodeSet(Obs(cr, pods, std::vector<ShoalNode>{mixed}));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  // Job done: delete.
  p = PlanNodeSet(
      Obs(cr, pods, std::vector<ShoalNode>{Drained(Node("w-0"), "shoal-operator: scale-in")}));
  EXPECT_EQ(Names(p, K::kDelete), (std::vector<std::string>{"w-0"}));
}

TEST(PlanNodeSet, FailsClosedWithoutShoalState) {
  Json cr = NodeSetCr({{"replicas", 0}, {"updateStrategy", {{"type", "RollingUpdate"}}}});
  Json old = Worker(cr, 0);
  old["metadata"]["labels"][kLabelRevision] = "old";
  std::vector<Json> pods = {old, Worker(cr, 1)};
  Plan p = PlanNodeSet(Obs(cr, pods, std::nullopt));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());
  EXPECT_TRUE(Of(p, K::kUndrainNode).empty());
  EXPECT_TRUE(Of(p, K::kDeleteShoalNode).empty());
  EXPECT_TRUE(Of(p, K::kPatchMetadata).empty());  // protect labels stay as they are
  // A victim whose node is missing from the list is not deleted either (it may run jobs).
  p = PlanNodeSet(Obs(cr, pods, std::vector<ShoalNode>{}));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
}

TEST(PlanNodeSet, PendingVictimWithoutNodeGoesAtOnce) {
  Json cr = NodeSetCr({{"replicas", 1}});
  Json pending = Worker(cr, 1);
  pending["status"] = {{"phase", "Pending"}};
  Plan p = PlanNodeSet(Obs(cr, {Worker(cr, 0), pending}, std::vector<ShoalNode>{Node("w-0")}));
  EXPECT_EQ(Names(p, K::kDelete), (std::vector<std::string>{"w-1"}));
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());
}

TEST(PlanNodeSet, ScaleInKeepsAStartedDrainStable) {
  Json cr = NodeSetCr({{"replicas", 1}});
  // w-1 was chosen earlier and is draining; w-0 is now not ready (would sort first otherwise).
  Json w0 = Worker(cr, 0);
  w0["status"]["conditions"][0]["status"] = "False";
  Plan p =
      PlanNodeSet(Obs(cr, {w0, Worker(cr, 1)},
                      std::vector<ShoalNode>{Node("w-0"), Drained(Busy("w-1", kNow + 10),
                                                                  "shoal-operator: scale-in")}));
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());
  EXPECT_TRUE(Of(p, K::kUndrainNode).empty());
}

TEST(PlanNodeSet, ScaleOutAgainUndrainsScaleInVictim) {
  Json cr = NodeSetCr({{"replicas", 2}});
  Plan p =
      PlanNodeSet(Obs(cr, {Worker(cr, 0), Worker(cr, 1)},
                      std::vector<ShoalNode>{Node("w-0"), Drained(Busy("w-1", kNow + 10),
                                                                  "shoal-operator: scale-in")}));
  EXPECT_EQ(Names(p, K::kUndrainNode), (std::vector<std::string>{"w-1"}));
}

TEST(PlanNodeSet, RollingUpdateRespectsMaxUnavailable) {
  Json cr = NodeSetCr({{"replicas", 4},
                       {"updateStrategy",
                        {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 1}}}}}});
  std::vector<Json> pods;
  std::vector<ShoalNode> nodes;
  for (int i = 0; i < 4; ++i) {
    Json pod = Worker(cr, i);
    pod["metadata"]["labels"][kLabelRevision] = "old";
    pods.push_back(pod);
    nodes.push_back(Node("w-" + std::to_string(i)));
  }
  nodes[3] = Busy("w-3", kNow + 100);
  Plan p = PlanNodeSet(Obs(cr, pods, nodes));
  ASSERT_EQ(Of(p, K::kDrainNode).size(), 1u);  // one at a time
  EXPECT_EQ(Of(p, K::kDrainNode)[0]->reason, "shoal-operator: rolling update");
  EXPECT_NE(Of(p, K::kDrainNode)[0]->node, "w-3");  // idle nodes before busy ones
  std::string first = Of(p, K::kDrainNode)[0]->node;

  // While the first is draining, no second drain starts.
  for (ShoalNode& n : nodes)
    if (n.name == first) n = Drained(n, "shoal-operator: rolling update");
  p = PlanNodeSet(Obs(cr, pods, nodes));
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());
  EXPECT_EQ(Names(p, K::kDelete), (std::vector<std::string>{first}));

  // While its pod terminates (not stuck), nothing else starts and no replacement is made.
  for (Json& pod : pods)
    if (PodName(pod) == first) pod["metadata"]["deletionTimestamp"] = FormatRfc3339(kNow + 30);
  p = PlanNodeSet(Obs(cr, pods, nodes));
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());
  EXPECT_TRUE(CreatedPods(p).empty());

  // Once gone, the same name comes back with the new revision, and its old drain is lifted
  // when it registers.
  pods.erase(
      std::remove_if(pods.begin(), pods.end(), [&](const Json& x) { return PodName(x) == first; }),
      pods.end());
  p = PlanNodeSet(Obs(cr, pods, nodes));
  EXPECT_EQ(CreatedPods(p), (std::vector<std::string>{first}));
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());  // the missing pod uses the budget
  int ord = *OrdinalOf(first, "w");
  pods.push_back(Worker(cr, ord));
  p = PlanNodeSet(Obs(cr, pods, nodes));
  EXPECT_EQ(Names(p, K::kUndrainNode), (std::vector<std::string>{first}));
  EXPECT_EQ(Of(p, K::kDrainNode).size(), 1u);  // and the next one starts
}

TEST(PlanNodeSet, OnDeleteNeverReplaces) {
  Json cr = NodeSetCr({{"replicas", 1}, {"updateStrategy", {{"type", "OnDelete"}}}});
  Json pod = Worker(cr, 0);
  pod["metadata"]["labels"][kLabelRevision] = "old";
  Plan p = PlanNodeSet(Obs(cr, {pod}, std::vector<ShoalNode>{Node("w-0")}));
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());
  EXPECT_TRUE(Of(p, K::kDelete).empty());
}

TEST(PlanNodeSet, ScheduledUpdateReservesWindowAndReplacesInsideIt) {
  Json cr = NodeSetCr(
      {{"replicas", 1},
       {"updateStrategy",
        {{"type", "ScheduledUpdate"},
         {"scheduledUpdate", {{"startTime", FormatRfc3339(kNow + 600)}, {"duration", "30m"}}}}}});
  Json pod = Worker(cr, 0);
  pod["metadata"]["labels"][kLabelRevision] = "old";
  Plan p = PlanNodeSet(Obs(cr, {pod}, std::vector<ShoalNode>{Node("w-0")}));
  ASSERT_EQ(Of(p, K::kCreateReservation).size(), 1u);
  const Json& r = Of(p, K::kCreateReservation)[0]->object;
  EXPECT_EQ(r["start"], kNow + 600);
  EXPECT_EQ(r["duration"], 1800);
  EXPECT_EQ(r["nodes"], "w-0");
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());  // before the window
  Observed inside = Obs(cr, {pod}, std::vector<ShoalNode>{Node("w-0")});
  inside.now = kNow + 700;
  p = PlanNodeSet(inside);
  EXPECT_EQ(Names(p, K::kDrainNode), (std::vector<std::string>{"w-0"}));
}

TEST(PlanNodeSet, CordonDrainsAndUncordonResumesOnlyOwnDrains) {
  Json cr = NodeSetCr({{"replicas", 2}});
  std::vector<Json> pods = {Worker(cr, 0, "n1"), Worker(cr, 1, "n2")};
  Observed o = Obs(cr, pods, std::vector<ShoalNode>{Node("w-0"), Node("w-1")});
  o.k8s_nodes = {K8sNode("n1", true), K8sNode("n2")};
  Plan p = PlanNodeSet(o);
  ASSERT_EQ(Of(p, K::kDrainNode).size(), 1u);
  EXPECT_EQ(Of(p, K::kDrainNode)[0]->node, "w-0");
  EXPECT_EQ(Of(p, K::kDrainNode)[0]->reason, "shoal-operator: k8s node n1 cordoned");
  bool annotated = false;
  for (const Action* a : Of(p, K::kPatchMetadata))
    if (Str(a->object, "metadata.name") == "w-0" &&
        a->object["metadata"]["annotations"].value(kAnnotCordon, "") == "true")
      annotated = true;
  EXPECT_TRUE(annotated);
  EXPECT_TRUE(Of(p, K::kDelete).empty());  // cordon never deletes

  // The annotation on the k8s node overrides the reason text.
  o.k8s_nodes[0]["metadata"]["annotations"][kAnnotNodeDrainReason] = "bad fan";
  p = PlanNodeSet(o);
  EXPECT_EQ(Of(p, K::kDrainNode)[0]->reason, "shoal-operator: bad fan");

  // Uncordon: resumes the drain the operator made.
  pods[0]["metadata"]["annotations"][kAnnotCordon] = "true";
  o = Obs(cr, pods,
          std::vector<ShoalNode>{Drained(Node("w-0"), "shoal-operator: k8s node n1 cordoned"),
                                 Node("w-1")});
  p = PlanNodeSet(o);
  EXPECT_EQ(Names(p, K::kUndrainNode), (std::vector<std::string>{"w-0"}));
  // ... but never one an admin made meanwhile; the annotation still goes.
  o = Obs(cr, pods, std::vector<ShoalNode>{Drained(Node("w-0"), "disk errors"), Node("w-1")});
  p = PlanNodeSet(o);
  EXPECT_TRUE(Of(p, K::kUndrainNode).empty());
  bool cleared = false;
  for (const Action* a : Of(p, K::kPatchMetadata))
    if (Str(a->object, "metadata.name") == "w-0" &&
        a->object["metadata"]["annotations"].contains(kAnnotCordon) &&
        a->object["metadata"]["annotations"][kAnnotCordon].is_null())
      cleared = true;
  EXPECT_TRUE(cleared);
}

TEST(PlanNodeSet, PropagatedNodeConditionDrains) {
  Json cr = NodeSetCr({{"replicas", 1}, {"propagateNodeConditions", {"DiskPressure"}}});
  Observed o = Obs(cr, {Worker(cr, 0, "n1")}, std::vector<ShoalNode>{Node("w-0")});
  o.k8s_nodes[0]["status"]["conditions"] =
      Json::array({{{"type", "DiskPressure"}, {"status", "True"}},
                   {{"type", "MemoryPressure"}, {"status", "True"}}});
  Plan p = PlanNodeSet(o);
  ASSERT_EQ(Of(p, K::kDrainNode).size(), 1u);
  EXPECT_EQ(Of(p, K::kDrainNode)[0]->reason, "shoal-operator: k8s node n1 condition DiskPressure");
}

TEST(PlanNodeSet, MirrorsStateToPodConditionsAnnotationsAndProtectLabel) {
  Json cr = NodeSetCr({{"replicas", 2}});
  ShoalNode admin = Drained(Node("w-1"), "health check failed");
  Plan p = PlanNodeSet(Obs(cr, {Worker(cr, 0), Worker(cr, 1)},
                           std::vector<ShoalNode>{Busy("w-0", kNow + 3600), admin}));
  std::map<std::string, Json> meta, conds;
  for (const Action* a : Of(p, K::kPatchMetadata))
    meta[Str(a->object, "metadata.name")] = a->object;
  for (const Action* a : Of(p, K::kPatchPodStatus))
    conds[Str(a->object, "metadata.name")] = a->object["status"]["conditions"];
  EXPECT_EQ(meta["w-0"]["metadata"]["labels"][kLabelProtect], "true");
  EXPECT_EQ(meta["w-0"]["metadata"]["annotations"][kAnnotDeadline], FormatRfc3339(kNow + 3600));
  EXPECT_EQ(meta["w-1"]["metadata"]["annotations"][kAnnotNodeDrain], "health check failed");
  EXPECT_FALSE(meta["w-1"]["metadata"].contains("labels"));  // idle: no protect label to add
  std::string c0 = conds["w-0"].dump(), c1 = conds["w-1"].dump();
  EXPECT_NE(c0.find("ShoalNodeStateAllocated"), std::string::npos);
  EXPECT_NE(c1.find("ShoalNodeStateDrain"), std::string::npos);
  EXPECT_NE(c1.find("health check failed"), std::string::npos);
  EXPECT_NE(c1.find("\"Ready\""), std::string::npos);  // kubelet conditions kept
  EXPECT_TRUE(Of(p, K::kUndrainNode).empty());         // a foreign drain is left alone

  // When the job ends the protect label and deadline are removed.
  Json w0 = Worker(cr, 0);
  w0["metadata"]["labels"][kLabelProtect] = "true";
  w0["metadata"]["annotations"][kAnnotDeadline] = FormatRfc3339(kNow + 3600);
  p = PlanNodeSet(Obs(cr, {w0}, std::vector<ShoalNode>{Node("w-0")}));
  ASSERT_FALSE(Of(p, K::kPatchMetadata).empty());
  const Json& m = Of(p, K::kPatchMetadata)[0]->object["metadata"];
  EXPECT_TRUE(m["labels"][kLabelProtect].is_null());
  EXPECT_TRUE(m["annotations"][kAnnotDeadline].is_null());
}

TEST(PlanNodeSet, SetsNodeCommentLinkingThePod) {
  Json cr = NodeSetCr({{"replicas", 1}});
  ShoalNode n = Node("w-0");
  n.comment = "";
  Plan p = PlanNodeSet(Obs(cr, {Worker(cr, 0, "n2")}, std::vector<ShoalNode>{n}));
  ASSERT_EQ(Of(p, K::kSetNodeComment).size(), 1u);
  Json c = Json::parse(Of(p, K::kSetNodeComment)[0]->reason);
  EXPECT_EQ(c, (Json{{"namespace", "hpc"}, {"podName", "w-0"}, {"node", "n2"}}));
}

TEST(PlanNodeSet, K8sNodeFeaturesFollowTheAnnotation) {
  Json cr = NodeSetCr({{"replicas", 1}, {"features", {"fast"}}});
  ShoalNode n = Node("w-0");
  n.features = {"w", "fast"};
  Observed o = Obs(cr, {Worker(cr, 0, "n1")}, std::vector<ShoalNode>{n});
  EXPECT_TRUE(Of(PlanNodeSet(o), K::kSetNodeFeatures).empty());  // in sync
  o.k8s_nodes[0]["metadata"]["annotations"][kAnnotFeatures] = "zone-a,ib";
  Plan p = PlanNodeSet(o);
  ASSERT_EQ(Of(p, K::kSetNodeFeatures).size(), 1u);
  EXPECT_EQ(Of(p, K::kSetNodeFeatures)[0]->node, "w-0");
  EXPECT_EQ(Of(p, K::kSetNodeFeatures)[0]->reason, "w,fast,k8s/zone-a,k8s/ib");
  (*o.shoal_nodes)[0].features = {"w", "fast", "k8s/ib", "k8s/zone-a"};
  EXPECT_TRUE(Of(PlanNodeSet(o), K::kSetNodeFeatures).empty());
}

TEST(PlanNodeSet, UnregisteredPodIsRecreatedAfterTimeout) {
  Json cr = NodeSetCr({{"replicas", 1}, {"registrationTimeoutSeconds", 120}});
  Json pod = Worker(cr, 0);
  pod["status"]["conditions"][0]["status"] = "False";  // shoald is ready once registered
  Plan p = PlanNodeSet(Obs(cr, {pod}, std::vector<ShoalNode>{}));
  EXPECT_EQ(Names(p, K::kDelete), (std::vector<std::string>{"w-0"}));
  ASSERT_EQ(Of(p, K::kEvent).size(), 1u);
  EXPECT_EQ(Of(p, K::kEvent)[0]->object["reason"], "NodeNotRegistered");
  // Not yet past the timeout: kept.
  pod["status"]["startTime"] = FormatRfc3339(kNow - 60);
  p = PlanNodeSet(Obs(cr, {pod}, std::vector<ShoalNode>{}));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  // Unknown Shoal state: kept.
  pod["status"]["startTime"] = FormatRfc3339(kNow - 1000);
  p = PlanNodeSet(Obs(cr, {pod}, std::nullopt));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
  // A ready pod missing from the list: the list is suspect, keep it.
  pod["status"]["conditions"][0]["status"] = "True";
  p = PlanNodeSet(Obs(cr, {pod}, std::vector<ShoalNode>{}));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
}

TEST(PlanNodeSet, OrphanShoalNodeRemovedOnlyWhenIdle) {
  Json cr = NodeSetCr({{"replicas", 1}});
  ShoalNode other = Node("x-0");
  other.features = {"x"};
  ShoalNode foreign_ns = Node("w-8");
  foreign_ns.comment = Json{{"namespace", "other"}, {"podName", "w-8"}}.dump();
  Plan p = PlanNodeSet(Obs(
      cr, {Worker(cr, 0)},
      std::vector<ShoalNode>{Node("w-0"), Node("w-5"), Busy("w-6", kNow + 5), other, foreign_ns}));
  EXPECT_EQ(Names(p, K::kDeleteShoalNode), (std::vector<std::string>{"w-5"}));
  // A record whose pod is being recreated in the same plan stays (it re-registers).
  cr["spec"]["replicas"] = 2;
  p = PlanNodeSet(
      Obs(cr, {Worker(cr, 0)}, std::vector<ShoalNode>{Node("w-0"), Node("w-1", "DOWN")}));
  EXPECT_EQ(CreatedPods(p), (std::vector<std::string>{"w-1"}));
  EXPECT_TRUE(Of(p, K::kDeleteShoalNode).empty());
}

TEST(PlanNodeSet, StuckTerminatingPodDoesNotWedgeReplacement) {
  Json cr = NodeSetCr({{"replicas", 2}});
  Json stuck = Worker(cr, 1);
  stuck["metadata"]["deletionTimestamp"] = FormatRfc3339(kNow - 61);  // past grace + 60 s
  Plan p = PlanNodeSet(
      Obs(cr, {Worker(cr, 0), stuck}, std::vector<ShoalNode>{Node("w-0"), Node("w-1", "DOWN")}));
  EXPECT_EQ(CreatedPods(p), (std::vector<std::string>{"w-2"}));
  // A pod terminating normally is waited for.
  stuck["metadata"]["deletionTimestamp"] = FormatRfc3339(kNow + 10);
  p = PlanNodeSet(
      Obs(cr, {Worker(cr, 0), stuck}, std::vector<ShoalNode>{Node("w-0"), Node("w-1", "DOWN")}));
  EXPECT_TRUE(CreatedPods(p).empty());
}

TEST(PlanNodeSet, DaemonSetModeOnePodPerMatchingNode) {
  Json cr = NodeSetCr({{"scalingMode", "DaemonSet"},
                       {"replicas", 9},
                       {"template", {{"spec", {{"nodeSelector", {{"hpc", "yes"}}}}}}}});
  Observed o = Obs(cr, {}, std::vector<ShoalNode>{});
  o.k8s_nodes = {K8sNode("n1"), K8sNode("n2"), K8sNode("n3")};
  o.k8s_nodes[0]["metadata"]["labels"]["hpc"] = "yes";
  o.k8s_nodes[2]["metadata"]["labels"]["hpc"] = "yes";
  o.k8s_nodes[2]["metadata"]["annotations"][kAnnotFeatures] = "ib, nvme";
  Plan p = PlanNodeSet(o);
  auto created = CreatedPods(p);
  EXPECT_EQ(created, (std::vector<std::string>{"w-n1", "w-n3"}));
  for (const Action* a : Of(p, K::kApply)) {
    if (Str(a->object, "metadata.name") != "w-n3") continue;
    std::string cmd = a->object["spec"]["containers"][0]["command"].dump();
    EXPECT_NE(cmd.find("Features=w,k8s/ib,k8s/nvme"), std::string::npos) << cmd;
  }
}

TEST(PlanNodeSet, TenantNamespaceGetsACopyOfTheClusterKey) {
  Json cr = NodeSetCr({{"replicas", 1}});
  cr["metadata"]["namespace"] = "tenant";
  cr["spec"]["controllerRef"]["namespace"] = "hpc";
  Observed o = Obs(cr, {}, std::vector<ShoalNode>{});
  Plan p = PlanNodeSet(o);
  EXPECT_TRUE(CreatedPods(p).empty());  // the key is unreadable: no pod without it
  o.related["Secret/key"] = {{"data", {{"slurm.key", "c2VjcmV0"}}}};
  p = PlanNodeSet(o);
  const Json* copy = nullptr;
  const Json* pod = nullptr;
  for (const Action* a : Of(p, K::kApply)) {
    if (a->object["kind"] == "Secret") copy = &a->object;
    if (a->object["kind"] == "Pod") pod = &a->object;
  }
  ASSERT_NE(copy, nullptr);
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ((*copy)["metadata"]["name"], "w-slurm-key");
  EXPECT_EQ((*copy)["metadata"]["namespace"], "tenant");
  EXPECT_EQ((*copy)["data"]["slurm.key"], "c2VjcmV0");
  EXPECT_NE(pod->dump().find("\"secretName\":\"w-slurm-key\""), std::string::npos);
  EXPECT_NE(pod->dump().find("c.hpc.svc:6817"), std::string::npos);
}

TEST(PlanNodeSet, DaemonSetModeDrainsPodsOfNodesThatNoLongerMatch) {
  Json cr = NodeSetCr({{"scalingMode", "DaemonSet"},
                       {"template", {{"spec", {{"nodeSelector", {{"hpc", "yes"}}}}}}}});
  Observed o = Obs(cr, {}, std::vector<ShoalNode>{});
  o.k8s_nodes = {K8sNode("n1"), K8sNode("n2")};
  o.k8s_nodes[0]["metadata"]["labels"]["hpc"] = "yes";
  o.k8s_nodes[1]["metadata"]["labels"]["hpc"] = "yes";
  Plan p = PlanNodeSet(o);
  std::vector<Json> pods;
  for (const Action* a : Of(p, K::kApply))
    if (a->object["kind"] == "Pod") pods.push_back(a->object);
  ASSERT_EQ(pods.size(), 2u);
  for (Json& pod : pods) pod["status"] = Worker(cr, 0)["status"];  // running, not yet bound
  o.pods = pods;
  o.shoal_nodes = std::vector<ShoalNode>{Node("w-n1"), Busy("w-n2", kNow + 60)};
  p = PlanNodeSet(o);
  EXPECT_TRUE(CreatedPods(p).empty());  // each node covered once
  EXPECT_TRUE(Of(p, K::kDrainNode).empty());
  // n2 leaves the pool: its busy pod is drained, not deleted.
  o.k8s_nodes[1]["metadata"]["labels"].erase("hpc");
  p = PlanNodeSet(o);
  EXPECT_EQ(Names(p, K::kDrainNode), (std::vector<std::string>{"w-n2"}));
  EXPECT_TRUE(Of(p, K::kDelete).empty());
}

TEST(PlanNodeSet, InvalidSpecOnlyReports) {
  Json cr = NodeSetCr({{"replicas", -2}});
  Plan p = PlanNodeSet(Obs(cr, {}, std::vector<ShoalNode>{}));
  EXPECT_TRUE(Of(p, K::kApply).empty());
  ASSERT_EQ(Of(p, K::kUpdateStatus).size(), 1u);
  EXPECT_EQ(Of(p, K::kUpdateStatus)[0]->object["status"]["conditions"][0]["message"],
            "spec.replicas: must be >= 0");
}

}  // namespace
}  // namespace shoal::op
