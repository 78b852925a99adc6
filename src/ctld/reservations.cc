// Advance reservations in the controller: the reservation table, scontrol create/update/delete
// and show (RPC handlers), journal replay and snapshot, the once-a-second roll-forward and
// purge, and the checks the scheduler and submission use. The rules themselves (parsing,
// validation, windows, access) live in sched/reservation.h; this file owns state and I/O.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "common/log.h"
#include "common/units.h"
#include "ctld/controller.h"
#include "sched/reservation_record.h"

namespace shoal::ctld {
namespace {

std::string UserName(uint32_t uid) {
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd pw{}, *res = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res) return res->pw_name;
  return std::to_string(uid);
}

bool UserExists(std::string_view name) {
  std::string n(name);
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd pw{}, *res = nullptr;
  return getpwnam_r(n.c_str(), &pw, buf.data(), buf.size(), &res) == 0 && res;
}

pb::JournalRecord UpsertRecord(const sched::Reservation& r) {
  pb::JournalRecord rec;
  *rec.mutable_reservation() = sched::ToRecord(r);
  return rec;
}

pb::JournalRecord DeleteRecord(const std::string& name) {
  pb::JournalRecord rec;
  rec.set_delete_reservation(name);
  return rec;
}

pb::JournalRecord CounterRecord(uint32_t next_id) {
  pb::JournalRecord rec;
  rec.set_next_resv_id(next_id);
  return rec;
}

// When a job that runs now is expected to end: its start plus its time limit.
int64_t ExpectedEnd(const pb::JobRecord& job) {
  if (job.time_limit() == kTimeInfinite || job.time_limit() == kTimeNoVal) return INT64_MAX;
  return job.start_time() + static_cast<int64_t>(job.time_limit()) * 60;
}

}  // namespace

const sched::Reservation* Controller::FindReservation(const std::string& name) const {
  for (const auto& r : reservations_)
    if (r.name == name) return &r;
  return nullptr;
}

sched::ResvCluster Controller::ReservationCluster(int64_t now, const std::string& skip_name) const {
  sched::ResvCluster c;
  c.now = now;
  c.node_names.reserve(nodes_.size());
  c.node_cpus.reserve(nodes_.size());
  c.node_usable.reserve(nodes_.size());
  for (const auto& n : nodes_) {
    c.node_names.push_back(n.rec.name());
    c.node_cpus.push_back(n.rec.cpus());
    bool usable = !n.rec.drain() && n.rec.base_state() != pb::NODE_DOWN &&
                  n.rec.base_state() != pb::NODE_FUTURE;
    c.node_usable.push_back(usable);
  }
  c.user_exists = UserExists;
  // Accounts are not validated: the controller keeps no association table yet.
  c.partition_nodes = [this](std::string_view name) -> std::optional<std::vector<int>> {
    const Partition* p = FindPartition(std::string(name));
    if (!p) return std::nullopt;
    return p->node_index;
  };
  if (const Partition* def = DefaultPartition()) c.default_partition = def->rec.name();
  // Expected end of the work on each node, from the running jobs' time limits.
  auto busy = std::make_shared<std::vector<int64_t>>(nodes_.size(), 0);
  for (const auto& [id, job] : jobs_) {
    if (job.state() != pb::JOB_RUNNING && job.state() != pb::JOB_SUSPENDED && !job.completing())
      continue;
    int64_t end = job.completing() ? now : ExpectedEnd(job);
    for (const auto& name : job.nodes()) {
      int idx = FindNode(name);
      if (idx < 0) continue;
      int64_t& until = (*busy)[static_cast<size_t>(idx)];
      until = std::max(until, end);
    }
  }
  c.node_busy_until = [busy](int n) { return (*busy)[static_cast<size_t>(n)]; };
  for (const auto& r : reservations_)
    if (r.name != skip_name) c.existing.push_back(&r);
  return c;
}

void Controller::HandleReservation(const pb::Credential& cred, const pb::ReservationRequest& req,
                                   Responder respond) {
  // Reservations are cluster policy: only root and SlurmUser change them, as in Slurm.
  if (!IsAdmin(cred.uid())) {
    respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
    return;
  }
  int64_t now = Now();
  std::vector<std::string> args(req.args().begin(), req.args().end());
  std::vector<pb::JournalRecord> recs;
  pb::Response resp;
  switch (req.action()) {
    case pb::ReservationRequest::CREATE: {
      // The client parsed these words already; parse again, a client is never trusted.
      auto parsed = sched::ParseReservationArgs(args, /*update=*/false, now);
      if (!parsed) {
        respond(ErrorResponse(ErrorCode::kInvalidReservation, parsed.error()));
        return;
      }
      auto created = sched::CreateReservation(*parsed, ReservationCluster(now, ""), next_resv_id_);
      if (!created) {
        respond(ErrorResponse(created.status().code(), created.error()));
        return;
      }
      next_resv_id_ = created->next_id;
      reservations_.push_back(std::move(created->resv));
      const sched::Reservation& r = reservations_.back();
      pb::JournalRecord up = UpsertRecord(r);
      up.mutable_reservation()->set_created_by(cred.uid());
      recs.push_back(std::move(up));
      recs.push_back(CounterRecord(next_resv_id_));
      resp.mutable_reservation()->set_name(r.name);
      LogInfo("reservation %s created by uid %u: %s to %s on %zu nodes", r.name.c_str(), cred.uid(),
              FormatTimestamp(r.start).c_str(), FormatTimestamp(r.end).c_str(),
              r.node_indexes.size());
      break;
    }
    case pb::ReservationRequest::UPDATE: {
      auto parsed = sched::ParseReservationArgs(args, /*update=*/true, now);
      if (!parsed) {
        respond(ErrorResponse(ErrorCode::kInvalidReservation, parsed.error()));
        return;
      }
      auto it = std::find_if(reservations_.begin(), reservations_.end(),
                             [&](const sched::Reservation& r) { return r.name == *parsed->name; });
      if (it == reservations_.end()) {
        respond(ErrorResponse(ErrorCode::kInvalidReservation, "Requested reservation is invalid"));
        return;
      }
      auto updated = sched::UpdateReservation(*it, *parsed, ReservationCluster(now, it->name));
      if (!updated) {
        respond(ErrorResponse(updated.status().code(), updated.error()));
        return;
      }
      *it = std::move(*updated);
      recs.push_back(UpsertRecord(*it));
      resp.mutable_reservation()->set_name(it->name);
      LogInfo("reservation %s updated by uid %u", it->name.c_str(), cred.uid());
      break;
    }
    case pb::ReservationRequest::DELETE: {
      auto it = std::find_if(reservations_.begin(), reservations_.end(),
                             [&](const sched::Reservation& r) { return r.name == req.name(); });
      if (it == reservations_.end()) {
        respond(ErrorResponse(ErrorCode::kInvalidReservation, "Requested reservation is invalid"));
        return;
      }
      recs.push_back(DeleteRecord(it->name));
      resp.mutable_reservation()->set_name(it->name);
      LogInfo("reservation %s deleted by uid %u", it->name.c_str(), cred.uid());
      reservations_.erase(it);
      break;
    }
    default:
      respond(ErrorResponse(ErrorCode::kProtocol, "unsupported reservation action"));
      return;
  }
  // Acknowledge only once durable; nodes may be free (or taken) from now on.
  Persist(std::move(recs), [this, respond, resp] {
    respond(resp);
    ScheduleSoon();
  });
}

pb::Response Controller::QueryReservations(const pb::ReservationQueryRequest& req) const {
  pb::Response resp;
  auto* out = resp.mutable_reservation_query();
  out->set_server_time(Now());
  for (const auto& r : reservations_)
    if (req.name().empty() || r.name == req.name()) *out->add_reservations() = sched::ToRecord(r);
  return resp;
}

void Controller::ReplayReservation(const pb::JournalRecord& rec) {
  switch (rec.body_case()) {
    case pb::JournalRecord::kReservation: {
      sched::Reservation r = sched::FromRecord(
          rec.reservation(), [this](const std::string& name) { return FindNode(name); });
      auto it = std::find_if(reservations_.begin(), reservations_.end(),
                             [&](const sched::Reservation& x) { return x.name == r.name; });
      if (it == reservations_.end()) {
        reservations_.push_back(std::move(r));
      } else {
        *it = std::move(r);
      }
      break;
    }
    case pb::JournalRecord::kDeleteReservation: {
      const std::string& name = rec.delete_reservation();
      reservations_.erase(
          std::remove_if(reservations_.begin(), reservations_.end(),
                         [&](const sched::Reservation& x) { return x.name == name; }),
          reservations_.end());
      break;
    }
    case pb::JournalRecord::kNextResvId:
      next_resv_id_ = std::max(next_resv_id_, rec.next_resv_id());
      break;
    default:
      break;
  }
}

std::vector<pb::ReservationRecord> Controller::ReservationRecords() const {
  std::vector<pb::ReservationRecord> out;
  out.reserve(reservations_.size());
  for (const auto& r : reservations_) out.push_back(sched::ToRecord(r));
  return out;
}

void Controller::ReservationTick(int64_t now) {
  if (reservations_.empty()) return;
  std::vector<pb::JournalRecord> recs;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (sched::IsExpired(*it, now)) {
      LogInfo("reservation %s ended; purged", it->name.c_str());
      recs.push_back(DeleteRecord(it->name));
      it = reservations_.erase(it);
      continue;
    }
    if (sched::RollForward(*it, now)) recs.push_back(UpsertRecord(*it));
    ++it;
  }
  // Nothing waits on these: a crash before they are durable replays the same decision.
  if (!recs.empty()) Persist(std::move(recs), nullptr);
}

sched::ResvJob Controller::ResvJobFor(const pb::JobSpec& spec, const std::string& reservation) {
  sched::ResvJob j;
  j.user = UserName(spec.uid());
  j.account = spec.account();
  for (uint32_t gid : UserGroups(spec.uid(), spec.gid())) j.groups.push_back(GroupName(gid));
  std::string primary = GroupName(spec.gid());
  if (std::find(j.groups.begin(), j.groups.end(), primary) == j.groups.end())
    j.groups.push_back(primary);
  j.reservation = reservation;
  return j;
}

Status Controller::CheckJobReservation(const pb::JobSpec& spec) {
  const sched::Reservation* r = FindReservation(spec.reservation());
  if (!r) return Error(ErrorCode::kInvalidReservation, "Requested reservation is invalid");
  // root and SlurmUser may use any reservation, as in Slurm.
  if (IsAdmin(spec.uid())) return Status::Ok();
  if (!sched::CanUse(*r, ResvJobFor(spec, spec.reservation())))
    return Error(ErrorCode::kReservationAccess, "Access denied to requested reservation");
  return Status::Ok();
}

bool Controller::ReservationBlocksNode(int node_index, int64_t t0, int64_t t1,
                                       const pb::JobRecord& job) const {
  if (reservations_.empty()) return false;
  const std::string& mine =
      job.reservation().empty() ? job.spec().reservation() : job.reservation();
  sched::ResvJob rj;
  rj.reservation = mine;
  if (!mine.empty()) {
    const sched::Reservation* r = FindReservation(mine);
    if (!r) return true;  // deleted while the job waited: it may run nowhere
    bool any_node = r->Has(sched::kResvFlex) || r->Has(sched::kResvAnyNodes);
    if (!any_node &&
        !std::binary_search(r->node_indexes.begin(), r->node_indexes.end(), node_index))
      return true;
    // Only while the reservation is active (FLEX: also outside it). Running past the end is
    // allowed, as Slurm does; ResvOverRun policing is not modelled.
    if (!r->Has(sched::kResvFlex) && sched::Windows(*r, t0, t0 + 1).empty()) return true;
  }
  for (const auto& r : reservations_) {
    if (r.name == mine) continue;
    if (!sched::Blocks(r, node_index, t0, t1, rj)) continue;
    // MAGNETIC: a job without --reservation that may use it is drawn into it.
    if (mine.empty() && r.Has(sched::kResvMagnetic) && !r.Has(sched::kResvMaint)) {
      sched::ResvJob who = rj;
      who.user = UserName(job.spec().uid());
      who.account = job.spec().account();
      if (sched::CanUse(r, who)) continue;
    }
    return true;
  }
  return false;
}

std::string Controller::ReservationPendingReason(const pb::JobRecord& job, int64_t now) const {
  if (reservations_.empty() && job.reservation().empty()) return "";
  const std::string& mine =
      job.reservation().empty() ? job.spec().reservation() : job.reservation();
  if (!mine.empty()) {
    const sched::Reservation* r = FindReservation(mine);
    if (!r) return "ReservationDeleted";
    if (!r->Has(sched::kResvFlex) && !sched::IsActive(*r, now)) return "Reservation";
    return "";
  }
  // Nodes the job could be given: those of its partitions.
  for (const auto& r : reservations_) {
    if (!r.Has(sched::kResvMaint) || !sched::IsActive(r, now)) continue;
    for (const auto& p : partitions_) {
      if (!InPartitionList(job.partition(), p.rec.name())) continue;
      for (int n : p.node_index)
        if (std::binary_search(r.node_indexes.begin(), r.node_indexes.end(), n))
          return "ReqNodeNotAvail, Reserved for maintenance";
    }
  }
  return "";
}

bool Controller::NodeInMaint(int node_index) const {
  if (reservations_.empty()) return false;
  std::vector<const sched::Reservation*> all;
  for (const auto& r : reservations_) all.push_back(&r);
  return sched::NodeInMaint(all, node_index, Now());
}

bool Controller::NodeReserved(int node_index) const {
  if (reservations_.empty()) return false;
  std::vector<const sched::Reservation*> all;
  for (const auto& r : reservations_) all.push_back(&r);
  return sched::NodeReserved(all, node_index, Now());
}

}  // namespace shoal::ctld
