// PlanNodeSet: worker pods from replicas (or one per matching node in DaemonSet mode),
// drain-before-delete for scale-in and updates, cordon sync, state mirroring, status.
#include <algorithm>
#include <map>

#include "operator/model/crd_types.h"
#include "operator/model/desired.h"
#include "operator/model/node_conditions.h"
#include "operator/model/plan_common.h"
#include "operator/model/scale_in.h"
#include "operator/model/slurm_conf_gen.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

constexpr int kDrainPollS = 10;   // while waiting for a drain to finish
constexpr int kResyncS = 10;      // mirroring polls (Shoal has no watch); one cheap RPC per NodeSet
constexpr int kStuckGraceS = 60;  // terminating this long past its deadline: stuck (#249)

const std::string kReasonScaleIn = std::string(kDrainPrefix) + "scale-in";
const std::string kReasonUpdate = std::string(kDrainPrefix) + "rolling update";
const std::string kReasonTerminating = std::string(kDrainPrefix) + "pod is terminating";

// The reason (without prefix) to drain pods on `k8s_node`, or "" when it is schedulable and
// no propagated condition is True.
std::string CordonReason(const Json& k8s_node, const std::vector<std::string>& conditions) {
  std::string name = Str(k8s_node, "metadata.name");
  std::string override_text;
  if (const Json* a = Find(k8s_node, "metadata.annotations"); a != nullptr && a->is_object()) {
    auto it = a->find(kAnnotNodeDrainReason);
    if (it != a->end() && it->is_string()) override_text = it->get<std::string>();
  }
  if (Bool(k8s_node, "spec.unschedulable", false))
    return override_text.empty() ? "k8s node " + name + " cordoned" : override_text;
  if (const Json* cs = Find(k8s_node, "status.conditions"); cs != nullptr && cs->is_array()) {
    for (const Json& c : *cs) {
      std::string type = Str(c, "type");
      if (Str(c, "status") == "True" &&
          std::find(conditions.begin(), conditions.end(), type) != conditions.end())
        return override_text.empty() ? "k8s node " + name + " condition " + type : override_text;
    }
  }
  if (!override_text.empty()) return override_text;  // the annotation alone asks for a drain
  return "";
}

// A node drained by the operator for a reason that ends when its pod is current and wanted.
bool RemovalDrain(const ShoalNode& n) {
  return n.Has("DRAIN") && (n.reason == kReasonScaleIn || n.reason == kReasonUpdate ||
                            n.reason == kReasonTerminating);
}

// The k8s node a DaemonSet-mode pod is bound or pinned to (WorkerPod's matchFields term).
std::string PinnedNode(const Json& pod) {
  std::string bound = PodNodeName(pod);
  if (!bound.empty()) return bound;
  const Json* terms = Find(pod, "spec.affinity.nodeAffinity");
  if (terms == nullptr) return "";
  const Json* req = Find(*terms, "requiredDuringSchedulingIgnoredDuringExecution");
  if (req == nullptr || !req->contains("nodeSelectorTerms")) return "";
  for (const Json& term : (*req)["nodeSelectorTerms"]) {
    if (!term.is_object() || !term.contains("matchFields")) continue;
    for (const Json& f : term["matchFields"]) {
      if (Str(f, "key") == "metadata.name" && f.contains("values") && f["values"].is_array() &&
          f["values"].size() == 1 && f["values"][0].is_string())
        return f["values"][0].get<std::string>();
    }
  }
  return "";
}

bool NodeSelectorMatches(const Json& selector, const Json& k8s_node) {
  if (!selector.is_object()) return true;
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    const Json* labels = Find(k8s_node, "metadata.labels");
    if (labels == nullptr || !labels->is_object()) return false;
    auto l = labels->find(it.key());
    if (l == labels->end() || *l != it.value()) return false;
  }
  return true;
}

std::vector<std::string> K8sFeatures(const Json& k8s_node) {
  std::vector<std::string> out;
  std::string spec = PodAnnotation(k8s_node, kAnnotFeatures);
  size_t pos = 0;
  while (pos <= spec.size() && !spec.empty()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string f = spec.substr(pos, comma - pos);
    f.erase(0, f.find_first_not_of(" \t"));
    f.erase(f.find_last_not_of(" \t") + 1);
    if (!f.empty()) out.push_back(f);
    pos = comma + 1;
  }
  return out;
}

}  // namespace

Plan PlanNodeSet(const Observed& obs) {
  Plan plan;
  const Json& cr = obs.cr;
  std::string name = Str(cr, "metadata.name");
  std::string ns = Str(cr, "metadata.namespace", "default");
  Json old_status = cr.value("status", Json::object());
  if (PodTerminating(cr)) {
    plan.log.push_back("nodeset " + name + " is being deleted; owned objects go by GC");
    return plan;
  }
  auto parsed = ParseNodeSetSpec(cr);
  if (!parsed.ok()) return InvalidSpecPlan(cr, parsed.error(), obs.now);
  const NodeSetSpec& spec = *parsed;

  // The controller tells where workers fetch their configuration and which key they use.
  const Json* controller = Related(obs, "Controller");
  if (controller == nullptr || !controller->is_object()) {
    plan.log.push_back("nodeset " + name + ": controller " + spec.controller_ref.name +
                       " not found; waiting");
    plan.requeue_after_s = kResyncS;
    return plan;
  }
  std::string controller_host =
      ControllerServiceHost(spec.controller_ref.name, spec.controller_ref.ns) + ":" +
      std::to_string(Int(*controller, "spec.port", 6817));
  std::string key_secret = Str(*controller, "spec.slurmKeyRef.name");
  std::string key_key = Str(*controller, "spec.slurmKeyRef.key", "slurm.key");
  // A NodeSet in a tenant namespace cannot mount the controller's Secret: the operator keeps
  // a copy (<w>-slurm-key) in the NodeSet's namespace.
  Json key_copy;
  if (!key_secret.empty() && spec.controller_ref.ns != ns) {
    const Json* original = Related(obs, "Secret/" + key_secret);
    auto data = original != nullptr ? MapValue(*original, "data", key_key) : std::nullopt;
    if (!data) {
      plan.log.push_back("nodeset " + name + ": secret " + spec.controller_ref.ns + "/" +
                         key_secret + " unreadable; waiting");
      plan.requeue_after_s = kResyncS;
      return plan;
    }
    key_copy = Json{{"apiVersion", "v1"},
                    {"kind", "Secret"},
                    {"metadata", OwnedMeta(cr, name + "-slurm-key", WorkerSelectorLabels(name))},
                    {"type", "Opaque"},
                    {"data", {{key_key, *data}}}};
    key_copy["metadata"]["labels"][kLabelManagedBy] = kManagedBy;
    StampSpecHash(&key_copy);
    key_secret = name + "-slurm-key";
  }
  std::string revision = WorkerRevision(spec, controller_host, key_secret);

  if (!key_copy.is_null()) plan.actions.push_back(Make(Action::Kind::kApply, key_copy));
  plan.actions.push_back(Make(Action::Kind::kApply, WorkerService(cr)));
  if (spec.protect) plan.actions.push_back(Make(Action::Kind::kApply, WorkerPdb(cr)));

  std::map<std::string, const ShoalNode*> nodes;
  const bool shoal_known = obs.shoal_nodes.has_value();
  if (shoal_known) {
    for (const ShoalNode& n : *obs.shoal_nodes) nodes[n.name] = &n;
  } else {
    plan.log.push_back("nodeset " + name + ": Shoal nodes unknown; no drain, delete or undrain");
  }
  std::map<std::string, const Json*> k8s_nodes;
  for (const Json& n : obs.k8s_nodes) k8s_nodes[Str(n, "metadata.name")] = &n;
  auto node_of = [&](const Json& pod) -> const ShoalNode* {
    auto it = nodes.find(PodName(pod));
    return it == nodes.end() ? nullptr : it->second;
  };

  // Classify pods.
  std::vector<const Json*> active;  // not terminating
  std::map<std::string, const Json*> by_name;
  int pending_removal = 0;  // terminating, not stuck
  for (const Json& pod : obs.pods) {
    by_name[PodName(pod)] = &pod;
    if (!PodTerminating(pod)) {
      active.push_back(&pod);
      continue;
    }
    int64_t deadline = PodDeletionTime(pod);
    if (deadline != 0 && obs.now > deadline + kStuckGraceS) {
      plan.log.push_back("pod " + PodName(pod) + " stuck terminating; not waiting for it");
    } else {
      ++pending_removal;
    }
  }

  // Which active pods should go (scale-in or nodes no longer matching in DaemonSet mode).
  std::set<std::string> victims;
  bool waiting = false;
  auto candidate = [&](const Json* pod) {
    ScaleInCandidate c;
    c.pod = *pod;
    c.node = node_of(*pod);
    c.ordinal = OrdinalOf(PodName(*pod), name).value_or(-1);
    auto kn = k8s_nodes.find(PodNodeName(*pod));
    c.cordoned = kn != k8s_nodes.end() && Bool(*kn->second, "spec.unschedulable", false);
    c.condemned = c.node != nullptr && c.node->Has("DRAIN") && (c.node->reason == kReasonScaleIn);
    return c;
  };
  std::vector<Json> to_create;
  if (spec.daemonset) {
    const Json* selector = Find(spec.tmpl, "spec.nodeSelector");
    std::set<std::string> wanted_nodes;
    for (const Json& n : obs.k8s_nodes) {
      if (NodeSelectorMatches(selector ? *selector : Json(), n))
        wanted_nodes.insert(Str(n, "metadata.name"));
    }
    std::set<std::string> covered;
    for (const Json* pod : active) {
      std::string pinned = PinnedNode(*pod);
      if (wanted_nodes.count(pinned) != 0 && covered.count(pinned) == 0) {
        covered.insert(pinned);
      } else {
        victims.insert(PodName(*pod));
      }
    }
    for (const std::string& n : wanted_nodes) {
      if (covered.count(n) != 0) continue;
      WorkerPodInputs in;
      in.pinned_node = n;
      in.k8s_features = K8sFeatures(*k8s_nodes[n]);
      in.controller_host = controller_host;
      in.slurm_key_secret = key_secret;
      in.slurm_key_key = key_key;
      Json pod = WorkerPod(cr, spec, in);
      if (by_name.count(PodName(pod)) == 0) to_create.push_back(pod);
    }
  } else {
    int live = static_cast<int>(active.size()) + pending_removal;
    if (live < spec.replicas) {
      int missing = spec.replicas - live;
      for (int ord = 0; missing > 0 && ord < 1000000; ++ord) {
        std::string pod_name = name + "-" + std::to_string(ord);
        if (by_name.count(pod_name) != 0) continue;
        WorkerPodInputs in;
        in.ordinal = ord;
        in.controller_host = controller_host;
        in.slurm_key_secret = key_secret;
        in.slurm_key_key = key_key;
        to_create.push_back(WorkerPod(cr, spec, in));
        --missing;
      }
    }
    if (static_cast<int>(active.size()) > spec.replicas) {
      std::vector<ScaleInCandidate> cands;
      for (const Json* pod : active) cands.push_back(candidate(pod));
      SortForScaleIn(&cands);
      size_t excess = active.size() - static_cast<size_t>(spec.replicas);
      for (size_t i = 0; i < excess; ++i) victims.insert(PodName(cands[i].pod));
    }
  }
  for (const Json& pod : to_create) {
    plan.actions.push_back(Make(Action::Kind::kApply, pod));
    for (const Json& vct : spec.volume_claim_templates) {
      Json pvc = WorkerPvc(cr, vct, PodName(pod));
      if (spec.pvc_when_deleted == "Retain") pvc["metadata"].erase("ownerReferences");
      plan.actions.push_back(Make(Action::Kind::kApply, pvc));
    }
    plan.log.push_back("create pod " + PodName(pod));
  }

  // Updates: which outdated pods are replaced now.
  std::set<std::string> updating;  // drain reason: rolling update
  std::vector<const Json*> outdated;
  for (const Json* pod : active) {
    if (victims.count(PodName(*pod)) == 0 && PodLabel(*pod, kLabelRevision) != revision)
      outdated.push_back(pod);
  }
  bool in_window = spec.update == UpdateType::kRollingUpdate;
  if (spec.update == UpdateType::kScheduledUpdate && !outdated.empty()) {
    int64_t end = spec.scheduled_start + spec.scheduled_duration;
    in_window = obs.now >= spec.scheduled_start && obs.now < end;
    if (obs.now < end) {
      std::string hosts;
      for (const Json* pod : outdated) hosts += (hosts.empty() ? "" : ",") + PodName(*pod);
      plan.actions.push_back(Make(Action::Kind::kCreateReservation,
                                  {{"name", "shoal-operator-" + ns + "-" + name + "-" + revision},
                                   {"start", spec.scheduled_start},
                                   {"duration", spec.scheduled_duration},
                                   {"nodes", hosts}}));
    }
    if (!in_window) plan.requeue_after_s = kResyncS;
  }
  if (in_window && !outdated.empty()) {
    int budget = ResolveMaxUnavailable(spec.max_unavailable, spec.replicas);
    int unavailable = pending_removal;
    std::vector<ScaleInCandidate> fresh;
    for (const Json* pod : outdated) {
      const ShoalNode* n = node_of(*pod);
      if (n != nullptr && n->Has("DRAIN") && n->reason == kReasonUpdate) {
        updating.insert(PodName(*pod));
        ++unavailable;
      } else {
        fresh.push_back(candidate(pod));
      }
    }
    // Pods of the current revision that are not up yet also use the budget.
    for (const Json* pod : active) {
      if (PodLabel(*pod, kLabelRevision) == revision && !PodReady(*pod)) ++unavailable;
    }
    unavailable += static_cast<int>(to_create.size());
    SortForScaleIn(&fresh);
    for (const ScaleInCandidate& c : fresh) {
      if (unavailable >= budget) break;
      updating.insert(PodName(c.pod));
      ++unavailable;
    }
  }

  // Drain-then-delete for victims and updating pods. Fail closed: never without Shoal state.
  auto retire = [&](const Json& pod, const std::string& reason) {
    std::string pod_name = PodName(pod);
    if (!shoal_known) {
      waiting = true;
      return;
    }
    const ShoalNode* n = node_of(pod);
    if (n == nullptr) {
      // No record: only a pod that never ran shoald can go without one.
      if (PodPhase(pod) == "Pending") {
        plan.actions.push_back(Make(Action::Kind::kDelete, ObjectRef(pod)));
        plan.log.push_back("delete pending pod " + pod_name + " (" + reason + ")");
      } else {
        plan.log.push_back("pod " + pod_name + " has no Shoal node yet; waiting");
        waiting = true;
      }
      return;
    }
    if (!n->Has("DRAIN")) {
      plan.actions.push_back(Make(Action::Kind::kDrainNode, Json::object(), pod_name, reason));
      plan.log.push_back("drain " + pod_name + ": " + reason);
      waiting = true;
      return;
    }
    if (!NodeDrainedAndEmpty(*n)) {
      plan.log.push_back("node " + pod_name + " still busy; waiting for its jobs");
      waiting = true;
      return;
    }
    plan.actions.push_back(Make(Action::Kind::kDelete, ObjectRef(pod)));
    plan.log.push_back("delete pod " + pod_name + " (" + reason + ", node drained and idle)");
    if (spec.pvc_when_scaled == "Delete" && reason == kReasonScaleIn) {
      for (const Json& vct : spec.volume_claim_templates) {
        Json ref{{"apiVersion", "v1"},
                 {"kind", "PersistentVolumeClaim"},
                 {"metadata",
                  {{"name", Str(vct, "metadata.name") + "-" + pod_name}, {"namespace", ns}}}};
        plan.actions.push_back(Make(Action::Kind::kDelete, ref));
      }
    }
  };
  for (const Json* pod : active) {
    std::string pod_name = PodName(*pod);
    if (victims.count(pod_name) != 0) {
      retire(*pod, kReasonScaleIn);
    } else if (updating.count(pod_name) != 0) {
      retire(*pod, kReasonUpdate);
    }
  }

  // Per-pod sync: cordon, undrain after removal drains, conditions, metadata mirror, comment.
  for (const Json* pod_ptr : active) {
    const Json& pod = *pod_ptr;
    std::string pod_name = PodName(pod);
    bool leaving = victims.count(pod_name) != 0 || updating.count(pod_name) != 0;
    const ShoalNode* n = node_of(pod);
    Json meta_patch = Json::object();
    auto set_meta = [&](const char* field, const std::string& key, const Json& value) {
      const Json* cur = Find(pod, std::string("metadata.") + field);
      bool has = cur != nullptr && cur->is_object() && cur->contains(key);
      if (value.is_null() ? has : (!has || (*cur)[key] != value)) meta_patch[field][key] = value;
    };

    std::string k8s_node = PodNodeName(pod);
    std::string cordon;
    if (auto kn = k8s_nodes.find(k8s_node); kn != k8s_nodes.end())
      cordon = CordonReason(*kn->second, spec.propagate_conditions);
    if (shoal_known && n != nullptr) {
      if (!cordon.empty()) {
        std::string reason = kDrainPrefix + cordon;
        if (!n->Has("DRAIN") && !leaving) {  // a leaving pod's drain is already planned
          plan.actions.push_back(Make(Action::Kind::kDrainNode, Json::object(), pod_name, reason));
          plan.log.push_back("drain " + pod_name + ": " + reason);
        }
        set_meta("annotations", kAnnotCordon, "true");
      } else if (PodAnnotation(pod, kAnnotCordon) == "true") {
        // Uncordoned: resume only a drain the operator made for the cordon.
        if (!leaving && OperatorDrain(*n) && !RemovalDrain(*n)) {
          plan.actions.push_back(Make(Action::Kind::kUndrainNode, Json::object(), pod_name));
          plan.log.push_back("undrain " + pod_name + ": k8s node uncordoned");
        }
        set_meta("annotations", kAnnotCordon, nullptr);
      } else if (!leaving && RemovalDrain(*n) && PodLabel(pod, kLabelRevision) == revision) {
        // A replacement pod registered under a name whose old node the operator drained.
        plan.actions.push_back(Make(Action::Kind::kUndrainNode, Json::object(), pod_name));
        plan.log.push_back("undrain " + pod_name + ": replacement pod is up");
      }

      if (auto cond = DesiredPodConditions(pod, n, obs.now))
        plan.actions.push_back(Make(Action::Kind::kPatchPodStatus, PodStatusPatch(pod, *cond)));
      auto foreign = ForeignDrainAnnotation(*n);
      set_meta("annotations", kAnnotNodeDrain, foreign ? Json(*foreign) : Json(nullptr));
      if (spec.protect)
        set_meta("labels", kLabelProtect, NodeBusy(*n) ? Json("true") : Json(nullptr));
      set_meta("annotations", kAnnotDeadline,
               n->latest_job_end > 0 ? Json(FormatRfc3339(n->latest_job_end)) : Json(nullptr));
      // Features: the NodeSet's, plus k8s/<f> from the Kubernetes node it landed on (only
      // known once scheduled, so kept in sync after registration).
      if (auto kn = k8s_nodes.find(k8s_node); kn != k8s_nodes.end() && !spec.daemonset) {
        std::vector<std::string> want{name};
        for (const std::string& f : spec.features) want.push_back(f);
        for (const std::string& f : K8sFeatures(*kn->second)) want.push_back("k8s/" + f);
        std::set<std::string> want_set(want.begin(), want.end());
        std::set<std::string> have_set(n->features.begin(), n->features.end());
        if (want_set != have_set) {
          std::string list;
          for (const std::string& f : want) list += (list.empty() ? "" : ",") + f;
          plan.actions.push_back(
              Make(Action::Kind::kSetNodeFeatures, Json::object(), pod_name, list));
          plan.log.push_back("features of " + pod_name + ": " + list);
        }
      }
      Json comment{{"namespace", ns}, {"podName", pod_name}, {"node", k8s_node}};
      if (n->comment != comment.dump())
        plan.actions.push_back(
            Make(Action::Kind::kSetNodeComment, Json::object(), pod_name, comment.dump()));
    } else if (shoal_known && n == nullptr && PodPhase(pod) == "Running" && !PodReady(pod)) {
      // Registration timeout: a running pod whose node never registered is recreated. shoald
      // reports ready only once registered, so a ready pod missing from the list means the
      // list is suspect: never act on that.
      int64_t started = ParseRfc3339(Str(pod, "status.startTime")).value_or(0);
      if (started != 0 && obs.now - started > spec.registration_timeout) {
        plan.actions.push_back(Make(Action::Kind::kDelete, ObjectRef(pod)));
        plan.actions.push_back(
            Make(Action::Kind::kEvent,
                 EventObj("NodeNotRegistered",
                          "pod " + pod_name + " did not register its Shoal node within " +
                              std::to_string(spec.registration_timeout) + "s; recreating",
                          "Warning")));
        plan.log.push_back("delete unregistered pod " + pod_name);
      } else if (DesiredPodConditions(pod, nullptr, obs.now)) {
        plan.actions.push_back(
            Make(Action::Kind::kPatchPodStatus,
                 PodStatusPatch(pod, *DesiredPodConditions(pod, nullptr, obs.now))));
      }
    }
    if (!meta_patch.empty()) {
      Json obj = ObjectRef(pod);
      for (auto it = meta_patch.begin(); it != meta_patch.end(); ++it)
        obj["metadata"][it.key()] = it.value();
      plan.actions.push_back(Make(Action::Kind::kPatchMetadata, obj));
    }
  }

  // Shoal nodes of this NodeSet whose pod is gone: remove the record once it holds no job.
  if (shoal_known && (!spec.daemonset || spec.prune_not_found)) {
    for (const ShoalNode& n : *obs.shoal_nodes) {
      if (std::find(n.features.begin(), n.features.end(), name) == n.features.end()) continue;
      if (!n.comment.empty()) {
        Json c = Json::parse(n.comment, nullptr, false);
        if (!c.is_discarded() && c.is_object() && Str(c, "namespace", ns) != ns) continue;
      }
      if (by_name.count(n.name) != 0) continue;
      // A pod created in this very plan may register under the old name any moment.
      if (std::any_of(to_create.begin(), to_create.end(),
                      [&](const Json& p) { return PodName(p) == n.name; }))
        continue;
      if (NodeBusy(n)) {
        waiting = true;
        continue;
      }
      plan.actions.push_back(Make(Action::Kind::kDeleteShoalNode, Json::object(), n.name));
      plan.log.push_back("delete Shoal node " + n.name + ": its pod is gone");
    }
  }

  // Status.
  int ready = 0, available = 0, updated = 0;
  int idle = 0, allocated = 0, mixed = 0, down = 0, drain = 0;
  for (const Json* pod : active) {
    if (PodReady(*pod)) {
      ++ready;
      int64_t since = PodReadySince(*pod);
      if (spec.min_ready_seconds == 0 || (since != 0 && obs.now - since >= spec.min_ready_seconds))
        ++available;
    }
    if (PodLabel(*pod, kLabelRevision) == revision) ++updated;
    if (const ShoalNode* n = node_of(*pod)) {
      if (n->base_state == "IDLE") ++idle;
      if (n->base_state == "ALLOCATED") ++allocated;
      if (n->base_state == "MIXED") ++mixed;
      if (n->base_state == "DOWN") ++down;
      if (n->Has("DRAIN")) ++drain;
    }
  }
  int desired = spec.daemonset ? static_cast<int>(active.size() + to_create.size()) : spec.replicas;
  Json status{{"replicas", static_cast<int>(active.size())},
              {"readyReplicas", ready},
              {"availableReplicas", available},
              {"updatedReplicas", updated},
              {"selector", WorkerSelector(name)},
              {"nodeSetHash", revision},
              {"observedGeneration", Int(cr, "metadata.generation", 0)}};
  if (shoal_known) {
    status["nodeIdle"] = idle;
    status["nodeAllocated"] = allocated;
    status["nodeMixed"] = mixed;
    status["nodeDown"] = down;
    status["nodeDrain"] = drain;
  } else {
    for (const char* k : {"nodeIdle", "nodeAllocated", "nodeMixed", "nodeDown", "nodeDrain"})
      if (old_status.contains(k)) status[k] = old_status[k];
  }
  bool all_ready = ready == desired && static_cast<int>(active.size()) == desired;
  status["conditions"] = Json::array(
      {Condition("Ready", all_ready, all_ready ? "AllReady" : "Progressing",
                 std::to_string(ready) + "/" + std::to_string(desired) + " workers ready",
                 old_status, obs.now),
       Condition("ShoalReachable", shoal_known, shoal_known ? "Reachable" : "Unreachable",
                 shoal_known ? "" : "the controller's node list could not be read", old_status,
                 obs.now)});
  if (status != old_status)
    plan.actions.push_back(Make(Action::Kind::kUpdateStatus, {{"status", status}}));

  plan.requeue_after_s =
      waiting ? kDrainPollS : (plan.requeue_after_s ? plan.requeue_after_s : kResyncS);
  return plan;
}

}  // namespace shoal::op
