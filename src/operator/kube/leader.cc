#include "operator/kube/leader.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include "common/log.h"
#include "operator/model/util.h"

namespace shoal::kube {
namespace {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SleepUnlessStopped(int seconds, const std::atomic<bool>& stop) {
  for (int waited = 0; waited < seconds * 10 && !stop.load(); ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

const Json& Spec(const Json& lease) {
  static const Json kEmpty = Json::object();
  if (!lease.is_object()) return kEmpty;
  auto it = lease.find("spec");
  return it != lease.end() && it->is_object() ? *it : kEmpty;
}

}  // namespace

std::string FormatMicroTime(int64_t us) {
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  int64_t frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(frac));
  return buf;
}

LeaseAction DecideLease(const Json& lease, std::string_view identity, int64_t now_us) {
  if (!lease.is_object()) return LeaseAction::kCreate;
  const Json& spec = Spec(lease);
  std::string holder = spec.value("holderIdentity", "");
  if (holder == identity && !holder.empty()) return LeaseAction::kRenew;
  if (holder.empty()) return LeaseAction::kTakeOver;
  int64_t duration = spec.value("leaseDurationSeconds", 15);
  auto renew = op::ParseRfc3339Micros(spec.value("renewTime", spec.value("acquireTime", "")));
  // A lease whose time cannot be read is treated as expired: nobody could renew it usefully.
  if (!renew || *renew + duration * 1000000 < now_us) return LeaseAction::kTakeOver;
  return LeaseAction::kWait;
}

Json LeaseToWrite(const Json& live, std::string_view ns, std::string_view name,
                  std::string_view identity, int duration_s, int64_t now_us, LeaseAction action) {
  Json lease = live.is_object() ? live : Json::object();
  lease["apiVersion"] = "coordination.k8s.io/v1";
  lease["kind"] = "Lease";
  if (!lease.contains("metadata") || !lease["metadata"].is_object())
    lease["metadata"] = Json::object();
  lease["metadata"]["name"] = name;
  lease["metadata"]["namespace"] = ns;
  Json spec = Spec(live);
  std::string prev = spec.value("holderIdentity", "");
  int transitions = spec.value("leaseTransitions", 0);
  std::string now = FormatMicroTime(now_us);
  spec["holderIdentity"] = identity;
  spec["leaseDurationSeconds"] = duration_s;
  spec["renewTime"] = now;
  if (action != LeaseAction::kRenew || !spec.contains("acquireTime")) spec["acquireTime"] = now;
  if (action == LeaseAction::kTakeOver && prev != identity) ++transitions;
  spec["leaseTransitions"] = transitions;
  lease["spec"] = spec;
  return lease;
}

Result<bool> LeaderElector::TryAcquireOrRenew() {
  auto got = client_.Get("Lease", config_.ns, config_.name);
  if (!got) return got.status();
  if (!got->ok() && !IsNotFound(*got))
    return Error(ErrorCode::kUnavailable, "get lease: " + DescribeFailure(*got));
  Json live = got->ok() ? got->body : Json(nullptr);
  int64_t now = NowMicros();
  LeaseAction action = DecideLease(live, config_.identity, now);
  if (action == LeaseAction::kWait) return false;
  Json want = LeaseToWrite(live, config_.ns, config_.name, config_.identity,
                           config_.lease_duration_s, now, action);
  auto put = action == LeaseAction::kCreate
                 ? client_.Create("Lease", config_.ns, want)
                 : client_.Replace("Lease", config_.ns, config_.name, want);
  if (!put) return put.status();
  if (IsConflict(*put) || IsAlreadyExists(*put)) return false;  // another candidate won the race
  if (!put->ok()) return Error(ErrorCode::kUnavailable, "write lease: " + DescribeFailure(*put));
  if (action != LeaseAction::kRenew)
    LogInfo("leader election: %s acquired lease %s/%s", config_.identity.c_str(),
            config_.ns.c_str(), config_.name.c_str());
  return true;
}

bool LeaderElector::Acquire(const std::atomic<bool>& stop) {
  LogInfo("leader election: %s waiting for lease %s/%s", config_.identity.c_str(),
          config_.ns.c_str(), config_.name.c_str());
  while (!stop.load()) {
    auto r = TryAcquireOrRenew();
    if (r && *r) return true;
    if (!r) LogError("leader election: %s", r.error().c_str());
    SleepUnlessStopped(config_.renew_period_s, stop);
  }
  return false;
}

bool LeaderElector::Hold(const std::atomic<bool>& stop) {
  auto last_ok = std::chrono::steady_clock::now();
  while (!stop.load()) {
    SleepUnlessStopped(config_.renew_period_s, stop);
    if (stop.load()) break;
    auto r = TryAcquireOrRenew();
    if (r && *r) {
      last_ok = std::chrono::steady_clock::now();
      continue;
    }
    if (r) {
      LogError("leader election: lease %s/%s is held by another candidate", config_.ns.c_str(),
               config_.name.c_str());
      return false;
    }
    LogError("leader election: renew failed: %s", r.error().c_str());
    if (std::chrono::steady_clock::now() - last_ok > std::chrono::seconds(config_.renew_deadline_s))
      return false;
  }
  auto s = Release();
  if (!s.ok()) LogError("leader election: release: %s", s.message().c_str());
  return true;
}

Status LeaderElector::Release() {
  auto got = client_.Get("Lease", config_.ns, config_.name);
  if (!got) return got.status();
  if (!got->ok()) return Status::Ok();
  Json lease = got->body;
  if (Spec(lease).value("holderIdentity", "") != config_.identity) return Status::Ok();
  std::string now = FormatMicroTime(NowMicros());
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = now;
  auto put = client_.Replace("Lease", config_.ns, config_.name, lease);
  if (!put) return put.status();
  if (!put->ok()) return Error(ErrorCode::kUnavailable, DescribeFailure(*put));
  LogInfo("leader election: released lease %s/%s", config_.ns.c_str(), config_.name.c_str());
  return Status::Ok();
}

}  // namespace shoal::kube
