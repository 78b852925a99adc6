// PlanSlinky: a Slinky resource planned by its kind's shoal.dev planner, through the
// translation; status in Slinky's shape; the rejection plan; the kind names.
#include <algorithm>

#include "operator/model/desired.h"
#include "operator/model/plan_common.h"
#include "operator/model/slinky.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

constexpr std::string_view kSuffix = kSlinkyKindSuffix;

// The NodeSet node counts: Slinky's name for each of Shoal's.
const std::pair<const char*, const char*> kNodeCounts[] = {{"nodeIdle", "slurmIdle"},
                                                           {"nodeAllocated", "slurmAllocated"},
                                                           {"nodeDown", "slurmDown"},
                                                           {"nodeDrain", "slurmDrain"}};

// Merges `extra` into `base` (objects key by key; anything else replaces).
void Merge(Json* base, const Json& extra) {
  if (!extra.is_object() || !base->is_object()) {
    *base = extra;
    return;
  }
  for (auto it = extra.begin(); it != extra.end(); ++it) Merge(&(*base)[it.key()], it.value());
}

// Labels and annotations from Slinky onto a desired object; the operator's own labels win
// (selectors depend on them).
void MergeMetadata(Json* object, const Json& meta) {
  for (const char* field : {"labels", "annotations"}) {
    const Json* extra = Find(meta, field);
    if (extra == nullptr || !extra->is_object()) continue;
    Json& have = (*object)["metadata"][field];
    for (auto it = extra->begin(); it != extra->end(); ++it) {
      if (!have.is_object() || !have.contains(it.key())) have[it.key()] = it.value();
    }
  }
}

void Restamp(Json* object) {
  if (Json* a = &(*object)["metadata"]["annotations"]; a->is_object())
    a->erase(kSpecHashAnnotation);
  StampSpecHash(object);
}

// The extras of a translation onto the desired objects the planner made for `name`.
void ApplyExtras(const std::string& name, const Json& extras, Json* object) {
  std::string kind = Str(*object, "kind");
  std::string object_name = Str(*object, "metadata.name");
  if (kind == "Service" && object_name == name && extras.contains("service")) {
    const Json& e = extras["service"];
    if (const Json* meta = Find(e, "metadata")) MergeMetadata(object, *meta);
    if (const Json* spec = Find(e, "spec")) Merge(&(*object)["spec"], *spec);
    if (const Json* np = Find(e, "nodePort")) (*object)["spec"]["ports"][0]["nodePort"] = *np;
  } else if (kind == "ServiceMonitor" && object_name == name && extras.contains("serviceMonitor")) {
    const Json& e = extras["serviceMonitor"];
    MergeMetadata(object, e);
    Json& endpoints = (*object)["spec"]["endpoints"];
    Json base = endpoints.is_array() && !endpoints.empty() ? endpoints[0] : Json::object();
    for (const char* f : {"interval", "scrapeTimeout"})
      if (e.contains(f)) base[f] = e[f];
    if (const Json* paths = Find(e, "endpoints"); paths != nullptr && paths->is_array()) {
      endpoints = Json::array();
      for (const Json& p : *paths) {
        Json ep = base;
        for (const char* f : {"path", "interval", "scrapeTimeout"})
          if (p.is_object() && p.contains(f)) ep[f] = p[f];
        endpoints.push_back(ep);
      }
    } else {
      endpoints = Json::array({base});
    }
  } else if (kind == "PersistentVolumeClaim" && object_name == name + "-state" &&
             extras.contains("stateClaim")) {
    Merge(&(*object)["spec"], extras["stateClaim"]);
  } else {
    return;
  }
  Restamp(object);
}

}  // namespace

std::string SlinkyKind(std::string_view kind) { return std::string(kind) + kSlinkyKindSuffix; }

bool IsSlinkyKind(std::string_view kind) {
  return kind.size() > kSuffix.size() && kind.substr(kind.size() - kSuffix.size()) == kSuffix;
}

std::string BaseKind(std::string_view kind) {
  if (IsSlinkyKind(kind)) kind.remove_suffix(kSuffix.size());
  return std::string(kind);
}

const std::vector<std::string>& SlinkyKinds() {
  static const std::vector<std::string> kinds = {SlinkyKind("Controller"), SlinkyKind("NodeSet"),
                                                 SlinkyKind("LoginSet"),   SlinkyKind("Accounting"),
                                                 SlinkyKind("RestApi"),    SlinkyKind("Token")};
  return kinds;
}

bool IsSlinky(const Json& object) {
  return Str(object, "apiVersion").rfind("slinky.slurm.net/", 0) == 0;
}

Json ShoalStatusOf(const Json& slinky_cr) {
  Json status = slinky_cr.value("status", Json::object());
  if (!status.is_object()) return Json::object();
  if (Str(slinky_cr, "kind") != "NodeSet") return status;
  for (const auto& [shoal, slinky] : kNodeCounts) {
    if (status.contains(slinky)) status[shoal] = status[slinky];
    status.erase(slinky);
  }
  if (status.contains("nodeAllocated")) status["nodeMixed"] = 0;  // summed into slurmAllocated
  for (const char* k : {"desired", "unavailableReplicas", "collisionCount", "ordinalToNode"})
    status.erase(k);
  return status;
}

Json SlinkyStatusOf(const Json& slinky_cr, const Json& shoal_status) {
  Json status = shoal_status;
  if (Str(slinky_cr, "kind") != "NodeSet" || !status.is_object()) return status;
  bool known = status.contains("nodeAllocated");
  for (const auto& [shoal, slinky] : kNodeCounts) {
    if (status.contains(shoal)) status[slinky] = status[shoal];
    status.erase(shoal);
  }
  if (known)
    status["slurmAllocated"] = Int(status, "slurmAllocated", 0) + Int(status, "nodeMixed", 0);
  status.erase("nodeMixed");
  // DESIRED: the replicas asked for, or in DaemonSet mode the pods the planner keeps.
  int64_t desired = Str(slinky_cr, "spec.scalingMode") == "DaemonSet"
                        ? Int(status, "replicas", 0)
                        : Int(slinky_cr, "spec.replicas", 1);
  status["desired"] = desired;
  status["unavailableReplicas"] =
      std::max<int64_t>(0, desired - Int(status, "availableReplicas", 0));
  return status;
}

Plan SlinkyRejectPlan(const Json& cr, const std::vector<SlinkyProblem>& problems, int64_t now) {
  Plan plan;
  std::string message;
  for (const SlinkyProblem& p : problems)
    message += (message.empty() ? "" : "; ") + p.field + ": " + p.why;
  Json old_status = cr.value("status", Json::object());
  Json status = old_status.is_object() ? old_status : Json::object();
  status["observedGeneration"] = Int(cr, "metadata.generation", 0);
  status["conditions"] =
      Json::array({Condition("Ready", false, kReasonUnsupportedField, message, old_status, now)});
  // Fields Slinky's status schema requires.
  std::string kind = Str(cr, "kind");
  if (kind == "NodeSet" && !status.contains("nodeSetHash")) status["nodeSetHash"] = "";
  std::string name = Str(cr, "metadata.name");
  if (kind == "NodeSet" && !status.contains("selector")) status["selector"] = WorkerSelector(name);
  if (kind == "LoginSet" && !status.contains("selector"))
    status["selector"] =
        std::string(kLabelInstance) + "=" + name + "," + kLabelName + "=shoal-login";
  if (status != old_status) {
    plan.actions.push_back(Make(Action::Kind::kUpdateStatus, {{"status", status}}));
    // The Events say it once, when the message is new, not at every resync.
    for (const SlinkyProblem& p : problems)
      plan.actions.push_back(
          Make(Action::Kind::kEvent,
               EventObj(kReasonUnsupportedField, p.field + ": " + p.why, "Warning")));
  }
  plan.log.push_back(kind + " " + name + " rejected: " + message);
  return plan;
}

Plan PlanSlinky(const Observed& obs, const PlanFn& planner, const SlinkyOptions& options) {
  if (!IsSlinky(obs.cr)) return planner(obs);
  SlinkyTranslation t = TranslateSlinky(obs.cr, obs.related, options);
  if (!t.problems.empty()) return SlinkyRejectPlan(obs.cr, t.problems, obs.now);
  Observed shoal = obs;
  shoal.cr = t.cr;
  for (const char* key : {"Controller", "Accounting"}) {
    auto it = shoal.related.find(key);
    if (it != shoal.related.end() && IsSlinky(*it))
      *it = TranslateSlinky(*it, Json::object(), options).cr;
  }
  if (auto sets = shoal.related.find("NodeSets"); sets != shoal.related.end() && sets->is_array()) {
    for (Json& s : *sets)
      if (IsSlinky(s)) s = TranslateSlinky(s, Json::object(), options).cr;
  }
  Plan plan = planner(shoal);
  std::string name = Str(obs.cr, "metadata.name");
  for (Action& a : plan.actions) {
    if (a.kind == Action::Kind::kUpdateStatus && a.object.contains("status"))
      a.object["status"] = SlinkyStatusOf(obs.cr, a.object["status"]);
    else if (a.kind == Action::Kind::kApply)
      ApplyExtras(name, t.extras, &a.object);
  }
  return plan;
}

}  // namespace shoal::op
