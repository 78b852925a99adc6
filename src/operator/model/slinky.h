// Slinky compatibility (docs/kubernetes-slinky.md): resources of SchedMD Slinky's API,
// slinky.slurm.net/v1beta1, translated into the shoal.dev shape the planners already take, so a
// Slinky Controller, NodeSet, LoginSet, Accounting, RestApi or Token gives the same pods,
// services and secrets as its shoal.dev equivalent. Pure: no I/O, no clock.
//
// A translation keeps the Slinky object's identity (apiVersion, kind, metadata: owner references
// name it) and rewrites spec and status. Fields Shoal cannot honour are problems, never dropped
// silently: a resource with any gets a rejection plan (Ready=False, reason UnsupportedField, and
// a Warning Event per field) and nothing else. Fields that only configure Slinky's own machinery
// (log and reconfigure sidecars, the configuration init container, revision history) are
// accepted and ignored, as documented.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "operator/model/plan.h"

namespace shoal::op {

inline constexpr const char* kSlinkyGroupVersion = "slinky.slurm.net/v1beta1";
// The operator names a Slinky kind "<Kind>.slinky.slurm.net" (as kubectl names a resource of a
// group) in its work queue, planner table and Kubernetes client, apart from shoal.dev's.
inline constexpr const char* kSlinkyKindSuffix = ".slinky.slurm.net";
inline constexpr const char* kReasonUnsupportedField = "UnsupportedField";

std::string SlinkyKind(std::string_view kind);  // "NodeSet" -> "NodeSet.slinky.slurm.net"
bool IsSlinkyKind(std::string_view kind);
std::string BaseKind(std::string_view kind);  // "NodeSet.slinky.slurm.net" -> "NodeSet"
// The six kinds as SlinkyKind() names them.
const std::vector<std::string>& SlinkyKinds();
// Whether `object`'s apiVersion is in slinky.slurm.net.
bool IsSlinky(const Json& object);

struct SlinkyOptions {
  // Slinky resources name Slurm's images, which cannot run Shoal: their pods get
  // "<image_registry>/shoal/<component>:<image_tag>" ("shoal/<component>:latest" by default),
  // unless the image is already named ".../shoal/<component>".
  std::string image_registry;
  std::string image_tag = "latest";
};

struct SlinkyProblem {
  std::string field;  // "spec.external"
  std::string why;
};

struct SlinkyTranslation {
  Json cr;  // the shoal.dev shape, with the Slinky object's apiVersion, kind and metadata
  std::vector<SlinkyProblem> problems;  // fields that cannot be honoured (empty: all are)
  // What the shoal.dev shape has no field for, merged onto the planner's desired objects:
  // {"service": {metadata, spec, nodePort}, "serviceMonitor": {...}, "stateClaim": {...}}.
  Json extras = Json::object();
};

// Translates a Slinky resource. `related` is the Observed's (a Controller reads its NodeSets'
// Slurm names and partitions from related["NodeSets"] and its PrologSlurmctld/EpilogSlurmctld
// script names from related["ConfigMap/<name>"]); an empty object is fine for the others.
SlinkyTranslation TranslateSlinky(const Json& cr, const Json& related,
                                  const SlinkyOptions& options);

// Status between the two shapes (the NodeSet's node counts are named and summed differently;
// the other kinds' status is Slinky's plus a few fields Shoal keeps).
Json ShoalStatusOf(const Json& slinky_cr);
Json SlinkyStatusOf(const Json& slinky_cr, const Json& shoal_status);

// The rejection plan of a resource with problems: status Ready=False/UnsupportedField naming
// every field, and one Warning Event per field when that message is new.
Plan SlinkyRejectPlan(const Json& slinky_cr, const std::vector<SlinkyProblem>& problems,
                      int64_t now);

using PlanFn = std::function<Plan(const Observed&)>;
// Plans a Slinky resource with the shoal.dev `planner` of its kind: translates the resource and
// the related Slinky resources (related["Controller"], ["Accounting"], ["NodeSets"]), plans,
// then merges the extras onto the desired objects and writes the status in Slinky's shape. A
// shoal.dev resource goes straight to `planner`.
Plan PlanSlinky(const Observed& obs, const PlanFn& planner, const SlinkyOptions& options);

}  // namespace shoal::op
