// The controller's side of accounting (AccountingStorageType=accounting_storage/slurmdbd).
//
// Nothing lost: a job's record is durable in the controller's own journal before any client
// hears of it, so the "outbox" is simply the set of jobs whose latest state shoaldbd has not
// acknowledged. They are sent in batches (idempotent upserts keyed by cluster, job id and submit
// time), and a finished job is not purged from memory (or the journal) until its final record
// is acknowledged. After a controller restart every job still held is sent again, which the
// idempotent writes make harmless; so while shoaldbd or its database is down, jobs keep
// running, records wait, and each arrives exactly once when it is back.
//
// Associations and QOS come the other way: fetched whole, polled by version, and cached on disk
// so enforcement keeps working from the last copy while shoaldbd is down.
#include <grp.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/hostlist.h"
#include "common/log.h"
#include "ctld/acct_record.h"
#include "ctld/controller.h"
#include "sched/reservation_record.h"

namespace shoal::ctld {
namespace {

constexpr size_t kAcctBatchJobs = 500;
constexpr int64_t kAssocPollSeconds = 2;

bool NodeOutOfService(const pb::NodeRecord& r) {
  return r.base_state() == pb::NODE_DOWN || r.drain();
}

}  // namespace

Status Controller::StartAccounting() {
  if (conf_.Get("AccountingStorageType") != "accounting_storage/slurmdbd") return Status::Ok();
  accounting_enabled_ = true;
  std::string host = conf_.Get("AccountingStorageHost", "localhost");
  std::string port = conf_.Get("AccountingStoragePort", "6819");
  dbd_address_ = host + ":" + port;
  auto fs = sched::ParseFairShareConfig(conf_.options);
  if (!fs) return fs.status();
  fairshare_.SetConfig(*fs);
  LoadUsage();
  assoc_cache_path_ = conf_.StateSaveLocation() + "/assoc_cache.pb";
  // Enforce from the last copy until shoaldbd answers.
  std::ifstream in(assoc_cache_path_, std::ios::binary);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    pb::AssocSnapshot snap;
    if (snap.ParseFromString(ss.str())) {
      LogInfo("associations: %d from the cache (version %llu)", snap.assocs_size(),
              static_cast<unsigned long long>(snap.version()));
      ApplyAssocSnapshot(std::move(snap));
    }
  }
  // Every job held in memory may have changed since shoaldbd last heard: send them all again.
  for (const auto& [id, job] : jobs_) MarkAcctDirty(id);
  for (const auto& [id, packed] : packed_) MarkAcctDirty(id);
  for (const auto& [id, packed] : packed_finished_) MarkAcctDirty(id);
  AccountingTick();
  return Status::Ok();
}

void Controller::MarkAcctDirty(uint32_t job_id) {
  if (!accounting_enabled_) return;
  acct_dirty_[job_id] = ++acct_generation_;
}

bool Controller::AcctUnsent(uint32_t job_id) const {
  return accounting_enabled_ && acct_dirty_.count(job_id) != 0;
}

void Controller::AccountingTick() {
  if (!accounting_enabled_ || shutting_down_) return;
  CollectNodeEvents();
  CollectReservations();
  if (!dbd_conn_ || dbd_conn_->closed()) {
    dbd_conn_.reset();
    if (dbd_connecting_) return;
    dbd_connecting_ = true;
    RpcConnect(
        io_, dbd_address_,
        [](const RpcConnectionPtr&, const pb::Credential&, const std::string&, Responder r) {
          r(ErrorResponse(ErrorCode::kNotSupported, "the controller takes no requests here"));
        },
        [this](Result<RpcConnectionPtr> conn) {
          dbd_connecting_ = false;
          if (!conn) {
            if (!dbd_down_logged_)
              LogError("shoaldbd at %s: %s", dbd_address_.c_str(), conn.error().c_str());
            dbd_down_logged_ = true;
            return;
          }
          dbd_conn_ = *conn;
          dbd_down_logged_ = false;
          acct_in_flight_ = false;
          assoc_poll_in_flight_ = false;
          LogInfo("connected to shoaldbd at %s", dbd_address_.c_str());
          RegisterWithDbd();
        });
    return;
  }
  if (Now() - last_assoc_poll_ >= kAssocPollSeconds) PollAssociations();
  SendAcctBatch();
}

void Controller::CallDbd(const pb::DbdRequest& request,
                         std::function<void(Result<pb::DbdResponse>)> done) {
  if (!dbd_conn_ || dbd_conn_->closed()) {
    done(Error(ErrorCode::kUnavailable, "shoaldbd not connected"));
    return;
  }
  pb::Request envelope;
  envelope.set_dbd(request.SerializeAsString());
  std::string body = envelope.SerializeAsString();
  dbd_conn_->Send(envelope, key_.Sign(slurm_user_uid_, 0, body, Now()),
                  [done = std::move(done)](Result<pb::Response> resp) {
                    if (!resp) return done(resp.status());
                    if (resp->rc() != 0)
                      return done(Error(static_cast<ErrorCode>(resp->rc()), resp->error()));
                    pb::DbdResponse out;
                    if (!out.ParseFromString(resp->dbd()))
                      return done(Error(ErrorCode::kProtocol, "malformed shoaldbd answer"));
                    done(std::move(out));
                  });
}

void Controller::RegisterWithDbd() {
  pb::DbdRequest req;
  auto* c = req.mutable_register_cluster()->mutable_cluster();
  c->set_name(conf_.ClusterName());
  c->set_control_host(conf_.ControllerHost());
  c->set_control_port(conf_.ControllerPort());
  uint64_t cpus = 0, mem = 0;
  for (const auto& n : nodes_) {
    cpus += n.rec.cpus();
    mem += n.rec.real_memory_mb();
  }
  c->set_tres(TresString(cpus, mem, nodes_.size(), 0));
  c->set_rpc_version(SHOAL_VERSION);
  CallDbd(req, [this](Result<pb::DbdResponse> resp) {
    if (!resp) {
      LogError("shoaldbd: cluster registration failed: %s", resp.error().c_str());
      return;
    }
    PollAssociations();
    SendAcctBatch();
  });
}

void Controller::PollAssociations() {
  if (assoc_poll_in_flight_) return;
  assoc_poll_in_flight_ = true;
  last_assoc_poll_ = Now();
  pb::DbdRequest req;
  req.mutable_assoc_snapshot()->set_cluster(conf_.ClusterName());
  req.mutable_assoc_snapshot()->set_known_version(assocs_ ? assocs_->version() : 0);
  CallDbd(req, [this](Result<pb::DbdResponse> resp) {
    assoc_poll_in_flight_ = false;
    if (!resp) return;
    const auto& answer = resp->assoc_snapshot();
    if (answer.unchanged()) return;
    std::string bytes = answer.snapshot().SerializeAsString();
    // Cache first (write and rename), so a restart without shoaldbd enforces the same rules.
    std::string tmp = assoc_cache_path_ + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    std::rename(tmp.c_str(), assoc_cache_path_.c_str());
    LogInfo("associations: %d (version %llu)", answer.snapshot().assocs_size(),
            static_cast<unsigned long long>(answer.snapshot().version()));
    ApplyAssocSnapshot(answer.snapshot());
    ScheduleSoon();  // a raised limit may let pending jobs start
  });
}

void Controller::SendAcctBatch() {
  if (acct_in_flight_ || !dbd_conn_ || dbd_conn_->closed()) return;
  if (acct_dirty_.empty() && acct_events_.empty()) return;
  pb::DbdRequest req;
  auto* batch = req.mutable_records();
  batch->set_cluster(conf_.ClusterName());
  std::vector<std::pair<uint32_t, uint64_t>> sent;
  pb::JobRecord scratch;  // a packed job is read, not unpacked
  for (auto it = acct_dirty_.begin(); it != acct_dirty_.end() && sent.size() < kAcctBatchJobs;) {
    const pb::JobRecord* job = PeekJob(it->first, &scratch);
    if (job == nullptr) {  // gone (purged without accounting, e.g. -c): nothing to send
      it = acct_dirty_.erase(it);
      continue;
    }
    *batch->add_jobs() = ToAcctJob(*job, conf_.ClusterName(), GroupName(job->spec().gid()));
    sent.emplace_back(it->first, it->second);
    ++it;
  }
  size_t events = acct_events_.size();
  for (const auto& e : acct_events_) *batch->add_events() = e;
  size_t resvs = acct_resvs_.size();
  for (const auto& r : acct_resvs_) *batch->add_reservations() = r;
  if (sent.empty() && events == 0 && resvs == 0) return;
  acct_in_flight_ = true;
  CallDbd(req, [this, sent = std::move(sent), events, resvs](Result<pb::DbdResponse> resp) {
    acct_in_flight_ = false;
    if (!resp) {
      // Kept; the next tick tries again. shoaldbd or its database being away is expected;
      // a refusal is not, and holds back every record queued behind this batch.
      if (resp.status().code() == ErrorCode::kUnavailable) {
        LogDebug("accounting records not stored yet: %s", resp.error().c_str());
      } else if (Now() - last_acct_refusal_log_ >= 60) {
        last_acct_refusal_log_ = Now();
        LogError("shoaldbd refused accounting records (retrying): %s", resp.error().c_str());
      }
      return;
    }
    for (const auto& [id, gen] : sent) {
      auto it = acct_dirty_.find(id);
      if (it != acct_dirty_.end() && it->second == gen) acct_dirty_.erase(it);
    }
    acct_events_.erase(
        acct_events_.begin(),
        acct_events_.begin() + static_cast<std::ptrdiff_t>(std::min(events, acct_events_.size())));
    acct_resvs_.erase(
        acct_resvs_.begin(),
        acct_resvs_.begin() + static_cast<std::ptrdiff_t>(std::min(resvs, acct_resvs_.size())));
    SendAcctBatch();  // more waiting: keep the pipe full
  });
}

void Controller::CollectNodeEvents() {
  for (const auto& node : nodes_) {
    const auto& r = node.rec;
    auto open = open_node_events_.find(r.name());
    if (NodeOutOfService(r)) {
      int64_t since = r.reason_time() > 0 ? r.reason_time() : Now();
      if (open != open_node_events_.end() && open->second == since) continue;
      pb::AcctEvent e;
      e.set_cluster(conf_.ClusterName());
      e.set_node_name(r.name());
      e.set_time_start(since);
      e.set_state(r.base_state() == pb::NODE_DOWN ? "DOWN" : "DRAIN");
      e.set_reason(r.reason());
      e.set_reason_uid(r.reason_uid());
      e.set_tres(TresString(r.cpus(), r.real_memory_mb(), 1, 0));
      acct_events_.push_back(e);
      open_node_events_[r.name()] = since;
    } else if (open != open_node_events_.end()) {
      pb::AcctEvent e;
      e.set_cluster(conf_.ClusterName());
      e.set_node_name(r.name());
      e.set_time_start(open->second);
      e.set_time_end(Now());
      e.set_state("UP");
      e.set_tres(TresString(r.cpus(), r.real_memory_mb(), 1, 0));
      acct_events_.push_back(e);
      open_node_events_.erase(open);
    }
  }
}

// Reservations as shoaldbd keeps them: one row per window (recurring ones roll to a new row),
// keyed by a stable id from the name and the start time; a deleted one is marked deleted.
void Controller::CollectReservations() {
  std::unordered_map<std::string, std::string> now_seen;
  for (const auto& r : reservations_) {
    pb::AcctReservation a;
    a.set_cluster(conf_.ClusterName());
    a.set_id(static_cast<uint32_t>(std::hash<std::string>{}(r.name) & 0x7fffffff));
    a.set_name(r.name);
    a.set_time_start(r.start);
    a.set_time_end(r.end);
    a.set_nodelist(CompressHostlist(r.node_names));
    a.set_tres("cpu=" + std::to_string(r.core_cnt));
    pb::ReservationRecord rec = sched::ToRecord(r);
    std::string flags;
    for (const auto& f : rec.flags()) flags += (flags.empty() ? "" : ",") + f;
    a.set_flags(flags);
    a.set_users(rec.users());
    a.set_accounts(rec.accounts());
    std::string signature = a.SerializeAsString();
    auto it = sent_resvs_.find(r.name);
    if (it == sent_resvs_.end() || it->second != signature) acct_resvs_.push_back(a);
    now_seen[r.name] = std::move(signature);
  }
  for (const auto& [name, signature] : sent_resvs_) {
    if (now_seen.count(name) != 0) continue;
    pb::AcctReservation gone;
    if (!gone.ParseFromString(signature)) continue;
    gone.set_deleted(true);
    gone.set_time_end(std::min(gone.time_end(), Now()));
    acct_resvs_.push_back(std::move(gone));
  }
  sent_resvs_ = std::move(now_seen);
}

const std::string& Controller::GroupName(uint32_t gid) {
  auto it = group_names_.find(gid);
  if (it != group_names_.end()) return it->second;
  struct group gr {};
  struct group* out = nullptr;
  char buf[4096];
  std::string name = std::to_string(gid);
  if (::getgrgid_r(gid, &gr, buf, sizeof buf, &out) == 0 && out != nullptr) name = gr.gr_name;
  return group_names_.emplace(gid, std::move(name)).first->second;
}

}  // namespace shoal::ctld
