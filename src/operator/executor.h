// Carries out a Plan's actions against the Kubernetes API and the Shoal controller. Each action
// is independent: a failure is reported (and the key requeued with back-off by the manager),
// the remaining actions still run, except that a Shoal action never runs when the Shoal API is
// unavailable. The pure pieces (desired-vs-live decisions, condition merge, Event objects) are
// free functions for unit tests.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "operator/kube/client.h"
#include "operator/model/plan.h"
#include "operator/shoal_api.h"

namespace shoal::op {

// The spec hash of a desired object: its kSpecHashAnnotation if the planner stamped one, else
// computed the same way (hash of the object without the annotation).
std::string DesiredSpecHash(const Json& desired);

// The object to PUT over `live`: `desired` plus the live object's identity and the fields the
// API server owns (resourceVersion, uid, creationTimestamp, finalizers; a Service's clusterIP).
Json PrepareReplace(const Json& desired, const Json& live);

// Pod conditions after mirroring: every live condition whose type does not start with
// `managed_prefix` is kept as is; the managed ones are exactly `desired` (a condition that
// keeps its status keeps its lastTransitionTime). `now_rfc3339` stamps new transitions.
Json MergeConditions(const Json& live, const Json& desired, const std::string& managed_prefix,
                     const std::string& now_rfc3339);
// Whether two condition lists say the same (types, status, reason, message; order ignored).
bool SameConditions(const Json& a, const Json& b);

// A core v1 Event about `cr` ({reason, message, type} in `what`), named <cr name>.<suffix>.
Json BuildEvent(const Json& cr, const Json& what, const std::string& now_rfc3339,
                const std::string& suffix);

struct ExecResult {
  bool conflict = false;  // a write raced another writer: reconcile again soon
  int failures = 0;
  std::string first_error;
};

class Executor {
 public:
  // `shoal` may be null (the CR's controller is unknown): Shoal actions then fail.
  Executor(kube::KubeClient& kube, ShoalApi* shoal) : kube_(kube), shoal_(shoal) {}

  ExecResult Run(const Plan& plan, const Json& cr);
  Status Execute(const Action& action, const Json& cr, bool* conflict);

 private:
  Status Apply(const Json& desired, bool* conflict);
  Status Delete(const Json& object);
  Status PatchPodStatus(const Json& object, bool* conflict);
  Status PatchMetadata(const Json& object, bool* conflict);
  Status UpdateStatus(const Json& cr, const Json& status, bool* conflict);
  Status CreateEvent(const Json& cr, const Json& what);
  Status ShoalAction(const Action& action);

  kube::KubeClient& kube_;
  ShoalApi* shoal_;
  uint64_t event_seq_ = 0;
};

}  // namespace shoal::op
