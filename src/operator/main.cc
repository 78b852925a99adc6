// shoal-operator: reconciles Shoal's custom resources (shoal.dev/v1alpha1; with --slinky-api
// also Slinky's slinky.slurm.net/v1beta1) into pods, services and Shoal node state. Talks to the
// Kubernetes API (--api URL, --kubeconfig FILE, or the in-cluster service account) and to shoalctld
// over Shoal's RPC with a token it signs.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "operator/health.h"
#include "operator/kube/client.h"
#include "operator/kube/leader.h"
#include "operator/leader_exec.h"
#include "operator/manager.h"
#include "operator/shoal_api_cli.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

void Usage(FILE* out) {
  std::fprintf(out,
               "Usage: shoal-operator [options]\n"
               "  --api URL                 Kubernetes API server (plain http or https)\n"
               "  --kubeconfig FILE         kubeconfig (current context)\n"
               "                            (neither: in-cluster service account)\n"
               "  --namespace NS            watch only NS (default: all namespaces)\n"
               "  --leader-elect            run only while holding the Lease\n"
               "  --lease-name NAME         Lease name (shoal-operator)\n"
               "  --lease-namespace NS      Lease namespace (--namespace, the pod's, or default)\n"
               "  --lease-duration-seconds N  (15)\n"
               "  --identity ID             leader election identity (hostname)\n"
               "  --resync-seconds N        full reconcile period (30)\n"
               "  --watch-timeout-seconds N  server-side watch timeout (300)\n"
               "  --health-port N           /livez, /readyz and /metrics (8081; 0 = off)\n"
               "  --controller-address H:P  shoalctld address for every Controller\n"
               "  --shoal-user NAME         user the operator's tokens name (root)\n"
               "  --slinky-api              also reconcile Slinky's slinky.slurm.net/v1beta1\n"
               "                            resources (docs/kubernetes-slinky.md)\n"
               "  --slinky-image-registry R  their pods' images: R/shoal/<component>:TAG\n"
               "  --slinky-image-tag TAG    (latest)\n"
               "  -v                        debug logging\n"
               "       shoal-operator shoal-api [--controller-address H:P] [--jwt-key-file F]\n"
               "                            ping|nodes|drain|undrain|down|comment|... (debug)\n"
               "       shoal-operator leader-exec --lease-name NAME ... -- COMMAND [ARG...]\n"
               "                            run COMMAND while holding a Lease (HA)\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shoal;
  if (argc > 1 && std::string(argv[1]) == "shoal-api")
    return op::RunShoalApiCommand(std::vector<std::string>(argv + 2, argv + argc));
  if (argc > 1 && std::string(argv[1]) == "leader-exec")
    return op::RunLeaderExec(std::vector<std::string>(argv + 2, argv + argc));
  std::string api, kubeconfig, lease_ns, controller_address;
  op::ManagerConfig mc;
  kube::LeaderConfig lc;
  lc.identity = kube::HostnameOr("shoal-operator");
  bool leader_elect = false;
  int health_port = 8081;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    size_t eq = a.find('=');
    bool inline_value = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto next = [&](std::string* out) {
      if (inline_value) {
        *out = value;
        return true;
      }
      if (i + 1 >= argc) {
        std::fprintf(stderr, "shoal-operator: %s needs a value\n", a.c_str());
        return false;
      }
      *out = argv[++i];
      return true;
    };
    auto next_int = [&](int* out) {
      std::string v;
      if (!next(&v)) return false;
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 0 || n > 1000000) {
        std::fprintf(stderr, "shoal-operator: %s: bad number '%s'\n", a.c_str(), v.c_str());
        return false;
      }
      *out = static_cast<int>(n);
      return true;
    };
    bool ok = true;
    if (a == "--api") {
      ok = next(&api);
    } else if (a == "--kubeconfig") {
      ok = next(&kubeconfig);
    } else if (a == "--namespace") {
      ok = next(&mc.ns);
    } else if (a == "--leader-elect") {
      leader_elect = !inline_value || value == "true" || value == "1";
    } else if (a == "--lease-name") {
      ok = next(&lc.name);
    } else if (a == "--lease-namespace") {
      ok = next(&lease_ns);
    } else if (a == "--lease-duration-seconds") {
      ok = next_int(&lc.lease_duration_s);
    } else if (a == "--identity") {
      ok = next(&lc.identity);
    } else if (a == "--resync-seconds") {
      ok = next_int(&mc.resync_seconds);
    } else if (a == "--watch-timeout-seconds") {
      ok = next_int(&mc.watch_timeout_seconds);
    } else if (a == "--health-port") {
      ok = next_int(&health_port);
    } else if (a == "--controller-address") {
      ok = next(&mc.controller_address);
    } else if (a == "--shoal-user") {
      ok = next(&mc.shoal_user);
    } else if (a == "--slinky-api") {
      mc.slinky_api = !inline_value || value == "true" || value == "1";
    } else if (a == "--slinky-image-registry") {
      ok = next(&mc.slinky.image_registry);
    } else if (a == "--slinky-image-tag") {
      ok = next(&mc.slinky.image_tag);
    } else if (a == "-v" || a == "-vv" || a == "--verbose") {
      SetLogLevel(LogLevel::kDebug);
    } else if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else if (a == "-V" || a == "--version") {
      std::printf("shoal-operator %s\n", SHOAL_VERSION);
      return 0;
    } else {
      std::fprintf(stderr, "shoal-operator: unknown option %s\n", a.c_str());
      Usage(stderr);
      return 2;
    }
    if (!ok) return 2;
  }
  if (mc.resync_seconds < 1) mc.resync_seconds = 1;
  if (mc.watch_timeout_seconds < 1) mc.watch_timeout_seconds = 1;
  // Renew well inside the lease, and give up (exit) before a successor could take over.
  lc.renew_period_s = std::max(1, lc.lease_duration_s / 3);
  lc.renew_deadline_s = std::max(lc.renew_period_s + 1, lc.lease_duration_s * 2 / 3);

  Result<kube::KubeConfig> cfg = kube::KubeConfig{};
  if (!api.empty()) {
    while (!api.empty() && api.back() == '/') api.pop_back();
    kube::KubeConfig plain;
    plain.server = api;
    cfg = plain;
  } else if (!kubeconfig.empty()) {
    cfg = kube::LoadKubeconfig(kubeconfig);
  } else if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    cfg = kube::LoadKubeconfig(env);
  } else {
    cfg = kube::InClusterConfig();
  }
  if (!cfg) {
    LogError("shoal-operator: %s", cfg.error().c_str());
    return 1;
  }
  if (lease_ns.empty()) lease_ns = !mc.ns.empty() ? mc.ns : kube::PodNamespace();
  lc.ns = lease_ns.empty() ? "default" : lease_ns;

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::atomic<bool> api_ok{false};
  std::atomic<bool> leading{false};
  std::atomic<op::Manager*> manager_ptr{nullptr};
  op::HealthServer health;
  if (health_port > 0) {
    Status s = health.Start(
        health_port,
        [&] {
          op::Manager* m = manager_ptr.load();
          return api_ok.load() && (m == nullptr || m->synced());
        },
        [&] { return op::OperatorMetrics(manager_ptr.load(), leading.load()); });
    // Without probes the operator still works; kubelet then reports what is wrong.
    if (!s.ok()) LogError("shoal-operator: no probe endpoint: %s", s.message().c_str());
  }
  LogInfo("shoal-operator %s starting: api %s, identity %s", SHOAL_VERSION, cfg->server.c_str(),
          lc.identity.c_str());

  std::unique_ptr<kube::KubeClient> lease_client;
  std::unique_ptr<kube::LeaderElector> elector;
  std::thread holder;
  if (leader_elect) {
    lease_client = std::make_unique<kube::KubeClient>(*cfg);
    elector = std::make_unique<kube::LeaderElector>(*lease_client, lc);
    // Readiness for a standby: it reaches the API (it is ready to take over).
    if (auto probe = lease_client->Get("Lease", lc.ns, lc.name); probe) api_ok = true;
    if (!elector->Acquire(g_stop)) return 0;
    api_ok = true;
    holder = std::thread([&] {
      if (!elector->Hold(g_stop)) {
        // As controller-runtime does: a process that lost its lease exits, and its pod restarts
        // as a candidate. Reconciling on would race the new leader.
        LogError("shoal-operator: leadership lost, exiting");
        std::_Exit(1);
      }
    });
  } else {
    kube::KubeClient probe(*cfg);
    if (auto r = probe.Get("Namespace", "", "default"); r) api_ok = true;
  }

  op::Manager manager(*cfg, mc);
  manager_ptr = &manager;
  leading = true;
  api_ok = true;
  manager.Run(g_stop);
  leading = false;
  manager_ptr = nullptr;
  if (holder.joinable()) holder.join();  // releases the lease
  health.Stop();
  LogInfo("shoal-operator: stopped");
  return 0;
}
