// TranslateSlinky: each Slinky kind's spec in the shoal.dev shape, field by field; the table of
// what happens to every field is docs/kubernetes-slinky.md.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "operator/model/slinky.h"
#include "operator/model/slinky_fields.h"
#include "operator/model/slurm_conf_gen.h"  // kConfDir
#include "operator/model/util.h"

namespace shoal::op {
namespace {

using slinky::KeyRef;
using slinky::SpecIn;

const char* const kUnsupported = "not supported by Shoal";

// A Slurm NodeSet, partition and feature name at once.
bool ValidSlurmName(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

void Ref(SpecIn& in, const char* from, const char* to, Json* out) {
  if (Json ref = KeyRef(in.Get(from)); !ref.is_null()) (*out)[to] = ref;
}

// jwtKeyRef, or the deprecated jwtHs256KeyRef.
void JwtRef(SpecIn& in, Json* out) {
  Json ref = KeyRef(in.Get("jwtKeyRef"));
  if (ref.is_null()) ref = KeyRef(in.Get("jwtHs256KeyRef"));
  if (!ref.is_null()) (*out)["jwtKeyRef"] = ref;
}

void CopyIf(SpecIn& in, const char* from, const char* to, Json* out) {
  const Json* v = in.Get(from);
  if (v == nullptr) return;
  Json* target = out;
  std::string path = to;
  for (size_t dot; (dot = path.find('.')) != std::string::npos; path.erase(0, dot + 1))
    target = &(*target)[path.substr(0, dot)];
  (*target)[path] = *v;
}

// [{name}] lists, without the entries Slinky's chart leaves nameless.
Json Names(SpecIn& in, const char* field) {
  Json out = Json::array();
  if (const Json* refs = in.Get(field); refs != nullptr && refs->is_array()) {
    for (const Json& r : *refs) {
      std::string name = Str(r, "name");
      if (!name.empty()) out.push_back({{"name", name}});
    }
  }
  return out;
}

// Slinky's default ClusterName is "<namespace>_<name>"; Shoal's names take no '_'.
std::string DefaultClusterName(const Json& cr) {
  std::string s = Str(cr, "metadata.namespace", "default") + "-" + Str(cr, "metadata.name");
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  }
  if (s.size() > 40) s.resize(40);
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s;
}

// The slurm.conf lines a Controller's Slinky NodeSets need beyond what Shoal generates: their
// Slurm name (template.spec.hostname) and their partition, named after it, without Shoal's
// implicit Default=YES (Slinky gives none).
std::string NodeSetLines(const Json& related) {
  const Json* sets = Find(related, "NodeSets");
  if (sets == nullptr || !sets->is_array()) return "";
  std::map<std::string, const Json*> by_name;  // sorted, one per Slurm name
  for (const Json& s : *sets) {
    if (!IsSlinky(s) || PodTerminating(s)) continue;
    by_name.emplace(slinky::SlurmNodeSetName(s), &s);
  }
  std::string lines;
  for (const auto& [slurm_name, s] : by_name) {
    if (slurm_name != Str(*s, "metadata.name"))
      lines += "NodeSet=" + slurm_name + " Feature=" + slurm_name + "\n";
    if (Bool(*s, "spec.partition.enabled", false)) {
      lines += "PartitionName=" + slurm_name + " Nodes=" + slurm_name;
      std::string config = Str(*s, "spec.partition.config");
      if (!config.empty()) lines += " " + config;
      lines += "\n";
    }
  }
  return lines;
}

// PrologSlurmctld/EpilogSlurmctld: the ConfigMaps join the configuration directory and each of
// their keys becomes a line, as Slinky mounts them in /etc/slurm.
std::string ControllerScriptLines(SpecIn& in, const Json& related, Json* config_refs) {
  std::string lines;
  for (auto [field, option] : {std::pair{"prologSlurmctldScriptRefs", "PrologSlurmctld"},
                               std::pair{"epilogSlurmctldScriptRefs", "EpilogSlurmctld"}}) {
    for (const Json& ref : Names(in, field)) {
      std::string name = ref["name"];
      config_refs->push_back(ref);
      // Looked up directly: the key "ConfigMap/<name>" may contain dots.
      const Json* data = nullptr;
      if (related.is_object()) {
        if (auto cm = related.find("ConfigMap/" + name); cm != related.end())
          data = Find(*cm, "data");
      }
      if (data == nullptr || !data->is_object()) continue;  // the planner waits for it
      for (auto k = data->begin(); k != data->end(); ++k)
        lines += std::string(option) + "=" + kConfDir + "/" + k.key() + "\n";
    }
  }
  return lines;
}

void TranslatePersistence(SpecIn& in, Json* out, Json* extras) {
  Json& p = (*out)["persistence"];
  p["enabled"] = in.Bool("persistence.enabled", true);
  CopyIf(in, "persistence.existingClaim", "existingClaim", &p);
  CopyIf(in, "persistence.storageClassName", "storageClassName", &p);
  if (const Json* size = in.Get("persistence.resources.requests.storage")) {
    p["size"] = size->is_string() ? size->get<std::string>() : size->dump();
  }
  // The rest of the claim's spec is merged onto the claim the operator makes.
  Json claim = Json::object();
  for (const char* f : {"accessModes", "dataSource", "dataSourceRef", "selector", "volumeMode",
                        "volumeName", "volumeAttributesClassName"}) {
    if (const Json* v = in.Get(std::string("persistence.") + f)) claim[f] = *v;
  }
  if (const Json* limits = in.Get("persistence.resources.limits"))
    claim["resources"]["limits"] = *limits;
  if (!claim.empty()) (*extras)["stateClaim"] = claim;
}

void TranslateMetrics(SpecIn& in, Json* out, Json* extras) {
  if (!in.Bool("metrics.enabled", false)) return;
  (*out)["metrics"]["enabled"] = true;
  if (!in.Bool("metrics.serviceMonitor.enabled", false)) return;
  (*out)["metrics"]["serviceMonitor"]["enabled"] = true;
  Json sm = Json::object();
  for (const char* f : {"labels", "annotations", "interval", "scrapeTimeout", "endpoints"}) {
    if (const Json* v = in.Get(std::string("metrics.serviceMonitor.") + f)) sm[f] = *v;
  }
  if (!sm.empty()) (*extras)["serviceMonitor"] = sm;
}

void TranslateController(SpecIn& in, const Json& related, const SlinkyOptions& opts,
                         SlinkyTranslation* t) {
  Json& s = t->cr["spec"];
  const Json& cr = in.cr();
  if (in.Bool("external", false))
    in.Problem("spec.external",
               "a slurmctld outside Kubernetes cannot be run by Shoal, which runs its own "
               "controller: remove external and externalConfig");
  in.Reject("jwksKeyRef",
            "JWKS is not supported by Shoal: tokens are HS256, signed with "
            "jwtKeyRef");
  s["clusterName"] = in.String("clusterName", DefaultClusterName(cr));
  Ref(in, "slurmKeyRef", "slurmKeyRef", &s);
  JwtRef(in, &s);
  if (std::string acct = in.String("accountingRef.name"); !acct.empty())
    s["accountingRef"] = {{"name", acct}};
  if (in.Bool("ha.enabled", false)) {
    const Json* backups = in.Get("ha.backups");
    int64_t n = backups != nullptr && backups->is_number_integer() ? backups->get<int64_t>() : 1;
    if (n > 2) in.Problem("spec.ha.backups", "Shoal runs at most 2 backup controllers");
    s["ha"] = {{"enabled", true}, {"replicas", n + 1}};
  }
  slinky::MapTemplate(in, false, &s);
  slinky::MapContainer(in, "slurmctld", "controller", false, opts, &s);
  // inplaceReconfigure, reconfigure, logfile: Shoal reconfigures in place, without a sidecar,
  // and logs to the container's output.
  Json config_refs = Names(in, "configFileRefs");
  std::string scripts = ControllerScriptLines(in, related, &config_refs);
  if (!config_refs.empty()) s["configFileRefs"] = config_refs;
  for (const char* f : {"prologScriptRefs", "epilogScriptRefs"}) {
    if (Json refs = Names(in, f); !refs.empty()) s[f] = refs;
  }
  std::string extra = NodeSetLines(related) + scripts;
  std::string own = in.String("extraConf");
  if (!own.empty()) extra += own;
  if (!extra.empty()) s["extraConf"] = extra;
  TranslatePersistence(in, &s, &t->extras);
  slinky::MapService(in, true, &s, &t->extras);
  TranslateMetrics(in, &s, &t->extras);
}

// NodeSet extraConf ("Features=a,b Gres=gpu:1 Weight=5", keys case-insensitive).
void TranslateNodeConf(SpecIn& in, Json* s) {
  std::string text = in.String("extraConf");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \t\n", pos);
    if (start == std::string::npos) break;
    size_t end = text.find_first_of(" \t\n", start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    pos = end;
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      in.Problem("spec.extraConf", "'" + item + "' is not Key=Value");
      continue;
    }
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    std::string lower = key;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "feature" || lower == "features") {
      for (size_t p = 0; p <= value.size();) {
        size_t comma = value.find(',', p);
        if (comma == std::string::npos) comma = value.size();
        if (comma > p) (*s)["features"].push_back(value.substr(p, comma - p));
        p = comma + 1;
      }
    } else if (lower == "gres") {
      (*s)["gres"] = value;
    } else if (lower == "weight") {
      char* rest = nullptr;
      long long w = std::strtoll(value.c_str(), &rest, 10);
      if (value.empty() || *rest != '\0')
        in.Problem("spec.extraConf", "Weight=" + value + " is not a number");
      else
        (*s)["weight"] = w;
    } else {
      in.Problem("spec.extraConf", key +
                                       "= is not supported by Shoal's workers, which take "
                                       "Features, Gres and Weight (shoald finds CPUs and "
                                       "memory itself)");
    }
  }
}

// Slinky keeps workers of all NodeSets on distinct Kubernetes nodes unless oversubscribeNode.
void AddWorkerAntiAffinity(Json* tmpl_spec) {
  Json term{{"topologyKey", "kubernetes.io/hostname"},
            {"labelSelector",
             {{"matchExpressions", Json::array({{{"key", kLabelName},
                                                 {"operator", "In"},
                                                 {"values", Json::array({"shoal-worker"})}}})}}}};
  Json& required =
      (*tmpl_spec)["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!required.is_array()) required = Json::array();
  required.push_back(term);
}

void TranslateNodeSet(SpecIn& in, const SlinkyOptions& opts, SlinkyTranslation* t) {
  Json& s = t->cr["spec"];
  s["controllerRef"] = {{"name", in.String("controllerRef.name")}};
  const Json* replicas = Find(in.cr(), "spec.replicas");
  s["replicas"] = replicas != nullptr && replicas->is_number_integer() ? *replicas : Json(1);
  CopyIf(in, "scalingMode", "scalingMode", &s);
  std::string hostname = slinky::MapTemplate(in, true, &s);
  if (!hostname.empty() && !ValidSlurmName(slinky::SlurmNodeSetName(in.cr())))
    in.Problem("spec.template.spec.hostname",
               "'" + hostname + "' does not give a valid Slurm NodeSet name");
  slinky::MapContainer(in, "slurmd", "worker", true, opts, &s);
  if (in.Bool("ssh.enabled", false))
    in.Problem("spec.ssh.enabled", "Shoal's workers run no sshd: log in through a LoginSet");
  TranslateNodeConf(in, &s);
  // The worker's feature is its Slurm NodeSet name; the Controller writes the NodeSet and
  // partition lines under that name (NodeSetLines), so Shoal makes no partition of its own.
  std::string slurm_name = slinky::SlurmNodeSetName(in.cr());
  if (slurm_name != Str(in.cr(), "metadata.name")) s["features"].push_back(slurm_name);
  s["partition"] = {{"enabled", false}};
  CopyIf(in, "volumeClaimTemplates", "volumeClaimTemplates", &s);
  CopyIf(in, "updateStrategy.type", "updateStrategy.type", &s);
  CopyIf(in, "updateStrategy.rollingUpdate.maxUnavailable",
         "updateStrategy.rollingUpdate.maxUnavailable", &s);
  CopyIf(in, "updateStrategy.scheduledUpdate.startTime", "updateStrategy.scheduledUpdate.startTime",
         &s);
  CopyIf(in, "updateStrategy.scheduledUpdate.duration", "updateStrategy.scheduledUpdate.duration",
         &s);
  in.Reject("updateStrategy.scheduledUpdate.flags",
            "extra reservation flags are not supported by Shoal's MAINT reservation");
  // revisionHistoryLimit: Shoal keeps no ControllerRevisions.
  CopyIf(in, "persistentVolumeClaimRetentionPolicy", "persistentVolumeClaimRetentionPolicy", &s);
  CopyIf(in, "minReadySeconds", "minReadySeconds", &s);
  if (const Json* pad = in.Get("ordinalPadding"); pad != nullptr && *pad != 0)
    in.Problem("spec.ordinalPadding", std::string(kUnsupported) + ": workers are <nodeset>-<n>");
  if (in.Bool("pinToNode", false))
    in.Problem("spec.pinToNode",
               std::string(kUnsupported) + ": pin workers with template.spec.affinity instead");
  s["workloadDisruptionProtection"] = in.Bool("workloadDisruptionProtection", true);
  CopyIf(in, "pruneSlurmNodeRecords", "pruneNodeRecords", &s);
  if (!in.Bool("oversubscribeNode", false)) AddWorkerAntiAffinity(&s["template"]["spec"]);
}

void TranslateLoginSet(SpecIn& in, const SlinkyOptions& opts, SlinkyTranslation* t) {
  Json& s = t->cr["spec"];
  s["controllerRef"] = {{"name", in.String("controllerRef.name")}};
  CopyIf(in, "replicas", "replicas", &s);
  slinky::MapTemplate(in, false, &s);
  slinky::MapContainer(in, "login", "login", false, opts, &s);
  // initconf: Shoal's login pods take their configuration from the controller (shoalsackd).
  Ref(in, "sssdConfRef", "sssdConfRef", &s);
  CopyIf(in, "extraSshdConfig", "extraSshdConfig", &s);
  CopyIf(in, "rootSshAuthorizedKeys", "rootSshAuthorizedKeys", &s);
  std::string strategy = in.String("strategy.type", "RollingUpdate");
  if (strategy != "RollingUpdate")
    in.Problem("spec.strategy.type",
               strategy + " is not supported by Shoal, which replaces login pods one at a time");
  slinky::MapService(in, false, &s, &t->extras);
}

void TranslateAccounting(SpecIn& in, const SlinkyOptions& opts, SlinkyTranslation* t) {
  Json& s = t->cr["spec"];
  if (in.Bool("external", false))
    in.Problem("spec.external",
               "a slurmdbd outside Kubernetes is not supported by Shoal: set "
               "AccountingStorageHost in the Controller's extraConf instead");
  in.Reject("jwksKeyRef",
            "JWKS is not supported by Shoal: tokens are HS256, signed with "
            "jwtKeyRef");
  Ref(in, "slurmKeyRef", "slurmKeyRef", &s);
  JwtRef(in, &s);
  slinky::MapTemplate(in, false, &s);
  slinky::MapContainer(in, "slurmdbd", "accounting", false, opts, &s);
  Json& sc = s["storageConfig"];
  sc = Json::object();
  CopyIf(in, "storageConfig.host", "host", &sc);
  CopyIf(in, "storageConfig.port", "port", &sc);
  CopyIf(in, "storageConfig.database", "database", &sc);
  CopyIf(in, "storageConfig.username", "username", &sc);
  Ref(in, "storageConfig.passwordKeyRef", "passwordKeyRef", &sc);
  if (!in.Bool("external", false) && in.String("storageConfig.username").empty())
    in.Problem("spec.storageConfig.username", "Shoal needs the database user (StorageUser)");
  CopyIf(in, "extraConf", "extraConf", &s);
  slinky::MapService(in, false, &s, &t->extras);
}

void TranslateRestApi(SpecIn& in, const SlinkyOptions& opts, SlinkyTranslation* t) {
  Json& s = t->cr["spec"];
  s["controllerRef"] = {{"name", in.String("controllerRef.name")}};
  CopyIf(in, "replicas", "replicas", &s);
  slinky::MapTemplate(in, false, &s);
  slinky::MapContainer(in, "slurmrestd", "restapi", false, opts, &s);
  slinky::MapService(in, false, &s, &t->extras);
}

void TranslateToken(SpecIn& in, SlinkyTranslation* t) {
  Json& s = t->cr["spec"];
  JwtRef(in, &s);
  std::string user = in.String("username", "nobody");
  s["username"] = user;
  CopyIf(in, "lifetime", "lifetime", &s);
  s["refresh"] = in.Bool("refresh", true);
  // Slinky's Secret: <token>-jwt-<username>, key SLURM_JWT, unless secretRef says otherwise.
  Json ref = KeyRef(in.Get("secretRef"));
  if (ref.is_null()) ref = {{"name", Str(in.cr(), "metadata.name") + "-jwt-" + user}};
  if (!ref.contains("key")) ref["key"] = "SLURM_JWT";
  s["secretRef"] = ref;
}

}  // namespace

SlinkyTranslation TranslateSlinky(const Json& cr, const Json& related,
                                  const SlinkyOptions& options) {
  SlinkyTranslation t;
  t.cr = Json{{"apiVersion", Str(cr, "apiVersion", kSlinkyGroupVersion)},
              {"kind", Str(cr, "kind")},
              {"metadata", cr.value("metadata", Json::object())},
              {"spec", Json::object()},
              {"status", ShoalStatusOf(cr)}};
  SpecIn in(cr, &t.problems);
  std::string kind = BaseKind(Str(cr, "kind"));
  if (kind == "Controller") {
    TranslateController(in, related, options, &t);
  } else if (kind == "NodeSet") {
    TranslateNodeSet(in, options, &t);
  } else if (kind == "LoginSet") {
    TranslateLoginSet(in, options, &t);
  } else if (kind == "Accounting") {
    TranslateAccounting(in, options, &t);
  } else if (kind == "RestApi") {
    TranslateRestApi(in, options, &t);
  } else if (kind == "Token") {
    TranslateToken(in, &t);
  } else {
    t.problems.push_back({"kind", "'" + kind + "' is not a Slinky kind Shoal serves"});
  }
  return t;
}

}  // namespace shoal::op
