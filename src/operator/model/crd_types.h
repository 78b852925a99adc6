// The six custom resources' specs (design.md), parsed, defaulted and validated from JSON.
// Errors are values naming the field ("spec.replicas: must be >= 0").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "operator/model/plan.h"
#include "operator/model/topology_gen.h"

namespace shoal::op {

struct KeyRef {
  std::string name, key;
  bool set() const { return !name.empty(); }
};
struct ObjRef {
  std::string name, ns;  // ns defaults to the referencing object's namespace
};
struct ServiceSpec {
  std::string type = "ClusterIP";
  int port = 0;
};

// Default images (deploy/docker builds them); a spec's `image` overrides.
inline constexpr const char* kControllerImage = "shoal/controller:latest";
inline constexpr const char* kWorkerImage = "shoal/worker:latest";
inline constexpr const char* kLoginImage = "shoal/login:latest";
inline constexpr const char* kAccountingImage = "shoal/accounting:latest";
inline constexpr const char* kRestApiImage = "shoal/restapi:latest";

struct ControllerSpec {
  std::string cluster_name;
  std::string image = kControllerImage, pull_policy = "IfNotPresent";
  int port = 6817;
  KeyRef slurm_key_ref{"", "slurm.key"}, jwt_key_ref{"", "jwt.key"};
  std::string accounting_ref;
  std::string extra_conf;
  std::vector<std::string> config_file_refs, prolog_refs, epilog_refs;
  bool persistence = true;
  std::string existing_claim, storage_class, storage_size = "4Gi";
  bool metrics = false, service_monitor = false;
  bool ha = false;
  int ha_replicas = 2;
  Json tmpl = Json::object();
  ServiceSpec service{"ClusterIP", 6817};
  TopologySpec topology;  // spec.topology: topology.conf from Kubernetes node annotations
};

enum class UpdateType { kRollingUpdate, kOnDelete, kScheduledUpdate };

struct NodeSetSpec {
  ObjRef controller_ref;
  int replicas = 1;
  bool daemonset = false;  // scalingMode DaemonSet
  std::string image = kWorkerImage, pull_policy = "IfNotPresent";
  Json tmpl = Json::object();
  bool partition = true;
  std::string partition_config;
  std::vector<std::string> features;
  std::string gres;
  int weight = 0;  // 0: not set
  UpdateType update = UpdateType::kRollingUpdate;
  Json max_unavailable = "25%";  // int or "N%"
  int64_t scheduled_start = 0;   // unix s
  int64_t scheduled_duration = 1800;
  Json volume_claim_templates = Json::array();
  std::string pvc_when_deleted = "Retain", pvc_when_scaled = "Retain";
  bool protect = true;  // workloadDisruptionProtection
  int min_ready_seconds = 0;
  int registration_timeout = 300;
  std::vector<std::string> propagate_conditions;
  bool prune_not_found = false;  // pruneNodeRecords: NodeNotFound
};

struct LoginSetSpec {
  ObjRef controller_ref;
  int replicas = 1;
  std::string image = kLoginImage, pull_policy = "IfNotPresent";
  Json tmpl = Json::object();
  KeyRef sssd_conf_ref{"", "sssd.conf"};
  std::string extra_sshd_config, root_ssh_authorized_keys;
  ServiceSpec service{"ClusterIP", 22};
};

struct AccountingSpec {
  std::string image = kAccountingImage, pull_policy = "IfNotPresent";
  KeyRef slurm_key_ref{"", "slurm.key"}, jwt_key_ref{"", "jwt.key"};
  std::string storage_host;
  int storage_port = 3306;
  std::string database = "slurm_acct_db", username;
  KeyRef password_ref{"", "password"};
  std::string extra_conf;
  Json tmpl = Json::object();
  ServiceSpec service{"ClusterIP", 6819};
};

struct RestApiSpec {
  ObjRef controller_ref;
  int replicas = 1;
  std::string image = kRestApiImage, pull_policy = "IfNotPresent";
  Json tmpl = Json::object();
  ServiceSpec service{"ClusterIP", 6820};
};

struct TokenSpec {
  KeyRef jwt_key_ref{"", "jwt.key"};
  std::string username;
  int64_t lifetime = 900;
  bool refresh = true;
  KeyRef secret_ref{"", "auth-token"};  // name defaults to the Token's name
};

// Each takes the whole CR (metadata is used for namespace defaults).
Result<ControllerSpec> ParseControllerSpec(const Json& cr);
Result<NodeSetSpec> ParseNodeSetSpec(const Json& cr);
Result<LoginSetSpec> ParseLoginSetSpec(const Json& cr);
Result<AccountingSpec> ParseAccountingSpec(const Json& cr);
Result<RestApiSpec> ParseRestApiSpec(const Json& cr);
Result<TokenSpec> ParseTokenSpec(const Json& cr);

// maxUnavailable resolved against `replicas` (percent rounds down, at least 1).
int ResolveMaxUnavailable(const Json& value, int replicas);

}  // namespace shoal::op
