// Shared pieces of the desired objects: template merging and security contexts.
#include "operator/model/desired.h"
#include "operator/model/slurm_conf_gen.h"
#include "operator/model/util.h"

namespace shoal::op {

Json RestrictedPod(const Json& cr, const std::string& pod_name, const Json& labels, Json container,
                   Json volumes, const Json& extra_spec, const Json& tmpl) {
  Json spec{{"restartPolicy", "Always"},
            {"enableServiceLinks", false},
            {"securityContext", RestrictedPodSecurity(kShoalUid)},
            {"containers", Json::array({std::move(container)})},
            {"volumes", std::move(volumes)}};
  for (const auto& [k, v] : extra_spec.items()) spec[k] = v;
  Json pod{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", OwnedMeta(cr, pod_name, labels)},
           {"spec", std::move(spec)}};
  ApplyTemplate(tmpl, &pod);
  StampSpecHash(&pod);
  return pod;
}

void ApplyTemplate(const Json& tmpl, Json* pod) {
  if (!tmpl.is_object()) return;
  Json& meta = (*pod)["metadata"];
  for (const char* field : {"labels", "annotations"}) {
    const Json* extra = Find(tmpl, std::string("metadata.") + field);
    if (extra == nullptr || !extra->is_object()) continue;
    for (auto it = extra->begin(); it != extra->end(); ++it) {
      // The operator's own labels win: selectors depend on them.
      if (!meta[field].contains(it.key())) meta[field][it.key()] = it.value();
    }
  }
  const Json* spec = Find(tmpl, "spec");
  if (spec == nullptr || !spec->is_object()) return;
  Json& ps = (*pod)["spec"];
  // hostNetwork and DNS settings pass through for RDMA NICs and site resolvers.
  for (const char* field :
       {"nodeSelector", "tolerations", "affinity", "priorityClassName", "serviceAccountName",
        "imagePullSecrets", "schedulerName", "topologySpreadConstraints", "runtimeClassName",
        "hostNetwork", "dnsPolicy", "dnsConfig"}) {
    if (spec->contains(field)) ps[field] = (*spec)[field];
  }
  // The template's init containers run before the operator's own (e.g. loading a driver).
  if (const Json* init = Find(*spec, "initContainers"); init != nullptr && init->is_array()) {
    Json all = *init;
    if (ps.contains("initContainers"))
      for (const Json& c : ps["initContainers"]) all.push_back(c);
    ps["initContainers"] = all;
  }
  if (spec->contains("securityContext") && (*spec)["securityContext"].is_object()) {
    for (auto it = (*spec)["securityContext"].begin(); it != (*spec)["securityContext"].end(); ++it)
      ps["securityContext"][it.key()] = it.value();
  }
  if (ps.contains("containers") && !ps["containers"].empty()) {
    Json& c = ps["containers"][0];
    if (spec->contains("resources")) c["resources"] = (*spec)["resources"];
    const Json* env = Find(*spec, "extraEnv");
    if (env != nullptr && env->is_array()) {
      for (const Json& e : *env) c["env"].push_back(e);
    }
    const Json* mounts = Find(*spec, "extraVolumeMounts");
    const Json* vols = Find(*spec, "extraVolumes");
    if (mounts != nullptr && mounts->is_array() && vols != nullptr && vols->is_array()) {
      for (const Json& m : *mounts) c["volumeMounts"].push_back(m);
      for (const Json& v : *vols) ps["volumes"].push_back(v);
    }
  }
}

Json RestrictedContainerSecurity() {
  return Json{{"allowPrivilegeEscalation", false},
              {"capabilities", {{"drop", Json::array({"ALL"})}}},
              {"runAsNonRoot", true},
              {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

Json RestrictedPodSecurity(int uid) {
  return Json{{"runAsNonRoot", true},
              {"runAsUser", uid},
              {"runAsGroup", uid},
              {"fsGroup", uid},
              {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

}  // namespace shoal::op
