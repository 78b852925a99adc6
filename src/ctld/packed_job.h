// Queued jobs kept packed. The controller keeps a pending job that nothing reads between
// scheduling passes as its serialized record, about a quarter of the parsed one's memory
// (measured: 466 against 1,891 bytes per job; a parsed JobRecord and JobSpec are ~1 KB before
// their strings), and parses it back into the job table the moment anyone looks it up or changes
// it (Controller::FindJob). Two kinds qualify:
// - held jobs (priority 0): the scheduling pass stops before them (held jobs sort last);
// - simple runnable jobs (one partition, no dependency, deadline, node list, reservation or
//   throttled array, eligible now): the pass weighs them from the scheduling view below, the
//   job's shape is the controller's shared one, and what the pass concludes (reason, expected
//   start, planned nodes, time of evaluation) goes into the overlay, not the record.
// Listings read packed jobs without parsing them (JobProjection::AppendSerialized, with the
// overlay's fields appended: a field parsed later wins). Pure logic, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shoal.pb.h"

namespace shoal::ctld {

// Reasons a scheduling pass gives a pending job, as a byte in the overlay. kAsRecorded: the
// record's own reason stands.
enum class PackedReason : uint8_t {
  kAsRecorded,
  kNone,
  kPriority,
  kResources,
  kPartitionDown,
  kPartitionTimeLimit,
  kPartitionNodeLimit,
};
std::string_view PackedReasonName(PackedReason r);  // "" for kAsRecorded
// The code of a reason by Slurm's name; kAsRecorded when it has none (the job must be unpacked
// to be given that reason).
PackedReason PackedReasonOf(std::string_view name);

// What a scheduling pass reads of a packed runnable job besides its id, priority and shape.
struct SchedView {
  uint32_t time_limit = 0;          // minutes, as JobRecord.time_limit
  uint32_t partitions_version = 0;  // the controller's partition table when `partition` was taken
  uint16_t partition = 0;           // index into the controller's partitions
};

struct PackedJob {
  std::string record;  // the JobRecord serialized, as held in memory (no payload)
  // Overlay: what scheduling passes concluded since the job was packed (authoritative over the
  // record's fields of the same name).
  std::string sched_nodes;
  int64_t expected_start = 0;  // also what a listing shows as its StartTime (0: none)
  int64_t last_sched_eval = 0;
  uint32_t uid = 0;  // the owner, for listings filtered by user
  SchedView view;    // meaningful when `runnable`
  PackedReason reason = PackedReason::kAsRecorded;
  bool runnable = false;  // false: held
};

// Whether `job` may be packed at `now` (see above), with nothing in flight.
bool Packable(const pb::JobRecord& job, int64_t now);
// A held job, as opposed to a runnable one (both Packable).
bool PackableHeld(const pb::JobRecord& job);

// A finished job kept until MinJobAge (PurgeOldJobs) as its serialized record: nothing changes
// it any more, listings copy its bytes, and a lookup by id parses it back (Controller::FindJob).
// About a quarter of the parsed record's memory, as for queued jobs.
struct PackedFinishedJob {
  std::string record;    // the JobRecord serialized, as held in memory (no payload)
  int64_t end_time = 0;  // PurgeOldJobs' key
  uint32_t uid = 0;      // listings filtered by user
  pb::JobState state = pb::JOB_COMPLETED;  // listings filtered by state
};

// Whether a finished job may be packed: nothing left to happen to it on any node (epilogs
// reported). Whether shoaldbd has its final record is the controller's to check.
bool PackableFinished(const pb::JobRecord& job);
PackedFinishedJob PackFinished(const pb::JobRecord& job);
// The same, from `serialized`: `job`'s own serialization, already at hand (a restart's replay).
PackedFinishedJob PackFinished(std::string serialized, const pb::JobRecord& job);
bool UnpackFinished(const PackedFinishedJob& packed, pb::JobRecord* job);

// `view` is used for runnable jobs only.
PackedJob Pack(const pb::JobRecord& job, const SchedView& view = {});
// The same, from `serialized`: `job`'s own serialization, already at hand (a restart's replay).
PackedJob Pack(std::string serialized, const pb::JobRecord& job, const SchedView& view);

// The record back, overlay applied; false when the bytes do not parse (never expected: they
// were ours).
bool Unpack(const PackedJob& packed, pb::JobRecord* job);

// The overlay as encoded JobRecord fields, to append after the record's bytes (a field parsed
// later wins): what Unpack applies, for code that copies the bytes without parsing them. Empty
// for a held job, whose overlay never departs from its record.
void AppendOverlay(const PackedJob& packed, std::string& out);

}  // namespace shoal::ctld
