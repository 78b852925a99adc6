#include "sched/reservation_record.h"

#include <algorithm>
#include <array>
#include <utility>

namespace shoal::sched {
namespace {

struct StoredFlag {
  uint64_t bit;
  const char* name;
};
// The persisted spelling of each flag. Append only: names in old journals must keep meaning.
constexpr std::array<StoredFlag, 21> kStoredFlags = {{
    {kResvMaint, "MAINT"},
    {kResvFlex, "FLEX"},
    {kResvOverlap, "OVERLAP"},
    {kResvIgnoreJobs, "IGNORE_JOBS"},
    {kResvHourly, "HOURLY"},
    {kResvDaily, "DAILY"},
    {kResvWeekday, "WEEKDAY"},
    {kResvWeekend, "WEEKEND"},
    {kResvWeekly, "WEEKLY"},
    {kResvSpecNodes, "SPEC_NODES"},
    {kResvAllNodes, "ALL_NODES"},
    {kResvAnyNodes, "ANY_NODES"},
    {kResvFirstCores, "FIRST_CORES"},
    {kResvStatic, "STATIC_ALLOC"},
    {kResvPartNodes, "PART_NODES"},
    {kResvTimeFloat, "TIME_FLOAT"},
    {kResvReplace, "REPLACE"},
    {kResvReplaceDown, "REPLACE_DOWN"},
    {kResvPurgeComp, "PURGE_COMP"},
    {kResvNoHoldJobsAfter, "NO_HOLD_JOBS_AFTER_END"},
    {kResvMagnetic, "MAGNETIC"},
}};

// "a,b" or, for a deny list, "-a,-b" (the form scontrol takes and shows).
std::string JoinList(const std::vector<std::string>& names, bool denied) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ',';
    if (denied) out += '-';
    out += n;
  }
  return out;
}

std::vector<std::string> SplitList(const std::string& text, bool* denied) {
  std::vector<std::string> out;
  bool minus = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty() && item[0] == '-') {
      minus = true;
      item.erase(0, 1);
    }
    if (!item.empty()) out.push_back(std::move(item));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (denied) *denied = minus;
  return out;
}

}  // namespace

pb::ReservationRecord ToRecord(const Reservation& r) {
  pb::ReservationRecord rec;
  rec.set_name(r.name);
  rec.set_start_time(r.start);
  rec.set_end_time(r.end);
  for (const auto& n : r.node_names) rec.add_nodes(n);
  rec.set_node_cnt(r.node_cnt);
  rec.set_core_cnt(r.core_cnt);
  rec.set_partition(r.partition);
  rec.set_users(JoinList(r.users, r.users_denied));
  rec.set_accounts(JoinList(r.accounts, r.accounts_denied));
  rec.set_groups(JoinList(r.groups, false));
  for (const auto& f : kStoredFlags)
    if (r.flags & f.bit) rec.add_flags(f.name);
  rec.set_features(r.features);
  rec.set_licenses(r.licenses);
  rec.set_purge_comp_seconds(r.purge_comp_seconds);
  return rec;
}

Reservation FromRecord(const pb::ReservationRecord& rec,
                       const std::function<int(const std::string&)>& node_index) {
  Reservation r;
  r.name = rec.name();
  r.start = rec.start_time();
  r.end = rec.end_time();
  r.duration = r.end - r.start;
  if (node_index) {
    std::vector<std::pair<int, std::string>> nodes;
    for (const auto& n : rec.nodes()) {
      int idx = node_index(n);
      if (idx >= 0) nodes.emplace_back(idx, n);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (auto& [idx, name] : nodes) {
      r.node_indexes.push_back(idx);
      r.node_names.push_back(std::move(name));
    }
    // Nodes that no longer exist are gone from the count, as Slurm drops them.
    r.node_cnt = rec.nodes_size() == static_cast<int>(nodes.size())
                     ? rec.node_cnt()
                     : static_cast<uint32_t>(nodes.size());
  } else {
    r.node_names.assign(rec.nodes().begin(), rec.nodes().end());
    r.node_cnt = rec.node_cnt();
  }
  r.core_cnt = rec.core_cnt();
  r.partition = rec.partition();
  r.users = SplitList(rec.users(), &r.users_denied);
  r.accounts = SplitList(rec.accounts(), &r.accounts_denied);
  r.groups = SplitList(rec.groups(), nullptr);
  for (const auto& name : rec.flags())
    for (const auto& f : kStoredFlags)
      if (name == f.name) r.flags |= f.bit;
  r.features = rec.features();
  r.licenses = rec.licenses();
  r.purge_comp_seconds = rec.purge_comp_seconds();
  return r;
}

}  // namespace shoal::sched
