// Active/passive controller high availability. The controller that holds an exclusive lock on
// <StateSaveLocation>/shoalctld.lock is the active one; the state directory is shared (an NFS
// export, a ReadWriteMany volume), so whoever takes the lock next reads every acknowledged job.
// Until then a standby answers every RPC with "in standby mode" (clients and node daemons move
// on to the next SlurmctldHost), /livez with 200 and /readyz with 503 (so a Kubernetes Service
// routes to the active controller only).
#pragma once

#include <string>

#include "common/result.h"
#include "common/slurm_conf.h"

namespace shoal::ctld {

// Opens and locks `dir`/shoalctld.lock without waiting. The descriptor (close-on-exec, so job
// scripts never inherit it) holds the lock for the life of the process. kBusy-like error when
// another controller holds it; other errors name the file.
Result<int> TryLockStateDir(const std::string& dir, bool* busy);

// Serves standby answers on the controller's port until the lock is ours, polling every
// `poll_ms`. Returns the lock descriptor, or an error (SIGTERM/SIGINT while waiting, or a
// failure). Returns at once when nobody holds the lock.
Result<int> AcquireOrStandby(const SlurmConf& conf, int poll_ms = 1000);

}  // namespace shoal::ctld
