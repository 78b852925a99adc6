// PlanToken: a Secret holding an HS256 JWT for spec.username, reissued when less than a fifth
// of its lifetime is left.
#include "common/jwt.h"
#include "operator/model/crd_types.h"
#include "operator/model/desired.h"
#include "operator/model/plan_common.h"
#include "operator/model/util.h"

namespace shoal::op {

Plan PlanToken(const Observed& obs) {
  Plan plan;
  const Json& cr = obs.cr;
  if (PodTerminating(cr)) return plan;
  auto parsed = ParseTokenSpec(cr);
  if (!parsed.ok()) return InvalidSpecPlan(cr, parsed.error(), obs.now);
  const TokenSpec& spec = *parsed;
  Json old_status = cr.value("status", Json::object());
  Json status = old_status;
  int64_t generation = Int(cr, "metadata.generation", 0);
  status["observedGeneration"] = generation;

  const Json* key = Related(obs, "jwtKey");
  if (key == nullptr || !key->is_string() || key->get<std::string>().empty()) {
    status["conditions"] = Json::array(
        {Condition("Ready", false, "MissingKey",
                   "JWT key " + spec.jwt_key_ref.name + "/" + spec.jwt_key_ref.key + " not found",
                   old_status, obs.now)});
    if (status != old_status)
      plan.actions.push_back(Make(Action::Kind::kUpdateStatus, {{"status", status}}));
    plan.requeue_after_s = 15;
    return plan;
  }

  bool secret_exists = false;
  for (const Json& o : obs.owned) {
    if (Str(o, "kind") == "Secret" && Str(o, "metadata.name") == spec.secret_ref.name &&
        !PodTerminating(o))
      secret_exists = true;
  }
  int64_t issued = ParseRfc3339(Str(old_status, "issuedAt")).value_or(0);
  int64_t expires = ParseRfc3339(Str(old_status, "expiresAt")).value_or(0);
  int64_t refresh_at = expires - spec.lifetime / 5;
  bool spec_changed = Int(old_status, "observedGeneration", -1) != generation;
  bool reissue = !secret_exists || issued == 0 || (spec.refresh && obs.now >= refresh_at) ||
                 (spec.refresh && spec_changed);
  if (reissue) {
    jwt::Claims claims{spec.username, obs.now, obs.now + spec.lifetime};
    std::string token = jwt::Sign(key->get<std::string>(), claims);
    plan.actions.push_back(Make(Action::Kind::kApply, TokenSecret(cr, spec, token)));
    plan.log.push_back("token " + Str(cr, "metadata.name") + ": issued for " + spec.username);
    issued = obs.now;
    expires = obs.now + spec.lifetime;
    refresh_at = expires - spec.lifetime / 5;
    status["issuedAt"] = FormatRfc3339(issued);
    status["expiresAt"] = FormatRfc3339(expires);
  }
  status["conditions"] = Json::array(
      {Condition("Ready", true, "Issued", "token for " + spec.username, old_status, obs.now)});
  if (status != old_status)
    plan.actions.push_back(Make(Action::Kind::kUpdateStatus, {{"status", status}}));
  if (spec.refresh)
    plan.requeue_after_s = static_cast<int>(std::max<int64_t>(1, refresh_at - obs.now));
  return plan;
}

}  // namespace shoal::op
