// The desired Kubernetes objects (full JSON) for each custom resource, named as design.md says.
// Every object carries the CR's labels, an ownerReference to it (controller: true) and a spec
// hash annotation (kSpecHashAnnotation). Pure.
#pragma once

#include <map>
#include <string>

#include "operator/model/crd_types.h"

namespace shoal::op {

// Merges the partial PodTemplateSpec `tmpl` into `pod`: metadata labels/annotations, and from
// spec nodeSelector, tolerations, affinity, priorityClassName, serviceAccountName,
// imagePullSecrets, resources/extraEnv (first container), securityContext (pod level).
void ApplyTemplate(const Json& tmpl, Json* pod);
// Container securityContext meeting PodSecurity "restricted" (non-root, no escalation, drop ALL,
// RuntimeDefault seccomp) and the pod-level one.
Json RestrictedContainerSecurity();
Json RestrictedPodSecurity(int uid);
// A pod of one container running as Shoal's non-root user (PodSecurity "restricted"), owned by
// `cr`: `extra_spec` fields (hostname, subdomain, grace period) are merged into its spec, the
// CR's `tmpl` applied, and the spec hash stamped last.
Json RestrictedPod(const Json& cr, const std::string& pod_name, const Json& labels, Json container,
                   Json volumes, const Json& extra_spec, const Json& tmpl);

// Controller <c>.
Json ControllerConfigMap(const Json& cr, const std::map<std::string, std::string>& files);
Json ControllerService(const Json& cr, const ControllerSpec& spec);
Json ControllerHeadlessService(const Json& cr, const ControllerSpec& spec);
Json ControllerStatePvc(const Json& cr, const ControllerSpec& spec);  // <c>-state
// ServiceMonitor <c> (monitoring.coreos.com/v1) scraping /metrics on the controller Service.
Json ControllerServiceMonitor(const Json& cr);
// Pod <c>-<index>. `extra_files` are the ConfigMap keys (all mounted from <c>-config). With
// spec.ha, shoalctld runs under `shoal-operator leader-exec` holding Lease <c>-ctld, as service
// account <c>-ctld; liveness probes the launcher (a standby runs no shoalctld), readiness
// shoalctld.
Json ControllerPod(const Json& cr, const ControllerSpec& spec, int index);
// spec.ha: the Lease name, and ServiceAccount, Role (that Lease only) and RoleBinding <c>-ctld.
std::string ControllerLeaseName(const Json& cr);
Json ControllerServiceAccount(const Json& cr);
Json ControllerLeaseRole(const Json& cr);
Json ControllerLeaseRoleBinding(const Json& cr);

// NodeSet <w>. `controller_host` is host:port of the controller Service.
std::string WorkerSelector(const std::string& nodeset);  // "app.kubernetes.io/instance=w,..."
Json WorkerSelectorLabels(const std::string& nodeset);   // the same as matchLabels
std::string WorkerRevision(const NodeSetSpec& spec, const std::string& controller_host,
                           const std::string& slurm_key_secret);
// The node definition passed with shoald --conf ("Features=w,gpu Gres=gpu:1 Weight=5").
// `k8s_features` come from the Kubernetes node's features annotation (prefixed "k8s/").
std::string WorkerNodeConf(const std::string& nodeset, const NodeSetSpec& spec,
                           const std::vector<std::string>& k8s_features);
struct WorkerPodInputs {
  int ordinal = 0;          // StatefulSet mode; pod name <w>-<ordinal>
  std::string pinned_node;  // DaemonSet mode: the k8s node (pod name <w>-<node>)
  std::vector<std::string> k8s_features;
  std::string controller_host;   // "<c>.<ns>.svc:6817"
  std::string slurm_key_secret;  // Secret holding the cluster key ("" = none mounted)
  std::string slurm_key_key = "slurm.key";
};
Json WorkerPod(const Json& cr, const NodeSetSpec& spec, const WorkerPodInputs& in);
Json WorkerService(const Json& cr);  // headless <w>
Json WorkerPdb(const Json& cr);      // <w>-protect, maxUnavailable 0 on protected pods
Json WorkerPvc(const Json& cr, const Json& claim_template, const std::string& pod_name);

// LoginSet <l>.
std::string LoginTemplateHash(const LoginSetSpec& spec, const std::string& controller_host);
Json LoginPod(const Json& cr, const LoginSetSpec& spec, const std::string& controller_host,
              const std::string& slurm_key_secret, const std::string& pod_name);
Json LoginService(const Json& cr, const LoginSetSpec& spec);
Json LoginSshdConfigMap(const Json& cr, const LoginSetSpec& spec);  // <l>-sshd

// Accounting <a>.
Json AccountingPod(const Json& cr, const AccountingSpec& spec);
Json AccountingService(const Json& cr, const AccountingSpec& spec);
Json AccountingConfigSecret(const Json& cr, const std::string& slurmdbd_conf);  // <a>-config

// RestApi <r>.
Json RestApiPod(const Json& cr, const RestApiSpec& spec, const std::string& controller,
                const std::string& jwt_secret, const std::string& jwt_key, int index);
Json RestApiService(const Json& cr, const RestApiSpec& spec);

// Token: the Secret holding the token.
Json TokenSecret(const Json& cr, const TokenSpec& spec, const std::string& token);

}  // namespace shoal::op
