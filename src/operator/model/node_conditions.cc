#include "operator/model/node_conditions.h"

#include <cctype>

#include "operator/model/util.h"

namespace shoal::op {

std::string StateWord(const std::string& state) {
  std::string out;
  bool upper = true;
  for (char c : state) {
    if (c == '_' || c == '-' || c == ' ') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                 : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    upper = false;
  }
  return out;
}

std::vector<Json> NodeConditions(const ShoalNode& node, int64_t now) {
  std::vector<Json> out;
  auto add = [&](const std::string& word) {
    out.push_back({{"type", kConditionPrefix + word},
                   {"status", "True"},
                   {"reason", word},
                   {"message", node.reason},
                   {"lastTransitionTime", FormatRfc3339(now)}});
  };
  add(StateWord(node.base_state.empty() ? "UNKNOWN" : node.base_state));
  for (const std::string& f : node.flags) add(StateWord(f));  // std::set: sorted
  return out;
}

std::optional<Json> DesiredPodConditions(const Json& pod, const ShoalNode* node, int64_t now) {
  Json current = Json::array();
  if (const Json* c = Find(pod, "status.conditions"); c != nullptr && c->is_array()) current = *c;
  Json result = Json::array();
  Json old_ours = Json::object();
  for (const Json& c : current) {
    std::string type = Str(c, "type");
    if (type.rfind(kConditionPrefix, 0) == 0) {
      old_ours[type] = c;
    } else {
      result.push_back(c);
    }
  }
  bool changed = false;
  size_t wanted = 0;
  if (node != nullptr) {
    for (Json c : NodeConditions(*node, now)) {
      ++wanted;
      std::string type = c["type"];
      auto it = old_ours.find(type);
      if (it != old_ours.end() && Str(*it, "status") == "True") {
        c["lastTransitionTime"] = Str(*it, "lastTransitionTime", FormatRfc3339(now));
        if (Str(*it, "message") != Str(c, "message") || Str(*it, "reason") != Str(c, "reason"))
          changed = true;
      } else {
        changed = true;
      }
      result.push_back(c);
    }
  }
  if (old_ours.size() != wanted) changed = true;
  if (!changed) return std::nullopt;
  return result;
}

Json PodStatusPatch(const Json& pod, const Json& conditions) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", Str(pod, "metadata.name")},
                {"namespace", Str(pod, "metadata.namespace", "default")}}},
              {"status", {{"conditions", conditions}}}};
}

bool OperatorDrain(const ShoalNode& node) {
  return node.Has("DRAIN") && node.reason.rfind(kDrainPrefix, 0) == 0;
}

std::optional<std::string> ForeignDrainAnnotation(const ShoalNode& node) {
  if (!node.Has("DRAIN") || OperatorDrain(node)) return std::nullopt;
  return node.reason.empty() ? std::string("drained") : node.reason;
}

bool NodeBusy(const ShoalNode& node) {
  return node.running_jobs > 0 || node.base_state == "ALLOCATED" || node.base_state == "MIXED" ||
         node.Has("COMPLETING");
}

bool NodeDrainedAndEmpty(const ShoalNode& node) { return node.Has("DRAIN") && !NodeBusy(node); }

}  // namespace shoal::op
