// The controller HA launcher (shoal-operator leader-exec): its state machine, and the HA pods
// and RBAC objects the Controller planner makes for it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>

#include "operator/leader_exec_machine.h"
#include "operator/model/desired.h"
#include "operator/model/plan.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

using Phase = LeaderExecMachine::Phase;
using Step = LeaderExecStep;

int Exited(int code) { return (code & 0xff) << 8; }  // a waitpid() status
int Killed(int sig) { return sig & 0x7f; }

TEST(LeaderExecMachine, WaitStatusToExitCode) {
  ASSERT_TRUE(WIFEXITED(Exited(3)));
  ASSERT_TRUE(WIFSIGNALED(Killed(SIGKILL)));
  EXPECT_EQ(ExitCodeForWaitStatus(Exited(0)), 0);
  EXPECT_EQ(ExitCodeForWaitStatus(Exited(3)), 3);
  EXPECT_EQ(ExitCodeForWaitStatus(Killed(SIGKILL)), 137);
  EXPECT_EQ(ExitCodeForWaitStatus(Killed(SIGTERM)), 143);
}

TEST(LeaderExecMachine, CampaignsUntilAcquiredThenStartsTheChild) {
  LeaderExecMachine m(10000);
  EXPECT_EQ(m.phase(), Phase::kCampaigning);
  EXPECT_FALSE(m.child_expected());
  // Renewal results and child exits mean nothing before the Lease is ours.
  EXPECT_EQ(m.OnRenew(RenewResult::kFailed, 99999).step, Step::kNone);
  EXPECT_EQ(m.OnChildExit(Exited(1)).step, Step::kNone);
  EXPECT_EQ(m.OnSignal(SIGHUP).step, Step::kNone);  // nothing to forward it to
  EXPECT_EQ(m.OnAcquired(1000).step, Step::kStartChild);
  EXPECT_EQ(m.phase(), Phase::kLeading);
  EXPECT_TRUE(m.child_expected());
  EXPECT_EQ(m.OnAcquired(2000).step, Step::kNone);  // started once
}

TEST(LeaderExecMachine, SigtermWhileCampaigningExitsCleanly) {
  LeaderExecMachine m(10000);
  auto out = m.OnSignal(SIGTERM);
  EXPECT_EQ(out.step, Step::kExit);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(m.phase(), Phase::kDone);
  EXPECT_EQ(m.OnAcquired(1).step, Step::kNone);  // never starts the child afterwards
}

TEST(LeaderExecMachine, RenewFailuresWithinTheDeadlineAreRetried) {
  LeaderExecMachine m(10000);
  m.OnAcquired(0);
  EXPECT_EQ(m.OnRenew(RenewResult::kFailed, 5000).step, Step::kNone);
  EXPECT_EQ(m.OnRenew(RenewResult::kFailed, 10000).step, Step::kNone);
  // A success restarts the deadline.
  EXPECT_EQ(m.OnRenew(RenewResult::kOk, 10500).step, Step::kNone);
  EXPECT_EQ(m.OnRenew(RenewResult::kFailed, 20000).step, Step::kNone);
  EXPECT_EQ(m.phase(), Phase::kLeading);
}

TEST(LeaderExecMachine, LostLeaseKillsTheChildAndExitsWithoutRelease) {
  LeaderExecMachine m(10000);
  m.OnAcquired(0);
  m.OnRenew(RenewResult::kOk, 5000);
  auto out = m.OnRenew(RenewResult::kFailed, 15001);
  EXPECT_EQ(out.step, Step::kKillChildAndExit);
  EXPECT_EQ(out.signal, SIGKILL);
  EXPECT_NE(out.exit_code, 0);  // the pod restarts and campaigns again
  EXPECT_EQ(m.phase(), Phase::kDone);
  EXPECT_EQ(m.OnChildExit(Killed(SIGKILL)).step, Step::kNone);  // no release after that
}

TEST(LeaderExecMachine, ChildExitReleasesAndPassesItsStatusOn) {
  LeaderExecMachine m(10000);
  m.OnAcquired(0);
  auto out = m.OnChildExit(Killed(SIGKILL));
  EXPECT_EQ(out.step, Step::kReleaseAndExit);
  EXPECT_EQ(out.exit_code, 137);
  EXPECT_TRUE(out.let_peer_take_over);  // it failed: the peer should get the Lease first
  EXPECT_EQ(m.phase(), Phase::kDone);
  LeaderExecMachine ok(10000);
  ok.OnAcquired(0);
  EXPECT_FALSE(ok.OnChildExit(Exited(0)).let_peer_take_over);
}

TEST(LeaderExecMachine, SignalsAreForwardedAndSigtermStopsThenReleases) {
  LeaderExecMachine m(10000);
  m.OnAcquired(0);
  auto hup = m.OnSignal(SIGHUP);  // e.g. a reconfigure: forwarded, still leading
  EXPECT_EQ(hup.step, Step::kSignalChild);
  EXPECT_EQ(hup.signal, SIGHUP);
  EXPECT_EQ(m.phase(), Phase::kLeading);
  auto term = m.OnSignal(SIGTERM);
  EXPECT_EQ(term.step, Step::kSignalChild);
  EXPECT_EQ(term.signal, SIGTERM);
  EXPECT_EQ(m.phase(), Phase::kStopping);
  // The child still runs (and writes the state) while it stops: the Lease is still renewed.
  EXPECT_EQ(m.OnRenew(RenewResult::kOk, 5000).step, Step::kNone);
  EXPECT_EQ(m.OnSignal(SIGTERM).step, Step::kSignalChild);
  auto out = m.OnChildExit(Killed(SIGTERM));
  EXPECT_EQ(out.step, Step::kReleaseAndExit);
  EXPECT_EQ(out.exit_code, 143);
  EXPECT_FALSE(out.let_peer_take_over);  // the pod is going away: exit at once
}

TEST(LeaderExecMachine, LostLeaseWhileStoppingStillKills) {
  LeaderExecMachine m(10000);
  m.OnAcquired(0);
  m.OnSignal(SIGTERM);
  EXPECT_EQ(m.OnRenew(RenewResult::kFailed, 10001).step, Step::kKillChildAndExit);
}

Json HaController() {
  return Json{{"apiVersion", "shoal.dev/v1alpha1"},
              {"kind", "Controller"},
              {"metadata", {{"name", "c"}, {"namespace", "hpc"}, {"uid", "u"}, {"generation", 1}}},
              {"spec", {{"clusterName", "lab"}, {"ha", {{"enabled", true}}}}}};
}

TEST(ControllerHa, PodsRunShoalctldUnderTheLauncher) {
  Json cr = HaController();
  auto spec = *ParseControllerSpec(cr);
  Json pod = ControllerPod(cr, spec, 1);
  const Json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["command"],
            Json::array({"shoal-operator", "leader-exec", "--lease-name", "c-ctld",
                         "--lease-namespace", "hpc", "--identity", "$(POD_NAME)", "--health-port",
                         "8081", "--", "shoalctld", "-D", "-f", "/etc/shoal/conf/slurm.conf"}));
  EXPECT_NE(c["env"].dump().find("\"fieldPath\":\"metadata.name\""), std::string::npos);
  EXPECT_EQ(pod["spec"]["serviceAccountName"], "c-ctld");
  // A standby runs no shoalctld: liveness asks the launcher, readiness shoalctld.
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"], 8081);
  EXPECT_EQ(c["startupProbe"]["httpGet"]["port"], 8081);
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"], 6817);

  // Without HA nothing changes: shoalctld alone, no service account.
  Json single = cr;
  single["spec"].erase("ha");
  Json p1 = ControllerPod(single, *ParseControllerSpec(single), 0);
  EXPECT_EQ(p1["spec"]["containers"][0]["command"][0], "shoalctld");
  EXPECT_FALSE(p1["spec"].contains("serviceAccountName"));
}

TEST(ControllerHa, RbacGrantsOnlyItsLease) {
  Json cr = HaController();
  Observed o;
  o.cr = cr;
  o.now = 1767323045;
  Plan p = PlanController(o);
  std::map<std::string, Json> applied;
  std::vector<std::string> order;
  for (const Action& a : p.actions) {
    if (a.kind != Action::Kind::kApply) continue;
    std::string key = Str(a.object, "kind") + "/" + Str(a.object, "metadata.name");
    applied[key] = a.object;
    order.push_back(key);
  }
  ASSERT_TRUE(applied.count("ServiceAccount/c-ctld"));
  ASSERT_TRUE(applied.count("Role/c-ctld"));
  ASSERT_TRUE(applied.count("RoleBinding/c-ctld"));
  // The service account exists before a pod names it.
  auto pos = [&](const std::string& k) { return std::find(order.begin(), order.end(), k); };
  EXPECT_LT(pos("ServiceAccount/c-ctld"), pos("Pod/c-0"));
  const Json& rules = applied["Role/c-ctld"]["rules"];
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0]["verbs"], Json::array({"create"}));
  EXPECT_EQ(rules[1]["resourceNames"], Json::array({"c-ctld"}));
  EXPECT_EQ(rules[1]["verbs"], Json::array({"get", "update"}));
  for (const Json& r : rules) EXPECT_EQ(r["resources"], Json::array({"leases"}));
  const Json& rb = applied["RoleBinding/c-ctld"];
  EXPECT_EQ(rb["roleRef"]["name"], "c-ctld");
  EXPECT_EQ(rb["subjects"][0]["name"], "c-ctld");
  EXPECT_EQ(rb["subjects"][0]["namespace"], "hpc");
  EXPECT_EQ(rb["metadata"]["ownerReferences"][0]["uid"], "u");

  Json single = cr;
  single["spec"].erase("ha");
  o.cr = single;
  for (const Action& a : PlanController(o).actions)
    EXPECT_NE(Str(a.object, "kind"), "Role") << "no RBAC without HA";
}

}  // namespace
}  // namespace shoal::op
