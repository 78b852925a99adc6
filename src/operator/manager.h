// The operator's manager: watch threads turn Kubernetes events into keys on a deduplicating
// work queue; one reconcile thread (the only owner of reconcile state) pops a key, observes the
// custom resource and everything it owns or names, asks the kind's planner for a Plan and hands
// it to the Executor. Errors are logged and the key is retried with back-off; nothing throws
// across threads.
#pragma once

#include <atomic>
#include <chrono>
#include <compare>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "operator/kube/client.h"
#include "operator/model/plan.h"
#include "operator/model/slinky.h"
#include "operator/shoal_api.h"

namespace shoal::op {

struct ObjectKey {
  std::string kind, ns, name;
  auto operator<=>(const ObjectKey&) const = default;
  std::string str() const { return kind + " " + ns + "/" + name; }
};

// Keys due at a time; adding a key that is already queued keeps the earlier time, so a burst of
// events for one object makes one reconcile. Thread-safe.
class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;
  void Add(const ObjectKey& key, Clock::duration delay = Clock::duration::zero());
  // Waits up to `wait` for a due key; nullopt on timeout or after Shutdown.
  std::optional<ObjectKey> Pop(Clock::duration wait);
  void Shutdown();
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<ObjectKey, Clock::time_point> due_;
  bool shutdown_ = false;
};

// The six custom resource kinds.
const std::vector<std::string>& CustomKinds();
// What a watch event on `kind` enqueues (pure): a custom resource itself (a NodeSet also its
// Controller); an owned object its shoal.dev (or Slinky: model/slinky.h) controller owner
// (from ownerReferences); a Node every NodeSet and every Controller (topology), spelled
// {"NodeSet", "*", "*"} and {"Controller", "*", "*"} (Slinky's of the kind too); a controller
// pod every NodeSet.
std::vector<ObjectKey> KeysForObject(const std::string& kind, const Json& object);

// Exponential back-off for a key that keeps failing: 1 s, 2 s, 4 s, ... at most 60 s.
std::chrono::seconds BackoffFor(int failures);

struct ManagerConfig {
  std::string ns;  // "" = all namespaces
  int resync_seconds = 30;
  std::string controller_address;  // overrides the address found from the controller pod
  std::string shoal_user = "root";
  int watch_timeout_seconds = 300;
  // --slinky-api: also watch and reconcile slinky.slurm.net/v1beta1 (model/slinky.h).
  bool slinky_api = false;
  SlinkyOptions slinky;
};

using Planner = std::function<Plan(const Observed&)>;

// Counters for the operator's own /metrics (read by the probe thread, hence atomics).
struct OperatorStats {
  std::atomic<uint64_t> reconciles{0};
  std::atomic<uint64_t> reconcile_errors{0};  // observe failures and failed actions
  std::atomic<uint64_t> actions{0};
  std::atomic<uint64_t> conflicts{0};
  std::atomic<uint64_t> reconcile_usec{0};  // total time spent reconciling
};

class Manager {
 public:
  Manager(kube::KubeConfig kube, ManagerConfig config);
  ~Manager();

  // Replaces the planner of a kind (the defaults are the model's Plan* functions).
  void SetPlanner(const std::string& kind, Planner planner) {
    planners_[kind] = std::move(planner);
  }
  // Starts the watches and reconciles until `stop` turns true.
  void Run(const std::atomic<bool>& stop);
  // Whether every watch has listed once.
  bool synced() const { return synced_count_.load() >= watch_count_; }
  const OperatorStats& stats() const { return stats_; }

  // One reconcile of `key` on the calling thread (the reconcile thread, or a test).
  void Reconcile(const ObjectKey& key);

 private:
  void Watch(const std::string& kind, const std::string& ns, const std::string& selector,
             const std::atomic<bool>& stop);
  void Enqueue(const std::string& kind, const std::string& type, const Json& object);
  Status Observe(const ObjectKey& key, Observed* obs, ShoalApi** shoal);
  Status ListOwned(const Json& cr, Observed* obs);
  void AddReferencedObjects(const Json& spec, const std::string& ns, Observed* obs);
  // The Shoal API of the Controller `ctl` (null when its address or key is unknown).
  ShoalApi* ShoalFor(const Json& ctl);
  void Requeue(const ObjectKey& key, bool failed, bool conflict, int after_s);

  kube::KubeConfig kube_config_;
  ManagerConfig config_;
  std::map<std::string, Planner> planners_;
  WorkQueue queue_;
  std::unique_ptr<kube::KubeClient> kube_;  // the reconcile thread's client

  std::mutex known_mu_;
  std::set<ObjectKey> known_;  // custom resources seen by the watches (for resync and fan-out)
  std::map<std::string, std::string> worker_nodes_;  // worker pod "ns/name" -> its k8s node

  std::map<ObjectKey, int> failures_;
  std::map<std::string, std::unique_ptr<ShoalApi>> shoal_;  // by controller "ns/name"
  OperatorStats stats_;
  std::atomic<int> synced_count_{0};
  std::atomic<int> watch_count_{1 << 30};
};

// The operator's /metrics document (OpenMetrics): leadership and reconcile counters; `manager`
// may be null (a standby, or before the manager exists).
std::string OperatorMetrics(const Manager* manager, bool leading);

}  // namespace shoal::op
