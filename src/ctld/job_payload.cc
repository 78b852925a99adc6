#include "ctld/job_payload.h"

#include <algorithm>

namespace shoal::ctld {
namespace {

constexpr uint32_t kJobRecordSpecField = 2;        // JobRecord.spec
constexpr uint32_t kJobRecordPayloadIdField = 64;  // JobRecord.payload_id

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

const std::string& Empty() {
  static const std::string empty;
  return empty;
}

}  // namespace

void AppendVarintField(std::string& out, uint32_t field, uint64_t v) {
  AppendVarint(out, uint64_t(field) << 3);
  AppendVarint(out, v);
}

void AppendMessageField(std::string& out, uint32_t field, const google::protobuf::MessageLite& m) {
  AppendVarint(out, (uint64_t(field) << 3) | 2);
  AppendVarint(out, m.ByteSizeLong());
  m.AppendToString(&out);
}

PayloadPtr JobPayloads::Take(pb::JobSpec* spec) {
  if (spec->script().empty() && spec->environment().empty()) return nullptr;
  pb::JobSpec only;
  only.mutable_script()->swap(*spec->mutable_script());
  only.mutable_environment()->Swap(spec->mutable_environment());
  return Intern(only.SerializeAsString());
}

PayloadPtr JobPayloads::Intern(std::string bytes) {
  if (auto it = pool_.find(std::string_view(bytes)); it != pool_.end())
    if (PayloadPtr shared = it->second.lock()) return shared;
  auto owned = std::make_shared<Payload>();
  owned->bytes = std::move(bytes);
  pool_[std::string_view(owned->bytes)] = owned;
  return owned;
}

void JobPayloads::Set(uint32_t job_id, PayloadPtr payload) {
  Drop(job_id);
  if (payload) by_job_.emplace(job_id, std::move(payload));
}

void JobPayloads::Restore(uint32_t job_id, pb::JobSpec* spec) const {
  auto it = by_job_.find(job_id);
  if (it != by_job_.end()) spec->MergeFromString(it->second->bytes);
}

const std::string& JobPayloads::Bytes(uint32_t job_id) const {
  auto it = by_job_.find(job_id);
  return it == by_job_.end() ? Empty() : it->second->bytes;
}

void JobPayloads::Drop(uint32_t job_id) {
  auto it = by_job_.find(job_id);
  if (it == by_job_.end()) return;
  // The last holder: forget the pool entry before the string (its key) goes. (During a replay
  // the id table holds another reference; EndReplay forgets what it alone held.)
  if (it->second.use_count() == 1) pool_.erase(std::string_view(it->second->bytes));
  by_job_.erase(it);
}

void JobPayloads::AppendRecord(std::string& out, uint32_t field, const Payload& p) {
  AppendVarint(out, (uint64_t(field) << 3) | 2);
  size_t body = 1 + VarintSize(p.id) + 1 + VarintSize(p.bytes.size()) + p.bytes.size();
  AppendVarint(out, body);
  AppendVarintField(out, 1, p.id);   // JobPayload.id
  AppendVarint(out, (2u << 3) | 2);  // JobPayload.spec
  AppendVarint(out, p.bytes.size());
  out += p.bytes;
}

uint64_t JobPayloads::StoreRef(uint32_t job_id, std::string* record) {
  auto it = by_job_.find(job_id);
  if (it == by_job_.end()) return 0;
  const Payload& p = *it->second;
  if (p.id == 0) {
    p.id = next_id_++;
    AppendRecord(*record, 8, p);  // JournalRecord.payload
  }
  return p.id;
}

void JobPayloads::AppendAll(std::string& out, uint32_t field) {
  for (auto& [bytes, weak] : pool_) {
    PayloadPtr p = weak.lock();
    if (!p) continue;
    if (p->id == 0) p->id = next_id_++;
    AppendRecord(out, field, *p);
  }
}

void JobPayloads::Define(uint64_t id, std::string bytes) {
  if (id == 0) return;
  PayloadPtr p = Intern(std::move(bytes));
  // Equal bytes stored twice under two ids (written again after their last job had gone):
  // both ids name the one interned copy, which keeps the first id.
  if (p->id == 0) p->id = id;
  replay_[id] = std::move(p);
  next_id_ = std::max(next_id_, id + 1);
}

PayloadPtr JobPayloads::Replayed(uint64_t id) const {
  auto it = replay_.find(id);
  return it == replay_.end() ? nullptr : it->second;
}

void JobPayloads::EndReplay() {
  replay_.clear();
  // Payloads no job holds are gone now; their entries are erased by position, as their keys
  // viewed the freed strings.
  std::erase_if(pool_, [](const auto& entry) { return entry.second.expired(); });
}

std::string PayloadIdField(uint64_t ref) {
  std::string field;
  if (ref != 0) AppendVarintField(field, kJobRecordPayloadIdField, ref);
  return field;
}

namespace {
// The payload as a second spec field, and the overrides: what follows the record.
void AppendJobTail(std::string& out, const std::string& payload, std::string_view overrides) {
  if (!payload.empty()) {
    AppendVarint(out, (kJobRecordSpecField << 3) | 2);
    AppendVarint(out, payload.size());
    out += payload;
  }
  out += overrides;
}
size_t JobTailSize(const std::string& payload, std::string_view overrides) {
  size_t extra = payload.empty() ? 0
                                 : VarintSize((kJobRecordSpecField << 3) | 2) +
                                       VarintSize(payload.size()) + payload.size();
  return extra + overrides.size();
}
}  // namespace

void AppendJobField(std::string& out, uint32_t field, const pb::JobRecord& job,
                    const std::string& payload, std::string_view overrides) {
  AppendVarint(out, (uint64_t(field) << 3) | 2);
  AppendVarint(out, job.ByteSizeLong() + JobTailSize(payload, overrides));
  job.AppendToString(&out);
  AppendJobTail(out, payload, overrides);
}

void AppendJobBytes(std::string& out, uint32_t field, std::string_view record,
                    const std::string& payload, std::string_view overrides) {
  AppendVarint(out, (uint64_t(field) << 3) | 2);
  AppendVarint(out, record.size() + JobTailSize(payload, overrides));
  out += record;
  AppendJobTail(out, payload, overrides);
}

}  // namespace shoal::ctld
