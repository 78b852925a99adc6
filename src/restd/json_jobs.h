// Jobs between Shoal's records/requests and slurmrestd v0.0.44 JSON (job_info, job_desc_msg,
// kill_jobs_msg). Pure: no I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "restd/json_common.h"
#include "shoal.pb.h"

namespace shoal::restd {

// One v0.0.44_job_info, as JSON text (written directly: GET jobs/ answers hold thousands) and as
// a tree.
std::string JobJsonText(const pb::JobRecord& job, const std::string& cluster);
json JobToJson(const pb::JobRecord& job, const std::string& cluster);

// Who submits: the spec's uid/gid/user name come from here (the controller checks them against
// the credential).
struct Submitter {
  uint32_t uid = 0, gid = 0;
  std::string user;
};

// A job_desc_msg (with `script` from the submit request when the description has none) as a
// JobSpec, the way sbatch fills one. Unknown or unsupported fields add warnings.
Result<pb::JobSpec> JobDescToSpec(const json& desc, const std::string& script, const Submitter& who,
                                  std::vector<std::string>* warnings);
// The job_desc_msg of POST job/submit: {"script": ..., "job": {...}} (or "jobs": [one]).
Result<pb::JobSpec> SubmitRequestToSpec(const json& body, const Submitter& who,
                                        std::vector<std::string>* warnings);

// POST job/{job_id}: the scontrol update fields of a job_desc_msg, plus a hold change.
struct JobUpdate {
  std::map<std::string, std::string> fields;  // TimeLimit, Name, Partition, Nice, ...
  std::optional<bool> hold;                   // "hold": true/false -> hold / release
};
Result<JobUpdate> JobDescToUpdate(const json& desc, std::vector<std::string>* warnings);

// DELETE jobs/: kill_jobs_msg as a CancelJobRequest.
Result<pb::CancelJobRequest> KillJobsToRequest(const json& body);

// The signal of a query (?signal=KILL / 9); default SIGKILL for DELETE job/{id}, as slurmrestd.
Result<int> SignalFromText(const std::optional<std::string>& text, int def);

// job_state strings of a job ("RUNNING", plus "COMPLETING", "CONFIGURING" flags).
json JobStateArray(const pb::JobRecord& job);

// A query filter of GET jobs/state/?job_id=1,2_3 -> job ids (array expressions left as given).
std::vector<uint32_t> ParseJobIdList(const std::string& text, bool* bad);

}  // namespace shoal::restd
