// Desired objects of a NodeSet: worker pods, the headless Service, the PDB, per-pod PVCs.
#include <sstream>

#include "operator/model/desired.h"
#include "operator/model/slurm_conf_gen.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

inline constexpr int kShoaldPort = 6818;

Json Labels(const Json& cr) {
  std::string name = Str(cr, "metadata.name");
  Json l = BaseLabels("shoal-worker", name);
  l[kLabelNodeSet] = name;
  return l;
}

}  // namespace

std::string WorkerSelector(const std::string& nodeset) {
  return std::string(kLabelInstance) + "=" + nodeset + "," + kLabelNodeSet + "=" + nodeset;
}

Json WorkerSelectorLabels(const std::string& nodeset) {
  return Json{{kLabelInstance, nodeset}, {kLabelNodeSet, nodeset}};
}

std::string WorkerNodeConf(const std::string& nodeset, const NodeSetSpec& spec,
                           const std::vector<std::string>& k8s_features) {
  std::string features = nodeset;
  for (const std::string& f : spec.features) features += "," + f;
  for (const std::string& f : k8s_features) features += ",k8s/" + f;
  std::string out = "Features=" + features;
  if (!spec.gres.empty()) out += " Gres=" + spec.gres;
  if (spec.weight > 0) out += " Weight=" + std::to_string(spec.weight);
  return out;
}

std::string WorkerRevision(const NodeSetSpec& spec, const std::string& controller_host,
                           const std::string& slurm_key_secret) {
  // Everything that shapes a pod, and nothing that does not (replicas, update strategy), so
  // scaling never looks like a template change.
  Json in{{"image", spec.image},
          {"pullPolicy", spec.pull_policy},
          {"template", spec.tmpl},
          {"features", spec.features},
          {"gres", spec.gres},
          {"weight", spec.weight},
          {"host", controller_host},
          {"key", slurm_key_secret},
          {"vct", spec.volume_claim_templates}};
  return ShortHash(in.dump());
}

Json WorkerPod(const Json& cr, const NodeSetSpec& spec, const WorkerPodInputs& in) {
  std::string name = Str(cr, "metadata.name");
  std::string pod_name = name + "-" + std::to_string(in.ordinal);
  if (!in.pinned_node.empty()) {
    std::string n;
    for (char c : in.pinned_node)
      n += (c == '.' || c == '_') ? '-' : static_cast<char>(std::tolower(c));
    pod_name = name + "-" + n;
  }
  Json labels = Labels(cr);
  std::string key_secret = in.slurm_key_secret;
  labels[kLabelRevision] = WorkerRevision(spec, in.controller_host, key_secret);

  // The auth agent for the commands of jobs on this pod (srun, mpirun's srun): no other daemon
  // in the pod serves it.
  Json command = Json::array({"shoald", "-D", "-Z", "-N", "$(POD_NAME)", "--conf-server",
                              in.controller_host, "--agent-socket", "/run/shoal/auth.sock"});
  Json mounts = Json::array();
  Json volumes = Json::array();
  if (!key_secret.empty()) {
    command.push_back("--key");
    command.push_back(std::string(kAuthKeyFile));
    mounts.push_back({{"name", "auth-key"}, {"mountPath", kAuthKeyDir}, {"readOnly", true}});
    volumes.push_back(
        {{"name", "auth-key"},
         {"secret",
          {{"secretName", key_secret},
           {"defaultMode", 0400},
           {"items", Json::array({{{"key", in.slurm_key_key}, {"path", "slurm.key"}}})}}}});
  }
  command.push_back("--conf");
  command.push_back(WorkerNodeConf(name, spec, in.k8s_features));
  for (const Json& vct : spec.volume_claim_templates) {
    std::string vname = Str(vct, "metadata.name");
    if (vname.empty()) continue;
    volumes.push_back(
        {{"name", vname}, {"persistentVolumeClaim", {{"claimName", vname + "-" + pod_name}}}});
  }
  auto probe = [](const char* path, int period) {
    return Json{{"httpGet", {{"path", path}, {"port", kShoaldPort}}},
                {"periodSeconds", period},
                {"timeoutSeconds", 3},
                {"failureThreshold", 3}};
  };
  auto field_env = [](const char* var, const char* path) {
    return Json{{"name", var}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
  };
  // The pre-stop hook marks the node down so the controller stops scheduling to it; `timeout`
  // bounds it so an unreachable controller never wedges the pod's termination (#249).
  std::string pre_stop =
      "timeout 10 scontrol update NodeName=\"$POD_NAME\" State=DOWN "
      "Reason=\"shoal-operator: pod is terminating\" || true";
  Json container{
      {"name", "shoald"},
      {"image", spec.image},
      {"imagePullPolicy", spec.pull_policy},
      {"command", command},
      {"env", Json::array({field_env("POD_NAME", "metadata.name"),
                           field_env("POD_NAMESPACE", "metadata.namespace"),
                           field_env("NODE_NAME", "spec.nodeName")})},
      {"ports", Json::array({{{"name", "shoald"}, {"containerPort", kShoaldPort}}})},
      {"readinessProbe", probe("/readyz", 5)},
      {"livenessProbe", probe("/livez", 10)},
      {"lifecycle",
       {{"preStop", {{"exec", {{"command", Json::array({"/bin/sh", "-c", pre_stop})}}}}}}},
      // Jobs need cgroups, namespaces and setuid: the worker is privileged (not "restricted").
      {"securityContext", {{"privileged", true}}}};
  if (!mounts.empty()) container["volumeMounts"] = mounts;
  for (const Json& vct : spec.volume_claim_templates) {
    std::string vname = Str(vct, "metadata.name");
    if (!vname.empty())
      container["volumeMounts"].push_back({{"name", vname}, {"mountPath", "/mnt/" + vname}});
  }
  Json pod{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", OwnedMeta(cr, pod_name, labels)},
           {"spec",
            {{"hostname", pod_name},
             {"subdomain", name},
             {"restartPolicy", "Always"},
             {"terminationGracePeriodSeconds", 30},
             {"enableServiceLinks", false},
             {"containers", Json::array({container})}}}};
  if (!volumes.empty()) pod["spec"]["volumes"] = volumes;
  ApplyTemplate(spec.tmpl, &pod);
  if (!in.pinned_node.empty()) {
    // DaemonSet mode: pinned by node affinity on the name, as the DaemonSet controller does.
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {"nodeSelectorTerms",
         Json::array({{{"matchFields", Json::array({{{"key", "metadata.name"},
                                                     {"operator", "In"},
                                                     {"values", {in.pinned_node}}}})}}})}};
  }
  StampSpecHash(&pod);
  return pod;
}

Json WorkerService(const Json& cr) {
  std::string name = Str(cr, "metadata.name");
  Json svc{{"apiVersion", "v1"},
           {"kind", "Service"},
           {"metadata", OwnedMeta(cr, name, Labels(cr))},
           {"spec",
            {{"clusterIP", "None"},
             {"publishNotReadyAddresses", true},
             {"selector", WorkerSelectorLabels(name)},
             {"ports",
              Json::array({{{"name", "shoald"}, {"port", kShoaldPort}, {"protocol", "TCP"}}})}}}};
  StampSpecHash(&svc);
  return svc;
}

Json WorkerPdb(const Json& cr) {
  std::string name = Str(cr, "metadata.name");
  Json sel = WorkerSelectorLabels(name);
  sel[kLabelProtect] = "true";
  Json pdb{{"apiVersion", "policy/v1"},
           {"kind", "PodDisruptionBudget"},
           {"metadata", OwnedMeta(cr, name + "-protect", Labels(cr))},
           {"spec", {{"maxUnavailable", 0}, {"selector", {{"matchLabels", sel}}}}}};
  StampSpecHash(&pdb);
  return pdb;
}

Json WorkerPvc(const Json& cr, const Json& claim_template, const std::string& pod_name) {
  std::string vname = Str(claim_template, "metadata.name");
  Json pvc{{"apiVersion", "v1"},
           {"kind", "PersistentVolumeClaim"},
           {"metadata", OwnedMeta(cr, vname + "-" + pod_name, Labels(cr))},
           {"spec", claim_template.value("spec", Json::object())}};
  StampSpecHash(&pvc);
  return pvc;
}

}  // namespace shoal::op
