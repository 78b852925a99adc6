#include "ctld/packed_job.h"

#include <array>

#include "common/states.h"
#include "common/units.h"
#include "common/varint.h"

namespace shoal::ctld {
namespace {

using R = pb::JobRecord;

constexpr std::array<std::string_view, 7> kReasonNames = {"",
                                                          "None",
                                                          "Priority",
                                                          "Resources",
                                                          "PartitionDown",
                                                          "PartitionTimeLimit",
                                                          "PartitionNodeLimit"};

bool NothingInFlight(const pb::JobRecord& job) {
  return job.state() == pb::JOB_PENDING && !job.completing() &&
         job.prolog_pending_nodes_size() == 0 && job.epilog_pending_nodes_size() == 0;
}

void AppendBytesField(std::string& out, uint32_t field, std::string_view bytes) {
  AppendVarint(out, (uint64_t(field) << 3) | 2);
  AppendVarint(out, bytes.size());
  out.append(bytes);
}

void AppendIntField(std::string& out, uint32_t field, int64_t v) {
  AppendVarint(out, uint64_t(field) << 3);
  AppendVarint(out, static_cast<uint64_t>(v));  // int64: two's complement, as protobuf
}

}  // namespace

std::string_view PackedReasonName(PackedReason r) {
  auto i = static_cast<size_t>(r);
  return i < kReasonNames.size() ? kReasonNames[i] : std::string_view();
}

PackedReason PackedReasonOf(std::string_view name) {
  for (size_t i = 1; i < kReasonNames.size(); ++i)
    if (kReasonNames[i] == name) return static_cast<PackedReason>(i);
  return PackedReason::kAsRecorded;
}

bool PackableHeld(const pb::JobRecord& job) {
  return NothingInFlight(job) && job.held() && job.priority() == 0;
}

bool Packable(const pb::JobRecord& job, int64_t now) {
  if (PackableHeld(job)) return true;
  if (!NothingInFlight(job) || job.held() || job.priority() == 0) return false;
  // Runnable: only what the scheduling pass can weigh from the view (packed_job.h).
  const pb::JobSpec& s = job.spec();
  bool throttled_array =
      job.array_task_id() != kNoArrayTask && s.array().find('%') != std::string::npos;
  return !s.interactive() && s.deadline() == 0 && s.dependency().empty() &&
         job.eligible_time() <= now && !throttled_array && !job.partition().empty() &&
         job.partition().find(',') == std::string::npos && s.nodelist().empty() &&
         s.exclude().empty() && job.reservation().empty();
}

PackedJob Pack(const pb::JobRecord& job, const SchedView& view) {
  std::string serialized;
  job.SerializeToString(&serialized);
  return Pack(std::move(serialized), job, view);
}

PackedJob Pack(std::string serialized, const pb::JobRecord& job, const SchedView& view) {
  PackedJob p;
  p.record = std::move(serialized);
  p.record.shrink_to_fit();  // the string's growth room would be a third of what packing saves
  p.sched_nodes = job.sched_nodes();
  p.expected_start = job.expected_start();
  p.last_sched_eval = job.last_sched_eval();
  p.uid = job.spec().uid();
  p.runnable = !PackableHeld(job);
  if (p.runnable) p.view = view;
  return p;
}

bool Unpack(const PackedJob& packed, pb::JobRecord* job) {
  if (!job->ParseFromString(packed.record)) return false;
  job->set_sched_nodes(packed.sched_nodes);
  job->set_expected_start(packed.expected_start);
  job->set_last_sched_eval(packed.last_sched_eval);
  if (packed.reason != PackedReason::kAsRecorded)
    job->set_reason(std::string(PackedReasonName(packed.reason)));
  return true;
}

bool PackableFinished(const pb::JobRecord& job) {
  return IsFinished(job.state()) && !job.completing() && job.prolog_pending_nodes_size() == 0 &&
         job.epilog_pending_nodes_size() == 0;
}

PackedFinishedJob PackFinished(const pb::JobRecord& job) {
  std::string serialized;
  job.SerializeToString(&serialized);
  return PackFinished(std::move(serialized), job);
}

PackedFinishedJob PackFinished(std::string serialized, const pb::JobRecord& job) {
  PackedFinishedJob p;
  p.record = std::move(serialized);
  p.record.shrink_to_fit();
  p.end_time = job.end_time();
  p.uid = job.spec().uid();
  p.state = job.state();
  return p;
}

bool UnpackFinished(const PackedFinishedJob& packed, pb::JobRecord* job) {
  return job->ParseFromString(packed.record);
}

void AppendOverlay(const PackedJob& packed, std::string& out) {
  if (!packed.runnable) return;  // no pass weighs a held job: its overlay is its record's
  AppendBytesField(out, R::kSchedNodesFieldNumber, packed.sched_nodes);
  AppendIntField(out, R::kExpectedStartFieldNumber, packed.expected_start);
  AppendIntField(out, R::kLastSchedEvalFieldNumber, packed.last_sched_eval);
  if (packed.reason != PackedReason::kAsRecorded)
    AppendBytesField(out, R::kReasonFieldNumber, PackedReasonName(packed.reason));
}

}  // namespace shoal::ctld
