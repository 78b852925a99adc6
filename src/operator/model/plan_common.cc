#include "operator/model/plan_common.h"

#include "operator/model/util.h"

namespace shoal::op {

Json ObjectRef(const Json& object) {
  return Json{{"apiVersion", Str(object, "apiVersion", "v1")},
              {"kind", Str(object, "kind", "Pod")},
              {"metadata",
               {{"name", Str(object, "metadata.name")},
                {"namespace", Str(object, "metadata.namespace", "default")}}}};
}

const Json* Related(const Observed& obs, const std::string& key) {
  if (!obs.related.is_object()) return nullptr;
  auto it = obs.related.find(key);
  if (it == obs.related.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::string> MapValue(const Json& object, const std::string& field,
                                    const std::string& key) {
  if (!object.is_object()) return std::nullopt;
  auto f = object.find(field);
  if (f == object.end() || !f->is_object()) return std::nullopt;
  auto v = f->find(key);
  if (v == f->end() || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

Json EventObj(const std::string& reason, const std::string& message, const std::string& type) {
  return Json{{"reason", reason}, {"message", message}, {"type", type}};
}

Json Condition(const std::string& type, bool ok, const std::string& reason,
               const std::string& message, const Json& old_status, int64_t now) {
  std::string status = ok ? "True" : "False";
  std::string since = FormatRfc3339(now);
  if (const Json* cs = Find(old_status, "conditions"); cs != nullptr && cs->is_array()) {
    for (const Json& c : *cs) {
      if (Str(c, "type") == type && Str(c, "status") == status)
        since = Str(c, "lastTransitionTime", since);
    }
  }
  return Json{{"type", type},
              {"status", status},
              {"reason", reason},
              {"message", message},
              {"lastTransitionTime", since}};
}

Plan InvalidSpecPlan(const Json& cr, const std::string& error, int64_t now) {
  Plan plan;
  Json old_status = cr.value("status", Json::object());
  Json status = old_status;
  status["observedGeneration"] = Int(cr, "metadata.generation", 0);
  status["conditions"] =
      Json::array({Condition("Ready", false, "InvalidSpec", error, old_status, now)});
  if (status != old_status)
    plan.actions.push_back(Make(Action::Kind::kUpdateStatus, {{"status", status}}));
  plan.actions.push_back(Make(Action::Kind::kEvent, EventObj("InvalidSpec", error, "Warning")));
  plan.log.push_back(Str(cr, "kind") + " " + Str(cr, "metadata.name") + ": " + error);
  return plan;
}

}  // namespace shoal::op
