// Leader election on a coordination.k8s.io/v1 Lease, the protocol client-go's leaderelection
// speaks (so a Shoal operator and tooling that reads Leases agree): the holder renews
// spec.renewTime every RenewPeriod; another candidate takes over only once
// renewTime + leaseDurationSeconds has passed; every write carries the resourceVersion it read,
// so two candidates racing for an expired lease cannot both win (the loser gets 409).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "operator/kube/client.h"

namespace shoal::kube {

// MicroTime as Kubernetes writes it: "2006-01-02T15:04:05.000000Z" (UTC).
std::string FormatMicroTime(int64_t unix_micros);

enum class LeaseAction {
  kCreate,    // no Lease yet
  kRenew,     // we hold it
  kTakeOver,  // released or expired
  kWait,      // another holder whose lease is still valid
};
// `lease` is the live Lease (null when it does not exist). Pure.
LeaseAction DecideLease(const Json& lease, std::string_view identity, int64_t now_us);

// The Lease to write for `action` (kCreate/kRenew/kTakeOver): holder, duration, acquireTime
// (kept on renew), renewTime = now, leaseTransitions (+1 when the holder changes); the live
// object's metadata (resourceVersion) is kept so the write is conditional. Pure.
Json LeaseToWrite(const Json& live, std::string_view ns, std::string_view name,
                  std::string_view identity, int duration_s, int64_t now_us, LeaseAction action);

struct LeaderConfig {
  std::string ns = "default";
  std::string name = "shoal-operator";
  std::string identity;
  int lease_duration_s = 15;
  int renew_period_s = 5;
  int renew_deadline_s = 10;  // renewals failing this long mean leadership is lost
};

class LeaderElector {
 public:
  LeaderElector(KubeClient& client, LeaderConfig config)
      : client_(client), config_(std::move(config)) {}

  // One attempt: true when we hold the lease afterwards.
  Result<bool> TryAcquireOrRenew();
  // Retries every RenewPeriod until we lead (true) or `stop` (false).
  bool Acquire(const std::atomic<bool>& stop);
  // Renews every RenewPeriod until `stop` (then releases the lease, so a successor need not
  // wait for it to expire) or until leadership is lost (returns false).
  bool Hold(const std::atomic<bool>& stop);
  // Hands the lease back (holderIdentity "") if we still hold it.
  Status Release();

 private:
  KubeClient& client_;
  LeaderConfig config_;
};

}  // namespace shoal::kube
