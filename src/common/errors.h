// Error codes shared by the daemons and the commands. The numeric values travel in
// Response.rc, so never renumber them. Messages follow Slurm's wording where Slurm has one.
#pragma once

#include <cstdint>

namespace shoal {

enum class ErrorCode : int32_t {
  kOk = 0,
  kInvalidArgument = 1,   // bad option or field value
  kAccessDenied = 2,      // "Access/permission denied"
  kInvalidJobId = 3,      // "Invalid job id specified"
  kInvalidPartition = 4,  // "invalid partition specified"
  kInvalidNodeName = 5,   // "Invalid node name specified"
  kAlreadyDone = 6,       // "Job/step already completing or completed"
  kNodesBusy = 7,
  kTooManyJobs = 8,                 // MaxJobCount reached
  kRequestedConfigUnavailable = 9,  // "Requested node configuration is not available"
  kTimeLimitExceeded = 10,  // "Requested time limit is invalid (missing or exceeds some limit)"
  kAuthFailure = 11,        // bad/expired/forged credential
  kProtocol = 12,           // malformed frame or message
  kUnavailable = 13,        // controller not reachable
  kInternal = 14,
  kInvalidGres = 15,      // "Invalid generic resource (gres) specification"
  kTransitionState = 16,  // "Job is in transition state" etc.
  kNotSupported = 17,
  kIoError = 18,
  kJobNotPending = 19,       // "Job is no longer pending execution"
  kDisabled = 20,            // "Requested operation is presently disabled"
  kInvalidAccount = 21,      // "Invalid account or account/partition combination specified"
  kInvalidQos = 22,          // "Invalid qos specification"
  kPartitionNotAvail = 23,   // "Required partition not available (inactive or drain)"
  kGroupNotPermitted = 24,   // "User's group not permitted to use this partition"
  kInvalidFeature = 25,      // "Invalid feature specification"
  kInvalidReservation = 26,  // "Requested reservation is invalid"
  kReservationAccess = 27,   // "Access denied to requested reservation"
  kReservationBusy = 28,     // "Requested nodes are busy" and other reservation conflicts
  kStepBusy = 29,            // a step cannot start yet: its CPUs are held by other steps
  kInvalidStep = 30,         // "Invalid job step specified" / step can never fit the job
  kAccountingPolicy = 31,    // "Job violates accounting/QOS policy (job submit limit, ...)"
  kInStandby = 32,           // "Slurm backup controller in standby mode": try the next one
};

}  // namespace shoal
