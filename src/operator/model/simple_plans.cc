// PlanRestApi, PlanAccounting, PlanLoginSet: stateless services, replaced when their template
// changes (no jobs run on them).
#include <map>

#include "operator/model/crd_types.h"
#include "operator/model/desired.h"
#include "operator/model/plan_common.h"
#include "operator/model/slurm_conf_gen.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

const Json* FindPod(const Observed& obs, const std::string& name) {
  for (const Json& p : obs.pods) {
    if (PodName(p) == name) return &p;
  }
  return nullptr;
}

std::string SpecHash(const Json& object) { return PodAnnotation(object, kSpecHashAnnotation); }

// Creates `want` when missing; replaces the live pod when its template hash differs or it
// exited, one at a time (`may_replace`). Returns whether the live pod is ready.
bool SyncPod(const Observed& obs, const Json& want, bool* may_replace, Plan* plan) {
  const Json* have = FindPod(obs, PodName(want));
  if (have == nullptr) {
    plan->actions.push_back(Make(Action::Kind::kApply, want));
    plan->log.push_back("create pod " + PodName(want));
    return false;
  }
  if (PodTerminating(*have)) return false;
  std::string phase = PodPhase(*have);
  bool exited = phase == "Failed" || phase == "Succeeded";
  std::string live_hash = PodAnnotation(*have, kSpecHashAnnotation);
  if (exited || (live_hash != SpecHash(want) && *may_replace)) {
    plan->actions.push_back(Make(Action::Kind::kDelete, ObjectRef(*have)));
    plan->log.push_back("replace pod " + PodName(want));
    if (!exited) *may_replace = false;
    return false;
  }
  return PodReady(*have);
}

Json ReplicaStatus(const Json& cr, int replicas, int ready, const std::string& selector,
                   int64_t now, bool ok_reason_ready) {
  Json old_status = cr.value("status", Json::object());
  Json status = old_status;
  status["observedGeneration"] = Int(cr, "metadata.generation", 0);
  status["replicas"] = replicas;
  status["readyReplicas"] = ready;
  if (!selector.empty()) status["selector"] = selector;
  bool ok = ready >= replicas;
  status["conditions"] = Json::array({Condition(
      "Ready", ok && ok_reason_ready, ok ? "AllReady" : "Progressing",
      std::to_string(ready) + "/" + std::to_string(replicas) + " ready", old_status, now)});
  return status;
}

void FinishStatus(const Json& cr, const Json& status, Plan* plan) {
  if (status != cr.value("status", Json::object()))
    plan->actions.push_back(Make(Action::Kind::kUpdateStatus, {{"status", status}}));
}

}  // namespace

Plan PlanRestApi(const Observed& obs) {
  Plan plan;
  const Json& cr = obs.cr;
  if (PodTerminating(cr)) return plan;
  auto parsed = ParseRestApiSpec(cr);
  if (!parsed.ok()) return InvalidSpecPlan(cr, parsed.error(), obs.now);
  const RestApiSpec& spec = *parsed;
  const Json* controller = Related(obs, "Controller");
  if (controller == nullptr || !controller->is_object()) {
    plan.log.push_back("restapi: controller " + spec.controller_ref.name + " not found; waiting");
    plan.requeue_after_s = 30;
    return plan;
  }
  plan.actions.push_back(Make(Action::Kind::kApply, RestApiService(cr, spec)));
  std::string jwt_secret = Str(*controller, "spec.jwtKeyRef.name");
  std::string jwt_key = Str(*controller, "spec.jwtKeyRef.key", "jwt.key");
  std::string name = Str(cr, "metadata.name");
  bool may_replace = true;
  int ready = 0;
  for (int i = 0; i < spec.replicas; ++i) {
    Json want = RestApiPod(cr, spec, spec.controller_ref.name, jwt_secret, jwt_key, i);
    if (SyncPod(obs, want, &may_replace, &plan)) ++ready;
  }
  for (const Json& p : obs.pods) {
    auto ord = OrdinalOf(PodName(p), name);
    if (ord && *ord >= spec.replicas && !PodTerminating(p))
      plan.actions.push_back(Make(Action::Kind::kDelete, ObjectRef(p)));
  }
  FinishStatus(cr, ReplicaStatus(cr, spec.replicas, ready, "", obs.now, true), &plan);
  plan.requeue_after_s = ready >= spec.replicas ? 0 : 5;
  return plan;
}

Plan PlanAccounting(const Observed& obs) {
  Plan plan;
  const Json& cr = obs.cr;
  if (PodTerminating(cr)) return plan;
  auto parsed = ParseAccountingSpec(cr);
  if (!parsed.ok()) return InvalidSpecPlan(cr, parsed.error(), obs.now);
  const AccountingSpec& spec = *parsed;
  const Json* secret = Related(obs, "Secret/" + spec.password_ref.name);
  std::optional<std::string> password;
  if (secret != nullptr && secret->is_object()) {
    if (auto b64 = MapValue(*secret, "data", spec.password_ref.key)) password = Base64Decode(*b64);
    if (!password) password = MapValue(*secret, "stringData", spec.password_ref.key);
  }
  if (!password) {
    Json old_status = cr.value("status", Json::object());
    Json status = old_status;
    status["observedGeneration"] = Int(cr, "metadata.generation", 0);
    status["conditions"] = Json::array({Condition(
        "Ready", false, "MissingSecret",
        "secret " + spec.password_ref.name + " key " + spec.password_ref.key + " not found",
        old_status, obs.now)});
    FinishStatus(cr, status, &plan);
    plan.requeue_after_s = 15;
    return plan;
  }
  std::string conf = GenerateSlurmdbdConf(cr, spec, *password);
  plan.actions.push_back(Make(Action::Kind::kApply, AccountingConfigSecret(cr, conf)));
  plan.actions.push_back(Make(Action::Kind::kApply, AccountingService(cr, spec)));
  // The configuration's hash on the pod: shoaldbd reads it at start, so a change restarts it.
  Json pod = AccountingPod(cr, spec);
  pod["metadata"]["annotations"][kAnnotConfigHash] = ShortHash(conf);
  StampSpecHash(&pod);
  bool may_replace = true;
  int ready = SyncPod(obs, pod, &may_replace, &plan) ? 1 : 0;
  FinishStatus(cr, ReplicaStatus(cr, 1, ready, "", obs.now, true), &plan);
  plan.requeue_after_s = ready ? 0 : 5;
  return plan;
}

Plan PlanLoginSet(const Observed& obs) {
  Plan plan;
  const Json& cr = obs.cr;
  if (PodTerminating(cr)) return plan;
  auto parsed = ParseLoginSetSpec(cr);
  if (!parsed.ok()) return InvalidSpecPlan(cr, parsed.error(), obs.now);
  const LoginSetSpec& spec = *parsed;
  const Json* controller = Related(obs, "Controller");
  if (controller == nullptr || !controller->is_object()) {
    plan.log.push_back("loginset: controller " + spec.controller_ref.name + " not found; waiting");
    plan.requeue_after_s = 30;
    return plan;
  }
  std::string name = Str(cr, "metadata.name");
  std::string host = ControllerServiceHost(spec.controller_ref.name, spec.controller_ref.ns) + ":" +
                     std::to_string(Int(*controller, "spec.port", 6817));
  std::string key_secret = Str(*controller, "spec.slurmKeyRef.name");
  std::string hash = LoginTemplateHash(spec, host);
  plan.actions.push_back(Make(Action::Kind::kApply, LoginService(cr, spec)));
  plan.actions.push_back(Make(Action::Kind::kApply, LoginSshdConfigMap(cr, spec)));

  // Deployment-like: pods of the current template are <l>-<hash>-<i>; old ones go once the
  // new ones are ready (surge), so ssh access never drops to zero.
  int ready = 0;
  std::vector<const Json*> old_pods;
  for (const Json& p : obs.pods) {
    if (PodLabel(p, "pod-template-hash") != hash && !PodTerminating(p)) old_pods.push_back(&p);
  }
  for (int i = 0; i < spec.replicas; ++i) {
    std::string pod_name = name + "-" + hash + "-" + std::to_string(i);
    const Json* have = FindPod(obs, pod_name);
    if (have == nullptr) {
      plan.actions.push_back(
          Make(Action::Kind::kApply, LoginPod(cr, spec, host, key_secret, pod_name)));
      continue;
    }
    std::string phase = PodPhase(*have);
    if (phase == "Failed" || phase == "Succeeded") {
      plan.actions.push_back(Make(Action::Kind::kDelete, ObjectRef(*have)));
    } else if (PodReady(*have)) {
      ++ready;
    }
  }
  for (const Json& p : obs.pods) {
    auto prefix = name + "-" + hash;
    auto ord = OrdinalOf(PodName(p), prefix);
    if (ord && *ord >= spec.replicas && !PodTerminating(p))
      plan.actions.push_back(Make(Action::Kind::kDelete, ObjectRef(p)));
  }
  if (ready >= spec.replicas) {
    for (const Json* p : old_pods)
      plan.actions.push_back(Make(Action::Kind::kDelete, ObjectRef(*p)));
  }
  std::string selector =
      std::string(kLabelInstance) + "=" + name + "," + kLabelName + "=shoal-login";
  FinishStatus(cr, ReplicaStatus(cr, spec.replicas, ready, selector, obs.now, true), &plan);
  plan.requeue_after_s = ready >= spec.replicas ? 0 : 5;
  return plan;
}

}  // namespace shoal::op
