// Associations in the controller: which account and QOS a job runs under, the limits that
// hold it (AccountingStorageEnforce), and fair-share usage fed into the multifactor priority.
// The tree comes from shoaldbd (accounting.cc); everything here runs on the event-loop thread.
#include <pwd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "common/units.h"
#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string FirstPartition(const std::string& list) { return list.substr(0, list.find(',')); }

sched::JobSize LimitShape(const pb::JobRecord& job) {
  sched::JobSize shape;
  shape.cpus = std::max<uint32_t>(job.num_cpus(), 1);
  shape.nodes = std::max<uint32_t>(job.num_nodes(), 1);
  const auto& s = job.spec();
  shape.mem_mb =
      s.mem_per_node_mb() ? s.mem_per_node_mb() * shape.nodes : s.mem_per_cpu_mb() * shape.cpus;
  shape.time_limit_min = job.time_limit();
  return shape;
}

}  // namespace

void Controller::ApplyAssocSnapshot(pb::AssocSnapshot snap) {
  assoc_tree_ =
      std::make_shared<const sched::AssocTree>(sched::AssocTree::Build(snap, conf_.ClusterName()));
  assocs_ = std::move(snap);
  resolved_.clear();  // association ids may have moved: resolve again
  fairshare_.SetTree(assoc_tree_);
  priority_totals_.reset();
}

bool Controller::LimitsEnforced() const {
  return accounting_enabled_ && (enforce_.associations || enforce_.limits || enforce_.qos);
}

Status Controller::ResolveAssociation(pb::JobRecord& job) {
  if (!accounting_enabled_) return Status::Ok();
  pb::JobSpec& spec = *job.mutable_spec();
  if (!assoc_tree_) {
    if (enforce_.associations) return Error(ErrorCode::kInvalidAccount, sched::kInvalidAccountText);
    return Status::Ok();
  }
  sched::SubmitJob sj;
  sj.user = spec.user_name();
  sj.account = spec.account();
  sj.qos = spec.qos();
  sj.shape = LimitShape(job);
  // Each partition of a multi-partition job must admit it; the first one names the association.
  std::string list = job.partition();
  std::optional<sched::ResolvedJob> first;
  for (size_t pos = 0; pos <= list.size();) {
    size_t comma = list.find(',', pos);
    sj.partition = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    auto resolved = sched::ValidateSubmit(*assoc_tree_, assoc_counters_, sj, enforce_);
    if (!resolved) return resolved.status();
    if (!first) first = std::move(*resolved);
  }
  if (!first) return Status::Ok();
  if (!first->account.empty()) spec.set_account(first->account);
  if (!first->qos.empty()) spec.set_qos(first->qos);
  return Status::Ok();
}

std::optional<sched::CountedJob> Controller::CountedOf(const pb::JobRecord& job) {
  if (!assoc_tree_) return std::nullopt;
  auto it = resolved_.find(job.job_id());
  if (it == resolved_.end()) {
    const auto& s = job.spec();
    int index = assoc_tree_->Find(s.user_name(), s.account(), FirstPartition(job.partition()));
    sched::ResolvedJob r;
    if (index != sched::AssocTree::kNone) {
      r.assoc_index = index;
      r.assoc_id = assoc_tree_->node(index).assoc.id();
      r.account = assoc_tree_->node(index).account;
      r.qos = s.qos().empty() ? assoc_tree_->DefaultQos(index) : Lower(s.qos());
    }
    it = resolved_.emplace(job.job_id(), std::move(r)).first;
  }
  if (it->second.assoc_index == sched::AssocTree::kNone) return std::nullopt;
  sched::CountedJob cj;
  cj.assoc_id = it->second.assoc_id;
  cj.qos = it->second.qos;
  cj.user = job.spec().user_name();
  cj.account = it->second.account;
  cj.shape = LimitShape(job);
  return cj;
}

void Controller::RecountAssocUsage() {
  if (!LimitsEnforced() || !assoc_tree_) return;
  std::vector<sched::CountedJob> submitted, running;
  // Nothing is packed while limits are enforced (MayPack), unless enforcement came with a
  // reconfiguration: those few are read packed.
  ForEachJob(
      [&](uint32_t, const pb::JobRecord& job) {
        bool is_running = HoldsNodes(job);
        if (job.state() != pb::JOB_PENDING && !is_running) return;
        auto cj = CountedOf(job);
        if (!cj) return;
        if (is_running) running.push_back(*cj);
        submitted.push_back(std::move(*cj));
      },
      /*finished_packed=*/false);
  assoc_counters_ = sched::Recount(*assoc_tree_, submitted, running);
}

std::string Controller::LimitReason(const pb::JobRecord& job, bool admit) {
  if (!LimitsEnforced() || !assoc_tree_ || !enforce_.limits) return "";
  auto cj = CountedOf(job);
  if (!cj) return "";
  sched::LimitContext ctx{*assoc_tree_, assoc_counters_, &fairshare_, enforce_.safe};
  std::string why = sched::PendingLimitReason(ctx, *cj);
  // Admitted to this pass: count it as running, so the next job sees the limit it would use.
  if (why.empty() && admit) sched::CountRunning(assoc_counters_, *assoc_tree_, *cj, +1);
  return why;
}

void Controller::FairShareTick(int64_t now) {
  if (!accounting_enabled_ || !assoc_tree_) return;
  // Follow the running jobs (start, end) so usage accrues from the right moments.
  std::unordered_set<uint32_t> still;
  for (const auto& [id, job] : jobs_) {
    if (job.state() != pb::JOB_RUNNING) continue;
    auto cj = CountedOf(job);
    if (!cj) continue;
    still.insert(id);
    if (fs_running_.count(id) != 0) continue;
    sched::ChargedJob rj;
    rj.assoc_id = cj->assoc_id;
    rj.qos = cj->qos;
    rj.cpus = cj->shape.cpus;
    rj.nodes = cj->shape.nodes;
    rj.mem_mb = cj->shape.mem_mb;
    rj.start_time = job.start_time();
    rj.time_limit_min = job.time_limit();
    fairshare_.JobStarted(id, rj);
    fs_running_.insert(id);
  }
  pb::JobRecord scratch;  // an ended job may be packed already: read, not unpacked
  for (auto it = fs_running_.begin(); it != fs_running_.end();) {
    if (still.count(*it) == 0) {
      const pb::JobRecord* job = PeekJob(*it, &scratch);
      fairshare_.JobEnded(*it, job && job->end_time() > 0 ? job->end_time() : now);
      it = fs_running_.erase(it);
    } else {
      ++it;
    }
  }
  fairshare_.Advance(now);
  if (now - last_usage_save_ >= 60) SaveUsage(now);
}

void Controller::LoadUsage() {
  std::ifstream in(conf_.StateSaveLocation() + "/assoc_usage");
  if (!in) return;
  sched::UsageState st;
  std::string kind;
  while (in >> kind) {
    if (kind == "time") {
      in >> st.last_update >> st.next_reset;
    } else if (kind == "a") {
      uint32_t id;
      double usage;
      if (in >> id >> usage) st.assoc_usage.emplace_back(id, usage);
    } else if (kind == "q") {
      std::string name;
      double usage;
      if (in >> name >> usage) st.qos_usage.emplace_back(name, usage);
    }
  }
  fairshare_.Import(st);
}

void Controller::SaveUsage(int64_t now) {
  last_usage_save_ = now;
  sched::UsageState st = fairshare_.Export();
  std::ostringstream out;
  out.precision(17);
  out << "time " << st.last_update << " " << st.next_reset << "\n";
  for (const auto& [id, usage] : st.assoc_usage) out << "a " << id << " " << usage << "\n";
  for (const auto& [name, usage] : st.qos_usage) out << "q " << name << " " << usage << "\n";
  std::string path = conf_.StateSaveLocation() + "/assoc_usage";
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << out.str();
  }
  std::rename(tmp.c_str(), path.c_str());
}

pb::Response Controller::QueryShares(const pb::Credential& cred, const pb::ShareQueryRequest& req) {
  pb::Response resp;
  if (!accounting_enabled_ || !assoc_tree_) {
    resp.mutable_share_query();
    return resp;
  }
  std::string caller = std::to_string(cred.uid());
  if (const passwd* pw = ::getpwuid(cred.uid())) caller = pw->pw_name;
  *resp.mutable_share_query() = fairshare_.Shares(req, caller, Now());
  return resp;
}

}  // namespace shoal::ctld
