#include "ctld/job_payload.h"

namespace shoal::ctld {
namespace {

constexpr uint32_t kJobRecordSpecField = 2;  // JobRecord.spec

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

void AppendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

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
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  pool_[std::string_view(*owned)] = owned;
  return owned;
}

void JobPayloads::Set(uint32_t job_id, PayloadPtr payload) {
  Drop(job_id);
  if (payload) by_job_.emplace(job_id, std::move(payload));
}

void JobPayloads::Restore(uint32_t job_id, pb::JobSpec* spec) const {
  auto it = by_job_.find(job_id);
  if (it != by_job_.end()) spec->MergeFromString(*it->second);
}

const std::string& JobPayloads::Bytes(uint32_t job_id) const {
  auto it = by_job_.find(job_id);
  return it == by_job_.end() ? Empty() : *it->second;
}

void JobPayloads::Drop(uint32_t job_id) {
  auto it = by_job_.find(job_id);
  if (it == by_job_.end()) return;
  // The last job holding it: forget the pool entry before the string (its key) goes.
  if (it->second.use_count() == 1) pool_.erase(std::string_view(*it->second));
  by_job_.erase(it);
}

void AppendJobField(std::string& out, uint32_t field, const pb::JobRecord& job,
                    const std::string& payload, std::string_view overrides) {
  size_t record = job.ByteSizeLong();
  size_t extra = payload.empty() ? 0
                                 : VarintSize((kJobRecordSpecField << 3) | 2) +
                                       VarintSize(payload.size()) + payload.size();
  AppendVarint(out, (uint64_t(field) << 3) | 2);
  AppendVarint(out, record + extra + overrides.size());
  job.AppendToString(&out);
  if (extra != 0) {
    AppendVarint(out, (kJobRecordSpecField << 3) | 2);
    AppendVarint(out, payload.size());
    out += payload;
  }
  out += overrides;
}

}  // namespace shoal::ctld
