// The operator's contract between observation and action: a reconcile gathers an Observed
// (the custom resource, the objects it owns, Kubernetes nodes, the Shoal nodes), a planner turns
// it into a Plan (a list of Actions), and the executor (src/operator/kube) carries them out.
// Planners are pure: no I/O, no clock (Observed::now), so every decision is unit-tested.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace shoal::op {

using Json = nlohmann::json;

// A Shoal node as the operator sees it (K4 fills it from the controller's NodeRecord + jobs).
struct ShoalNode {
  std::string name;
  std::string base_state;       // IDLE ALLOCATED MIXED DOWN FUTURE ERROR UNKNOWN
  std::set<std::string> flags;  // DRAIN COMPLETING FAIL INVALID MAINTENANCE NOT_RESPONDING
  std::string reason;           // drain/down reason
  std::string comment;          // JSON {"namespace","podName","node"} set by the operator
  std::vector<std::string> features;
  uint32_t alloc_cpus = 0;
  uint32_t running_jobs = 0;   // jobs running or completing on it
  int64_t latest_job_end = 0;  // max(start + time limit) of its jobs, unix s; 0 = none

  bool Has(const std::string& flag) const { return flags.count(flag) != 0; }
};

// What a reconcile observed. A missing optional means "could not be read": plan fail-closed.
struct Observed {
  Json cr;                      // the custom resource (with metadata, spec, status)
  std::vector<Json> pods;       // pods it owns (label selector)
  std::vector<Json> owned;      // other owned objects (services, configmaps, pdbs, secrets, pvcs)
  std::vector<Json> k8s_nodes;  // Node objects (cordon, labels, annotations, conditions)
  std::optional<std::vector<ShoalNode>> shoal_nodes;  // nullopt: controller unreachable/error
  // Referenced objects by kind/name: related["Controller"] (the referenced Controller CR),
  // related["Secret/<name>"], related["ConfigMap/<name>"], related["NodeSets"] (array of the
  // Controller's NodeSet CRs), related["Accounting"] (the referenced Accounting CR),
  // related["jwtKey"] (string: the HS256 key, for PlanToken).
  Json related = Json::object();
  int64_t now = 0;  // unix seconds
};

struct Action {
  enum class Kind {
    kApply,              // create or update `object` (full desired object; the executor
                         // compares the spec-hash annotation kSpecHashAnnotation)
    kDelete,             // delete the object identified by apiVersion/kind/namespace/name
    kPatchPodStatus,     // merge-patch `object` (a pod with only metadata.name/namespace +
                         // status.conditions) into pods/status
    kPatchMetadata,      // merge-patch metadata (labels/annotations) of `object`; a null
                         // value removes the key (JSON merge patch)
    kUpdateStatus,       // replace the CR's status with object["status"]
    kDrainNode,          // Shoal: drain `node` with `reason`
    kUndrainNode,        // Shoal: resume/undrain `node`
    kDownNode,           // Shoal: down `node` with `reason`
    kSetNodeComment,     // Shoal: set Comment of `node` to `reason`
    kDeleteShoalNode,    // Shoal: scontrol delete NodeName=`node`
    kReconfigure,        // Shoal: scontrol reconfigure
    kCreateReservation,  // Shoal: MAINT reservation (object: {name,start,duration,nodes});
                         // start unix s, duration s, nodes a hostlist string
    kEvent,              // a k8s Event about the CR (object: {reason, message, type})
    kSetNodeFeatures,    // Shoal: scontrol update NodeName=`node` Features=`reason` (comma
                         // list; the k8s/<f> features follow the Kubernetes node's annotation)
  };
  Kind kind;
  Json object;
  std::string node;
  std::string reason;
};

struct Plan {
  std::vector<Action> actions;
  int requeue_after_s = 0;       // 0: only on the next watch event / resync
  std::vector<std::string> log;  // why, for the operator log
};

// Annotation every desired object carries: a hash of what the operator wants, so the executor
// updates an object only when the hash differs from the live one.
inline constexpr const char* kSpecHashAnnotation = "shoal.dev/spec-hash";
// Prefix of every drain reason the operator sets; others' drains are never resumed.
inline constexpr const char* kDrainPrefix = "shoal-operator: ";

Plan PlanController(const Observed&);
Plan PlanNodeSet(const Observed&);
Plan PlanLoginSet(const Observed&);
Plan PlanAccounting(const Observed&);
Plan PlanRestApi(const Observed&);
Plan PlanToken(const Observed&);  // needs the JWT key in related["jwtKey"] (string); signs with
                                  // common/jwt.h

// Human name of an action kind ("Apply", "DrainNode"), for logs and tests.
const char* KindName(Action::Kind kind);

}  // namespace shoal::op
