// Helpers the planners share: actions, status conditions, object references.
#pragma once

#include <optional>
#include <string>

#include "operator/model/plan.h"

namespace shoal::op {

inline Action Make(Action::Kind kind, Json object = Json::object(), std::string node = "",
                   std::string reason = "") {
  return Action{kind, std::move(object), std::move(node), std::move(reason)};
}

// {apiVersion, kind, metadata{name, namespace}} of `object` (for kDelete / patches). Pods when
// apiVersion/kind are absent (pods as listed may lack them).
Json ObjectRef(const Json& object);
Json EventObj(const std::string& reason, const std::string& message,
              const std::string& type = "Normal");
// related[key] when it is an object or string (keys may contain dots), else null.
const Json* Related(const Observed& obs, const std::string& key);
// object[field][key] as a string (keys may contain dots); nullopt when absent.
std::optional<std::string> MapValue(const Json& object, const std::string& field,
                                    const std::string& key);
// A status condition; keeps lastTransitionTime from `old_status` when the status is unchanged.
Json Condition(const std::string& type, bool ok, const std::string& reason,
               const std::string& message, const Json& old_status, int64_t now);
// Status Ready=False/InvalidSpec (+ a Warning event) for a spec that does not validate.
Plan InvalidSpecPlan(const Json& cr, const std::string& error, int64_t now);

}  // namespace shoal::op
