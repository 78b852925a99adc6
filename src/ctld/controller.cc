// Controller set-up, request dispatch, authentication, persistence and timers.
#include "ctld/controller.h"

#include <pwd.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include "common/auth_agent.h"
#include "common/config_files.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/states.h"
#include "common/units.h"
#include "ctld/reconfigure_plan.h"

namespace shoal::ctld {

// How far a running job's step numbering skips after a controller restart (see LoadState).
constexpr uint32_t kStepIdSkipAfterRestart = 100;
// A journal larger than this at start is compacted before serving (see LoadState); at run time
// the limit is 256 MB (Persist).
constexpr uint64_t kCompactAtStartBytes = 64u << 20;
// A clean stop folds a journal larger than this into a snapshot (see Shutdown).
constexpr uint64_t kCompactAtStopBytes = 1u << 20;

Controller::Controller(asio::io_context& io, ControllerOptions options, SlurmConf conf,
                       ClusterKey key)
    : io_(io),
      options_(std::move(options)),
      conf_(std::move(conf)),
      key_(std::move(key)),
      tick_timer_(io),
      backfill_timer_(io) {}

int64_t Controller::Now() const { return ::time(nullptr); }

bool Controller::IsAdmin(uint32_t uid) const { return uid == 0 || uid == slurm_user_uid_; }

Status Controller::Start() {
  start_time_ = Now();
  max_job_count_ = conf_.MaxJobCount();
  next_job_id_ = std::max<uint32_t>(conf_.FirstJobId(), 1);
  if (passwd* pw = ::getpwnam(conf_.SlurmUser().c_str())) slurm_user_uid_ = pw->pw_uid;
  if (Status s = LoadJwt(); !s.ok()) return s;

  // Nodes and partitions from slurm.conf.
  for (const NodeConf& nc : conf_.nodes) {
    Node n;
    n.rec = NodeRecordFromConf(nc, conf_);  // reconfigure_plan.cc, shared with reconfigure
    node_by_name_[nc.name] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(n));
  }
  for (const PartitionConf& pc : conf_.partitions) {
    Partition p;
    p.rec = PartitionRecordFromConf(pc, conf_);
    for (const auto& n : pc.nodes) {
      int idx = FindNode(n);
      if (idx >= 0) p.node_index.push_back(idx);
    }
    partitions_.push_back(std::move(p));
  }
  // Resource views need the partitions (OverSubscribe) and must exist before jobs are replayed.
  for (size_t i = 0; i < nodes_.size(); ++i) InitNodeView(static_cast<int>(i));
  LoadSchedulingConfig();
  if (Status s = LoadTopology(); !s.ok()) return s;
  LoadPreemptConfig();
  LoadPowerConfig();
  // Configless: the files served to node daemons, as loaded now (reconfigure.cc).
  configless_ = HasCtldParameter(conf_, "enable_configless");
  {
    std::vector<std::string> included;
    if (LoadSlurmConfRecording(options_.conf_path, &included)) LoadConfigFiles(included);
  }

  std::string state_dir = conf_.StateSaveLocation();
  ::mkdir(state_dir.c_str(), 0700);
  if (options_.clear_state) {
    std::remove((state_dir + "/snapshot.pb").c_str());
    std::remove((state_dir + "/journal.log").c_str());
  }
  journal_ = std::make_unique<Journal>(io_, state_dir);
  diag_.Reset(Now());
  journal_->SetCommitObserver([this](uint64_t usec) { diag_.JournalCommit(usec); });
  journal_->SetErrorHandler([this](const std::string& msg) {
    // Nothing more can be acknowledged; stop rather than lie to clients.
    journal_failed_ = true;
    LogError("state save failed: %s; shutting down", msg.c_str());
    Shutdown();
  });
  if (conf_.Get("AccountingStorageType") == "accounting_storage/slurmdbd") {
    // Validated at start-up, and before the state: the load packs queued jobs only where no
    // limits will be enforced (see MayPack).
    auto flags = sched::ParseEnforce(conf_.Get("AccountingStorageEnforce"));
    if (!flags) return flags.status();
    enforce_ = *flags;
  }
  LoadState();
  RecoverPowerWaits();
  if (Status s = StartAccounting(); !s.ok()) return s;

  std::string addr = "0.0.0.0:" + std::to_string(conf_.ControllerPort());
  auto handler = [this](const RpcConnectionPtr& c, const pb::Credential& cred,
                        const std::string& body,
                        Responder r) { HandleRequest(c, cred, body, std::move(r)); };
  // HTTP on the same port: health probes and OpenMetrics (metrics_http.cc).
  auto server = RpcServer::Listen(io_, addr, handler, 0666,
                                  [this](const HttpRequest& r) { return HandleHttp(r); });
  if (!server) return server.status();
  tcp_server_ = std::move(*server);

  AuthPaths paths = AuthPathsFor(options_.conf_path, conf_.Get("AuthInfo"));
  if (auto slash = paths.agent_socket.rfind('/'); slash != std::string::npos && slash > 0)
    ::mkdir(paths.agent_socket.substr(0, slash).c_str(), 0755);
  auto agent = RpcServer::Listen(
      io_, "unix:" + paths.agent_socket,
      [this](const RpcConnectionPtr& c, const pb::Credential&, const std::string& body,
             Responder r) { HandleAgent(c, body, std::move(r)); },
      0666);
  if (!agent) return agent.status();
  agent_server_ = std::move(*agent);
  serving_ = true;

  LogInfo("shoalctld started: cluster %s, port %u, %zu nodes, %zu partitions, %zu jobs",
          conf_.ClusterName().c_str(), conf_.ControllerPort(), nodes_.size(), partitions_.size(),
          JobCount());
  ScheduleTick();
  SchedulePackJobs();
  ScheduleBackfill();
  StartConfigWatch();
  ScheduleSoon();
  return Status::Ok();
}

void Controller::Shutdown() {
  shutting_down_ = true;
  if (tcp_server_) tcp_server_->Stop();
  if (agent_server_) agent_server_->Stop();
  tick_timer_.cancel();
  backfill_timer_.cancel();
  for (auto& n : nodes_)
    if (n.stream) n.stream->Close();
  if (accounting_enabled_ && assoc_tree_) SaveUsage(Now());
  // As slurmctld saves its state on the way down: the next start reads the live jobs only,
  // instead of replaying every record since the last snapshot (ended and purged jobs too).
  if (journal_ && serving_ && !journal_failed_ && journal_->journal_bytes() > kCompactAtStopBytes)
    MaybeCompact();
  if (journal_) journal_->Stop();
  io_.stop();
}

void Controller::LoadState() {
  const auto started = std::chrono::steady_clock::now();
  uint32_t high_water = next_job_id_;
  // Each job's latest record, kept serialized until the replay ends and then parsed one at a
  // time: holding 100,000 parsed jobs at once touched ~200 MB of fresh heap, and the kernel's
  // zeroing of it was half of a restart's time. Those that may be packed stay serialized.
  std::unordered_map<uint32_t, std::string> replayed;
  auto visit = [&](pb::JournalRecord& rec) {
    switch (rec.body_case()) {
      case pb::JournalRecord::kJob: {
        pb::JobRecord& job = *rec.mutable_job();  // the journal's, reused for its next record
        uint32_t id = job.job_id();
        high_water = std::max(high_water, id + 1);
        if (uint64_t ref = job.payload_id()) {
          // Stored once, named by id (JournalRecord.payload / Snapshot.payloads).
          job.clear_payload_id();
          PayloadPtr p = payloads_.Replayed(ref);
          if (!p)
            LogError("job %u: its script and environment (payload %llu) are missing", id,
                     static_cast<unsigned long long>(ref));
          payloads_.Set(id, std::move(p));
        } else if (PayloadPtr p = payloads_.Take(job.mutable_spec())) {
          // Older state files carry the payload in every record of a job.
          payloads_.Set(id, std::move(p));
        } else {
          payloads_.Drop(id);
        }
        job.SerializeToString(&replayed[id]);
        break;
      }
      case pb::JournalRecord::kPayload:
        payloads_.Define(rec.payload().id(), std::move(*rec.mutable_payload()->mutable_spec()));
        break;
      case pb::JournalRecord::kNextJobId:
        high_water = std::max(high_water, rec.next_job_id());
        break;
      case pb::JournalRecord::kPurgeJobId:
        high_water = std::max(high_water, rec.purge_job_id() + 1);
        replayed.erase(rec.purge_job_id());
        payloads_.Drop(rec.purge_job_id());
        break;
      case pb::JournalRecord::kNode: {
        const auto& saved = rec.node();
        int idx = FindNode(saved.name());
        if (idx < 0 && saved.dynamic()) {
          pb::NodeRecord rec = saved;
          // Allocations are rebuilt from the running jobs below; liveness from registration.
          rec.set_alloc_cpus(0);
          rec.set_alloc_memory_mb(0);
          rec.set_responding(false);
          idx = AddDynamicNode(std::move(rec));
        }
        if (idx < 0) break;
        auto& r = nodes_[idx].rec;
        r.set_drain(saved.drain());
        r.set_configured_down(saved.configured_down());
        if (saved.configured_down())
          r.set_base_state(pb::NODE_DOWN);
        else if (r.base_state() == pb::NODE_DOWN)
          r.set_base_state(pb::NODE_UNKNOWN);
        r.set_reason(saved.reason());
        r.set_reason_uid(saved.reason_uid());
        r.set_reason_time(saved.reason_time());
        r.set_comment(saved.comment());
        r.set_extra(saved.extra());
        // scontrol reboot and power saving state survive a restart.
        r.set_reboot_requested(saved.reboot_requested());
        r.set_reboot_issued(saved.reboot_issued());
        r.set_reboot_next_state(saved.reboot_next_state());
        r.set_reboot_reason(saved.reboot_reason());
        r.set_reboot_time(saved.reboot_time());
        r.set_powered_down(saved.powered_down());
        r.set_powering_up(saved.powering_up());
        r.set_powering_down(saved.powering_down());
        r.set_power_change_time(saved.power_change_time());
        break;
      }
      case pb::JournalRecord::kReservation:
      case pb::JournalRecord::kDeleteReservation:
      case pb::JournalRecord::kNextResvId:
        ReplayReservation(rec);
        break;
      default:
        break;
    }
  };
  Status s = journal_->Open(visit);
  if (!s.ok()) {
    LogError("cannot load state from %s: %s", conf_.StateSaveLocation().c_str(),
             s.message().c_str());
    std::exit(1);
  }
  next_job_id_ = high_water;
  payloads_.EndReplay();
  // Limits are enforced (and queued jobs kept parsed, see MayPack) once accounting starts, after
  // this: with enforcement configured, jobs are packed later, by PackJobs, if at all.
  bool enforcement = enforce_.associations || enforce_.limits || enforce_.qos;
  int64_t now = Now();
  ReserveJobTable(replayed.size());  // sized for every job, packed ones too (as at run time)
  jobs_by_id_stale_ = true;
  std::vector<uint32_t> bumped;  // running jobs whose next step id moved on
  pb::JobRecord parsed;          // reused while jobs are packed: its strings keep their room
  for (auto& [id, bytes] : replayed) {
    if (!parsed.ParseFromString(bytes)) {  // never expected: serialized above
      LogError("job %u: its replayed record does not parse", id);
      continue;
    }
    IndexArrayTask(parsed);
    if (parsed.state() == pb::JOB_PENDING) AddPending(parsed);
    SchedView view;
    // Packed now, as PackJobs would once serving (runnable ones submitted this second wait for
    // it, as there: most start at once).
    if (!enforcement && MayPack(parsed, &view) &&
        (PackableHeld(parsed) || parsed.submit_time() < now)) {
      if (!PackableHeld(parsed)) ShapeOfJob(parsed);  // the passes read the shared shape
      packed_.emplace(id, Pack(std::move(bytes), parsed, view));
      continue;
    }
    // Finished jobs too (accounting, once started, reads them where they are).
    if (PackableFinished(parsed)) {
      ended_by_time_.insert({parsed.end_time(), id});
      packed_finished_.emplace(id, PackFinished(std::move(bytes), parsed));
      continue;
    }
    std::string().swap(bytes);
    pb::JobRecord& job = jobs_[id] = std::move(parsed);
    parsed = pb::JobRecord();
    if (job.state() == pb::JOB_SUSPENDED && job.preempted_by() != 0) preempt_suspended_.insert(id);
    if (HoldsNodes(job)) holders_.insert(id);
    if (IsFinished(job.state())) ended_by_time_.insert({job.end_time(), id});
    // Packed once serving (Start); finished ones once their epilogs have reported.
    if (Packable(job, now) || IsFinished(job.state())) pack_candidates_.push_back(id);
    // Resources stay allocated to running and completing jobs until their nodes report back.
    if (HoldsNodes(job)) {
      RebookAfterRestart(job);
      // Steps are answered before they are durable: never hand out an id again that a step
      // created just before a crash may already hold on the nodes.
      if (job.next_step_id() > 0) {
        job.set_next_step_id(job.next_step_id() + kStepIdSkipAfterRestart);
        bumped.push_back(id);
      }
    }
  }
  // Nodes get a full SlurmdTimeout from now to re-register before they are declared down.
  int64_t steady = SteadySeconds();
  for (auto& n : nodes_) n.last_seen = steady;
  // A large journal is folded into a snapshot now. A small one stays: replaying it costs about
  // what parsing a snapshot of the same jobs does, and rewriting every job before serving took
  // a sixth of a restart with 100,000 queued. What this start changed must be durable either
  // way: the step ids skipped above, or a second crash would hand them out again.
  if (journal_->journal_bytes() > kCompactAtStartBytes) {
    MaybeCompact();
  } else if (!bumped.empty()) {
    std::vector<pb::JournalRecord> records(bumped.size());
    for (size_t i = 0; i < bumped.size(); ++i) *records[i].mutable_job() = jobs_[bumped[i]];
    Persist(std::move(records), nullptr);
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  started)
                .count();
  LogInfo("state loaded in %lld ms: %zu jobs (%zu packed, %zu finished packed), %zu nodes",
          static_cast<long long>(ms), JobCount(), packed_.size(), packed_finished_.size(),
          nodes_.size());
}

void Controller::MaybeCompact() {
  // Encodes pb::Snapshot field by field straight from the live records, so compaction never
  // copies the job table (field numbers as in shoal.proto: 1 next_job_id, 2 jobs, 3 nodes).
  std::string bytes;
  AppendVarintField(bytes, 1, next_job_id_);
  // 6 payloads: each distinct script and environment once; jobs name theirs by id.
  payloads_.AppendAll(bytes, 6);
  std::string scratch;
  for (const auto& [id, job] : jobs_) {
    scratch.clear();
    uint64_t ref = payloads_.StoreRef(id, &scratch);  // every live payload is written above
    AppendJobField(bytes, 2, job, kNoPayload, PayloadIdField(ref));
  }
  for (const auto& [id, packed] : packed_) {
    scratch.clear();
    uint64_t ref = payloads_.StoreRef(id, &scratch);
    std::string after;  // the overlay's fields and the payload's id, parsed after the record's
    AppendOverlay(packed, after);
    after += PayloadIdField(ref);
    AppendJobBytes(bytes, 2, packed.record, kNoPayload, after);
  }
  for (const auto& [id, packed] : packed_finished_) {
    scratch.clear();
    uint64_t ref = payloads_.StoreRef(id, &scratch);
    AppendJobBytes(bytes, 2, packed.record, kNoPayload, PayloadIdField(ref));
  }
  for (const auto& n : nodes_) {
    if (n.deleted) continue;
    if (n.rec.dynamic() || n.rec.drain() || n.rec.configured_down() || !n.rec.reason().empty() ||
        !n.rec.comment().empty() || !n.rec.extra().empty())
      AppendMessageField(bytes, 3, n.rec);
  }
  // 4 reservations, 5 next_resv_id.
  for (const auto& r : ReservationRecords()) AppendMessageField(bytes, 4, r);
  AppendVarintField(bytes, 5, next_resv_id());
  journal_->Compact(std::move(bytes));
}

void Controller::Persist(std::vector<pb::JournalRecord> records, std::function<void()> then) {
  std::vector<std::string> encoded;
  encoded.reserve(records.size());
  for (const auto& r : records) {
    if (r.has_job()) {
      EncodeJob(r.job(), encoded);
    } else {
      if (r.has_purge_job_id()) eligibility_.NoteEvent();
      encoded.push_back(Journal::Encode(r));
    }
  }
  journal_->Append(std::move(encoded), std::move(then));
}

void Controller::EncodeJob(const pb::JobRecord& job, std::vector<std::string>& encoded) {
  // A job record names its payload, written before it the first time (job_payload.h).
  std::string payload_record;
  uint64_t ref = payloads_.StoreRef(job.job_id(), &payload_record);
  if (!payload_record.empty()) encoded.push_back(Journal::Frame(payload_record));
  std::string body;
  AppendJobField(body, 1, job, kNoPayload, PayloadIdField(ref));
  encoded.push_back(Journal::Frame(body));
  MarkAcctDirty(job.job_id());
  // A job that starts, ends or changes may satisfy another's dependency; a new or unchanged
  // pending job cannot (its own updates unpark it through AddPending).
  if (job.state() != pb::JOB_PENDING) eligibility_.NoteEvent();
}

void Controller::PersistJobs(const std::vector<pb::JobRecord*>& jobs, std::function<void()> then) {
  std::vector<std::string> encoded;
  encoded.reserve(jobs.size());
  for (const pb::JobRecord* job : jobs) EncodeJob(*job, encoded);
  journal_->Append(std::move(encoded), std::move(then));
}

void Controller::PersistJob(const pb::JobRecord& job, std::function<void()> then) {
  std::vector<std::string> encoded;
  EncodeJob(job, encoded);
  journal_->Append(std::move(encoded), std::move(then));
}

void Controller::HandleAgent(const RpcConnectionPtr& conn, const std::string& body,
                             Responder respond) {
  respond(AnswerAuthAgent(key_, *conn, body, Now()));
}

void Controller::HandleRequest(const RpcConnectionPtr& conn, const pb::Credential& wire_cred,
                               const std::string& body, Responder respond) {
  const auto arrived = std::chrono::steady_clock::now();  // sdiag's RPC time starts here
  // Past this point only `cred` exists: the verified identity (for a token, a fresh credential
  // with the token user's uid/gid; a token credential's own uid fields are never read).
  pb::Credential jwt_cred;
  auto authed = AuthenticateCredential(key_, jwt_, wire_cred, body, Now(), &jwt_cred);
  if (!authed) {
    respond(
        ErrorResponse(ErrorCode::kAuthFailure, "Protocol authentication error: " + authed.error()));
    return;
  }
  const pb::Credential& cred = **authed;
  const bool via_jwt = *authed == &jwt_cred;
  pb::Request req;
  if (!req.ParseFromString(body)) {
    respond(ErrorResponse(ErrorCode::kProtocol, "malformed request"));
    return;
  }
  respond = TimedResponder(req, cred.uid(), arrived, std::move(respond));
  if (journal_failed_) {
    respond(ErrorResponse(ErrorCode::kUnavailable, "controller cannot save state"));
    return;
  }
  switch (req.body_case()) {
    case pb::Request::kPing: {
      pb::Response r;
      r.mutable_ping()->set_controller(conf_.ControllerHost());
      r.mutable_ping()->set_server_time(Now());
      respond(r);
      return;
    }
    case pb::Request::kSubmitJob: {
      std::vector<pb::JobRecord*> created;
      pb::Response r = Submit(cred, *req.mutable_submit_job(), &created);
      if (r.rc() != 0 || created.empty()) {
        respond(r);
        return;
      }
      diag_.JobsSubmitted(static_cast<uint32_t>(created.size()));
      std::vector<pb::JournalRecord> recs;
      recs.reserve(created.size());
      for (auto* job : created) {
        pb::JournalRecord rec;
        *rec.mutable_job() = *job;
        recs.push_back(std::move(rec));
      }
      NotePackable(created);
      Persist(std::move(recs), [this, respond, r] {
        respond(r);
        if (!main_sched_.defer) ScheduleSoon();  // with defer, the next tick weighs it
      });
      return;
    }
    case pb::Request::kJobQuery:
      QueryJobs(req.job_query(), respond);
      return;
    case pb::Request::kShareQuery:
      respond(QueryShares(cred, req.share_query()));
      return;
    case pb::Request::kNodeQuery:
      respond(QueryNodes(req.node_query()));
      return;
    case pb::Request::kConfigQuery:
      respond(QueryConfig());
      return;
    case pb::Request::kReservation:
      HandleReservation(cred, req.reservation(), std::move(respond));
      return;
    case pb::Request::kReservationQuery:
      respond(QueryReservations(req.reservation_query()));
      return;
    case pb::Request::kTopologyQuery:
      respond(QueryTopology());
      return;
    case pb::Request::kPriorityQuery:
      respond(QueryPriorities(req.priority_query()));
      return;
    case pb::Request::kCancelJob:
    case pb::Request::kUpdateJob:
    case pb::Request::kJobControl: {
      std::vector<pb::JobRecord*> changed;
      pb::Response r;
      if (req.body_case() == pb::Request::kCancelJob)
        r = Cancel(cred, req.cancel_job(), &changed);
      else if (req.body_case() == pb::Request::kUpdateJob)
        r = UpdateJob(cred, req.update_job(), &changed);
      else
        r = ControlJob(cred, req.job_control(), &changed);
      if (changed.empty()) {
        respond(r);
        return;
      }
      NotePackable(changed);  // held by scontrol hold or requeuehold
      PersistJobs(changed, [this, respond, r] {
        respond(r);
        ScheduleSoon();
      });
      return;
    }
    case pb::Request::kUpdateNode: {
      // Node records were queued by UpdateNode; answer once they are on disk.
      pb::Response r = UpdateNode(cred, req.update_node());
      Persist({}, [respond, r] { respond(r); });
      return;
    }
    case pb::Request::kCreateNode: {
      pb::Response r = CreateNode(cred, req.create_node());
      Persist({}, [respond, r] { respond(r); });
      return;
    }
    case pb::Request::kDeleteNode: {
      pb::Response r = DeleteNode(cred, req.delete_node());
      Persist({}, [respond, r] { respond(r); });
      return;
    }
    case pb::Request::kRebootNodes: {
      pb::Response r = RebootNodes(cred, req.reboot_nodes());
      Persist({}, [respond, r] { respond(r); });
      return;
    }
    case pb::Request::kNodeRegister:
      if (!IsAdmin(cred.uid())) break;
      RegisterNode(conn, req.node_register(), std::move(respond));
      return;
    case pb::Request::kHeartbeat:
      if (!IsAdmin(cred.uid())) break;
      Heartbeat(req.heartbeat());
      respond(pb::Response());
      return;
    case pb::Request::kNodeDrain:
      NodeDrain(conn, cred, req.node_drain(), std::move(respond));
      return;
    case pb::Request::kPrologEpilog:
      NodePrologEpilog(conn, cred, req.prolog_epilog(), std::move(respond));
      return;
    case pb::Request::kJobComplete:
      if (!IsAdmin(cred.uid())) break;
      JobComplete(req.job_complete(), std::move(respond));
      return;
    case pb::Request::kAllocationWait:
      AllocationWait(conn, cred, req.allocation_wait(), std::move(respond));
      return;
    case pb::Request::kReleaseAllocation:
      ReleaseAllocation(cred, req.release_allocation(), std::move(respond));
      return;
    case pb::Request::kStepCreate:
      CreateStep(cred, req.step_create(), std::move(respond));
      return;
    case pb::Request::kStepComplete:
      StepComplete(cred, req.step_complete(), std::move(respond));
      return;
    case pb::Request::kStepQuery:
      respond(QuerySteps(req.step_query()));
      return;
    case pb::Request::kDiag:
      respond(Diag(cred, req.diag()));
      return;
    case pb::Request::kConfigFiles:
      ConfigFilesRequest(cred, std::move(respond));
      return;
    case pb::Request::kReconfigure:
      ReconfigureRequest(cred, std::move(respond));
      return;
    case pb::Request::kToken:
      respond(CreateToken(cred, via_jwt, req.token()));
      return;
    default:
      respond(ErrorResponse(ErrorCode::kProtocol, "unsupported request"));
      return;
  }
  respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
}

void Controller::ScheduleTick() {
  tick_timer_.expires_after(std::chrono::seconds(1));
  tick_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    Tick();
    ScheduleTick();
  });
}

void Controller::ScheduleBackfill() {
  backfill_timer_.expires_after(std::chrono::seconds(backfill_interval_s_));
  backfill_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    Backfill();
    ScheduleBackfill();
  });
}

void Controller::Tick() {
  int64_t now = Now();
  if (now - last_priority_calc_ >= priority_calc_period_s_) RecomputePriorities(now);
  CheckTimeLimits(now);
  CheckNodeSilence(now);
  PrologEpilogTick(now);
  RebootTick(now);
  PowerTick(now);
  PurgeOldJobs(now);
  ReservationTick(now);
  AccountingTick();
  FairShareTick(now);
  // Finished jobs not settled at the last try: epilogs or shoaldbd may have answered since.
  pack_candidates_.insert(pack_candidates_.end(), finished_unsettled_.begin(),
                          finished_unsettled_.end());
  finished_unsettled_.clear();
  PackJobs();  // those queued, finished, looked up (unpacked) or held since the last tick
  // Begin times and other time-based eligibility.
  ScheduleSoon();
  if (journal_->journal_bytes() > (256u << 20)) MaybeCompact();
}

pb::JobRecord* Controller::FindJob(uint32_t id) {
  auto it = jobs_.find(id);
  if (it != jobs_.end()) return &it->second;
  // Parsed into the job table; the next packing takes it back if it still qualifies (a queued
  // job released or updated, a finished one requeued may not).
  auto parse_back = [&](auto& packed_map, auto found, auto unpack) {
    pb::JobRecord& job = jobs_[id];
    if (!unpack(found->second, &job)) LogError("job %u: its packed record does not parse", id);
    packed_map.erase(found);
    jobs_by_id_stale_ = true;
    pack_candidates_.push_back(id);
    return &job;
  };
  if (auto packed = packed_.find(id); packed != packed_.end())
    return parse_back(packed_, packed, Unpack);
  if (auto finished = packed_finished_.find(id); finished != packed_finished_.end())
    return parse_back(packed_finished_, finished, UnpackFinished);
  return nullptr;
}

const pb::JobRecord* Controller::PeekJob(uint32_t id, pb::JobRecord* scratch) const {
  if (auto it = jobs_.find(id); it != jobs_.end()) return &it->second;
  if (auto packed = packed_.find(id); packed != packed_.end()) {
    scratch->Clear();
    return Unpack(packed->second, scratch) ? scratch : nullptr;
  }
  auto finished = packed_finished_.find(id);
  if (finished == packed_finished_.end()) return nullptr;
  scratch->Clear();
  return UnpackFinished(finished->second, scratch) ? scratch : nullptr;
}

bool Controller::MayPack(const pb::JobRecord& job, SchedView* view) const {
  // With limits enforced every scheduling pass counts each queued job against its association
  // (RecountAssocUsage): queued jobs stay parsed rather than be unpacked once a pass.
  if (LimitsEnforced() || !Packable(job, Now())) return false;
  if (PackableHeld(job)) return true;
  // A runnable job is weighed from its view: what the view cannot answer keeps it parsed
  // (reservations and preemption read the job; topology orders a multi-node job's nodes).
  if (!reservations_.empty() || preempt_.type != sched::PreemptType::kNone) return false;
  if (topology_.kind != sched::Topology::Kind::kNone && job.spec().min_nodes() > 1) return false;
  const Partition* part = FindPartition(job.partition());
  if (!part) return false;
  if (view) {
    view->time_limit = job.time_limit();
    view->partition = static_cast<uint16_t>(part - partitions_.data());
    view->partitions_version = partitions_version_;
  }
  return true;
}

const sched::JobShape* Controller::PackedShapeToWeigh(uint32_t id, const PackedJob& packed) const {
  if (!packed.runnable || packed.view.partitions_version != partitions_version_ ||
      packed.view.partition >= partitions_.size() || LimitsEnforced() || !reservations_.empty() ||
      preempt_.type != sched::PreemptType::kNone)
    return nullptr;
  auto shape = shape_cache_.find(id);  // cached when the job was packed
  if (shape == shape_cache_.end()) return nullptr;
  if (topology_.kind != sched::Topology::Kind::kNone && shape->second->min_nodes > 1)
    return nullptr;
  return shape->second.get();
}

void Controller::NotePackable(const std::vector<pb::JobRecord*>& jobs) {
  bool held = false;
  for (const pb::JobRecord* job : jobs) {
    if (!MayPack(*job)) continue;
    pack_candidates_.push_back(job->job_id());
    held = held || PackableHeld(*job);
  }
  if (held) SchedulePackJobs();
}

void Controller::SchedulePackJobs() {
  if (pack_posted_ || pack_candidates_.empty()) return;
  pack_posted_ = true;
  asio::post(io_, [this] {
    pack_posted_ = false;
    PackJobs();
  });
}

void Controller::PackJobs() {
  // A few thousand per turn of the loop: after a restart with 100,000 queued jobs, requests are
  // answered between the batches rather than after all of them.
  constexpr size_t kBatch = 4096;
  int64_t now = Now();
  std::vector<uint32_t> young;  // runnable, submitted this second: most start at once
  for (size_t n = 0; n < kBatch && !pack_candidates_.empty(); ++n) {
    uint32_t id = pack_candidates_.back();
    pack_candidates_.pop_back();
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    if (IsFinished(it->second.state())) {
      // Kept parsed while something may still happen to it: epilogs, or the final record not
      // yet acknowledged by shoaldbd (the outbox reads it, and a reconnect sends it again).
      if (!PackableFinished(it->second) || AcctUnsent(id)) {
        finished_unsettled_.push_back(id);
        continue;
      }
      packed_finished_.emplace(id, PackFinished(it->second));
      jobs_.erase(it);
      jobs_by_id_stale_ = true;
      continue;
    }
    SchedView view;
    if (!MayPack(it->second, &view)) continue;
    pb::JobRecord& job = it->second;
    bool held = PackableHeld(job);
    if (!held && job.submit_time() >= now) {
      young.push_back(id);
      continue;
    }
    if (!held) ShapeOfJob(job);  // the passes read the shared shape, not the record
    packed_.emplace(id, Pack(job, view));
    jobs_.erase(it);
    jobs_by_id_stale_ = true;
  }
  ReserveJobTable();   // a no-op unless jobs were added since (a hash table keeps its buckets)
  SchedulePackJobs();  // the rest, if any
  for (uint32_t id : young) pack_candidates_.push_back(id);  // the next tick's
}

int Controller::FindNode(const std::string& name) const {
  auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? -1 : it->second;
}

const Controller::Partition* Controller::FindPartition(const std::string& name) const {
  for (const auto& p : partitions_)
    if (p.rec.name() == name) return &p;
  return nullptr;
}

const Controller::Partition* Controller::DefaultPartition() const {
  for (const auto& p : partitions_)
    if (p.rec.is_default()) return &p;
  return partitions_.empty() ? nullptr : &partitions_.front();
}

void Controller::IndexArrayTask(const pb::JobRecord& job) {
  if (job.array_task_id() != kNoArrayTask && job.array_job_id() != 0)
    array_tasks_[job.array_job_id()].push_back(job.job_id());
}

void Controller::UnindexArrayTask(const pb::JobRecord& job) {
  if (job.array_task_id() == kNoArrayTask || job.array_job_id() == 0) return;
  auto it = array_tasks_.find(job.array_job_id());
  if (it == array_tasks_.end()) return;
  auto& v = it->second;
  v.erase(std::remove(v.begin(), v.end(), job.job_id()), v.end());
  if (v.empty()) array_tasks_.erase(it);
}

void Controller::AddPending(const pb::JobRecord& job) {
  PendingKey key{-static_cast<int64_t>(job.priority()), job.job_id()};
  pending_.insert(key);
  // New or changed (update, release, requeue): the next pass looks at it again.
  eligibility_.Unpark(job.job_id());
  runnable_.insert(key);
}

void Controller::RemovePending(const pb::JobRecord& job) {
  PendingKey key{-static_cast<int64_t>(job.priority()), job.job_id()};
  pending_.erase(key);
  runnable_.erase(key);
  eligibility_.Unpark(job.job_id());
}

}  // namespace shoal::ctld
