// Job steps as squeue -s and scontrol show step print them, byte for byte as Slurm 22.05 does
// (observed: docs/notes/slurm-steps-observed.md, section 4). Pure: records, options and `now`
// in, text out (no I/O).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/squeue_format.h"
#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

inline constexpr char kSqueueStepFormat[] = "%.15i %.8j %.9P %.8u %.9M %N";

// "batch", "extern", "interactive", or the number.
std::string StepIdSuffix(uint32_t step_id);
// "123.0", "123.batch", "123.extern", "123.interactive"; a step of array task 70_1 (whatever its
// own job id) is "70_1.0". `job` may be null (then the step's job id is used).
std::string StepIdString(const pb::StepRecord& step, const pb::JobRecord* job);

// A step reference: "123", "123.4", "123.batch", "70_1.extern".
struct StepIdSpec {
  uint32_t job_id = 0;  // job id, or array job id when array_task is set
  std::optional<uint32_t> array_task;
  std::optional<uint32_t> step_id;  // unset: every step of the job
};
// Parses one reference; a missing ".step" is allowed (scontrol show step 123). Steps are numbers
// below 0xfffffffa or batch/extern/interactive (Slurm 22.05 reads "123.batch" as step 0; current
// Slurm, and Shoal, read the name). Error: "Invalid job step id: <text>".
Result<StepIdSpec> ParseStepId(std::string_view text);
// squeue --steps=<list>: comma separated references, each with its step. Errors are squeue's:
// "Invalid job_step id: 44.??" for "44", "Invalid job_step id: <item>" otherwise.
Result<std::vector<StepIdSpec>> ParseSqueueStepList(std::string_view text);
bool StepMatchesSpec(const pb::StepRecord& step, const pb::JobRecord* job, const StepIdSpec& spec);

// What squeue -s filters on (-t is ignored for steps, as in Slurm).
struct StepFilter {
  std::vector<StepIdSpec> steps;        // --steps=<list>
  std::vector<JobIdSpec> jobs;          // -j
  std::vector<uint32_t> uids;           // -u / --me
  std::vector<std::string> partitions;  // -p
};
bool StepMatches(const pb::StepRecord& step, const pb::JobRecord* job, const StepFilter& filter);

// A step and its job (null when the response lacks it: partition/user then come from the step).
struct StepRef {
  const pb::StepRecord* step = nullptr;
  const pb::JobRecord* job = nullptr;
};
// Pairs each step of a StepQueryResponse with its job.
std::vector<StepRef> CollectSteps(const pb::StepQueryResponse& resp);

// ---- squeue -s -------------------------------------------------------------------------------

struct SqueueStepOptions {
  std::string format;       // -o; empty = kSqueueStepFormat (unless long_format is set)
  std::string long_format;  // -O
  bool no_header = false;   // -h
  // uid -> name, used when the job record has no user name; "" prints the number.
  std::function<std::string(uint32_t)> user_name;
};

struct StepListing {
  std::string text;  // header (unless no_header) and one line per step
  // One per unknown format letter or -O field, in order, as squeue prints them after
  // "squeue: error: " ("Invalid job step format specification: a"); the listing is still printed
  // (with "%a" left as written).
  std::vector<std::string> errors;
};

// Steps sorted as squeue sorts them (partition, job id, step id: numeric steps, then
// interactive, batch, extern). -o letters: %i step id, %j name, %P partition, %u user, %U uid,
// %M time used, %N node list (never cut to the width), %l time limit, %S start time, %A tasks,
// %b TRES per job ("(null)"), %all. -O names: StepId, StepName, Name, Partition, UserName, UserId,
// TimeUsed, TimeLimit, StartTime, NumTasks, NumCPUs, StepState, Nodes/NodeList, TresPerJob.
StepListing FormatSqueueSteps(std::vector<StepRef> steps, const SqueueStepOptions& options,
                              int64_t now);

// ---- scontrol show step ----------------------------------------------------------------------

// The order scontrol lists steps in: by job id, then extern, batch, interactive, then numeric.
void SortStepsForScontrol(std::vector<StepRef>& steps);

// One record of `scontrol show step` (one_liner: `-o`):
//   StepId=44.0 UserId=0 StartTime=2026-11-22T09:46:11 TimeLimit=UNLIMITED
//      State=RUNNING Partition=debug NodeList=n[1-2]
//      Nodes=2 CPUs=2 Tasks=2 Name=overlapper Network=(null)
//      TRES=cpu=2,mem=0,node=2
//      ResvPorts=(null)
//      CPUFreqReq=Default Dist=Cyclic
//      SrunHost:Pid=vm:23228
// followed by a blank line; with one_liner the fields are joined by single spaces and the record
// ends with one newline. Batch and extern steps show CPUs=0, TRES=(null) and no Dist.
std::string FormatStepRecord(const pb::StepRecord& step, const pb::JobRecord* job, bool one_liner);

// scontrol's messages for an empty answer: "Job step 44.7 not found" (a step asked for),
// "Job step 113. not found" (sic: a job without steps), "No job steps in the system" (nothing
// asked for, exit 0).
std::string StepNotFoundMessage(const StepIdSpec& spec);

}  // namespace shoal::cli
