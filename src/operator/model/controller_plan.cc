// PlanController: ConfigMap (slurm.conf + referenced files), Services, state PVC, pods, and
// `scontrol reconfigure` when only the configuration changed (never a pod restart for it).
#include <algorithm>
#include <map>

#include "operator/model/crd_types.h"
#include "operator/model/desired.h"
#include "operator/model/plan_common.h"
#include "operator/model/slurm_conf_gen.h"
#include "operator/model/topology_gen.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

// How long after a ConfigMap change the kubelet may take to refresh mounted files (its default
// sync period is 60 s): a second reconfigure then picks up whatever the first one missed.
constexpr int64_t kKubeletSyncS = 70;

const Json* OwnedObject(const Observed& obs, const std::string& kind, const std::string& name) {
  for (const Json& o : obs.owned) {
    if (Str(o, "kind") == kind && Str(o, "metadata.name") == name) return &o;
  }
  return nullptr;
}

// Adds the ConfigMap's data to `files`; false when it is missing.
bool AddConfigMapFiles(const Observed& obs, const std::string& name,
                       std::map<std::string, std::string>* files, std::vector<std::string>* keys) {
  const Json* cm = Related(obs, "ConfigMap/" + name);
  if (cm == nullptr || !cm->is_object()) return false;
  if (auto data = cm->find("data"); data != cm->end() && data->is_object()) {
    for (auto it = data->begin(); it != data->end(); ++it) {
      if (!it.value().is_string()) continue;
      (*files)[it.key()] = it.value().get<std::string>();
      if (keys != nullptr) keys->push_back(it.key());
    }
  }
  return true;
}

}  // namespace

Plan PlanController(const Observed& obs) {
  Plan plan;
  const Json& cr = obs.cr;
  std::string name = Str(cr, "metadata.name");
  Json old_status = cr.value("status", Json::object());
  if (PodTerminating(cr)) return plan;
  auto parsed = ParseControllerSpec(cr);
  if (!parsed.ok()) return InvalidSpecPlan(cr, parsed.error(), obs.now);
  const ControllerSpec& spec = *parsed;

  // Configuration files: referenced ConfigMaps first, then the generated slurm.conf.
  std::map<std::string, std::string> files;
  ConfInputs in;
  in.controller = cr;
  in.spec = spec;
  std::vector<std::string> missing;
  for (const std::string& ref : spec.config_file_refs) {
    if (!AddConfigMapFiles(obs, ref, &files, nullptr)) missing.push_back(ref);
  }
  for (const std::string& ref : spec.prolog_refs) {
    if (!AddConfigMapFiles(obs, ref, &files, &in.prolog_files)) missing.push_back(ref);
  }
  for (const std::string& ref : spec.epilog_refs) {
    if (!AddConfigMapFiles(obs, ref, &files, &in.epilog_files)) missing.push_back(ref);
  }
  if (const Json* sets = Related(obs, "NodeSets"); sets != nullptr && sets->is_array()) {
    for (const Json& s : *sets) {
      if (!PodTerminating(s)) in.nodesets.push_back(s);
    }
  }
  if (!spec.accounting_ref.empty()) {
    const Json* acct = Related(obs, "Accounting");
    if (acct == nullptr || !acct->is_object()) {
      missing.push_back("Accounting/" + spec.accounting_ref);
    } else {
      in.accounting = *acct;
    }
  }
  Json status = old_status;
  status["observedGeneration"] = Int(cr, "metadata.generation", 0);
  Json status_topology;  // null: no spec.topology
  if (!missing.empty()) {
    std::string what;
    for (const std::string& m : missing) what += (what.empty() ? "" : ", ") + m;
    Json conds = Json::array({Condition("ConfigApplied", false, "MissingReference",
                                        "waiting for " + what, old_status, obs.now)});
    status["conditions"] = conds;
    if (status != old_status)
      plan.actions.push_back(Action{Action::Kind::kUpdateStatus, {{"status", status}}, "", ""});
    plan.log.push_back("controller " + name + ": waiting for " + what);
    plan.requeue_after_s = 15;
    return plan;
  }
  auto conf = GenerateSlurmConf(in);
  if (!conf.ok()) return InvalidSpecPlan(cr, conf.error(), obs.now);
  files["slurm.conf"] = *conf;
  if (spec.topology.enabled()) {
    // Workers (related["WorkerPods"]: the pods of this Controller's NodeSets) under the switch
    // or block their Kubernetes node names; replaces a topology.conf from configFileRefs.
    std::vector<TopoMember> members;
    if (const Json* pods = Related(obs, "WorkerPods"); pods != nullptr && pods->is_array()) {
      for (const Json& p : *pods)
        if (!PodTerminating(p) && !PodNodeName(p).empty())
          members.push_back({PodName(p), PodNodeName(p)});
    }
    TopologyConf topo =
        GenerateTopologyConf(spec.topology, members, obs.k8s_nodes,
                             "Controller " + Str(cr, "metadata.namespace", "default") + "/" + name);
    files["topology.conf"] = topo.text;
    Json old_problems = old_status.contains("topology") && old_status["topology"].is_object()
                            ? old_status["topology"].value("problems", Json::array())
                            : Json::array();
    for (const std::string& p : topo.problems) {
      // An event when a problem first shows, not on every reconcile.
      if (std::find(old_problems.begin(), old_problems.end(), Json(p)) == old_problems.end())
        plan.actions.push_back(
            Make(Action::Kind::kEvent, EventObj("TopologyInvalid", p, "Warning")));
      plan.log.push_back("topology: " + p);
    }
    Json t{{"plugin", spec.topology.plugin}, {"nodes", topo.placed}, {"problems", topo.problems}};
    status_topology = std::move(t);
  }
  std::string hash = HashHex(Json(files).dump());

  Json cm = ControllerConfigMap(cr, files);
  cm["metadata"]["annotations"][kAnnotConfigHash] = hash;
  StampSpecHash(&cm);
  plan.actions.push_back(Action{Action::Kind::kApply, cm, "", ""});
  plan.actions.push_back(Action{Action::Kind::kApply, ControllerService(cr, spec), "", ""});
  plan.actions.push_back(Action{Action::Kind::kApply, ControllerHeadlessService(cr, spec), "", ""});
  if (spec.metrics && spec.service_monitor)
    plan.actions.push_back(Action{Action::Kind::kApply, ControllerServiceMonitor(cr), "", ""});
  if (spec.persistence && spec.existing_claim.empty())
    plan.actions.push_back(Action{Action::Kind::kApply, ControllerStatePvc(cr, spec), "", ""});
  if (spec.ha) {
    // The identity leader-exec campaigns with: its Lease and nothing else.
    for (Json o :
         {ControllerServiceAccount(cr), ControllerLeaseRole(cr), ControllerLeaseRoleBinding(cr)})
      plan.actions.push_back(Action{Action::Kind::kApply, std::move(o), "", ""});
  }

  // Pods: created when missing (the state volume brings the state back), replaced only when
  // the pod template itself changed (image, template), never for configuration.
  int replicas = spec.ha ? spec.ha_replicas : 1;
  std::string leader;
  bool created = false;
  int ready = 0;
  for (int i = 0; i < replicas; ++i) {
    Json want = ControllerPod(cr, spec, i);
    std::string pod_name = PodName(want);
    const Json* have = nullptr;
    for (const Json& p : obs.pods) {
      if (PodName(p) == pod_name) have = &p;
    }
    if (have == nullptr) {
      plan.actions.push_back(Action{Action::Kind::kApply, want, "", ""});
      plan.log.push_back("create controller pod " + pod_name);
      created = true;
      continue;
    }
    if (PodTerminating(*have)) continue;
    std::string phase = PodPhase(*have);
    std::string want_hash = want["metadata"]["annotations"][kSpecHashAnnotation];
    if (phase == "Failed" || phase == "Succeeded" ||
        PodAnnotation(*have, kSpecHashAnnotation) != want_hash) {
      plan.actions.push_back(Action{Action::Kind::kDelete, ObjectRef(*have), "", ""});
      plan.log.push_back(
          "replace controller pod " + pod_name +
          (phase == "Failed" || phase == "Succeeded" ? " (exited)" : " (template changed)"));
      continue;
    }
    if (PodReady(*have)) {
      ++ready;
      if (leader.empty()) leader = pod_name;
    }
  }

  // Reconfigure: once the ConfigMap carrying the new hash exists, and once more after the
  // kubelet's sync period (mounted ConfigMaps refresh lazily).
  std::string applied = Str(old_status, "configHash");
  int64_t changed_at = Int(old_status, "configChangedAt", 0);
  int64_t stage = Int(old_status, "reconfigureStage", 0);
  if (applied != hash) {
    status["configHash"] = hash;
    status["configChangedAt"] = obs.now;
    stage = applied.empty() || created ? 2 : 0;  // a new pod reads the new file at start
    plan.requeue_after_s = 2;
  } else if (stage < 2 && !leader.empty()) {
    const Json* live = OwnedObject(obs, "ConfigMap", name + "-config");
    bool cm_current = live != nullptr && PodAnnotation(*live, kAnnotConfigHash) == hash;
    if (stage == 0 && cm_current) {
      plan.actions.push_back(Action{Action::Kind::kReconfigure, Json::object(), "", ""});
      plan.log.push_back("reconfigure: configuration " + hash.substr(0, 10));
      stage = 1;
    } else if (stage == 1 && obs.now >= changed_at + kKubeletSyncS) {
      plan.actions.push_back(Action{Action::Kind::kReconfigure, Json::object(), "", ""});
      plan.log.push_back("reconfigure again after the kubelet sync period");
      stage = 2;
    }
    if (stage < 2)
      plan.requeue_after_s =
          stage == 0 ? 2 : static_cast<int>(changed_at + kKubeletSyncS - obs.now + 1);
  }
  status["reconfigureStage"] = stage;
  if (status_topology.is_null())
    status.erase("topology");
  else
    status["topology"] = status_topology;
  status["leader"] = leader;
  status["conditions"] = Json::array(
      {Condition("Ready", ready > 0, ready > 0 ? "ControllerReady" : "ControllerNotReady",
                 ready > 0 ? leader + " is active" : "no controller pod is ready", old_status,
                 obs.now),
       Condition("ConfigApplied", stage >= 1, stage >= 1 ? "Reconfigured" : "Pending",
                 "configuration " + hash.substr(0, 10), old_status, obs.now)});
  if (status != old_status)
    plan.actions.push_back(Action{Action::Kind::kUpdateStatus, {{"status", status}}, "", ""});
  if (plan.requeue_after_s == 0) plan.requeue_after_s = ready > 0 ? 60 : 5;
  return plan;
}

}  // namespace shoal::op
