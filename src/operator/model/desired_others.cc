// Desired objects of LoginSet, Accounting, RestApi and Token.
#include "operator/model/desired.h"
#include "operator/model/slurm_conf_gen.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

Json SecretVolume(const std::string& vol, const std::string& secret, const std::string& key,
                  const std::string& file, int mode = 0440) {
  return Json{{"name", vol},
              {"secret",
               {{"secretName", secret},
                {"defaultMode", mode},
                {"items", Json::array({{{"key", key}, {"path", file}}})}}}};
}

Json Service(const Json& cr, const std::string& name, const Json& labels, const ServiceSpec& s,
             const char* port_name, int target) {
  Json sel = labels;
  sel.erase(kLabelManagedBy);
  Json svc{{"apiVersion", "v1"},
           {"kind", "Service"},
           {"metadata", OwnedMeta(cr, name, labels)},
           {"spec",
            {{"type", s.type},
             {"selector", sel},
             {"ports", Json::array({{{"name", port_name},
                                     {"port", s.port},
                                     {"targetPort", target},
                                     {"protocol", "TCP"}}})}}}};
  StampSpecHash(&svc);
  return svc;
}

}  // namespace

// ---- LoginSet

std::string LoginTemplateHash(const LoginSetSpec& spec, const std::string& controller_host) {
  Json in{{"image", spec.image},
          {"template", spec.tmpl},
          {"sssd", spec.sssd_conf_ref.name + "/" + spec.sssd_conf_ref.key},
          {"sshd", spec.extra_sshd_config},
          {"keys", spec.root_ssh_authorized_keys},
          {"host", controller_host}};
  return ShortHash(in.dump());
}

Json LoginPod(const Json& cr, const LoginSetSpec& spec, const std::string& controller_host,
              const std::string& slurm_key_secret, const std::string& pod_name) {
  std::string name = Str(cr, "metadata.name");
  Json labels = BaseLabels("shoal-login", name);
  labels["pod-template-hash"] = LoginTemplateHash(spec, controller_host);
  // Debian's sshd_config includes sshd_config.d/*.conf; root's keys live beside it.
  Json mounts =
      Json::array({{{"name", "sshd"},
                    {"mountPath", "/etc/ssh/sshd_config.d/shoal.conf"},
                    {"subPath", "shoal.conf"},
                    {"readOnly", true}},
                   {{"name", "sshd"}, {"mountPath", "/etc/ssh/shoal"}, {"readOnly", true}}});
  Json volumes = Json::array({{{"name", "sshd"}, {"configMap", {{"name", name + "-sshd"}}}}});
  // shoalsackd fetches slurm.conf from the controller (configless) for the commands and serves
  // the auth agent; it exits when the controller cannot be reached at its start (the login pod
  // may well start first), so a loop restarts it. sshd is the container's main process; it
  // needs its privilege separation directory (/run may be empty at start) and host keys:
  // ssh-keygen -A makes those the image lacks.
  std::string start = "mkdir -p -m 0755 /run/sshd && ssh-keygen -A >/dev/null || exit 1; ";
  start += "while :; do shoalsackd -D --conf-server " + controller_host;
  if (!slurm_key_secret.empty()) start += " --key " + std::string(kAuthKeyFile);
  start += "; sleep 5; done & exec /usr/sbin/sshd -D -e";
  Json command = Json::array({"/bin/sh", "-c", start});
  if (!slurm_key_secret.empty()) {
    mounts.push_back({{"name", "auth-key"}, {"mountPath", kAuthKeyDir}, {"readOnly", true}});
    volumes.push_back(SecretVolume("auth-key", slurm_key_secret, "slurm.key", "slurm.key"));
  }
  if (spec.sssd_conf_ref.set()) {
    mounts.push_back({{"name", "sssd"}, {"mountPath", "/etc/sssd"}, {"readOnly", true}});
    volumes.push_back(
        SecretVolume("sssd", spec.sssd_conf_ref.name, spec.sssd_conf_ref.key, "sssd.conf", 0600));
  }
  Json container{{"name", "login"},
                 {"image", spec.image},
                 {"imagePullPolicy", spec.pull_policy},
                 {"command", command},
                 {"ports", Json::array({{{"name", "ssh"}, {"containerPort", 22}}})},
                 {"readinessProbe", {{"tcpSocket", {{"port", 22}}}, {"periodSeconds", 10}}},
                 {"volumeMounts", mounts},
                 // sshd runs as root and switches users: not "restricted"; still no escalation
                 // beyond the capabilities sshd needs.
                 {"securityContext",
                  {{"capabilities",
                    {{"drop", Json::array({"ALL"})},
                     {"add", Json::array({"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID",
                                          "SYS_CHROOT", "AUDIT_WRITE", "KILL"})}}},
                   {"seccompProfile", {{"type", "RuntimeDefault"}}}}}};
  Json pod{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", OwnedMeta(cr, pod_name, labels)},
           {"spec",
            {{"restartPolicy", "Always"},
             {"enableServiceLinks", false},
             {"containers", Json::array({container})},
             {"volumes", volumes}}}};
  ApplyTemplate(spec.tmpl, &pod);
  StampSpecHash(&pod);
  return pod;
}

Json LoginService(const Json& cr, const LoginSetSpec& spec) {
  std::string name = Str(cr, "metadata.name");
  return Service(cr, name, BaseLabels("shoal-login", name), spec.service, "ssh", 22);
}

Json LoginSshdConfigMap(const Json& cr, const LoginSetSpec& spec) {
  std::string name = Str(cr, "metadata.name");
  std::string sshd = "# Generated by shoal-operator\nPasswordAuthentication no\nUsePAM yes\n";
  if (!spec.extra_sshd_config.empty()) sshd += spec.extra_sshd_config + "\n";
  // Last: a Match block runs to the end of the file. It sets no PermitRootLogin: a Match
  // block overrides the global section, so it would undo an admin's "PermitRootLogin no" in
  // extraSshdConfig (sshd's default is prohibit-password: root by key only).
  sshd += "Match User root\n  AuthorizedKeysFile /etc/ssh/shoal/authorized_keys\n";
  Json cm{{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", OwnedMeta(cr, name + "-sshd", BaseLabels("shoal-login", name))},
          {"data", {{"shoal.conf", sshd}, {"authorized_keys", spec.root_ssh_authorized_keys}}}};
  StampSpecHash(&cm);
  return cm;
}

// ---- Accounting

Json AccountingPod(const Json& cr, const AccountingSpec& spec) {
  std::string name = Str(cr, "metadata.name");
  Json labels = BaseLabels("shoal-accounting", name);
  // shoaldbd (like slurmdbd) refuses a slurmdbd.conf with a password that others than its owner
  // may read, but a Secret volume under fsGroup is root-owned and group-readable: an init
  // container copies it, mode 0600 and owned by the pod's user, into an in-memory emptyDir.
  std::string secret_dir = std::string(kDbdConfDir) + "-secret";
  Json mounts = Json::array({{{"name", "config"}, {"mountPath", kDbdConfDir}, {"readOnly", true}}});
  Json volumes = Json::array(
      {{{"name", "config"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "1Mi"}}}},
       SecretVolume("config-secret", name + "-config", "slurmdbd.conf", "slurmdbd.conf", 0440)});
  Json init{
      {"name", "init-config"},
      {"image", spec.image},
      {"imagePullPolicy", spec.pull_policy},
      {"command", Json::array({"/bin/sh", "-c",
                               "install -m 0600 " + secret_dir + "/slurmdbd.conf " + kDbdConfDir +
                                   "/slurmdbd.conf"})},
      {"volumeMounts",
       Json::array({{{"name", "config"}, {"mountPath", kDbdConfDir}},
                    {{"name", "config-secret"}, {"mountPath", secret_dir}, {"readOnly", true}}})},
      {"securityContext", RestrictedContainerSecurity()}};
  if (spec.slurm_key_ref.set()) {
    mounts.push_back({{"name", "auth-key"}, {"mountPath", kAuthKeyDir}, {"readOnly", true}});
    volumes.push_back(
        SecretVolume("auth-key", spec.slurm_key_ref.name, spec.slurm_key_ref.key, "slurm.key"));
  }
  if (spec.jwt_key_ref.set()) {
    mounts.push_back({{"name", "jwt-key"}, {"mountPath", kJwtKeyDir}, {"readOnly", true}});
    volumes.push_back(
        SecretVolume("jwt-key", spec.jwt_key_ref.name, spec.jwt_key_ref.key, "jwt.key"));
  }
  std::string conf = std::string(kDbdConfDir) + "/slurmdbd.conf";
  Json container{
      {"name", "shoaldbd"},
      {"image", spec.image},
      {"imagePullPolicy", spec.pull_policy},
      {"command", Json::array({"shoaldbd", "-D", "-f", conf})},
      {"ports", Json::array({{{"name", "shoaldbd"}, {"containerPort", spec.service.port}}})},
      {"readinessProbe", {{"tcpSocket", {{"port", spec.service.port}}}, {"periodSeconds", 5}}},
      {"volumeMounts", mounts},
      {"securityContext", RestrictedContainerSecurity()}};
  return RestrictedPod(cr, name + "-0", labels, std::move(container), std::move(volumes),
                       {{"hostname", name + "-0"}, {"initContainers", Json::array({init})}},
                       spec.tmpl);
}

Json AccountingService(const Json& cr, const AccountingSpec& spec) {
  std::string name = Str(cr, "metadata.name");
  return Service(cr, name, BaseLabels("shoal-accounting", name), spec.service, "shoaldbd",
                 spec.service.port);
}

Json AccountingConfigSecret(const Json& cr, const std::string& slurmdbd_conf) {
  std::string name = Str(cr, "metadata.name");
  Json s{{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata", OwnedMeta(cr, name + "-config", BaseLabels("shoal-accounting", name))},
         {"type", "Opaque"},
         {"data", {{"slurmdbd.conf", Base64Encode(slurmdbd_conf)}}}};
  StampSpecHash(&s);
  return s;
}

// ---- RestApi

Json RestApiPod(const Json& cr, const RestApiSpec& spec, const std::string& controller,
                const std::string& jwt_secret, const std::string& jwt_key, int index) {
  std::string name = Str(cr, "metadata.name");
  Json labels = BaseLabels("shoal-restapi", name);
  std::string conf = std::string(kConfDir) + "/slurm.conf";
  Json mounts = Json::array({{{"name", "config"}, {"mountPath", kConfDir}, {"readOnly", true}}});
  Json volumes =
      Json::array({{{"name", "config"}, {"configMap", {{"name", controller + "-config"}}}}});
  if (!jwt_secret.empty()) {
    mounts.push_back({{"name", "jwt-key"}, {"mountPath", kJwtKeyDir}, {"readOnly", true}});
    volumes.push_back(SecretVolume("jwt-key", jwt_secret, jwt_key, "jwt.key"));
  }
  Json container{{"name", "shoalrestd"},
                 {"image", spec.image},
                 {"imagePullPolicy", spec.pull_policy},
                 {"command", Json::array({"shoalrestd", "-f", conf, "0.0.0.0:6820"})},
                 {"env", Json::array({{{"name", "SLURM_CONF"}, {"value", conf}}})},
                 {"ports", Json::array({{{"name", "http"}, {"containerPort", 6820}}})},
                 {"readinessProbe", {{"tcpSocket", {{"port", 6820}}}, {"periodSeconds", 5}}},
                 {"volumeMounts", mounts},
                 {"securityContext", RestrictedContainerSecurity()}};
  return RestrictedPod(cr, name + "-" + std::to_string(index), labels, std::move(container),
                       std::move(volumes), Json::object(), spec.tmpl);
}

Json RestApiService(const Json& cr, const RestApiSpec& spec) {
  std::string name = Str(cr, "metadata.name");
  return Service(cr, name, BaseLabels("shoal-restapi", name), spec.service, "http", 6820);
}

// ---- Token

Json TokenSecret(const Json& cr, const TokenSpec& spec, const std::string& token) {
  std::string name = Str(cr, "metadata.name");
  Json s{{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata", OwnedMeta(cr, spec.secret_ref.name, BaseLabels("shoal-token", name))},
         {"type", "Opaque"},
         {"data", {{spec.secret_ref.key, Base64Encode(token)}}}};
  // Without refresh the token never changes: an immutable Secret, as Slinky does.
  if (!spec.refresh) s["immutable"] = true;
  StampSpecHash(&s);
  return s;
}

}  // namespace shoal::op
