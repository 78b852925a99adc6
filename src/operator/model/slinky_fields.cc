// Slinky fields every kind shares: containers, pod templates, Services, references, images.
#include "operator/model/slinky_fields.h"

#include <algorithm>
#include <set>

#include "operator/model/util.h"

namespace shoal::op::slinky {
namespace {

// PodSpec fields a shoal.dev template carries as they are (ApplyTemplate in desired.h).
const std::set<std::string> kPodFields = {
    "nodeSelector",       "tolerations",      "affinity",      "priorityClassName",
    "serviceAccountName", "imagePullSecrets", "schedulerName", "topologySpreadConstraints",
    "runtimeClassName",   "securityContext"};

// Container fields the operator sets itself, and why Slinky's cannot replace them.
std::string ContainerWhy(const std::string& key) {
  if (key == "args" || key == "command")
    return "arguments for Slurm's daemon; Shoal's daemons are configured from the resource";
  if (key == "ports" || key == "livenessProbe" || key == "readinessProbe" ||
      key == "startupProbe" || key == "lifecycle")
    return "the operator sets it for Shoal's daemon";
  return "not supported by Shoal's pods";
}

// Service fields that are the operator's (the pods it selects, the port it serves).
const std::set<std::string> kServiceOwned = {"selector", "ports", "clusterIP", "clusterIPs",
                                             "externalName"};

}  // namespace

bool Empty(const Json& value) {
  if (value.is_null()) return true;
  if (value.is_boolean()) return !value.get<bool>();
  if (value.is_string()) return value.get<std::string>().empty();
  if (value.is_array()) return value.empty();
  if (value.is_object()) {
    for (const Json& v : value) {
      if (!Empty(v)) return false;
    }
    return true;
  }
  return false;  // numbers always say something
}

SpecIn::SpecIn(const Json& cr, std::vector<SlinkyProblem>* problems)
    : cr_(cr), problems_(problems) {
  const Json* s = Find(cr, "spec");
  spec_ = s != nullptr && s->is_object() ? *s : Json::object();
}

const Json* SpecIn::Get(std::string_view path) const {
  const Json* v = Find(spec_, path);
  return v == nullptr || Empty(*v) ? nullptr : v;
}

std::string SpecIn::String(std::string_view path, const std::string& def) const {
  const Json* v = Get(path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : def;
}

bool SpecIn::Bool(std::string_view path, bool def) const {
  const Json* v = Find(spec_, path);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : def;
}

void SpecIn::Reject(std::string_view path, const std::string& why) {
  if (Get(path) != nullptr) Problem("spec." + std::string(path), why);
}

void SpecIn::Problem(const std::string& field, const std::string& why) {
  problems_->push_back({field, why});
}

std::string ShoalImage(const std::string& image, const std::string& component,
                       const SlinkyOptions& options) {
  std::string repo = image.substr(0, image.find('@'));
  size_t colon = repo.rfind(':');
  if (colon != std::string::npos && repo.find('/', colon) == std::string::npos) repo.resize(colon);
  std::string own = "shoal/" + component;
  if (repo == own || (repo.size() > own.size() &&
                      repo.compare(repo.size() - own.size() - 1, own.size() + 1, "/" + own) == 0))
    return image;
  std::string out = options.image_registry.empty() ? "" : options.image_registry + "/";
  return out + own + ":" + (options.image_tag.empty() ? "latest" : options.image_tag);
}

void MapContainer(SpecIn& in, const std::string& field, const std::string& component,
                  bool privileged, const SlinkyOptions& options, Json* out) {
  (*out)["image"] = ShoalImage(in.String(field + ".image"), component, options);
  const Json* c = in.Get(field);
  if (c == nullptr || !c->is_object()) return;
  Json& tspec = (*out)["template"]["spec"];
  for (auto it = c->begin(); it != c->end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    if (Empty(v) || key == "name" || key == "image") continue;
    std::string where = "spec." + field + "." + key;
    if (key == "imagePullPolicy" && v.is_string()) {
      (*out)["imagePullPolicy"] = v;
    } else if (key == "resources") {
      tspec["resources"] = v;  // the container's resources win over the pod's
    } else if (key == "env" && v.is_array()) {
      tspec["extraEnv"] = v;
    } else if (key == "volumeMounts" && v.is_array()) {
      tspec["extraVolumeMounts"] = v;
      if (!tspec.contains("extraVolumes")) tspec["extraVolumes"] = Json::array();
    } else if (key == "securityContext" && v.is_object() && v.size() == 1 &&
               v.contains("privileged") && v["privileged"] == Json(privileged)) {
      continue;  // what Shoal sets anyway
    } else if (key == "securityContext") {
      in.Problem(where, std::string("Shoal sets the container's security context itself (") +
                            (privileged ? "privileged workers" : "PodSecurity restricted") +
                            "); pod-level settings go in template.spec.securityContext");
    } else {
      in.Problem(where, ContainerWhy(key));
    }
  }
}

std::string MapTemplate(SpecIn& in, bool hostname_ok, Json* out) {
  Json& t = (*out)["template"];
  if (!t.is_object()) t = Json::object();
  for (const char* field : {"labels", "annotations"}) {
    if (const Json* m = in.Get(std::string("template.metadata.") + field); m && m->is_object())
      t["metadata"][field] = *m;
  }
  std::string hostname;
  const Json* spec = in.Get("template.spec");
  if (spec == nullptr || !spec->is_object()) return hostname;
  Json& ts = t["spec"];
  for (auto it = spec->begin(); it != spec->end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    if (Empty(v)) continue;
    if (kPodFields.count(key) != 0) {
      ts[key] = v;
    } else if (key == "resources") {
      if (!ts.contains("resources")) ts["resources"] = v;  // pod-level, on the one container
    } else if (key == "volumes" && v.is_array()) {
      ts["extraVolumes"] = v;
      if (!ts.contains("extraVolumeMounts")) ts["extraVolumeMounts"] = Json::array();
    } else if (key == "hostname" && hostname_ok && v.is_string()) {
      hostname = v.get<std::string>();
    } else if (key == "hostname") {
      in.Problem("spec.template.spec.hostname", "the operator names these pods");
    } else if (key == "containers" || key == "initContainers") {
      in.Problem("spec.template.spec." + key,
                 "Shoal's pods run only their own containers (no sidecars or init containers)");
    } else {
      in.Problem("spec.template.spec." + key, "not supported by Shoal's pod templates");
    }
  }
  return hostname;
}

void MapService(SpecIn& in, bool port_is_spec_port, Json* out, Json* extras) {
  std::string type = in.String("service.spec.type");
  if (!type.empty()) {
    if (type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer")
      in.Problem("spec.service.spec.type", "Shoal serves ClusterIP, NodePort or LoadBalancer");
    else
      (*out)["service"]["type"] = type;
  }
  if (const Json* port = in.Get("service.port"); port != nullptr && port->is_number_integer()) {
    if (port->get<int64_t>() != 0) {
      if (port_is_spec_port)
        (*out)["port"] = *port;
      else
        (*out)["service"]["port"] = *port;
    }
  }
  Json extra = Json::object();
  if (const Json* np = in.Get("service.nodePort"); np && np->is_number_integer() && *np != 0)
    extra["nodePort"] = *np;
  if (const Json* m = in.Get("service.metadata"); m != nullptr && m->is_object())
    extra["metadata"] = *m;
  if (const Json* s = in.Get("service.spec"); s != nullptr && s->is_object()) {
    for (auto it = s->begin(); it != s->end(); ++it) {
      if (Empty(it.value()) || it.key() == "type") continue;
      if (kServiceOwned.count(it.key()) != 0)
        in.Problem("spec.service.spec." + it.key(), "the operator sets it");
      else
        extra["spec"][it.key()] = it.value();
    }
  }
  if (!extra.empty()) (*extras)["service"] = extra;
}

Json KeyRef(const Json* selector) {
  if (selector == nullptr || !selector->is_object()) return nullptr;
  std::string name = Str(*selector, "name");
  if (name.empty()) return nullptr;
  Json ref{{"name", name}};
  std::string key = Str(*selector, "key");
  if (!key.empty()) ref["key"] = key;
  return ref;
}

std::string SlurmNodeSetName(const Json& nodeset) {
  std::string hostname = Str(nodeset, "spec.template.spec.hostname");
  size_t start = hostname.find_first_not_of(" \t");
  if (start == std::string::npos) return Str(nodeset, "metadata.name");
  hostname = hostname.substr(start, hostname.find_first_of(" \t", start) - start);
  size_t a = hostname.find_first_not_of('-');
  size_t b = hostname.find_last_not_of('-');
  if (a == std::string::npos) return Str(nodeset, "metadata.name");
  return hostname.substr(a, b - a + 1);
}

}  // namespace shoal::op::slinky
