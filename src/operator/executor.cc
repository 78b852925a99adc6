#include "operator/executor.h"

#include <chrono>
#include <ctime>
#include <map>

#include "common/log.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

std::string NowRfc3339() { return FormatRfc3339(std::time(nullptr)); }

std::string KindOf(const Json& o) { return Str(o, "kind"); }
std::string NsOf(const Json& o) { return Str(o, "metadata.namespace"); }
std::string NameOf(const Json& o) { return Str(o, "metadata.name"); }

Status Failed(const std::string& what, const Result<kube::KubeResponse>& r) {
  if (!r) return Error(ErrorCode::kUnavailable, what + ": " + r.error());
  return Error(ErrorCode::kInternal, what + ": " + kube::DescribeFailure(*r));
}

std::string Describe(const Json& o) { return KindOf(o) + " " + NsOf(o) + "/" + NameOf(o); }

}  // namespace

std::string DesiredSpecHash(const Json& desired) {
  // Looked up directly: the annotation key contains dots, which Str() would split on.
  if (const Json* a = Find(desired, "metadata.annotations"); a && a->is_object()) {
    auto it = a->find(kSpecHashAnnotation);
    if (it != a->end() && it->is_string()) return it->get<std::string>();
  }
  Json copy = desired;
  StampSpecHash(&copy);
  return copy["metadata"]["annotations"][kSpecHashAnnotation].get<std::string>();
}

Json PrepareReplace(const Json& desired, const Json& live) {
  Json out = desired;
  if (!out.contains("metadata") || !out["metadata"].is_object()) out["metadata"] = Json::object();
  Json& meta = out["metadata"];
  if (!meta.contains("annotations") || !meta["annotations"].is_object())
    meta["annotations"] = Json::object();
  meta["annotations"][kSpecHashAnnotation] = DesiredSpecHash(desired);
  const Json* lm = Find(live, "metadata");
  if (lm && lm->is_object()) {
    for (const char* k : {"resourceVersion", "uid", "creationTimestamp", "generation"})
      if (lm->contains(k)) meta[k] = (*lm)[k];
    if (lm->contains("finalizers") && !meta.contains("finalizers"))
      meta["finalizers"] = (*lm)["finalizers"];
    if (lm->contains("ownerReferences") && !meta.contains("ownerReferences"))
      meta["ownerReferences"] = (*lm)["ownerReferences"];
  }
  // A Service's cluster IP is allocated by the server and immutable.
  if (KindOf(desired) == "Service" && live.contains("spec") && out.contains("spec")) {
    for (const char* k : {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"})
      if (live["spec"].contains(k) && !out["spec"].contains(k)) out["spec"][k] = live["spec"][k];
  }
  // The status is the controller's (or kubelet's) to write, through the subresource.
  if (live.contains("status")) out["status"] = live["status"];
  return out;
}

Json MergeConditions(const Json& live, const Json& desired, const std::string& managed_prefix,
                     const std::string& now_rfc3339) {
  Json out = Json::array();
  std::map<std::string, Json> previous;
  if (live.is_array()) {
    for (const auto& c : live) {
      std::string type = c.is_object() ? c.value("type", "") : "";
      if (type.rfind(managed_prefix, 0) == 0)
        previous[type] = c;
      else
        out.push_back(c);
    }
  }
  if (desired.is_array()) {
    for (Json c : desired) {
      if (!c.is_object()) continue;
      std::string type = c.value("type", "");
      auto prev = previous.find(type);
      if (prev != previous.end() && prev->second.value("status", "") == c.value("status", "") &&
          prev->second.contains("lastTransitionTime"))
        c["lastTransitionTime"] = prev->second["lastTransitionTime"];
      else if (!c.contains("lastTransitionTime"))
        c["lastTransitionTime"] = now_rfc3339;
      out.push_back(std::move(c));
    }
  }
  return out;
}

bool SameConditions(const Json& a, const Json& b) {
  auto key = [](const Json& list) {
    std::map<std::string, std::string> m;
    if (!list.is_array()) return m;
    for (const auto& c : list) {
      if (!c.is_object()) continue;
      m[c.value("type", "")] =
          c.value("status", "") + "\x1f" + c.value("reason", "") + "\x1f" + c.value("message", "");
    }
    return m;
  };
  return key(a) == key(b);
}

Json BuildEvent(const Json& cr, const Json& what, const std::string& now_rfc3339,
                const std::string& suffix) {
  Json ev;
  ev["apiVersion"] = "v1";
  ev["kind"] = "Event";
  ev["metadata"] = {{"name", NameOf(cr) + "." + suffix}, {"namespace", NsOf(cr)}};
  ev["involvedObject"] = {{"apiVersion", Str(cr, "apiVersion")},
                          {"kind", KindOf(cr)},
                          {"name", NameOf(cr)},
                          {"namespace", NsOf(cr)},
                          {"uid", Str(cr, "metadata.uid")},
                          {"resourceVersion", Str(cr, "metadata.resourceVersion")}};
  ev["reason"] = what.value("reason", "");
  ev["message"] = what.value("message", "");
  ev["type"] = what.value("type", "Normal");
  ev["source"] = {{"component", "shoal-operator"}};
  ev["reportingComponent"] = "shoal-operator";
  ev["firstTimestamp"] = now_rfc3339;
  ev["lastTimestamp"] = now_rfc3339;
  ev["count"] = 1;
  return ev;
}

ExecResult Executor::Run(const Plan& plan, const Json& cr) {
  ExecResult out;
  for (const auto& a : plan.actions) {
    bool conflict = false;
    Status s = Execute(a, cr, &conflict);
    if (conflict) out.conflict = true;
    if (!s.ok()) {
      LogError("reconcile %s/%s: %s failed: %s", NsOf(cr).c_str(), NameOf(cr).c_str(),
               KindName(a.kind), s.message().c_str());
      if (out.failures++ == 0) out.first_error = s.message();
    }
  }
  return out;
}

Status Executor::Execute(const Action& a, const Json& cr, bool* conflict) {
  LogDebug("reconcile %s/%s: %s %s%s", NsOf(cr).c_str(), NameOf(cr).c_str(), KindName(a.kind),
           a.object.is_object() ? Describe(a.object).c_str() : "", a.node.c_str());
  switch (a.kind) {
    case Action::Kind::kApply:
      return Apply(a.object, conflict);
    case Action::Kind::kDelete:
      return Delete(a.object);
    case Action::Kind::kPatchPodStatus:
      return PatchPodStatus(a.object, conflict);
    case Action::Kind::kPatchMetadata:
      return PatchMetadata(a.object, conflict);
    case Action::Kind::kUpdateStatus:
      return UpdateStatus(
          cr, a.object.is_object() && a.object.contains("status") ? a.object["status"] : a.object,
          conflict);
    case Action::Kind::kEvent:
      return CreateEvent(cr, a.object);
    default:
      return ShoalAction(a);
  }
}

Status Executor::Apply(const Json& desired, bool* conflict) {
  std::string kind = KindOf(desired), ns = NsOf(desired), name = NameOf(desired);
  if (name.empty()) return InvalidArgument("apply: object without a name");
  auto live = kube_.Get(kind, ns, name);
  if (!live) return Failed("get " + Describe(desired), live);
  if (kube::IsNotFound(*live)) {
    Json obj = desired;
    obj["metadata"]["annotations"][kSpecHashAnnotation] = DesiredSpecHash(desired);
    auto r = kube_.Create(kind, ns, obj);
    if (r && kube::IsAlreadyExists(*r)) {
      *conflict = true;  // created meanwhile (our cache was stale): look again
      return Status::Ok();
    }
    if (!r || !r->ok()) return Failed("create " + Describe(desired), r);
    LogInfo("created %s", Describe(desired).c_str());
    return Status::Ok();
  }
  if (!live->ok()) return Failed("get " + Describe(desired), live);
  std::string live_hash;
  if (const Json* a = Find(live->body, "metadata.annotations"); a && a->is_object())
    if (auto it = a->find(kSpecHashAnnotation); it != a->end() && it->is_string())
      live_hash = it->get<std::string>();
  if (live_hash == DesiredSpecHash(desired)) return Status::Ok();
  // Claims and pods cannot change their spec in place; their planners replace them instead.
  if (kind == "PersistentVolumeClaim" || kind == "Pod") return Status::Ok();
  auto r = kube_.Replace(kind, ns, name, PrepareReplace(desired, live->body));
  if (r && kube::IsConflict(*r)) {
    *conflict = true;
    return Status::Ok();
  }
  if (!r || !r->ok()) return Failed("replace " + Describe(desired), r);
  LogInfo("updated %s", Describe(desired).c_str());
  return Status::Ok();
}

Status Executor::Delete(const Json& object) {
  kube::DeleteOptions o;
  o.propagation_policy = "Background";
  auto r = kube_.Delete(KindOf(object), NsOf(object), NameOf(object), o);
  if (r && (r->ok() || kube::IsNotFound(*r))) {
    if (r->ok()) LogInfo("deleted %s", Describe(object).c_str());
    return Status::Ok();
  }
  return Failed("delete " + Describe(object), r);
}

Status Executor::PatchPodStatus(const Json& object, bool* conflict) {
  std::string ns = NsOf(object), name = NameOf(object);
  auto live = kube_.Get("Pod", ns, name);
  if (!live) return Failed("get pod " + ns + "/" + name, live);
  if (kube::IsNotFound(*live)) return Status::Ok();  // gone: nothing to mirror onto
  if (!live->ok()) return Failed("get pod " + ns + "/" + name, live);
  const Json* lc = Find(live->body, "status.conditions");
  Json live_conditions = lc ? *lc : Json::array();
  const Json* dc = Find(object, "status.conditions");
  Json merged =
      MergeConditions(live_conditions, dc ? *dc : Json::array(), "ShoalNodeState", NowRfc3339());
  if (SameConditions(merged, live_conditions)) return Status::Ok();
  // Conditions are a list: a merge patch replaces it whole, so the patch carries every
  // condition and the resourceVersion it was computed from (a concurrent kubelet write
  // makes it fail with 409 instead of being lost).
  Json patch = {{"metadata", {{"resourceVersion", Str(live->body, "metadata.resourceVersion")}}},
                {"status", {{"conditions", merged}}}};
  auto r = kube_.PatchStatus("Pod", ns, name, patch);
  if (r && kube::IsConflict(*r)) {
    *conflict = true;
    return Status::Ok();
  }
  if (!r || !r->ok()) return Failed("patch pod status " + ns + "/" + name, r);
  return Status::Ok();
}

Status Executor::PatchMetadata(const Json& object, bool* conflict) {
  Json meta = Json::object();
  if (const Json* l = Find(object, "metadata.labels")) meta["labels"] = *l;
  if (const Json* a = Find(object, "metadata.annotations")) meta["annotations"] = *a;
  if (meta.empty()) return Status::Ok();
  auto r = kube_.MergePatch(KindOf(object), NsOf(object), NameOf(object), {{"metadata", meta}});
  if (r && kube::IsNotFound(*r)) return Status::Ok();
  if (r && kube::IsConflict(*r)) {
    *conflict = true;
    return Status::Ok();
  }
  if (!r || !r->ok()) return Failed("patch " + Describe(object), r);
  return Status::Ok();
}

Status Executor::UpdateStatus(const Json& cr, const Json& status, bool* conflict) {
  if (cr.contains("status") && cr["status"] == status) return Status::Ok();
  Json obj = cr;
  obj["status"] = status;
  auto r = kube_.ReplaceStatus(kube::KindKey(Str(cr, "apiVersion"), KindOf(cr)), NsOf(cr),
                               NameOf(cr), obj);
  if (r && kube::IsConflict(*r)) {
    *conflict = true;
    return Status::Ok();
  }
  if (r && kube::IsNotFound(*r)) return Status::Ok();
  if (!r || !r->ok()) return Failed("update status of " + Describe(cr), r);
  return Status::Ok();
}

Status Executor::CreateEvent(const Json& cr, const Json& what) {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, "%llx%llx",
                static_cast<unsigned long long>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()),
                static_cast<unsigned long long>(++event_seq_));
  auto r = kube_.Create("Event", NsOf(cr), BuildEvent(cr, what, NowRfc3339(), suffix));
  if (!r || !r->ok()) return Failed("create event", r);
  return Status::Ok();
}

Status Executor::ShoalAction(const Action& a) {
  if (!shoal_) return Error(ErrorCode::kUnavailable, "the Shoal controller is unknown");
  switch (a.kind) {
    case Action::Kind::kDrainNode:
      return shoal_->Drain(a.node, a.reason);
    case Action::Kind::kUndrainNode:
      return shoal_->Undrain(a.node);
    case Action::Kind::kDownNode:
      return shoal_->Down(a.node, a.reason);
    case Action::Kind::kSetNodeComment:
      return shoal_->SetComment(a.node, a.reason);
    case Action::Kind::kSetNodeFeatures:
      return shoal_->SetFeatures(a.node, a.reason);
    case Action::Kind::kDeleteShoalNode:
      return shoal_->DeleteNode(a.node);
    case Action::Kind::kReconfigure:
      return shoal_->Reconfigure();
    case Action::Kind::kCreateReservation:
      return shoal_->CreateReservation(a.object.value("name", ""), a.object.value("start", 0),
                                       a.object.value("duration", 0), a.object.value("nodes", ""));
    default:
      return InvalidArgument(std::string("unexpected action ") + KindName(a.kind));
  }
}

}  // namespace shoal::op
