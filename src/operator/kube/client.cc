#include "operator/kube/client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "common/jwt.h"
#include "common/log.h"

namespace shoal::kube {
namespace {

// ---- minimal YAML (kubeconfig) ----

struct YamlLine {
  int indent = 0;
  std::string text;  // without indentation, comments and trailing blanks
};

// Strips a trailing " # comment" outside quotes.
std::string StripComment(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      if (c == '\\' && quote == '"') ++i;
    } else if (c == '"' || c == '\'') {
      if (i == 0 || s[i - 1] == ' ' || s[i - 1] == ':' || s[i - 1] == '-') quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

Result<Json> YamlScalar(std::string_view v) {
  if (v.empty()) return Json(nullptr);
  if (v.front() == '"') {
    if (v.size() < 2 || v.back() != '"') return InvalidArgument("unterminated string");
    std::string out;
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      char c = v[i];
      if (c == '\\' && i + 2 < v.size()) {
        char e = v[++i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += c;
      }
    }
    return Json(out);
  }
  if (v.front() == '\'') {
    if (v.size() < 2 || v.back() != '\'') return InvalidArgument("unterminated string");
    std::string out;
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      out += v[i];
      if (v[i] == '\'' && i + 2 < v.size() && v[i + 1] == '\'') ++i;
    }
    return Json(out);
  }
  if (v == "true" || v == "True") return Json(true);
  if (v == "false" || v == "False") return Json(false);
  if (v == "null" || v == "~") return Json(nullptr);
  if (v == "{}") return Json::object();
  if (v == "[]") return Json::array();
  return Json(std::string(v));
}

// Where "key: value" splits: the ':' followed by a blank or the end, outside quotes.
size_t KeyColon(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if ((c == '"' || c == '\'') && i == 0) {
      quote = c;
    } else if (c == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) {
      return i;
    }
  }
  return std::string::npos;
}

bool IsSeqItem(const std::string& s) { return s == "-" || s.rfind("- ", 0) == 0; }

class YamlParser {
 public:
  explicit YamlParser(std::vector<YamlLine> lines) : lines_(std::move(lines)) {}

  Result<Json> Parse() {
    if (lines_.empty()) return Json::object();
    auto v = Node(lines_[0].indent);
    if (!v) return v;
    if (i_ != lines_.size()) return InvalidArgument("bad indentation near: " + lines_[i_].text);
    return v;
  }

 private:
  Result<Json> Node(int indent) {
    if (IsSeqItem(lines_[i_].text)) return Sequence(indent);
    if (KeyColon(lines_[i_].text) == std::string::npos) {
      auto s = YamlScalar(lines_[i_].text);
      ++i_;
      return s;
    }
    return Mapping(indent);
  }

  Result<Json> Mapping(int indent) {
    Json obj = Json::object();
    while (i_ < lines_.size() && lines_[i_].indent == indent && !IsSeqItem(lines_[i_].text)) {
      const std::string& t = lines_[i_].text;
      size_t colon = KeyColon(t);
      if (colon == std::string::npos) return InvalidArgument("expected 'key: value': " + t);
      auto key = YamlScalar(t.substr(0, colon));
      if (!key || !key->is_string()) return InvalidArgument("bad key: " + t);
      std::string rest = colon + 1 < t.size() ? t.substr(colon + 2) : "";
      while (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
      ++i_;
      if (!rest.empty()) {
        auto v = YamlScalar(rest);
        if (!v) return v;
        obj[key->get<std::string>()] = std::move(*v);
        continue;
      }
      Json child(nullptr);
      if (i_ < lines_.size() && lines_[i_].indent > indent) {
        auto v = Node(lines_[i_].indent);
        if (!v) return v;
        child = std::move(*v);
      } else if (i_ < lines_.size() && lines_[i_].indent == indent && IsSeqItem(lines_[i_].text)) {
        // kubectl writes "clusters:\n- cluster:" with the items at the key's indentation.
        auto v = Sequence(indent);
        if (!v) return v;
        child = std::move(*v);
      }
      obj[key->get<std::string>()] = std::move(child);
    }
    if (i_ < lines_.size() && lines_[i_].indent > indent)
      return InvalidArgument("bad indentation near: " + lines_[i_].text);
    return obj;
  }

  Result<Json> Sequence(int indent) {
    Json arr = Json::array();
    while (i_ < lines_.size() && lines_[i_].indent == indent && IsSeqItem(lines_[i_].text)) {
      std::string rest = lines_[i_].text == "-" ? "" : lines_[i_].text.substr(2);
      int offset = 2;
      while (!rest.empty() && rest.front() == ' ') {
        rest.erase(0, 1);
        ++offset;
      }
      if (rest.empty()) {
        ++i_;
        if (i_ < lines_.size() && lines_[i_].indent > indent) {
          auto v = Node(lines_[i_].indent);
          if (!v) return v;
          arr.push_back(std::move(*v));
        } else {
          arr.push_back(nullptr);
        }
        continue;
      }
      // "- key: v" opens a mapping whose keys sit where "key" starts: reparse the line as such.
      lines_[i_].indent = indent + offset;
      lines_[i_].text = rest;
      auto v = Node(indent + offset);
      if (!v) return v;
      arr.push_back(std::move(*v));
    }
    return arr;
  }

  std::vector<YamlLine> lines_;
  size_t i_ = 0;
};

std::string StdBase64Decode(std::string_view text, bool* ok) {
  std::string url;
  for (char c : text) {
    if (c == '+')
      url += '-';
    else if (c == '/')
      url += '_';
    else if (c == '=' || c == '\n' || c == '\r' || c == ' ')
      continue;
    else
      url += c;
  }
  auto r = jwt::Base64UrlDecode(url);
  *ok = r.ok();
  return r.ok() ? *r : std::string();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorCode::kIoError, "cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Json* FindNamed(const Json& doc, const char* list, const std::string& name) {
  auto it = doc.find(list);
  if (it == doc.end() || !it->is_array()) return nullptr;
  for (const auto& e : *it) {
    if (!e.is_object()) continue;
    auto n = e.find("name");
    if (name.empty() || (n != e.end() && n->is_string() && *n == name)) return &e;
  }
  return nullptr;
}

std::string StrField(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// ---- curl ----

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

struct CurlHeaders {
  curl_slist* list = nullptr;
  ~CurlHeaders() { curl_slist_free_all(list); }
  void Add(const std::string& h) { list = curl_slist_append(list, h.c_str()); }
};

void SetCommon(CURL* c, const KubeConfig& cfg, const std::string& url, CurlHeaders& headers) {
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  if (!cfg.token.empty()) headers.Add("Authorization: Bearer " + cfg.token);
  headers.Add("Accept: application/json");
  headers.Add("User-Agent: shoal-operator");
  if (cfg.insecure) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!cfg.ca_data.empty()) {
    curl_blob blob{const_cast<char*>(cfg.ca_data.data()), cfg.ca_data.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
  } else if (!cfg.ca_file.empty()) {
    curl_easy_setopt(c, CURLOPT_CAINFO, cfg.ca_file.c_str());
  }
  if (!cfg.client_cert_data.empty()) {
    curl_blob cert{const_cast<char*>(cfg.client_cert_data.data()), cfg.client_cert_data.size(),
                   CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!cfg.client_cert_file.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLCERT, cfg.client_cert_file.c_str());
  }
  if (!cfg.client_key_data.empty()) {
    curl_blob key{const_cast<char*>(cfg.client_key_data.data()), cfg.client_key_data.size(),
                  CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!cfg.client_key_file.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLKEY, cfg.client_key_file.c_str());
  }
}

Json ParseBody(const std::string& body) {
  if (body.empty()) return Json(nullptr);
  Json j = Json::parse(body, nullptr, false);
  return j.is_discarded() ? Json(nullptr) : j;
}

struct WatchState {
  LineFramer framer;
  const std::function<bool(const WatchEvent&)>* on_event = nullptr;
  const std::atomic<bool>* stop = nullptr;
  CURL* curl = nullptr;
  std::string error_body;  // the body of a non-200 answer
  bool ended_by_caller = false;
};

size_t WatchWrite(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<WatchState*>(user);
  size_t len = size * n;
  long code = 0;
  curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code != 200) {
    if (st->error_body.size() < 65536) st->error_body.append(data, len);
    return len;
  }
  bool go_on = true;
  st->framer.Feed(std::string_view(data, len), [&](std::string_view line) {
    if (!go_on) return;
    auto ev = ParseWatchEvent(line);
    if (!ev) {
      LogError("kube watch: %s", ev.error().c_str());
      return;
    }
    if (!(*st->on_event)(*ev)) go_on = false;
  });
  if (!go_on || (st->stop && st->stop->load())) {
    st->ended_by_caller = true;
    return 0;  // aborts the transfer
  }
  return len;
}

int WatchProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<WatchState*>(user);
  if (st->stop && st->stop->load()) {
    st->ended_by_caller = true;
    return 1;
  }
  return 0;
}

void SleepUnlessStopped(int ms, const std::atomic<bool>& stop) {
  for (int waited = 0; waited < ms && !stop.load(); waited += 50)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

constexpr std::array<ResourceType, 25> kKinds{{
    {"v1", "Pod", "pods", true},
    {"v1", "ServiceAccount", "serviceaccounts", true},
    {"rbac.authorization.k8s.io/v1", "Role", "roles", true},
    {"rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", true},
    {"v1", "Service", "services", true},
    {"v1", "ConfigMap", "configmaps", true},
    {"v1", "Secret", "secrets", true},
    {"v1", "PersistentVolumeClaim", "persistentvolumeclaims", true},
    {"v1", "Event", "events", true},
    {"v1", "Node", "nodes", false},
    {"v1", "Namespace", "namespaces", false},
    {"policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", true},
    {"coordination.k8s.io/v1", "Lease", "leases", true},
    {"shoal.dev/v1alpha1", "Controller", "controllers", true},
    {"shoal.dev/v1alpha1", "NodeSet", "nodesets", true},
    {"shoal.dev/v1alpha1", "LoginSet", "loginsets", true},
    {"shoal.dev/v1alpha1", "Accounting", "accountings", true},
    {"shoal.dev/v1alpha1", "RestApi", "restapis", true},
    {"shoal.dev/v1alpha1", "Token", "tokens", true},
    // Slinky's API (the operator's --slinky-api), named "<Kind>.<group>" apart from shoal.dev's.
    {"slinky.slurm.net/v1beta1", "Controller.slinky.slurm.net", "controllers", true},
    {"slinky.slurm.net/v1beta1", "NodeSet.slinky.slurm.net", "nodesets", true},
    {"slinky.slurm.net/v1beta1", "LoginSet.slinky.slurm.net", "loginsets", true},
    {"slinky.slurm.net/v1beta1", "Accounting.slinky.slurm.net", "accountings", true},
    {"slinky.slurm.net/v1beta1", "RestApi.slinky.slurm.net", "restapis", true},
    {"slinky.slurm.net/v1beta1", "Token.slinky.slurm.net", "tokens", true},
}};

}  // namespace

Result<Json> ParseSimpleYaml(std::string_view text) {
  std::vector<YamlLine> lines;
  std::istringstream in{std::string(text)};
  std::string raw;
  while (std::getline(in, raw)) {
    if (raw.find('\t') != std::string::npos && raw.find_first_not_of(" \t") != std::string::npos &&
        raw[raw.find_first_not_of(' ')] == '\t')
      return InvalidArgument("tabs are not allowed for indentation");
    size_t start = raw.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    std::string body = TrimRight(StripComment(raw.substr(start)));
    if (body.empty() || body == "---" || body == "...") continue;
    lines.push_back({static_cast<int>(start), body});
  }
  return YamlParser(std::move(lines)).Parse();
}

Result<KubeConfig> ParseKubeconfig(std::string_view text, std::string_view base_dir) {
  size_t first = text.find_first_not_of(" \t\r\n");
  Json doc;
  if (first != std::string_view::npos && text[first] == '{') {
    doc = Json::parse(text, nullptr, false);
    if (doc.is_discarded()) return InvalidArgument("kubeconfig: invalid JSON");
  } else {
    auto y = ParseSimpleYaml(text);
    if (!y) return InvalidArgument("kubeconfig: " + y.error());
    doc = std::move(*y);
  }
  if (!doc.is_object()) return InvalidArgument("kubeconfig: not a mapping");
  std::string ctx_name = StrField(doc, "current-context");
  const Json* ctx = FindNamed(doc, "contexts", ctx_name);
  std::string cluster_name, user_name;
  if (ctx) {
    auto c = ctx->find("context");
    if (c != ctx->end()) {
      cluster_name = StrField(*c, "cluster");
      user_name = StrField(*c, "user");
    }
  } else if (!ctx_name.empty()) {
    return InvalidArgument("kubeconfig: context \"" + ctx_name + "\" not found");
  }
  const Json* cluster_entry = FindNamed(doc, "clusters", cluster_name);
  if (!cluster_entry || !cluster_entry->contains("cluster"))
    return InvalidArgument("kubeconfig: no cluster");
  const Json& cluster = (*cluster_entry)["cluster"];
  KubeConfig cfg;
  cfg.server = StrField(cluster, "server");
  if (cfg.server.empty()) return InvalidArgument("kubeconfig: cluster has no server");
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  cfg.ca_file = StrField(cluster, "certificate-authority");
  if (!cfg.ca_file.empty() && cfg.ca_file[0] != '/' && !base_dir.empty())
    cfg.ca_file = std::string(base_dir) + "/" + cfg.ca_file;
  std::string ca_b64 = StrField(cluster, "certificate-authority-data");
  if (!ca_b64.empty()) {
    bool ok = false;
    cfg.ca_data = StdBase64Decode(ca_b64, &ok);
    if (!ok) return InvalidArgument("kubeconfig: bad certificate-authority-data");
  }
  auto insecure = cluster.find("insecure-skip-tls-verify");
  if (insecure != cluster.end())
    cfg.insecure = insecure->is_boolean() ? insecure->get<bool>()
                                          : (insecure->is_string() && *insecure == "true");
  if (const Json* user_entry = FindNamed(doc, "users", user_name);
      user_entry && user_entry->contains("user")) {
    const Json& user = (*user_entry)["user"];
    cfg.token = StrField(user, "token");
    auto path_field = [&](const char* key) {
      std::string v = StrField(user, key);
      if (!v.empty() && v[0] != '/' && !base_dir.empty()) v = std::string(base_dir) + "/" + v;
      return v;
    };
    cfg.client_cert_file = path_field("client-certificate");
    cfg.client_key_file = path_field("client-key");
    for (auto [key, out] : {std::pair{"client-certificate-data", &cfg.client_cert_data},
                            std::pair{"client-key-data", &cfg.client_key_data}}) {
      std::string b64 = StrField(user, key);
      if (b64.empty()) continue;
      bool ok = false;
      *out = StdBase64Decode(b64, &ok);
      if (!ok) return InvalidArgument(std::string("kubeconfig: bad ") + key);
    }
    std::string token_file = StrField(user, "tokenFile");
    if (cfg.token.empty() && !token_file.empty()) {
      if (token_file[0] != '/' && !base_dir.empty())
        token_file = std::string(base_dir) + "/" + token_file;
      auto t = ReadFile(token_file);
      if (!t) return t.status();
      cfg.token = TrimRight(*t);
      while (!cfg.token.empty() && cfg.token.back() == '\n') cfg.token.pop_back();
    }
  }
  return cfg;
}

Result<KubeConfig> LoadKubeconfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return text.status();
  size_t slash = path.rfind('/');
  return ParseKubeconfig(*text, slash == std::string::npos ? "." : path.substr(0, slash));
}

std::string PodNamespace() {
  std::ifstream in("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
  std::string ns;
  if (in) std::getline(in, ns);
  return ns;
}

std::string HostnameOr(const char* fallback) {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return fallback;
  return buf;
}

Result<KubeConfig> InClusterConfig() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port)
    return InvalidArgument(
        "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); use --api or "
        "--kubeconfig");
  const std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  KubeConfig cfg;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  cfg.server = "https://" + h + ":" + port;
  auto token = ReadFile(dir + "/token");
  if (!token) return token.status();
  cfg.token = TrimRight(*token);
  while (!cfg.token.empty() && cfg.token.back() == '\n') cfg.token.pop_back();
  cfg.ca_file = dir + "/ca.crt";
  return cfg;
}

const ResourceType* LookupKind(std::string_view kind_or_plural) {
  for (const auto& k : kKinds)
    if (k.kind == kind_or_plural || k.plural == kind_or_plural) return &k;
  return nullptr;
}

std::string KindKey(std::string_view api_version, std::string_view kind) {
  for (const auto& k : kKinds) {
    if (k.api_version != api_version) continue;
    if (k.kind == kind) return std::string(kind);
    if (k.kind.size() > kind.size() && k.kind.substr(0, kind.size()) == kind &&
        k.kind[kind.size()] == '.')
      return std::string(k.kind);
  }
  return std::string(kind);
}

std::string ResourcePath(std::string_view api_version, std::string_view plural, std::string_view ns,
                         std::string_view name, std::string_view subresource) {
  std::string p = api_version.find('/') == std::string_view::npos ? "/api/" : "/apis/";
  p += api_version;
  if (!ns.empty()) {
    p += "/namespaces/";
    p += ns;
  }
  p += "/";
  p += plural;
  if (!name.empty()) {
    p += "/";
    p += name;
    if (!subresource.empty()) {
      p += "/";
      p += subresource;
    }
  }
  return p;
}

Result<std::string> PathFor(std::string_view kind, std::string_view ns, std::string_view name,
                            std::string_view subresource) {
  const ResourceType* t = LookupKind(kind);
  if (!t) return InvalidArgument("unknown kind " + std::string(kind));
  return ResourcePath(t->api_version, t->plural, t->namespaced ? ns : "", name, subresource);
}

std::string UrlEncode(std::string_view text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string ListQuery(const ListOptions& o, bool watch) {
  std::vector<std::string> parts;
  if (watch) parts.push_back("watch=1");
  if (!o.label_selector.empty()) parts.push_back("labelSelector=" + UrlEncode(o.label_selector));
  if (!o.field_selector.empty()) parts.push_back("fieldSelector=" + UrlEncode(o.field_selector));
  if (!o.resource_version.empty())
    parts.push_back("resourceVersion=" + UrlEncode(o.resource_version));
  if (watch) {
    if (o.allow_bookmarks) parts.push_back("allowWatchBookmarks=true");
    if (o.timeout_seconds > 0)
      parts.push_back("timeoutSeconds=" + std::to_string(o.timeout_seconds));
  } else {
    if (o.limit > 0) parts.push_back("limit=" + std::to_string(o.limit));
    if (!o.continue_token.empty()) parts.push_back("continue=" + UrlEncode(o.continue_token));
  }
  std::string q;
  for (const auto& p : parts) q += (q.empty() ? "?" : "&") + p;
  return q;
}

Json DeleteBody(const DeleteOptions& o) {
  Json b = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!o.propagation_policy.empty()) b["propagationPolicy"] = o.propagation_policy;
  if (o.grace_period_seconds >= 0) b["gracePeriodSeconds"] = o.grace_period_seconds;
  if (!o.precondition_uid.empty()) b["preconditions"] = {{"uid", o.precondition_uid}};
  return b;
}

bool IsNotFound(const KubeResponse& r) { return r.status == 404; }
bool IsAlreadyExists(const KubeResponse& r) {
  return r.status == 409 && r.body.is_object() && r.body.value("reason", "") == "AlreadyExists";
}
bool IsConflict(const KubeResponse& r) { return r.status == 409 && !IsAlreadyExists(r); }

std::string DescribeFailure(const KubeResponse& r) {
  std::string s = std::to_string(r.status);
  if (r.body.is_object()) {
    std::string reason = r.body.value("reason", "");
    std::string message = r.body.value("message", "");
    if (!reason.empty()) s += " " + reason;
    if (!message.empty()) s += ": " + message;
  }
  return s;
}

void LineFramer::Feed(std::string_view chunk, const std::function<void(std::string_view)>& line) {
  buf_.append(chunk);
  size_t start = 0;
  for (size_t nl; (nl = buf_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view l(buf_.data() + start, nl - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (!l.empty()) line(l);
  }
  buf_.erase(0, start);
}

Result<WatchEvent> ParseWatchEvent(std::string_view line) {
  Json j = Json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("watch: not a JSON object");
  auto type = j.find("type");
  auto obj = j.find("object");
  if (type == j.end() || !type->is_string() || obj == j.end())
    return InvalidArgument("watch: event without type/object");
  return WatchEvent{type->get<std::string>(), std::move(*obj)};
}

KubeClient::KubeClient(KubeConfig config) : config_(std::move(config)) {
  GlobalInit();
  curl_ = curl_easy_init();
}

KubeClient::~KubeClient() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

Result<KubeResponse> KubeClient::Request(const std::string& method, const std::string& path,
                                         const std::string& body, const std::string& content_type) {
  CURL* c = static_cast<CURL*>(curl_);
  if (!c) return Error(ErrorCode::kInternal, "curl_easy_init failed");
  curl_easy_reset(c);
  CurlHeaders headers;
  std::string url = config_.server + path;
  SetCommon(c, config_, url, headers);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, request_timeout_ms_);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    headers.Add("Content-Type: " + content_type);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.list);
  std::string answer;
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  if (rc != CURLE_OK)
    return Error(ErrorCode::kUnavailable, method + " " + url + ": " + curl_easy_strerror(rc));
  KubeResponse r;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  r.body = ParseBody(answer);
  return r;
}

Result<KubeResponse> KubeClient::Get(std::string_view kind, std::string_view ns,
                                     std::string_view name) {
  auto p = PathFor(kind, ns, name);
  if (!p) return p.status();
  return Request("GET", *p);
}

Result<KubeResponse> KubeClient::List(std::string_view kind, std::string_view ns,
                                      const ListOptions& options) {
  auto p = PathFor(kind, ns, "");
  if (!p) return p.status();
  ListOptions o = options;
  Json items = Json::array();
  for (int page = 0;; ++page) {
    auto r = Request("GET", *p + ListQuery(o, false));
    if (!r || !r->ok() || !r->body.is_object()) return r;
    if (auto it = r->body.find("items"); it != r->body.end() && it->is_array())
      for (auto& item : *it) items.push_back(std::move(item));
    std::string next;
    if (auto m = r->body.find("metadata"); m != r->body.end() && m->is_object())
      next = m->value("continue", "");
    if (next.empty() || page > 10000) {
      r->body["items"] = std::move(items);
      return r;
    }
    o.continue_token = next;
  }
}

Result<KubeResponse> KubeClient::Create(std::string_view kind, std::string_view ns,
                                        const Json& object) {
  auto p = PathFor(kind, ns, "");
  if (!p) return p.status();
  return Request("POST", *p, object.dump());
}

Result<KubeResponse> KubeClient::Replace(std::string_view kind, std::string_view ns,
                                         std::string_view name, const Json& object,
                                         std::string_view subresource) {
  auto p = PathFor(kind, ns, name, subresource);
  if (!p) return p.status();
  return Request("PUT", *p, object.dump());
}

Result<KubeResponse> KubeClient::MergePatch(std::string_view kind, std::string_view ns,
                                            std::string_view name, const Json& patch,
                                            std::string_view subresource) {
  auto p = PathFor(kind, ns, name, subresource);
  if (!p) return p.status();
  return Request("PATCH", *p, patch.dump(), "application/merge-patch+json");
}

Result<KubeResponse> KubeClient::Delete(std::string_view kind, std::string_view ns,
                                        std::string_view name, const DeleteOptions& options) {
  auto p = PathFor(kind, ns, name);
  if (!p) return p.status();
  return Request("DELETE", *p, DeleteBody(options).dump());
}

Result<long> KubeClient::WatchOnce(std::string_view kind, std::string_view ns,
                                   const ListOptions& options,
                                   const std::function<bool(const WatchEvent&)>& on_event,
                                   const std::atomic<bool>* stop) {
  auto p = PathFor(kind, ns, "");
  if (!p) return p.status();
  CURL* c = static_cast<CURL*>(curl_);
  if (!c) return Error(ErrorCode::kInternal, "curl_easy_init failed");
  curl_easy_reset(c);
  CurlHeaders headers;
  std::string url = config_.server + *p + ListQuery(options, true);
  SetCommon(c, config_, url, headers);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.list);
  // The server ends the stream after timeoutSeconds; the client limit is only a backstop.
  long limit_s = options.timeout_seconds > 0 ? options.timeout_seconds + 30 : 0;
  curl_easy_setopt(c, CURLOPT_TIMEOUT, limit_s);
  WatchState st;
  st.on_event = &on_event;
  st.stop = stop;
  st.curl = c;
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WatchWrite);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, WatchProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &st);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  if (st.ended_by_caller) return code ? code : 200L;
  if (rc != CURLE_OK && !(rc == CURLE_OPERATION_TIMEDOUT && code == 200))
    return Error(ErrorCode::kUnavailable, "watch " + url + ": " + curl_easy_strerror(rc));
  if (code != 200 && !st.error_body.empty())
    LogDebug("kube watch %s: %ld %s", url.c_str(), code, st.error_body.substr(0, 200).c_str());
  return code;
}

void RunWatchLoop(KubeClient& client, std::string_view kind, std::string_view ns,
                  const WatchLoopOptions& options,
                  const std::function<void(const std::string&, const Json&)>& on_event,
                  const std::atomic<bool>& stop) {
  std::string rv;
  bool need_list = true;
  const std::string kind_s(kind);
  while (!stop.load()) {
    if (need_list) {
      ListOptions lo;
      lo.label_selector = options.label_selector;
      auto l = client.List(kind, ns, lo);
      if (!l || !l->ok()) {
        LogError("kube list %s: %s", kind_s.c_str(),
                 l ? DescribeFailure(*l).c_str() : l.error().c_str());
        SleepUnlessStopped(options.retry_ms, stop);
        continue;
      }
      for (const auto& item : l->body["items"]) on_event("ADDED", item);
      if (options.on_list) options.on_list();
      rv = l->body.contains("metadata") ? l->body["metadata"].value("resourceVersion", "") : "";
      need_list = false;
    }
    ListOptions wo;
    wo.label_selector = options.label_selector;
    wo.resource_version = rv;
    wo.timeout_seconds = options.timeout_seconds;
    bool gone = false;
    auto r = client.WatchOnce(
        kind, ns, wo,
        [&](const WatchEvent& ev) {
          if (ev.type == "ERROR") {
            int code = ev.object.is_object() ? ev.object.value("code", 0) : 0;
            if (code == 410) {
              gone = true;
            } else {
              LogError("kube watch %s: error event %s", kind_s.c_str(), ev.object.dump().c_str());
              gone = true;  // unknown state: start over from a fresh list
            }
            return false;
          }
          if (ev.object.is_object() && ev.object.contains("metadata")) {
            std::string v = ev.object["metadata"].value("resourceVersion", "");
            if (!v.empty()) rv = v;
          }
          if (ev.type != "BOOKMARK") on_event(ev.type, ev.object);
          return !stop.load();
        },
        &stop);
    if (stop.load()) break;
    if (!r) {
      LogError("kube watch %s: %s", kind_s.c_str(), r.error().c_str());
      need_list = true;
      SleepUnlessStopped(options.retry_ms, stop);
    } else if (*r == 410 || gone) {
      LogDebug("kube watch %s: resourceVersion %s expired, listing again", kind_s.c_str(),
               rv.c_str());
      need_list = true;
    } else if (*r != 200) {
      LogError("kube watch %s: HTTP %ld", kind_s.c_str(), *r);
      need_list = true;
      SleepUnlessStopped(options.retry_ms, stop);
    }
  }
}

}  // namespace shoal::kube
