#include "operator/manager.h"

#include <chrono>
#include <ctime>
#include <thread>

#include "common/log.h"
#include "common/openmetrics.h"
#include "operator/executor.h"
#include "operator/model/crd_types.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

constexpr const char* kManagedSelector = "app.kubernetes.io/managed-by=shoal-operator";
const std::vector<std::string> kOwnedKinds = {"Service", "ConfigMap", "Secret",
                                              "PersistentVolumeClaim", "PodDisruptionBudget"};

bool IsCustomKind(const std::string& kind) {
  std::string base = BaseKind(kind);
  for (const auto& k : CustomKinds())
    if (k == base) return true;
  return false;
}

bool OwnedBy(const Json& object, const std::string& uid) {
  const Json* refs = Find(object, "metadata.ownerReferences");
  if (!refs || !refs->is_array()) return false;
  for (const auto& r : *refs)
    if (r.is_object() && r.value("uid", "") == uid) return true;
  return false;
}

// The controller pod to talk to: the one the Controller's status names as leader if it is
// ready, else the first ready one.
std::string ReadyControllerIp(const std::vector<Json>& pods, const std::string& leader) {
  std::string first;
  for (const auto& p : pods) {
    if (!PodReady(p) || PodTerminating(p)) continue;
    std::string ip = Str(p, "status.podIP");
    if (ip.empty()) continue;
    if (!leader.empty() && PodName(p) == leader) return ip;
    if (first.empty()) first = ip;
  }
  return first;
}

std::string HostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

}  // namespace

// ---- WorkQueue ----

void WorkQueue::Add(const ObjectKey& key, Clock::duration delay) {
  auto when = Clock::now() + delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = due_.find(key);
    if (it == due_.end())
      due_.emplace(key, when);
    else if (when < it->second)
      it->second = when;
  }
  cv_.notify_one();
}

std::optional<ObjectKey> WorkQueue::Pop(Clock::duration wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = Clock::now() + wait;
  while (!shutdown_) {
    auto now = Clock::now();
    auto best = due_.end();
    for (auto it = due_.begin(); it != due_.end(); ++it)
      if (best == due_.end() || it->second < best->second) best = it;
    if (best != due_.end() && best->second <= now) {
      ObjectKey key = best->first;
      due_.erase(best);
      return key;
    }
    if (now >= deadline) return std::nullopt;
    auto until = deadline;
    if (best != due_.end() && best->second < until) until = best->second;
    cv_.wait_until(lock, until);
  }
  return std::nullopt;
}

void WorkQueue::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
}

size_t WorkQueue::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return due_.size();
}

// ---- pure helpers ----

const std::vector<std::string>& CustomKinds() {
  static const std::vector<std::string> kinds = {"Controller", "NodeSet", "LoginSet",
                                                 "Accounting", "RestApi", "Token"};
  return kinds;
}

std::vector<ObjectKey> KeysForObject(const std::string& kind, const Json& object) {
  std::vector<ObjectKey> keys;
  std::string ns = Str(object, "metadata.namespace");
  std::string name = Str(object, "metadata.name");
  if (IsCustomKind(kind)) {
    keys.push_back({kind, ns, name});
    if (BaseKind(kind) == "NodeSet") {
      std::string ctl = Str(object, "spec.controllerRef.name");
      std::string ctl_ns = Str(object, "spec.controllerRef.namespace", ns);
      if (!ctl.empty())
        keys.push_back({IsSlinkyKind(kind) ? SlinkyKind("Controller") : "Controller", ctl_ns, ctl});
    }
    return keys;
  }
  // Nodes: cordons and features (NodeSets), topology annotations and labels (Controllers).
  if (kind == "Node") return {{"NodeSet", "*", "*"}, {"Controller", "*", "*"}};
  if (const Json* refs = Find(object, "metadata.ownerReferences"); refs && refs->is_array()) {
    for (const auto& r : *refs) {
      if (!r.is_object() || !r.value("controller", false)) continue;
      std::string api = r.value("apiVersion", "");
      std::string owner_kind = r.value("kind", "");
      if (api.rfind("shoal.dev/", 0) == 0 && IsCustomKind(owner_kind))
        keys.push_back({owner_kind, ns, r.value("name", "")});
      else if (IsSlinky(r) && IsCustomKind(owner_kind))
        keys.push_back({SlinkyKind(owner_kind), ns, r.value("name", "")});
    }
  }
  // A controller pod coming or going changes where every NodeSet's Shoal API is.
  if (kind == "Pod" && PodLabel(object, kLabelName) == "shoal-controller")
    keys.push_back({"NodeSet", "*", "*"});
  return keys;
}

std::chrono::seconds BackoffFor(int failures) {
  if (failures <= 0) return std::chrono::seconds(0);
  if (failures > 6) return std::chrono::seconds(60);
  return std::chrono::seconds(std::min(60, 1 << (failures - 1)));
}

// ---- Manager ----

Manager::Manager(kube::KubeConfig kube, ManagerConfig config)
    : kube_config_(std::move(kube)), config_(std::move(config)) {
  planners_["Controller"] = PlanController;
  planners_["NodeSet"] = PlanNodeSet;
  planners_["LoginSet"] = PlanLoginSet;
  planners_["Accounting"] = PlanAccounting;
  planners_["RestApi"] = PlanRestApi;
  planners_["Token"] = PlanToken;
  if (config_.slinky_api) {
    // Slinky's kinds: the same planners, through the translation.
    for (const auto& kind : CustomKinds()) {
      planners_[SlinkyKind(kind)] = [planner = planners_[kind],
                                     options = config_.slinky](const Observed& obs) {
        return PlanSlinky(obs, planner, options);
      };
    }
  }
  kube_ = std::make_unique<kube::KubeClient>(kube_config_);
}

Manager::~Manager() = default;

void Manager::Enqueue(const std::string& kind, const std::string& type, const Json& object) {
  std::vector<ObjectKey> keys = KeysForObject(kind, object);
  if (kind == "Pod" && !PodLabel(object, kLabelNodeSet).empty()) {
    // A worker placed on a Kubernetes node, or gone: the Controllers' topology.conf follows.
    // Only on such changes (its status changes often).
    std::string pod = Str(object, "metadata.namespace") + "/" + Str(object, "metadata.name");
    std::string where = PodNodeName(object) + (PodTerminating(object) ? "#terminating" : "");
    bool moved;
    {
      std::lock_guard<std::mutex> lock(known_mu_);
      auto it = worker_nodes_.find(pod);
      moved = type == "DELETED" || it == worker_nodes_.end() || it->second != where;
      if (type == "DELETED")
        worker_nodes_.erase(pod);
      else
        worker_nodes_[pod] = where;
    }
    if (moved) keys.push_back({"Controller", "*", "*"});
  }
  for (const auto& key : keys) {
    if (key.name == "*") {
      std::vector<ObjectKey> nodesets;
      {
        std::lock_guard<std::mutex> lock(known_mu_);
        for (const auto& k : known_)
          if (BaseKind(k.kind) == key.kind) nodesets.push_back(k);
      }
      for (const auto& k : nodesets) queue_.Add(k);
      continue;
    }
    if (IsCustomKind(kind) && key.kind == kind) {
      std::lock_guard<std::mutex> lock(known_mu_);
      if (type == "DELETED")
        known_.erase(key);
      else
        known_.insert(key);
    }
    queue_.Add(key);
  }
}

void Manager::Watch(const std::string& kind, const std::string& ns, const std::string& selector,
                    const std::atomic<bool>& stop) {
  kube::KubeClient client(kube_config_);
  kube::WatchLoopOptions o;
  o.label_selector = selector;
  o.timeout_seconds = config_.watch_timeout_seconds;
  bool counted = false;
  o.on_list = [&] {
    if (!counted) synced_count_++;
    counted = true;
  };
  kube::RunWatchLoop(
      client, kind, ns, o,
      [&](const std::string& type, const Json& object) { Enqueue(kind, type, object); }, stop);
}

void Manager::Run(const std::atomic<bool>& stop) {
  std::vector<std::thread> threads;
  std::vector<std::pair<std::string, std::string>> watches;  // kind, selector
  for (const auto& k : CustomKinds()) watches.emplace_back(k, "");
  if (config_.slinky_api)
    for (const auto& k : SlinkyKinds()) watches.emplace_back(k, "");
  watches.emplace_back("Pod", kManagedSelector);
  for (const auto& k : kOwnedKinds) watches.emplace_back(k, kManagedSelector);
  watches.emplace_back("Node", "");
  watch_count_.store(static_cast<int>(watches.size()));
  for (const auto& [kind, selector] : watches) {
    std::string ns = kind == "Node" ? "" : config_.ns;
    threads.emplace_back(
        [this, kind = kind, ns, selector = selector, &stop] { Watch(kind, ns, selector, stop); });
  }
  LogInfo("manager: watching %d kinds in %s", watch_count_.load(),
          config_.ns.empty() ? "all namespaces" : config_.ns.c_str());
  auto next_resync =
      std::chrono::steady_clock::now() + std::chrono::seconds(config_.resync_seconds);
  while (!stop.load()) {
    if (std::chrono::steady_clock::now() >= next_resync) {
      std::vector<ObjectKey> all;
      {
        std::lock_guard<std::mutex> lock(known_mu_);
        all.assign(known_.begin(), known_.end());
      }
      for (const auto& k : all) queue_.Add(k);
      next_resync = std::chrono::steady_clock::now() + std::chrono::seconds(config_.resync_seconds);
    }
    auto key = queue_.Pop(std::chrono::milliseconds(500));
    if (key) Reconcile(*key);
  }
  queue_.Shutdown();
  for (auto& t : threads) t.join();
}

void Manager::Requeue(const ObjectKey& key, bool failed, bool conflict, int after_s) {
  if (failed) {
    int n = ++failures_[key];
    queue_.Add(key, BackoffFor(n));
    return;
  }
  failures_.erase(key);
  if (conflict)
    queue_.Add(key, std::chrono::seconds(1));
  else if (after_s > 0)
    queue_.Add(key, std::chrono::seconds(after_s));
}

void Manager::Reconcile(const ObjectKey& key) {
  auto planner = planners_.find(key.kind);
  if (planner == planners_.end()) return;
  auto started = std::chrono::steady_clock::now();
  ++stats_.reconciles;
  struct Timer {  // counts the time on every way out
    OperatorStats& stats;
    std::chrono::steady_clock::time_point start;
    ~Timer() {
      stats.reconcile_usec +=
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
    }
  } timer{stats_, started};
  Observed obs;
  ShoalApi* shoal = nullptr;
  Status s = Observe(key, &obs, &shoal);
  if (!s.ok()) {
    LogError("reconcile %s: observe: %s", key.str().c_str(), s.message().c_str());
    ++stats_.reconcile_errors;
    Requeue(key, true, false, 0);
    return;
  }
  if (obs.cr.is_null()) {  // deleted: its objects go with it (owner references)
    failures_.erase(key);
    return;
  }
  Plan plan = planner->second(obs);
  for (const auto& line : plan.log) LogDebug("reconcile %s: %s", key.str().c_str(), line.c_str());
  Executor exec(*kube_, shoal);
  ExecResult r = exec.Run(plan, obs.cr);
  stats_.actions += plan.actions.size();
  if (r.failures > 0) ++stats_.reconcile_errors;
  if (r.conflict) ++stats_.conflicts;
  Requeue(key, r.failures > 0, r.conflict, plan.requeue_after_s);
  LogDebug("reconcile %s: %zu actions, %d failed", key.str().c_str(), plan.actions.size(),
           r.failures);
}

Status Manager::ListOwned(const Json& cr, Observed* obs) {
  std::string ns = Str(cr, "metadata.namespace");
  std::string uid = Str(cr, "metadata.uid");
  kube::ListOptions o;
  o.label_selector =
      std::string(kManagedSelector) + "," + kLabelInstance + "=" + Str(cr, "metadata.name");
  {
    auto r = kube_->List("Pod", ns, o);
    if (!r || !r->ok())
      return Error(ErrorCode::kUnavailable,
                   "list pods: " + (r ? kube::DescribeFailure(*r) : r.error()));
    for (const auto& item : r->body["items"])
      if (OwnedBy(item, uid)) obs->pods.push_back(item);
  }
  for (const auto& kind : kOwnedKinds) {
    auto r = kube_->List(kind, ns, o);
    if (!r || !r->ok())
      return Error(ErrorCode::kUnavailable,
                   "list " + kind + ": " + (r ? kube::DescribeFailure(*r) : r.error()));
    for (auto item : r->body["items"]) {
      if (!OwnedBy(item, uid)) continue;
      // List items carry no kind; the planners match on it.
      item["kind"] = kind;
      item["apiVersion"] = std::string(kube::LookupKind(kind)->api_version);
      obs->owned.push_back(std::move(item));
    }
  }
  for (auto& p : obs->pods) {
    p["kind"] = "Pod";
    p["apiVersion"] = "v1";
  }
  return Status::Ok();
}

void Manager::AddReferencedObjects(const Json& spec, const std::string& ns, Observed* obs) {
  if (!spec.is_object()) return;
  auto add = [&](const std::string& kind, const std::string& name) {
    std::string k = kind + "/" + name;
    if (name.empty() || obs->related.contains(k)) return;
    auto r = kube_->Get(kind, ns, name);
    if (r && r->ok()) obs->related[k] = r->body;
  };
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    const std::string& field = it.key();
    const Json& v = it.value();
    auto ends_with = [&](const char* suffix) {
      std::string s(suffix);
      return field.size() >= s.size() && field.compare(field.size() - s.size(), s.size(), s) == 0;
    };
    if (v.is_object() && (ends_with("KeyRef") || field == "sssdConfRef")) {
      add("Secret", v.value("name", ""));
      if (field == "sssdConfRef") add("ConfigMap", v.value("name", ""));
    } else if (v.is_array() && ends_with("Refs")) {
      for (const auto& ref : v)
        if (ref.is_object()) add("ConfigMap", ref.value("name", ""));
    } else if (v.is_object() && field != "template") {
      AddReferencedObjects(v, ns, obs);  // storageConfig.passwordKeyRef and the like
    }
  }
}

ShoalApi* Manager::ShoalFor(const Json& ctl_cr) {
  // A Slinky Controller is read in the shoal.dev shape (jwtHs256KeyRef, defaults).
  const Json ctl =
      IsSlinky(ctl_cr) ? TranslateSlinky(ctl_cr, Json::object(), config_.slinky).cr : ctl_cr;
  std::string ns = Str(ctl, "metadata.namespace");
  std::string name = Str(ctl, "metadata.name");
  auto spec = ParseControllerSpec(ctl);
  if (!spec) return nullptr;
  std::string address = config_.controller_address;
  if (address.empty()) {
    kube::ListOptions o;
    o.label_selector = std::string(kManagedSelector) + "," + kLabelInstance + "=" + name + "," +
                       kLabelName + "=shoal-controller";
    auto pods = kube_->List("Pod", ns, o);
    if (!pods || !pods->ok()) return nullptr;
    std::vector<Json> list(pods->body["items"].begin(), pods->body["items"].end());
    std::string ip = ReadyControllerIp(list, Str(ctl, "status.leader"));
    if (ip.empty()) return nullptr;
    address = HostPort(ip, spec->port);
  }
  std::string key;
  if (spec->jwt_key_ref.set()) {
    auto secret = kube_->Get("Secret", ns, spec->jwt_key_ref.name);
    if (secret && secret->ok()) {
      const Json* data = Find(secret->body, "data");
      if (data && data->is_object() && data->contains(spec->jwt_key_ref.key) &&
          (*data)[spec->jwt_key_ref.key].is_string()) {
        auto k = Base64Decode((*data)[spec->jwt_key_ref.key].get<std::string>());
        if (k) key = *k;
      }
    }
  }
  if (key.empty()) return nullptr;
  auto& api = shoal_[ns + "/" + name];
  if (!api) {
    ShoalApiConfig c;
    c.user = config_.shoal_user;
    api = std::make_unique<ShoalApi>(c);
  }
  api->SetAddress(address);
  api->SetKey(key);
  return api.get();
}

Status Manager::Observe(const ObjectKey& key, Observed* obs, ShoalApi** shoal) {
  obs->now = std::time(nullptr);
  auto cr = kube_->Get(key.kind, key.ns, key.name);
  if (!cr) return cr.status();
  if (kube::IsNotFound(*cr)) return Status::Ok();
  if (!cr->ok()) return Error(ErrorCode::kUnavailable, "get: " + kube::DescribeFailure(*cr));
  obs->cr = cr->body;
  Status s = ListOwned(obs->cr, obs);
  if (!s.ok()) return s;
  // A Slinky resource is read in the shoal.dev shape (its references are named the same way),
  // and its related resources are Slinky's too (PlanSlinky translates them).
  const bool slinky = IsSlinkyKind(key.kind);
  const std::string kind = BaseKind(key.kind);
  auto group_kind = [&](const std::string& k) { return slinky ? SlinkyKind(k) : k; };
  const Json view = slinky ? TranslateSlinky(obs->cr, Json::object(), config_.slinky).cr : obs->cr;
  const Json* spec = Find(view, "spec");
  if (spec) AddReferencedObjects(*spec, key.ns, obs);

  Json ctl;  // the Controller whose Shoal API this kind uses
  if (kind == "Controller") {
    ctl = obs->cr;
    kube::ListOptions none;
    auto sets = kube_->List(group_kind("NodeSet"), config_.ns, none);
    if (!sets || !sets->ok()) return Error(ErrorCode::kUnavailable, "list nodesets");
    Json mine = Json::array();
    for (auto item : sets->body["items"]) {
      std::string ref_ns =
          Str(item, "spec.controllerRef.namespace", Str(item, "metadata.namespace"));
      if (Str(item, "spec.controllerRef.name") == key.name && ref_ns == key.ns) {
        item["kind"] = "NodeSet";
        item["apiVersion"] = slinky ? kSlinkyGroupVersion : kGroupVersion;
        mine.push_back(std::move(item));
      }
    }
    obs->related["NodeSets"] = std::move(mine);
    std::string acct = Str(view, "spec.accountingRef.name");
    if (!acct.empty()) {
      auto a = kube_->Get(group_kind("Accounting"), key.ns, acct);
      if (a && a->ok()) obs->related["Accounting"] = a->body;
    }
    if (!Str(view, "spec.topology.plugin").empty()) {
      // spec.topology: the Kubernetes nodes and where this Controller's workers run.
      auto nodes = kube_->List("Node", "", {});
      if (!nodes || !nodes->ok()) return Error(ErrorCode::kUnavailable, "list nodes");
      for (const auto& n : nodes->body["items"]) obs->k8s_nodes.push_back(n);
      Json workers = Json::array();
      for (const auto& set : obs->related["NodeSets"]) {
        kube::ListOptions o;
        o.label_selector =
            std::string(kManagedSelector) + "," + kLabelNodeSet + "=" + Str(set, "metadata.name");
        std::string set_ns = Str(set, "metadata.namespace");
        auto pods = kube_->List("Pod", set_ns, o);
        if (!pods || !pods->ok()) return Error(ErrorCode::kUnavailable, "list worker pods");
        std::string uid = Str(set, "metadata.uid");
        for (const auto& p : pods->body["items"])
          if (OwnedBy(p, uid)) workers.push_back(p);
      }
      obs->related["WorkerPods"] = std::move(workers);
    }
  } else if (kind == "NodeSet" || kind == "LoginSet" || kind == "RestApi") {
    std::string name = Str(view, "spec.controllerRef.name");
    std::string ns = Str(view, "spec.controllerRef.namespace", key.ns);
    if (!name.empty()) {
      auto c = kube_->Get(group_kind("Controller"), ns, name);
      if (c && c->ok()) {
        ctl = c->body;
        obs->related["Controller"] = ctl;
        Json ctl_view = slinky ? TranslateSlinky(ctl, Json::object(), config_.slinky).cr : ctl;
        if (const Json* cs = Find(ctl_view, "spec")) AddReferencedObjects(*cs, ns, obs);
      }
    }
  } else if (kind == "Token") {
    std::string name = Str(view, "spec.jwtKeyRef.name");
    std::string k = Str(view, "spec.jwtKeyRef.key", "jwt.key");
    if (obs->related.contains("Secret/" + name)) {
      const Json* data = Find(obs->related["Secret/" + name], "data");
      if (data && data->is_object() && data->contains(k) && (*data)[k].is_string()) {
        auto v = Base64Decode((*data)[k].get<std::string>());
        if (v) obs->related["jwtKey"] = *v;
      }
    }
  }
  if (kind == "NodeSet") {
    auto nodes = kube_->List("Node", "", {});
    if (!nodes || !nodes->ok()) return Error(ErrorCode::kUnavailable, "list nodes");
    for (const auto& n : nodes->body["items"]) obs->k8s_nodes.push_back(n);
  }
  if ((kind == "NodeSet" || kind == "Controller") && ctl.is_object()) {
    *shoal = ShoalFor(ctl);
    if (*shoal) {
      auto nodes = (*shoal)->ListNodes();
      if (nodes)
        obs->shoal_nodes = std::move(*nodes);
      else
        LogDebug("reconcile %s: shoal nodes unknown: %s", key.str().c_str(), nodes.error().c_str());
    }
  }
  return Status::Ok();
}

std::string OperatorMetrics(const Manager* manager, bool leading) {
  OpenMetricsWriter w;
  w.Gauge("shoal_operator_leader", "1 when this replica holds the Lease and reconciles",
          uint64_t{leading ? 1u : 0u});
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    w.Family(name, "counter", help);
    w.Sample(std::string(name) + "_total", v);
  };
  const OperatorStats* st = manager ? &manager->stats() : nullptr;
  counter("shoal_operator_reconciles", "Reconciles run", st ? st->reconciles.load() : 0);
  counter("shoal_operator_reconcile_errors", "Reconciles that failed to observe or act",
          st ? st->reconcile_errors.load() : 0);
  counter("shoal_operator_actions", "Planned actions carried out", st ? st->actions.load() : 0);
  counter("shoal_operator_conflicts", "Reconciles requeued on a write conflict",
          st ? st->conflicts.load() : 0);
  w.Family("shoal_operator_reconcile_seconds", "counter", "Time spent reconciling");
  w.Sample("shoal_operator_reconcile_seconds_total", {},
           st ? static_cast<double>(st->reconcile_usec.load()) / 1e6 : 0.0);
  return w.Finish();
}

}  // namespace shoal::op
