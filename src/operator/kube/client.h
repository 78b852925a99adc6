// The operator's Kubernetes API client: plain JSON over HTTP(S) with libcurl, the verbs the
// reconcilers use (get, list, create, replace, merge patch, delete, status subresource) and a
// streaming watch. The pure parts (paths, kubeconfig, watch-line framing) are free functions so
// that they can be unit-tested without a server.
//
// One KubeClient per thread: it owns one curl handle (connection reuse, no locking).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shoal::kube {

using Json = nlohmann::json;

// Where the API server is and how to authenticate to it.
struct KubeConfig {
  std::string server;     // "https://10.0.0.1:443" or "http://127.0.0.1:8080"
  std::string token;      // bearer token ("" = none)
  std::string ca_file;    // certificate-authority (a path)
  std::string ca_data;    // certificate-authority-data (PEM, already base64-decoded)
  bool insecure = false;  // insecure-skip-tls-verify
  // Client certificate authentication (kind, minikube and kubeadm admin kubeconfigs).
  std::string client_cert_file, client_key_file;  // client-certificate, client-key
  std::string client_cert_data, client_key_data;  // -data variants (PEM, decoded)
};

// A kubeconfig file's text (YAML in the block style kubectl writes, or JSON): the current
// context's cluster and user (the first context when current-context is unset). Relative
// certificate-authority paths are resolved against `base_dir`.
Result<KubeConfig> ParseKubeconfig(std::string_view text, std::string_view base_dir = "");
Result<KubeConfig> LoadKubeconfig(const std::string& path);
// KUBERNETES_SERVICE_HOST/PORT and the service-account token and CA.
Result<KubeConfig> InClusterConfig();
// The namespace of the pod this runs in (from its service account), or "" outside a pod.
std::string PodNamespace();
// This host's name (a pod's name), or `fallback` when it cannot be read.
std::string HostnameOr(const char* fallback);

// The small YAML subset kubeconfig files use (block mappings, block sequences, plain and quoted
// scalars, comments) as JSON; scalars stay strings except true/false. Exposed for tests.
Result<Json> ParseSimpleYaml(std::string_view text);

// A kind the operator reads or writes.
struct ResourceType {
  std::string_view api_version;  // "v1", "policy/v1", "shoal.dev/v1alpha1"
  std::string_view kind;         // "Pod" (or "NodeSet.slinky.slurm.net": KindKey)
  std::string_view plural;       // "pods"
  bool namespaced = true;
};
// Looks a kind up by its Kind ("Pod") or plural ("pods"); nullptr when unknown.
const ResourceType* LookupKind(std::string_view kind_or_plural);
// The table's name of an object's type: its kind, or "<Kind>.<group>" for a kind the table
// names so because another group has the same kind (Slinky's "NodeSet.slinky.slurm.net").
std::string KindKey(std::string_view api_version, std::string_view kind);

// "/api/v1/namespaces/<ns>/pods/<name>/<sub>" or "/apis/<group>/<version>/..."; empty parts
// are left out ("" namespace = all namespaces, or a cluster-scoped kind).
std::string ResourcePath(std::string_view api_version, std::string_view plural, std::string_view ns,
                         std::string_view name, std::string_view subresource = "");
// The same from a kind in the table (an error for an unknown kind).
Result<std::string> PathFor(std::string_view kind, std::string_view ns, std::string_view name,
                            std::string_view subresource = "");

std::string UrlEncode(std::string_view text);

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  int limit = 0;  // page size; 0 = server default
  std::string continue_token;
  // Watch only.
  bool allow_bookmarks = true;
  int timeout_seconds = 0;
};
// "?labelSelector=...&limit=..." ("" when nothing is set); `watch` adds watch=1 and the watch
// parameters.
std::string ListQuery(const ListOptions& options, bool watch);

struct DeleteOptions {
  std::string propagation_policy;  // "Background", "Foreground", "Orphan" or "" (default)
  int grace_period_seconds = -1;   // < 0: the object's own
  std::string precondition_uid;    // "" = none
};
Json DeleteBody(const DeleteOptions& options);

struct KubeResponse {
  long status = 0;  // HTTP status
  Json body;        // parsed JSON (null when the body was empty or not JSON)
  bool ok() const { return status >= 200 && status < 300; }
};
bool IsNotFound(const KubeResponse& r);       // 404
bool IsConflict(const KubeResponse& r);       // 409 other than AlreadyExists
bool IsAlreadyExists(const KubeResponse& r);  // 409, reason AlreadyExists
// "409 Conflict: <message from the Status body>" for logs.
std::string DescribeFailure(const KubeResponse& r);

// Splits a watch stream (newline-delimited JSON) into lines as chunks arrive; a line may span
// chunks. Pure.
class LineFramer {
 public:
  // Calls `line` for every complete, non-empty line in the data so far.
  void Feed(std::string_view chunk, const std::function<void(std::string_view)>& line);
  size_t buffered() const { return buf_.size(); }

 private:
  std::string buf_;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  Json object;
};
// Parses one watch line; an error for a line that is not a {"type","object"} event.
Result<WatchEvent> ParseWatchEvent(std::string_view line);

class KubeClient {
 public:
  explicit KubeClient(KubeConfig config);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  const KubeConfig& config() const { return config_; }
  // Limit of one Request (not of a watch); 30 s unless set. A Lease holder needs answers within
  // its renew deadline.
  void set_request_timeout_ms(long ms) { request_timeout_ms_ = ms; }

  // One request; transport failures (connect, TLS, timeout) are errors, any HTTP answer is a
  // KubeResponse.
  Result<KubeResponse> Request(const std::string& method, const std::string& path,
                               const std::string& body = "",
                               const std::string& content_type = "application/json");

  Result<KubeResponse> Get(std::string_view kind, std::string_view ns, std::string_view name);
  // Follows `continue` until the list is complete: the answer's items hold every page, its
  // metadata.resourceVersion is the last page's.
  Result<KubeResponse> List(std::string_view kind, std::string_view ns,
                            const ListOptions& options = {});
  Result<KubeResponse> Create(std::string_view kind, std::string_view ns, const Json& object);
  Result<KubeResponse> Replace(std::string_view kind, std::string_view ns, std::string_view name,
                               const Json& object, std::string_view subresource = "");
  Result<KubeResponse> MergePatch(std::string_view kind, std::string_view ns, std::string_view name,
                                  const Json& patch, std::string_view subresource = "");
  Result<KubeResponse> Delete(std::string_view kind, std::string_view ns, std::string_view name,
                              const DeleteOptions& options = {});
  Result<KubeResponse> ReplaceStatus(std::string_view kind, std::string_view ns,
                                     std::string_view name, const Json& object) {
    return Replace(kind, ns, name, object, "status");
  }
  Result<KubeResponse> PatchStatus(std::string_view kind, std::string_view ns,
                                   std::string_view name, const Json& patch) {
    return MergePatch(kind, ns, name, patch, "status");
  }

  // One watch request: streams events to `on_event` until the server ends the stream, `stop`
  // turns true, or on_event returns false. The HTTP status of the stream is returned (200 when
  // it ended normally, 410 when the resourceVersion is too old).
  Result<long> WatchOnce(std::string_view kind, std::string_view ns, const ListOptions& options,
                         const std::function<bool(const WatchEvent&)>& on_event,
                         const std::atomic<bool>* stop);

 private:
  KubeConfig config_;
  long request_timeout_ms_ = 30000;
  void* curl_ = nullptr;  // CURL*
};

// A list-then-watch loop (what client-go's reflector does): lists (calling on_list with every
// item), watches from the list's resourceVersion, follows bookmarks, re-watches when the stream
// ends and re-lists on 410 Gone or a transport error (after `retry_ms`). Returns when `stop`
// turns true.
struct WatchLoopOptions {
  std::string label_selector;
  int timeout_seconds = 300;
  int retry_ms = 1000;
  std::function<void()> on_list;  // after every successful (re)list
};
void RunWatchLoop(KubeClient& client, std::string_view kind, std::string_view ns,
                  const WatchLoopOptions& options,
                  const std::function<void(const std::string& type, const Json& object)>& on_event,
                  const std::atomic<bool>& stop);

}  // namespace shoal::kube
