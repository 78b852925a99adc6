#include "ctld/job_projection.h"

#include "common/varint.h"
#include "ctld/job_payload.h"

namespace shoal::ctld {
namespace {

using Bits = std::bitset<JobProjection::kMaxField>;
using R = pb::JobRecord;
using S = pb::JobSpec;

constexpr uint32_t kLen = 2;  // wire type: length-delimited

// Varints are written into a small buffer and appended once: a push_back per byte costs more
// than the rest of the encoding.
inline char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
inline void TagLen(std::string& out, uint32_t field, size_t len) {
  char buf[20];
  char* p = PutVarint(buf, (uint64_t(field) << 3) | kLen);
  out.append(buf, static_cast<size_t>(PutVarint(p, len) - buf));
}
// Proto3 implicit presence: a default value is not written, as protobuf itself does.
inline void U64(std::string& out, uint32_t field, uint64_t v) {
  if (v == 0) return;
  char buf[20];
  char* p = PutVarint(buf, uint64_t(field) << 3);
  out.append(buf, static_cast<size_t>(PutVarint(p, v) - buf));
}
// int32/int64/enum: negative values are sign-extended to 64 bits.
inline void I64(std::string& out, uint32_t field, int64_t v) {
  U64(out, field, static_cast<uint64_t>(v));
}
inline void Str(std::string& out, uint32_t field, const std::string& v) {
  if (v.empty()) return;
  TagLen(out, field, v.size());
  out += v;
}
void Strs(std::string& out, uint32_t field,
          const google::protobuf::RepeatedPtrField<std::string>& v) {
  for (const std::string& s : v) {
    TagLen(out, field, s.size());
    out += s;
  }
}
void PackedU32(std::string& out, uint32_t field,
               const google::protobuf::RepeatedField<uint32_t>& v) {
  if (v.empty()) return;
  size_t bytes = 0;
  for (uint32_t x : v) {
    uint32_t y = x;
    do {
      ++bytes;
      y >>= 7;
    } while (y != 0);
  }
  TagLen(out, field, bytes);
  for (uint32_t x : v) {
    char buf[10];
    out.append(buf, static_cast<size_t>(PutVarint(buf, x) - buf));
  }
}

// Encodes JobRecord field `f` of `j`; false when it has no hand-written encoder.
bool EncodeRecordField(std::string& out, uint32_t f, const pb::JobRecord& j,
                       const JobShownValues& shown) {
  switch (f) {
    case R::kJobIdFieldNumber:
      U64(out, f, j.job_id());
      return true;
    case R::kStateFieldNumber:
      I64(out, f, j.state());
      return true;
    case R::kCompletingFieldNumber:
      U64(out, f, j.completing() || shown.completing);
      return true;
    case R::kReasonFieldNumber:
      Str(out, f, j.reason());
      return true;
    case R::kSubmitTimeFieldNumber:
      I64(out, f, j.submit_time());
      return true;
    case R::kEligibleTimeFieldNumber:
      I64(out, f, j.eligible_time());
      return true;
    case R::kStartTimeFieldNumber:
      I64(out, f, shown.start_time.value_or(j.start_time()));
      return true;
    case R::kEndTimeFieldNumber:
      I64(out, f, j.end_time());
      return true;
    case R::kSuspendTimeFieldNumber:
      I64(out, f, j.suspend_time());
      return true;
    case R::kNodesFieldNumber:
      Strs(out, f, j.nodes());
      return true;
    case R::kCpusPerNodeFieldNumber:
      PackedU32(out, f, j.cpus_per_node());
      return true;
    case R::kMemPerNodeMbFieldNumber:
      U64(out, f, j.mem_per_node_mb());
      return true;
    case R::kBatchHostFieldNumber:
      Str(out, f, j.batch_host());
      return true;
    case R::kExitStatusFieldNumber:
      I64(out, f, j.exit_status());
      return true;
    case R::kDerivedExitStatusFieldNumber:
      I64(out, f, j.derived_exit_status());
      return true;
    case R::kPriorityFieldNumber:
      U64(out, f, j.priority());
      return true;
    case R::kRestartCountFieldNumber:
      U64(out, f, j.restart_count());
      return true;
    case R::kHeldByAdminFieldNumber:
      U64(out, f, j.held_by_admin());
      return true;
    case R::kHeldFieldNumber:
      U64(out, f, j.held());
      return true;
    case R::kPartitionFieldNumber:
      Str(out, f, j.partition());
      return true;
    case R::kTimeLimitFieldNumber:
      U64(out, f, j.time_limit());
      return true;
    case R::kNumTasksFieldNumber:
      U64(out, f, j.num_tasks());
      return true;
    case R::kNumCpusFieldNumber:
      U64(out, f, j.num_cpus());
      return true;
    case R::kNumNodesFieldNumber:
      U64(out, f, j.num_nodes());
      return true;
    case R::kStateDescFieldNumber:
      Str(out, f, j.state_desc());
      return true;
    case R::kPreemptTimeFieldNumber:
      I64(out, f, j.preempt_time());
      return true;
    case R::kRequeueFieldNumber:
      U64(out, f, j.requeue());
      return true;
    case R::kArrayJobIdFieldNumber:
      U64(out, f, j.array_job_id());
      return true;
    case R::kArrayTaskIdFieldNumber:
      U64(out, f, j.array_task_id());
      return true;
    case R::kLastSchedEvalFieldNumber:
      I64(out, f, j.last_sched_eval());
      return true;
    case R::kAccrueTimeFieldNumber:
      I64(out, f, j.accrue_time());
      return true;
    case R::kExpectedStartFieldNumber:
      I64(out, f, j.expected_start());
      return true;
    case R::kSchedNodesFieldNumber:
      Str(out, f, j.sched_nodes());
      return true;
    case R::kReservationFieldNumber:
      Str(out, f, j.reservation());
      return true;
    case R::kPrologPendingNodesFieldNumber:
      Strs(out, f, j.prolog_pending_nodes());
      return true;
    case R::kEpilogPendingNodesFieldNumber:
      Strs(out, f, j.epilog_pending_nodes());
      return true;
    default:
      return false;
  }
}

// The same for JobSpec field `f`.
bool EncodeSpecField(std::string& out, uint32_t f, const pb::JobSpec& s) {
  switch (f) {
    case S::kNameFieldNumber:
      Str(out, f, s.name());
      return true;
    case S::kWorkDirFieldNumber:
      Str(out, f, s.work_dir());
      return true;
    case S::kStdOutFieldNumber:
      Str(out, f, s.std_out());
      return true;
    case S::kStdErrFieldNumber:
      Str(out, f, s.std_err());
      return true;
    case S::kStdInFieldNumber:
      Str(out, f, s.std_in());
      return true;
    case S::kPartitionFieldNumber:
      Str(out, f, s.partition());
      return true;
    case S::kTimeLimitFieldNumber:
      U64(out, f, s.time_limit());
      return true;
    case S::kMinNodesFieldNumber:
      U64(out, f, s.min_nodes());
      return true;
    case S::kMaxNodesFieldNumber:
      U64(out, f, s.max_nodes());
      return true;
    case S::kNumTasksFieldNumber:
      U64(out, f, s.num_tasks());
      return true;
    case S::kCpusPerTaskFieldNumber:
      U64(out, f, s.cpus_per_task());
      return true;
    case S::kNtasksPerNodeFieldNumber:
      U64(out, f, s.ntasks_per_node());
      return true;
    case S::kMemPerNodeMbFieldNumber:
      U64(out, f, s.mem_per_node_mb());
      return true;
    case S::kMemPerCpuMbFieldNumber:
      U64(out, f, s.mem_per_cpu_mb());
      return true;
    case S::kGresFieldNumber:
      Str(out, f, s.gres());
      return true;
    case S::kGpusFieldNumber:
      Str(out, f, s.gpus());
      return true;
    case S::kAccountFieldNumber:
      Str(out, f, s.account());
      return true;
    case S::kQosFieldNumber:
      Str(out, f, s.qos());
      return true;
    case S::kHoldFieldNumber:
      U64(out, f, s.hold());
      return true;
    case S::kCommentFieldNumber:
      Str(out, f, s.comment());
      return true;
    case S::kNiceFieldNumber:
      I64(out, f, s.nice());
      return true;
    case S::kDependencyFieldNumber:
      Str(out, f, s.dependency());
      return true;
    case S::kArrayFieldNumber:
      Str(out, f, s.array());
      return true;
    case S::kExclusiveFieldNumber:
      U64(out, f, s.exclusive());
      return true;
    case S::kNodelistFieldNumber:
      Str(out, f, s.nodelist());
      return true;
    case S::kExcludeFieldNumber:
      Str(out, f, s.exclude());
      return true;
    case S::kConstraintFieldNumber:
      Str(out, f, s.constraint());
      return true;
    case S::kSubmitHostFieldNumber:
      Str(out, f, s.submit_host());
      return true;
    case S::kSubmitDirFieldNumber:
      Str(out, f, s.submit_dir());
      return true;
    case S::kUidFieldNumber:
      U64(out, f, s.uid());
      return true;
    case S::kGidFieldNumber:
      U64(out, f, s.gid());
      return true;
    case S::kUserNameFieldNumber:
      Str(out, f, s.user_name());
      return true;
    case S::kDeadlineFieldNumber:
      I64(out, f, s.deadline());
      return true;
    case S::kWckeyFieldNumber:
      Str(out, f, s.wckey());
      return true;
    case S::kReservationFieldNumber:
      Str(out, f, s.reservation());
      return true;
    case S::kLicensesFieldNumber:
      Str(out, f, s.licenses());
      return true;
    case S::kMinCpusPerNodeFieldNumber:
      U64(out, f, s.min_cpus_per_node());
      return true;
    case S::kClusterFeaturesFieldNumber:
      Str(out, f, s.cluster_features());
      return true;
    case S::kTimeMinFieldNumber:
      U64(out, f, s.time_min());
      return true;
    case S::kExclusiveModeFieldNumber:
      Str(out, f, s.exclusive_mode());
      return true;
    case S::kCommandFieldNumber:
      Str(out, f, s.command());
      return true;
    case S::kAllocSidFieldNumber:
      U64(out, f, s.alloc_sid());
      return true;
    case S::kContainerFieldNumber:
      Str(out, f, s.container());
      return true;
    default:
      return false;
  }
}

bool Wanted(const Bits& keep, uint64_t field) {
  return keep.none() || (field < JobProjection::kMaxField && keep.test(field));
}

}  // namespace

bool FilterWireFields(std::string_view in, const Bits& keep, uint32_t nested,
                      const Bits& nested_keep, std::string& out) {
  size_t pos = 0;
  while (pos < in.size()) {
    size_t begin = pos;
    uint64_t tag = 0;
    if (!ReadVarint(in, pos, tag)) return false;
    uint64_t field = tag >> 3;
    uint64_t v = 0;
    switch (tag & 7) {
      case 0:
        if (!ReadVarint(in, pos, v)) return false;
        break;
      case 1:
        pos += 8;
        break;
      case 5:
        pos += 4;
        break;
      case kLen: {
        if (!ReadVarint(in, pos, v) || v > in.size() - pos) return false;
        if (field == nested && nested_keep.any() && Wanted(keep, field)) {
          std::string inner;
          if (!FilterWireFields(in.substr(pos, v), nested_keep, 0, {}, inner)) return false;
          TagLen(out, nested, inner.size());
          out += inner;
          pos += v;
          continue;
        }
        pos += v;
        break;
      }
      default:
        return false;  // groups are not used by shoal.proto
    }
    if (pos > in.size()) return false;
    if (Wanted(keep, field)) out.append(in.data() + begin, pos - begin);
  }
  return true;
}

JobProjection JobProjection::From(const pb::JobQueryRequest& req) {
  JobProjection p;
  for (uint32_t f : req.fields())
    if (f < kMaxField) p.fields_.set(f);
  for (uint32_t f : req.spec_fields())
    if (f < kMaxField) p.spec_fields_.set(f);
  // Fields named but none known: still a projection (onto nothing but what follows below).
  p.whole_ = req.fields_size() == 0 && req.spec_fields_size() == 0;
  p.Init();
  return p;
}

JobProjection JobProjection::Of(std::initializer_list<uint32_t> fields,
                                std::initializer_list<uint32_t> spec_fields) {
  pb::JobQueryRequest req;
  for (uint32_t f : fields) req.add_fields(f);
  for (uint32_t f : spec_fields) req.add_spec_fields(f);
  return From(req);
}

void JobProjection::Init() {
  if (whole_) return;
  if (spec_fields_.any()) fields_.set(R::kSpecFieldNumber);
  fast_ = true;
  std::string sink;
  static const pb::JobRecord kEmptyRecord;
  static const pb::JobSpec kEmptySpec;
  // In field order, as protobuf writes them.
  for (uint32_t f = 1; f < kMaxField && fast_; ++f) {
    if (!fields_.test(f)) continue;
    record_list_.push_back(static_cast<uint8_t>(f));
    if (f != R::kSpecFieldNumber) fast_ = EncodeRecordField(sink, f, kEmptyRecord, {});
  }
  if (fields_.test(R::kSpecFieldNumber)) {
    if (spec_fields_.none()) fast_ = false;  // the whole spec: its payload too
    for (uint32_t f = 1; f < kMaxField && fast_; ++f) {
      if (!spec_fields_.test(f)) continue;
      spec_list_.push_back(static_cast<uint8_t>(f));
      fast_ = EncodeSpecField(sink, f, kEmptySpec);
    }
  }
}

void JobProjection::EncodeSpec(std::string& out, const pb::JobSpec& spec) const {
  for (uint8_t f : spec_list_) EncodeSpecField(out, f, spec);
}

void JobProjection::EncodeRecord(std::string& out, const pb::JobRecord& job,
                                 const JobShownValues& shown) const {
  for (uint8_t f : record_list_) {
    if (f != R::kSpecFieldNumber) {
      EncodeRecordField(out, f, job, shown);
      continue;
    }
    if (!job.has_spec()) continue;
    spec_scratch_.clear();
    EncodeSpec(spec_scratch_, job.spec());
    TagLen(out, f, spec_scratch_.size());
    out += spec_scratch_;
  }
}

void JobProjection::Append(std::string& out, uint32_t field, const pb::JobRecord& job,
                           const std::string& payload, const JobShownValues& shown) const {
  if (!fast_) return AppendFiltered(out, field, job, payload, shown);
  record_scratch_.clear();
  EncodeRecord(record_scratch_, job, shown);
  TagLen(out, field, record_scratch_.size());
  out += record_scratch_;
}

void JobProjection::AppendFiltered(std::string& out, uint32_t field, const pb::JobRecord& job,
                                   const std::string& payload, const JobShownValues& shown) const {
  if (whole_) {
    std::string overrides = Overrides(shown);
    return AppendJobField(out, field, job, PayloadWanted() ? payload : kNoPayload, overrides);
  }
  AppendSerialized(out, field, job.SerializeAsString(), payload, shown);
}

void JobProjection::AppendSerialized(std::string& out, uint32_t field, std::string_view record,
                                     const std::string& payload,
                                     const JobShownValues& shown) const {
  std::string overrides = Overrides(shown);
  const std::string& spliced = PayloadWanted() ? payload : kNoPayload;
  if (whole_) {
    overrides.insert(0, shown.overlay);
    return AppendJobBytes(out, field, record, spliced, overrides);
  }
  std::string joined;  // the record with its payload as a second spec field, as stored
  if (!spliced.empty()) {
    joined.reserve(record.size() + spliced.size() + 8);
    joined.assign(record);
    AppendVarint(joined, (uint64_t(R::kSpecFieldNumber) << 3) | kLen);
    AppendVarint(joined, spliced.size());
    joined += spliced;
    record = joined;
  }
  record_scratch_.clear();
  FilterWireFields(record, fields_, R::kSpecFieldNumber, spec_fields_, record_scratch_);
  // The overlay's fields after the record's: parsed later, they win.
  FilterWireFields(shown.overlay, fields_, R::kSpecFieldNumber, spec_fields_, record_scratch_);
  TagLen(out, field, record_scratch_.size() + overrides.size());
  out += record_scratch_;
  out += overrides;
}

std::string JobProjection::Overrides(const JobShownValues& shown) const {
  std::string overrides;
  if (shown.start_time && (whole_ || fields_.test(R::kStartTimeFieldNumber)))
    AppendVarintField(overrides, R::kStartTimeFieldNumber,
                      static_cast<uint64_t>(*shown.start_time));
  if (shown.completing && (whole_ || fields_.test(R::kCompletingFieldNumber)))
    AppendVarintField(overrides, R::kCompletingFieldNumber, 1);
  return overrides;
}

bool JobProjection::PayloadWanted() const {
  return whole_ || (SpecWanted() && (SpecFieldWanted(S::kScriptFieldNumber) ||
                                     SpecFieldWanted(S::kEnvironmentFieldNumber)));
}

}  // namespace shoal::ctld
