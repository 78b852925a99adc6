// Internal to the Slinky translation (slinky.h): reading a Slinky spec field by field, and the
// pieces every kind shares (containers, pod templates, Services, key references, images).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "operator/model/slinky.h"

namespace shoal::op::slinky {

// Whether a value says nothing: null, false, "", [], or an object of such values. Slinky's chart
// writes many of these (`args: []`, `resources: {}`, `ssh: {enabled: false}`); they are unset.
bool Empty(const Json& value);

// The spec of a Slinky resource, read field by field; problems go to `problems`.
class SpecIn {
 public:
  SpecIn(const Json& cr, std::vector<SlinkyProblem>* problems);
  const Json& cr() const { return cr_; }
  // The value at `path` (dot-separated, under spec) unless it is Empty(); else nullptr.
  const Json* Get(std::string_view path) const;
  std::string String(std::string_view path, const std::string& def = "") const;
  bool Bool(std::string_view path, bool def) const;
  // A problem for spec.<path> when it is set (not Empty()).
  void Reject(std::string_view path, const std::string& why);
  // A problem for `field` (a full path such as "spec.extraConf").
  void Problem(const std::string& field, const std::string& why);

 private:
  const Json& cr_;
  Json spec_;
  std::vector<SlinkyProblem>* problems_;
};

// The Shoal image for a Slinky container image of `component` (controller, worker, login,
// accounting, restapi): see SlinkyOptions.
std::string ShoalImage(const std::string& image, const std::string& component,
                       const SlinkyOptions& options);

// spec.<field>, a core/v1 Container, into the shoal.dev spec `out`: image, imagePullPolicy, and
// template.spec resources, extraEnv and extraVolumeMounts. Shoal sets the container's
// securityContext itself; one that only says privileged: `privileged` is accepted.
void MapContainer(SpecIn& in, const std::string& field, const std::string& component,
                  bool privileged, const SlinkyOptions& options, Json* out);

// spec.template into out["template"] (metadata, and the PodSpec fields Shoal's templates take).
// Returns template.spec.hostname, which only a NodeSet may set (`hostname_ok`).
std::string MapTemplate(SpecIn& in, bool hostname_ok, Json* out);

// spec.service into out["service"] {type, port} (or the Controller's `port`, when
// `port_is_spec_port`), and what the shoal.dev Service has no field for into extras["service"].
void MapService(SpecIn& in, bool port_is_spec_port, Json* out, Json* extras);

// A core/v1 SecretKeySelector as the shoal.dev {name, key}; null when it has no name.
Json KeyRef(const Json* selector);

// The Slurm name of a Slinky NodeSet: its template.spec.hostname without the trailing '-'
// ("gpu-" names the NodeSet, partition and feature "gpu", as in Slinky), else its name.
std::string SlurmNodeSetName(const Json& nodeset);

}  // namespace shoal::op::slinky
