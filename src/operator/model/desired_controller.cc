// Desired objects of a Controller: ConfigMap, Services, state PVC, pods.
#include "operator/model/desired.h"
#include "operator/model/slurm_conf_gen.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

Json Labels(const Json& cr) { return BaseLabels("shoal-controller", Str(cr, "metadata.name")); }

// The HA launcher's own /livez, /readyz (leader-exec --health-port).
constexpr int kLeaderHealthPort = 8081;

Json SecretVolume(const std::string& vol, const KeyRef& ref, const std::string& file) {
  return Json{{"name", vol},
              {"secret",
               {{"secretName", ref.name},
                {"defaultMode", 0440},  // group-readable: the pod runs as kShoalUid
                {"items", Json::array({{{"key", ref.key}, {"path", file}}})}}}};
}

}  // namespace

Json ControllerConfigMap(const Json& cr, const std::map<std::string, std::string>& files) {
  Json cm{{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", OwnedMeta(cr, Str(cr, "metadata.name") + "-config", Labels(cr))},
          {"data", Json::object()}};
  for (const auto& [k, v] : files) cm["data"][k] = v;
  StampSpecHash(&cm);
  return cm;
}

Json ControllerService(const Json& cr, const ControllerSpec& spec) {
  std::string name = Str(cr, "metadata.name");
  Json sel = Labels(cr);
  sel.erase(kLabelManagedBy);
  Json svc{{"apiVersion", "v1"},
           {"kind", "Service"},
           {"metadata", OwnedMeta(cr, name, Labels(cr))},
           {"spec",
            {{"type", spec.service.type},
             {"selector", sel},
             {"ports", Json::array({{{"name", "shoalctld"},
                                     {"port", spec.service.port},
                                     {"targetPort", spec.port},
                                     {"protocol", "TCP"}}})}}}};
  if (spec.metrics && !spec.service_monitor) {
    // Scrape annotations for Prometheus setups without the operator's ServiceMonitor CRD.
    svc["metadata"]["annotations"] = {{"prometheus.io/scrape", "true"},
                                      {"prometheus.io/port", std::to_string(spec.port)},
                                      {"prometheus.io/path", "/metrics"}};
  }
  StampSpecHash(&svc);
  return svc;
}

Json ControllerHeadlessService(const Json& cr, const ControllerSpec& spec) {
  std::string name = Str(cr, "metadata.name");
  Json sel = Labels(cr);
  sel.erase(kLabelManagedBy);
  Json svc{{"apiVersion", "v1"},
           {"kind", "Service"},
           {"metadata", OwnedMeta(cr, name + "-headless", Labels(cr))},
           {"spec",
            {{"clusterIP", "None"},
             {"publishNotReadyAddresses", true},
             {"selector", sel},
             {"ports",
              Json::array({{{"name", "shoalctld"}, {"port", spec.port}, {"protocol", "TCP"}}})}}}};
  StampSpecHash(&svc);
  return svc;
}

Json ControllerStatePvc(const Json& cr, const ControllerSpec& spec) {
  Json pvc{{"apiVersion", "v1"},
           {"kind", "PersistentVolumeClaim"},
           {"metadata", OwnedMeta(cr, Str(cr, "metadata.name") + "-state", Labels(cr))},
           {"spec",
            {{"accessModes", Json::array({spec.ha ? "ReadWriteMany" : "ReadWriteOnce"})},
             {"resources", {{"requests", {{"storage", spec.storage_size}}}}}}}};
  if (!spec.storage_class.empty()) pvc["spec"]["storageClassName"] = spec.storage_class;
  // The state outlives a deleted Controller only when the admin says so (existingClaim); an
  // operator-made claim is owned, so deleting the Controller removes it.
  StampSpecHash(&pvc);
  return pvc;
}

Json ControllerServiceMonitor(const Json& cr) {
  std::string name = Str(cr, "metadata.name");
  Json sel = Labels(cr);
  Json sm{{"apiVersion", "monitoring.coreos.com/v1"},
          {"kind", "ServiceMonitor"},
          {"metadata", OwnedMeta(cr, name, Labels(cr))},
          {"spec",
           {{"selector", {{"matchLabels", sel}}},
            {"namespaceSelector",
             {{"matchNames", Json::array({Str(cr, "metadata.namespace", "default")})}}},
            {"endpoints",
             Json::array({{{"port", "shoalctld"}, {"path", "/metrics"}, {"interval", "30s"}}})}}}};
  StampSpecHash(&sm);
  return sm;
}

std::string ControllerLeaseName(const Json& cr) { return Str(cr, "metadata.name") + "-ctld"; }

Json ControllerServiceAccount(const Json& cr) {
  Json sa{{"apiVersion", "v1"},
          {"kind", "ServiceAccount"},
          {"metadata", OwnedMeta(cr, ControllerLeaseName(cr), Labels(cr))}};
  StampSpecHash(&sa);
  return sa;
}

Json ControllerLeaseRole(const Json& cr) {
  // Least privilege: create cannot be limited by name (the object does not exist yet), get and
  // update (renew, release) can.
  Json role{{"apiVersion", "rbac.authorization.k8s.io/v1"},
            {"kind", "Role"},
            {"metadata", OwnedMeta(cr, ControllerLeaseName(cr), Labels(cr))},
            {"rules", Json::array({{{"apiGroups", Json::array({"coordination.k8s.io"})},
                                    {"resources", Json::array({"leases"})},
                                    {"verbs", Json::array({"create"})}},
                                   {{"apiGroups", Json::array({"coordination.k8s.io"})},
                                    {"resources", Json::array({"leases"})},
                                    {"resourceNames", Json::array({ControllerLeaseName(cr)})},
                                    {"verbs", Json::array({"get", "update"})}}})}};
  StampSpecHash(&role);
  return role;
}

Json ControllerLeaseRoleBinding(const Json& cr) {
  std::string name = ControllerLeaseName(cr);
  Json rb{
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata", OwnedMeta(cr, name, Labels(cr))},
      {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", name}}},
      {"subjects", Json::array({{{"kind", "ServiceAccount"},
                                 {"name", name},
                                 {"namespace", Str(cr, "metadata.namespace", "default")}}})}};
  StampSpecHash(&rb);
  return rb;
}

Json ControllerPod(const Json& cr, const ControllerSpec& spec, int index) {
  std::string name = Str(cr, "metadata.name");
  std::string pod_name = name + "-" + std::to_string(index);
  Json labels = Labels(cr);
  // /run/shoal: the auth agent's socket (the non-root controller cannot create it in /run).
  Json mounts = Json::array({{{"name", "config"}, {"mountPath", kConfDir}, {"readOnly", true}},
                             {{"name", "state"}, {"mountPath", kStateDir}},
                             {{"name", "run"}, {"mountPath", "/run/shoal"}}});
  Json volumes = Json::array(
      {{{"name", "config"}, {"configMap", {{"name", name + "-config"}, {"defaultMode", 0755}}}},
       {{"name", "run"}, {"emptyDir", Json::object()}}});
  if (spec.persistence) {
    std::string claim = spec.existing_claim.empty() ? name + "-state" : spec.existing_claim;
    volumes.push_back({{"name", "state"}, {"persistentVolumeClaim", {{"claimName", claim}}}});
  } else {
    volumes.push_back({{"name", "state"}, {"emptyDir", Json::object()}});
  }
  if (spec.slurm_key_ref.set()) {
    mounts.push_back({{"name", "auth-key"}, {"mountPath", kAuthKeyDir}, {"readOnly", true}});
    volumes.push_back(SecretVolume("auth-key", spec.slurm_key_ref, "slurm.key"));
  }
  if (spec.jwt_key_ref.set()) {
    mounts.push_back({{"name", "jwt-key"}, {"mountPath", kJwtKeyDir}, {"readOnly", true}});
    volumes.push_back(SecretVolume("jwt-key", spec.jwt_key_ref, "jwt.key"));
  }
  auto probe = [&](const char* path, int period) {
    return Json{{"httpGet", {{"path", path}, {"port", spec.port}}},
                {"periodSeconds", period},
                {"timeoutSeconds", 3},
                {"failureThreshold", 3}};
  };
  Json command = Json::array({"shoalctld", "-D", "-f", std::string(kConfDir) + "/slurm.conf"});
  Json env =
      Json::array({{{"name", "SLURM_CONF"}, {"value", std::string(kConfDir) + "/slurm.conf"}}});
  Json ports = Json::array({{{"name", "shoalctld"}, {"containerPort", spec.port}}});
  Json liveness = probe("/livez", 10);
  Json startup{{"httpGet", {{"path", "/livez"}, {"port", spec.port}}},
               {"periodSeconds", 2},
               {"failureThreshold", 90}};
  Json extra_spec{{"hostname", pod_name},
                  {"subdomain", name + "-headless"},
                  {"terminationGracePeriodSeconds", 30}};
  if (spec.ha) {
    // Only the Lease holder runs shoalctld: a standby's port refuses connections, so commands
    // and node daemons walking SlurmctldHost move on at once. The state lock stays as fencing
    // against a partitioned old holder.
    Json launcher =
        Json::array({"shoal-operator", "leader-exec", "--lease-name", ControllerLeaseName(cr),
                     "--lease-namespace", Str(cr, "metadata.namespace", "default"), "--identity",
                     "$(POD_NAME)", "--health-port", std::to_string(kLeaderHealthPort), "--"});
    for (const Json& a : command) launcher.push_back(a);
    command = std::move(launcher);
    env.push_back(
        {{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}});
    ports.push_back({{"name", "leader-health"}, {"containerPort", kLeaderHealthPort}});
    liveness["httpGet"]["port"] = kLeaderHealthPort;
    startup["httpGet"]["port"] = kLeaderHealthPort;
    extra_spec["serviceAccountName"] = ControllerLeaseName(cr);
  }
  Json container{{"name", "shoalctld"},
                 {"image", spec.image},
                 {"imagePullPolicy", spec.pull_policy},
                 {"command", std::move(command)},
                 {"env", std::move(env)},
                 {"ports", std::move(ports)},
                 {"readinessProbe", probe("/readyz", 5)},
                 {"livenessProbe", std::move(liveness)},
                 {"startupProbe", std::move(startup)},
                 {"volumeMounts", mounts},
                 {"securityContext", RestrictedContainerSecurity()}};
  return RestrictedPod(cr, pod_name, labels, std::move(container), std::move(volumes), extra_spec,
                       spec.tmpl);
}

}  // namespace shoal::op
