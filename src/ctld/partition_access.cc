// Who may submit to a partition: RootOnly, AllowGroups, AllowAccounts/DenyAccounts, AllowQos
// and the partition's own state, with Slurm's messages. Multi-partition jobs (-p a,b) keep the
// partitions they may use; the job is refused only when none is left.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

bool ListAllows(const std::string& list, const std::string& value) {
  if (list.empty() || list == "ALL") return true;
  auto items = SplitList(list);
  return std::find(items.begin(), items.end(), value) != items.end();
}

}  // namespace

const std::vector<uint32_t>& Controller::UserGroups(uint32_t uid, uint32_t gid) {
  // NSS lookups are slow and may block, so each user's groups are read once per controller
  // start; group changes take effect after a restart, as Slurm's own group cache does by default.
  auto it = group_cache_.find(uid);
  if (it != group_cache_.end()) return it->second;
  std::vector<uint32_t> groups{gid};
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found) {
    int count = 64;
    std::vector<gid_t> list(count);
    if (getgrouplist(found->pw_name, found->pw_gid, list.data(), &count) == -1) {
      list.resize(count);
      getgrouplist(found->pw_name, found->pw_gid, list.data(), &count);
    }
    list.resize(std::max(count, 0));
    for (gid_t g : list) groups.push_back(g);
  }
  return group_cache_.emplace(uid, std::move(groups)).first->second;
}

bool Controller::GroupAllowed(const std::string& allow_groups, uint32_t uid, uint32_t gid) {
  if (allow_groups.empty() || allow_groups == "ALL") return true;
  const auto& mine = UserGroups(uid, gid);
  for (const std::string& name : SplitList(allow_groups)) {
    struct group gr {};
    struct group* found = nullptr;
    std::vector<char> buf(16384);
    if (getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found) != 0 || !found) continue;
    if (std::find(mine.begin(), mine.end(), found->gr_gid) != mine.end()) return true;
  }
  return false;
}

Status Controller::CheckPartitionAccess(const pb::JobSpec& spec, const Partition& part,
                                        bool admin) {
  const auto& p = part.rec;
  if (p.state() == "INACTIVE" || p.state() == "DRAIN")
    return Error(ErrorCode::kPartitionNotAvail,
                 "Required partition not available (inactive or drain)");
  if (admin) return Status::Ok();
  if (p.root_only() && spec.uid() != 0)
    return Error(ErrorCode::kAccessDenied, "Access/permission denied");
  if (!GroupAllowed(p.allow_groups(), spec.uid(), spec.gid()))
    return Error(ErrorCode::kGroupNotPermitted, "User's group not permitted to use this partition");
  const std::string& account = spec.account();
  bool denied =
      !p.deny_accounts().empty() && !account.empty() && ListAllows(p.deny_accounts(), account);
  if (denied || !ListAllows(p.allow_accounts(), account))
    return Error(ErrorCode::kInvalidAccount,
                 "Invalid account or account/partition combination specified");
  std::string qos = spec.qos().empty() ? "normal" : spec.qos();
  if (!ListAllows(p.allow_qos(), qos))
    return Error(ErrorCode::kInvalidQos, "Invalid qos specification");
  return Status::Ok();
}

Result<std::vector<const Controller::Partition*>> Controller::PartitionsForSubmit(
    const pb::JobSpec& spec, bool admin) {
  std::vector<const Partition*> out;
  if (spec.partition().empty()) {
    const Partition* part = DefaultPartition();
    if (!part)
      return Error(ErrorCode::kInvalidPartition,
                   "No partition specified or system default partition");
    if (Status s = CheckPartitionAccess(spec, *part, admin); !s.ok()) return s;
    out.push_back(part);
    return out;
  }
  Status first_error;
  for (const std::string& name : SplitList(spec.partition())) {
    const Partition* part = FindPartition(name);
    if (!part) return Error(ErrorCode::kInvalidPartition, "invalid partition specified: " + name);
    if (std::find(out.begin(), out.end(), part) != out.end()) continue;
    Status s = CheckPartitionAccess(spec, *part, admin);
    if (!s.ok()) {
      if (first_error.ok()) first_error = s;
      continue;
    }
    out.push_back(part);
  }
  if (out.empty())
    return first_error.ok() ? Error(ErrorCode::kInvalidPartition, "invalid partition specified")
                            : first_error;
  // Slurm tries the partitions of a multi-partition job highest PriorityTier first.
  std::stable_sort(out.begin(), out.end(), [](const Partition* a, const Partition* b) {
    return a->rec.priority_tier() > b->rec.priority_tier();
  });
  return out;
}

}  // namespace shoal::ctld
