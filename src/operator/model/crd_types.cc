#include "operator/model/crd_types.h"

#include <cstdlib>

#include "operator/model/util.h"

namespace shoal::op {
namespace {

// Reads typed fields of `spec`, remembering the first error (named "spec.<path>: ...").
class SpecReader {
 public:
  explicit SpecReader(const Json& cr) : cr_(cr) {
    const Json* s = Find(cr, "spec");
    spec_ = s != nullptr && s->is_object() ? *s : Json::object();
    if (s != nullptr && !s->is_object() && !s->is_null()) Fail("spec", "must be an object");
  }
  const Json& spec() const { return spec_; }
  std::string ns() const { return Str(cr_, "metadata.namespace", "default"); }

  void Fail(const std::string& field, const std::string& what) {
    if (error_.empty()) error_ = field + ": " + what;
  }
  const Json* Get(const std::string& path) {
    const Json* v = Find(spec_, path);
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  void String(const std::string& path, std::string* out, bool required = false) {
    const Json* v = Get(path);
    if (v == nullptr) {
      if (required) Fail("spec." + path, "required");
      return;
    }
    if (!v->is_string()) return Fail("spec." + path, "must be a string");
    *out = v->get<std::string>();
    if (required && out->empty()) Fail("spec." + path, "must not be empty");
  }
  void Int(const std::string& path, int* out, int min, int max) {
    const Json* v = Get(path);
    if (v == nullptr) return;
    if (!v->is_number_integer()) return Fail("spec." + path, "must be an integer");
    int64_t n = v->get<int64_t>();
    if (n < min) return Fail("spec." + path, "must be >= " + std::to_string(min));
    if (n > max) return Fail("spec." + path, "must be <= " + std::to_string(max));
    *out = static_cast<int>(n);
  }
  void Bool(const std::string& path, bool* out) {
    const Json* v = Get(path);
    if (v == nullptr) return;
    if (!v->is_boolean()) return Fail("spec." + path, "must be a boolean");
    *out = v->get<bool>();
  }
  void Strings(const std::string& path, std::vector<std::string>* out) {
    const Json* v = Get(path);
    if (v == nullptr) return;
    if (!v->is_array()) return Fail("spec." + path, "must be a list of strings");
    for (const Json& e : *v) {
      if (!e.is_string()) return Fail("spec." + path, "must be a list of strings");
      out->push_back(e.get<std::string>());
    }
  }
  // [{name}] lists of ConfigMap references.
  void NameList(const std::string& path, std::vector<std::string>* out) {
    const Json* v = Get(path);
    if (v == nullptr) return;
    if (!v->is_array()) return Fail("spec." + path, "must be a list of {name}");
    for (const Json& e : *v) {
      if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
          e["name"].get<std::string>().empty())
        return Fail("spec." + path, "every entry needs a name");
      out->push_back(e["name"].get<std::string>());
    }
  }
  void Key(const std::string& path, KeyRef* out, bool required = false) {
    const Json* v = Get(path);
    if (v == nullptr) {
      if (required) Fail("spec." + path, "required");
      return;
    }
    if (!v->is_object()) return Fail("spec." + path, "must be an object {name, key}");
    String(path + ".name", &out->name, true);
    String(path + ".key", &out->key);
  }
  void Ref(const std::string& path, ObjRef* out) {
    const Json* v = Get(path);
    if (v == nullptr) return Fail("spec." + path, "required");
    if (!v->is_object()) return Fail("spec." + path, "must be an object {name, namespace}");
    String(path + ".name", &out->name, true);
    out->ns = ns();
    String(path + ".namespace", &out->ns);
  }
  void Template(Json* out) {
    const Json* v = Get("template");
    if (v == nullptr) return;
    if (!v->is_object()) return Fail("spec.template", "must be an object");
    *out = *v;
  }
  void Service(ServiceSpec* out) {
    const Json* v = Get("service");
    if (v == nullptr) return;
    if (!v->is_object()) return Fail("spec.service", "must be an object");
    String("service.type", &out->type);
    if (out->type != "ClusterIP" && out->type != "NodePort" && out->type != "LoadBalancer")
      Fail("spec.service.type", "must be ClusterIP, NodePort or LoadBalancer");
    Int("service.port", &out->port, 1, 65535);
  }
  void Image(std::string* image, std::string* policy) {
    String("image", image);
    String("imagePullPolicy", policy);
    if (*policy != "Always" && *policy != "IfNotPresent" && *policy != "Never")
      Fail("spec.imagePullPolicy", "must be Always, IfNotPresent or Never");
  }
  Status Done() const { return error_.empty() ? Status::Ok() : InvalidArgument(error_); }

 private:
  const Json& cr_;
  Json spec_;
  std::string error_;
};

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 40) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

}  // namespace

Result<ControllerSpec> ParseControllerSpec(const Json& cr) {
  SpecReader r(cr);
  ControllerSpec s;
  r.String("clusterName", &s.cluster_name, true);
  if (!s.cluster_name.empty() && !ValidName(s.cluster_name))
    r.Fail("spec.clusterName", "must be lower-case letters, digits and '-' (at most 40)");
  r.Image(&s.image, &s.pull_policy);
  r.Int("port", &s.port, 1, 65535);
  s.service.port = s.port;
  r.Key("slurmKeyRef", &s.slurm_key_ref);
  r.Key("jwtKeyRef", &s.jwt_key_ref);
  r.String("accountingRef.name", &s.accounting_ref);
  r.String("extraConf", &s.extra_conf);
  r.NameList("configFileRefs", &s.config_file_refs);
  r.NameList("prologScriptRefs", &s.prolog_refs);
  r.NameList("epilogScriptRefs", &s.epilog_refs);
  r.Bool("persistence.enabled", &s.persistence);
  r.String("persistence.existingClaim", &s.existing_claim);
  r.String("persistence.storageClassName", &s.storage_class);
  r.String("persistence.size", &s.storage_size);
  r.Bool("metrics.enabled", &s.metrics);
  r.Bool("metrics.serviceMonitor.enabled", &s.service_monitor);
  r.Bool("ha.enabled", &s.ha);
  r.Int("ha.replicas", &s.ha_replicas, 2, 3);
  r.Template(&s.tmpl);
  r.Service(&s.service);
  if (r.Get("topology") != nullptr) {
    r.String("topology.plugin", &s.topology.plugin, true);
    if (!s.topology.plugin.empty() && s.topology.plugin != "topology/tree" &&
        s.topology.plugin != "topology/block")
      r.Fail("spec.topology.plugin", "must be topology/tree or topology/block");
    r.String("topology.static", &s.topology.static_conf);
    r.String("topology.nodeAnnotation", &s.topology.node_annotation);
    if (s.topology.node_annotation.empty()) s.topology.node_annotation = kAnnotTopologyLine;
    r.String("topology.nodeLabel", &s.topology.node_label);
  }
  if (Status st = r.Done(); !st.ok()) return st;
  return s;
}

Result<NodeSetSpec> ParseNodeSetSpec(const Json& cr) {
  SpecReader r(cr);
  NodeSetSpec s;
  r.Ref("controllerRef", &s.controller_ref);
  r.Int("replicas", &s.replicas, 0, 100000);
  std::string mode = "StatefulSet";
  r.String("scalingMode", &mode);
  if (mode != "StatefulSet" && mode != "DaemonSet")
    r.Fail("spec.scalingMode", "must be StatefulSet or DaemonSet");
  s.daemonset = mode == "DaemonSet";
  r.Image(&s.image, &s.pull_policy);
  r.Template(&s.tmpl);
  r.Bool("partition.enabled", &s.partition);
  r.String("partition.config", &s.partition_config);
  r.Strings("features", &s.features);
  for (const std::string& f : s.features) {
    if (f.empty() || f.find_first_of(" ,=&|\"") != std::string::npos)
      r.Fail("spec.features", "invalid feature '" + f + "'");
  }
  r.String("gres", &s.gres);
  r.Int("weight", &s.weight, 0, 65533);
  std::string type = "RollingUpdate";
  r.String("updateStrategy.type", &type);
  if (type == "RollingUpdate") {
    s.update = UpdateType::kRollingUpdate;
  } else if (type == "OnDelete") {
    s.update = UpdateType::kOnDelete;
  } else if (type == "ScheduledUpdate") {
    s.update = UpdateType::kScheduledUpdate;
  } else {
    r.Fail("spec.updateStrategy.type", "must be RollingUpdate, OnDelete or ScheduledUpdate");
  }
  if (const Json* mu = r.Get("updateStrategy.rollingUpdate.maxUnavailable")) {
    bool ok =
        (mu->is_number_integer() && mu->get<int64_t>() >= 1) ||
        (mu->is_string() && !mu->get<std::string>().empty() &&
         mu->get<std::string>().back() == '%' && std::atoi(mu->get<std::string>().c_str()) >= 1 &&
         std::atoi(mu->get<std::string>().c_str()) <= 100);
    if (!ok)
      r.Fail("spec.updateStrategy.rollingUpdate.maxUnavailable",
             "must be an integer >= 1 or a percentage (\"25%\")");
    else
      s.max_unavailable = *mu;
  }
  std::string start, duration = "30m";
  r.String("updateStrategy.scheduledUpdate.startTime", &start);
  r.String("updateStrategy.scheduledUpdate.duration", &duration);
  if (!start.empty()) {
    auto t = ParseRfc3339(start);
    if (!t)
      r.Fail("spec.updateStrategy.scheduledUpdate.startTime", "must be RFC 3339");
    else
      s.scheduled_start = *t;
  } else if (s.update == UpdateType::kScheduledUpdate) {
    r.Fail("spec.updateStrategy.scheduledUpdate.startTime", "required for ScheduledUpdate");
  }
  auto d = ParseDuration(duration);
  if (!d || *d <= 0)
    r.Fail("spec.updateStrategy.scheduledUpdate.duration", "invalid duration");
  else
    s.scheduled_duration = *d;
  if (const Json* v = r.Get("volumeClaimTemplates")) {
    if (!v->is_array())
      r.Fail("spec.volumeClaimTemplates", "must be a list");
    else
      s.volume_claim_templates = *v;
  }
  r.String("persistentVolumeClaimRetentionPolicy.whenDeleted", &s.pvc_when_deleted);
  r.String("persistentVolumeClaimRetentionPolicy.whenScaled", &s.pvc_when_scaled);
  for (const std::string* p : {&s.pvc_when_deleted, &s.pvc_when_scaled}) {
    if (*p != "Retain" && *p != "Delete")
      r.Fail("spec.persistentVolumeClaimRetentionPolicy", "must be Retain or Delete");
  }
  r.Bool("workloadDisruptionProtection", &s.protect);
  r.Int("minReadySeconds", &s.min_ready_seconds, 0, 86400);
  r.Int("registrationTimeoutSeconds", &s.registration_timeout, 10, 86400);
  r.Strings("propagateNodeConditions", &s.propagate_conditions);
  std::string prune = "Never";
  r.String("pruneNodeRecords", &prune);
  if (prune != "Never" && prune != "NodeNotFound")
    r.Fail("spec.pruneNodeRecords", "must be Never or NodeNotFound");
  s.prune_not_found = prune == "NodeNotFound";
  if (Status st = r.Done(); !st.ok()) return st;
  return s;
}

Result<LoginSetSpec> ParseLoginSetSpec(const Json& cr) {
  SpecReader r(cr);
  LoginSetSpec s;
  r.Ref("controllerRef", &s.controller_ref);
  r.Int("replicas", &s.replicas, 0, 1000);
  r.Image(&s.image, &s.pull_policy);
  r.Template(&s.tmpl);
  r.Key("sssdConfRef", &s.sssd_conf_ref);
  r.String("extraSshdConfig", &s.extra_sshd_config);
  r.String("rootSshAuthorizedKeys", &s.root_ssh_authorized_keys);
  r.Service(&s.service);
  if (Status st = r.Done(); !st.ok()) return st;
  return s;
}

Result<AccountingSpec> ParseAccountingSpec(const Json& cr) {
  SpecReader r(cr);
  AccountingSpec s;
  r.Image(&s.image, &s.pull_policy);
  r.Key("slurmKeyRef", &s.slurm_key_ref);
  r.Key("jwtKeyRef", &s.jwt_key_ref);
  if (r.Get("storageConfig") == nullptr) r.Fail("spec.storageConfig", "required");
  r.String("storageConfig.host", &s.storage_host, true);
  r.Int("storageConfig.port", &s.storage_port, 1, 65535);
  r.String("storageConfig.database", &s.database);
  r.String("storageConfig.username", &s.username, true);
  r.Key("storageConfig.passwordKeyRef", &s.password_ref, true);
  r.String("extraConf", &s.extra_conf);
  r.Template(&s.tmpl);
  r.Service(&s.service);
  if (Status st = r.Done(); !st.ok()) return st;
  return s;
}

Result<RestApiSpec> ParseRestApiSpec(const Json& cr) {
  SpecReader r(cr);
  RestApiSpec s;
  r.Ref("controllerRef", &s.controller_ref);
  r.Int("replicas", &s.replicas, 0, 100);
  r.Image(&s.image, &s.pull_policy);
  r.Template(&s.tmpl);
  r.Service(&s.service);
  if (Status st = r.Done(); !st.ok()) return st;
  return s;
}

Result<TokenSpec> ParseTokenSpec(const Json& cr) {
  SpecReader r(cr);
  TokenSpec s;
  r.Key("jwtKeyRef", &s.jwt_key_ref, true);
  r.String("username", &s.username, true);
  std::string lifetime = "15m";
  r.String("lifetime", &lifetime);
  auto d = ParseDuration(lifetime);
  if (!d || *d < 60)
    r.Fail("spec.lifetime", "must be a duration of at least 1m");
  else
    s.lifetime = *d;
  r.Bool("refresh", &s.refresh);
  s.secret_ref.name = Str(cr, "metadata.name");
  if (r.Get("secretRef") != nullptr) {
    r.String("secretRef.name", &s.secret_ref.name);
    r.String("secretRef.key", &s.secret_ref.key);
  }
  if (Status st = r.Done(); !st.ok()) return st;
  return s;
}

int ResolveMaxUnavailable(const Json& value, int replicas) {
  int n = 1;
  if (value.is_number_integer()) {
    n = static_cast<int>(value.get<int64_t>());
  } else if (value.is_string()) {
    int pct = std::atoi(value.get<std::string>().c_str());
    n = replicas * pct / 100;
  }
  return n < 1 ? 1 : n;
}

}  // namespace shoal::op
