// shoalctld's core: the one owner of cluster state.
//
// Everything runs on one asio io_context thread: requests from commands and node streams,
// timers (time limits, node silence, purges), scheduling passes. A mutation is applied in memory,
// appended to the Journal, and answered only when the Journal says it is durable. Nothing here
// takes a lock; the Journal's writer thread is reached only through its queue.
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "acct.pb.h"
#include "common/auth.h"
#include "common/jwt_auth.h"
#include "common/openmetrics.h"
#include "common/prolog_epilog.h"
#include "common/rpc.h"
#include "common/script_runner.h"
#include "common/slurm_conf.h"
#include "ctld/diag_stats.h"
#include "ctld/job_payload.h"
#include "ctld/journal.h"
#include "ctld/packed_job.h"
#include "ctld/shape_interner.h"
#include "sched/assoc_limits.h"
#include "sched/assoc_tree.h"
#include "sched/backfill.h"
#include "sched/eligibility.h"
#include "sched/fairshare.h"
#include "sched/placement.h"
#include "sched/preempt.h"
#include "sched/priority.h"
#include "sched/reservation.h"
#include "sched/topology.h"
#include "shoal.pb.h"

namespace shoal::ctld {

// Whether `name` is one of a job's partitions ("a" or a pending multi-partition job's "a,b").
inline bool InPartitionList(const std::string& list, const std::string& name) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    size_t end = comma == std::string::npos ? list.size() : comma;
    if (list.compare(pos, end - pos, name) == 0) return true;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return false;
}

// Seconds of the monotonic clock: for intervals that must not jump with the wall clock.
int64_t SteadySeconds();

// Whether a job holds resources on its nodes: running, suspended, or ending.
inline bool HoldsNodes(const pb::JobRecord& job) {
  return job.state() == pb::JOB_RUNNING || job.state() == pb::JOB_SUSPENDED || job.completing();
}

struct ControllerOptions {
  std::string conf_path;
  bool clear_state = false;  // -c: start with no jobs
};

class Controller {
 public:
  Controller(asio::io_context& io, ControllerOptions options, SlurmConf conf, ClusterKey key);
  // Loads state, opens the listeners. Errors name what failed.
  Status Start();
  void Shutdown();
  // scontrol reconfigure, SIGHUP (reconfigure.cc): rereads slurm.conf and applies it live. A
  // file that does not parse is refused with its "file:line: what" and changes nothing.
  Status Reconfigure(const std::string& origin);

 private:
  struct Node {
    pb::NodeRecord rec;
    RpcConnectionPtr stream;  // the node's own connection, when registered
    int64_t last_seen = 0;    // steady seconds of the last message
    bool registered = false;  // since this controller started
    bool down_not_responding = false;
    bool deleted = false;  // scontrol delete: a tombstone slot, never listed (node_create.cc)
  };
  struct Partition {
    pb::PartitionRecord rec;
    std::vector<int> node_index;  // into nodes_
  };
  // Sort key of the pending queue: higher priority first, then older job id.
  using PendingKey = std::pair<int64_t, uint32_t>;

  // --- request plumbing (controller.cc)
  void HandleRequest(const RpcConnectionPtr& conn, const pb::Credential& cred,
                     const std::string& body, Responder respond);
  void HandleAgent(const RpcConnectionPtr& conn, const std::string& body, Responder respond);
  bool IsAdmin(uint32_t uid) const;
  // Queues journal records and calls `then` once durable.
  void Persist(std::vector<pb::JournalRecord> records, std::function<void()> then);
  // Persist's encoding of one job record (its payload first, the first time), with what a
  // changed job means for accounting and dependencies.
  void EncodeJob(const pb::JobRecord& job, std::vector<std::string>& encoded);
  void PersistJob(const pb::JobRecord& job, std::function<void()> then = nullptr);
  // The same for many jobs, encoded straight from the live records (no copies: a scancel of
  // 100,000 jobs copied 170 MB into journal records first).
  void PersistJobs(const std::vector<pb::JobRecord*>& jobs, std::function<void()> then);
  void Tick();
  void ScheduleTick();
  void ScheduleBackfill();
  void LoadState();
  void MaybeCompact();

  // --- jobs (jobs.cc)
  pb::Response Submit(const pb::Credential& cred, pb::SubmitJobRequest& req,
                      std::vector<pb::JobRecord*>* created);
  // Dependency state of a pending job: "" when satisfied, else Slurm's reason.
  std::string DependencyReason(const pb::JobRecord& job, int64_t now);
  void IndexArrayTask(const pb::JobRecord& job);
  void UnindexArrayTask(const pb::JobRecord& job);
  pb::Response Cancel(const pb::Credential& cred, const pb::CancelJobRequest& req,
                      std::vector<pb::JobRecord*>* changed);
  pb::Response UpdateJob(const pb::Credential& cred, const pb::UpdateJobRequest& req,
                         std::vector<pb::JobRecord*>* changed);
  pb::Response ControlJob(const pb::Credential& cred, const pb::JobControlRequest& req,
                          std::vector<pb::JobRecord*>* changed);
  void JobComplete(const pb::JobCompleteRequest& req, Responder respond);
  // Ends a running job: marks state (with COMPLETING) and asks its nodes to terminate it.
  // kill_wait: seconds from SIGTERM to SIGKILL; 0 = KillWait.
  void TerminateRunning(pb::JobRecord& job, pb::JobState end_state, const std::string& reason,
                        uint32_t kill_wait = 0);
  // TerminateJob to every node of the job (or to `only_node`): again, for a completing job
  // whose nodes have not reported its end.
  void SendTerminate(const pb::JobRecord& job, const std::string& reason, uint32_t kill_wait,
                     int only_node = -1);
  // The reason a completing job was terminated for, as TerminateJob carries it.
  static std::string TerminateReason(const pb::JobRecord& job);
  void FinishJob(pb::JobRecord& job, pb::JobState state, int64_t now);
  void ReleaseResources(const pb::JobRecord& job);
  void Requeue(pb::JobRecord& job, bool hold);
  Result<std::vector<pb::JobRecord*>> ResolveJobIds(const std::string& spec);
  void CheckTimeLimits(int64_t now);
  void ResendTerminateIfDue(const pb::JobRecord& job, int64_t steady);
  void PurgeOldJobs(int64_t now);

  // --- allocations and steps (steps.cc)
  void AllocationWait(const RpcConnectionPtr& conn, const pb::Credential& cred,
                      const pb::AllocationWaitRequest& req, Responder respond);
  void AnswerAllocationWait(const pb::JobRecord& job, const Responder& respond);
  void WakeAllocationWaiters(const pb::JobRecord& job);
  void AllocationClientGone(uint32_t job_id, const std::weak_ptr<RpcConnection>& conn);
  void ReleaseAllocation(const pb::Credential& cred, const pb::ReleaseAllocationRequest& req,
                         Responder respond);
  void CreateStep(const pb::Credential& cred, const pb::StepCreateRequest& req, Responder respond);
  void StepComplete(const pb::Credential& cred, const pb::StepCompleteRequest& req,
                    Responder respond);
  void EndSteps(pb::JobRecord& job, int64_t now);
  void ApplyStepCompletion(pb::StepRecord& step, const pb::StepCompleteRequest& req);
  pb::Response QuerySteps(const pb::StepQueryRequest& req);
  pb::JobResult CancelStep(const pb::Credential& cred, const std::string& id_text, int32_t signal);

  std::unordered_map<uint32_t, std::vector<Responder>> alloc_waiters_;  // job id -> salloc/srun
  std::unordered_map<uint32_t, RpcConnectionPtr> alloc_holders_;        // client holding it
  std::set<std::pair<uint32_t, uint32_t>> step_cancelled_;  // a node reported the step killed
  bool shutting_down_ = false;

  // --- nodes (nodes.cc)
  void RegisterNode(const RpcConnectionPtr& conn, const pb::NodeRegisterRequest& req,
                    Responder respond);
  void Heartbeat(const pb::HeartbeatRequest& req);
  // Adds a node that registered itself (-Z); returns its index.
  int AddDynamicNode(pb::NodeRecord rec);
  // Puts a dynamic node in (or out of) each partition by Nodes=ALL and NodeSet features.
  void PlaceDynamicNode(int idx);
  // scontrol create/delete NodeName= (node_create.cc).
  pb::Response CreateNode(const pb::Credential& cred, const pb::CreateNodeRequest& req);
  pb::Response DeleteNode(const pb::Credential& cred, const pb::DeleteNodeRequest& req);
  pb::Response UpdateNode(const pb::Credential& cred, const pb::UpdateNodeRequest& req);
  void CheckNodeSilence(int64_t now);
  void NodeFailed(int node_index, const std::string& reason);
  void SendToNode(int node_index, const pb::Request& request, ResponseCallback done);
  void PersistNode(const Node& node);
  pb::NodeRecord NodeView(const Node& node) const;

  // --- node lifecycle (node_lifecycle.cc): scontrol reboot / cancel_reboot
  pb::Response RebootNodes(const pb::Credential& cred, const pb::RebootNodesRequest& req);
  // Once a second: issues reboots of nodes that are free, times out reboots (ResumeTimeout).
  void RebootTick(int64_t now);
  // RegisterNode, before the node's boot/start times are replaced: ends an issued reboot when
  // the node comes back with a newer boot time or shoald start time, applying nextstate.
  // True when the reboot left the node DOWN (nextstate=DOWN): ReturnToService must not undo it.
  bool RebootRegistered(int idx, const pb::NodeRegisterRequest& req);
  // scontrol update State=CANCEL_REBOOT and cancel_reboot.
  void CancelReboot(int idx);
  // No job holds resources on the node.
  bool NodeIdle(int idx) const;
  // ResumeTimeout (seconds, Slurm's default 60).
  int64_t ResumeTimeoutSeconds() const;
  // Nodes in a reboot or power transition are silent on purpose: no "Not responding".
  static bool NodeSilentByDesign(const pb::NodeRecord& r) {
    return r.reboot_issued() || r.powered_down() || r.powering_up() || r.powering_down();
  }

  // --- power saving (power_save.cc): SuspendProgram/ResumeProgram, CLOUD nodes
  struct PowerConfig {
    std::string suspend_program, resume_program;
    int64_t suspend_time = -1;  // seconds idle; -1 = NONE (no automatic suspend)
    int64_t suspend_timeout = 30, resume_timeout = 60;
    int64_t suspend_rate = 60, resume_rate = 300;  // nodes per minute; 0 = unlimited
    std::set<std::string> exc_nodes, exc_parts, exc_states;
    // SuspendExcNodes=nodes:N: keep N usable nodes of the set powered up.
    std::vector<std::pair<std::set<int>, int64_t>> exc_node_counts;
  };
  void LoadPowerConfig();
  void PowerTick(int64_t now);
  // scontrol update State=POWER_DOWN|POWER_UP|POWER_DOWN_ASAP|POWER_DOWN_FORCE.
  Status PowerUpdate(int idx, const std::string& state);
  // Launch: true when some of the job's nodes are powered down or powering up; the job then
  // waits (CONFIGURING) and PowerTick launches it once every node has registered.
  bool LaunchWaitsForPower(pb::JobRecord& job);
  void ClearPowerUpMark(pb::JobRecord& job);
  void RecoverPowerWaits();  // after LoadState: jobs still marked as waiting for power
  // RegisterNode: a node powering up (or powered down and started by hand) is back.
  void PowerRegistered(int idx);
  bool PowerSaveExcluded(int idx) const;
  bool KeptUpByCount(int idx, const std::vector<int>& suspending) const;
  void StartSuspend(const std::vector<int>& idxs, int64_t now);
  void StartResume(const std::vector<int>& idxs, int64_t now);
  // Runs `program hostlist` detached (double fork): the event loop never waits for it.
  void RunPowerProgram(const std::string& program, const std::vector<int>& idxs);

  PowerConfig power_;
  std::unordered_map<int, int64_t> idle_since_;          // node index -> idle since (wall seconds)
  std::set<uint32_t> power_wait_jobs_;                   // jobs waiting for nodes to power up
  std::set<int> resume_queue_, power_down_queue_;        // waiting for ResumeRate / jobs to end
  std::vector<int64_t> resume_starts_, suspend_starts_;  // last minute's actions (rates)

  // --- prolog/epilog, node drains, registration checks (prolog_epilog.cc)
  ScriptRunner& CtldScripts();
  PrologFlags ConfPrologFlags() const;
  int64_t PrologEpilogTimeout() const;
  bool NoHoldOnPrologFail() const;
  std::vector<std::string> CtldScriptEnv(const pb::JobRecord& job, const char* context) const;
  void DrainNodeFor(int idx, const std::string& reason, bool health);
  // Launch: false while PrologSlurmctld or (PrologFlags=Alloc) node prologs are running.
  bool PrologGate(pb::JobRecord& job);
  void ResumeLaunch(pb::JobRecord& job);
  void MaybeAddExternStep(pb::JobRecord& job, const PrologFlags& flags);
  // FinishJob/Requeue: EpilogSlurmctld and node epilogs (tracked: the job shows COMPLETING).
  void JobEnded(pb::JobRecord& job, bool track);
  void NodeDrain(const RpcConnectionPtr& conn, const pb::Credential& cred,
                 const pb::NodeDrainRequest& req, Responder respond);
  void NodePrologEpilog(const RpcConnectionPtr& conn, const pb::Credential& cred,
                        const pb::NodePrologEpilogRequest& req, Responder respond);
  void PrologFailedOnBatchHost(pb::JobRecord& job, const std::string& node);
  void PrologFailedOnNode(pb::JobRecord& job, const std::string& node);
  void PrologEpilogTick(int64_t now);
  std::string RegistrationProblems(const pb::NodeRecord& conf,
                                   const pb::NodeRegisterRequest& req) const;

  std::unique_ptr<ScriptRunner> ctld_scripts_;
  std::set<uint32_t> ctld_prolog_running_, ctld_prolog_done_;
  std::set<uint32_t> alloc_prolog_sent_, alloc_prolog_done_;
  std::map<uint32_t, int64_t> epilog_started_;  // job id -> when its epilogs were asked for
  bool epilogs_recovered_ = false;

  // --- scheduling (schedule.cc)
  void ScheduleSoon();
  void Schedule();
  void Backfill();
  // One pass of the planner; with_backfill adds reservations and backfill (bf_interval).
  // `depth` bounds the pending jobs examined in priority order (0: all of them).
  void RunPlanner(bool with_backfill, uint32_t depth);
  sched::JobShape ShapeFor(const pb::JobRecord& job, const Partition& part);
  void Launch(pb::JobRecord& job);
  Status ValidateAgainstPartition(const pb::JobRecord& job, const Partition& part);

  // --- consumable resources (resources.cc)
  void InitNodeView(int idx);  // inventory of views_[idx] from the node record
  void RefreshAvailability();  // views_[i].available from node states
  Result<sched::JobShape> ParseShape(const pb::JobSpec& spec) const;
  const sched::JobShape& ShapeOfJob(const pb::JobRecord& job);  // cached per job id
  sched::Placement PlacementOf(const pb::JobRecord& job) const;
  void BookResources(pb::JobRecord& job, const sched::Placement& placement);
  void RebookAfterRestart(const pb::JobRecord& job);
  void SyncNodeAllocation(int idx);
  std::vector<std::string> GpuEnvironment(const pb::JobRecord& job) const;
  std::string GresUsedOf(int idx) const;
  // scontrol suspend/resume and PreemptMode=SUSPEND: SIGSTOP/SIGCONT, CPUs lent out meanwhile.
  void SuspendJob(pb::JobRecord& job);
  void ResumeJob(pb::JobRecord& job);
  void SignalJobNodes(const pb::JobRecord& job, int signal);
  void ResumePreemptedJobs();

  // --- priority (priority.cc)
  void LoadSchedulingConfig();
  // Sets job.priority (and the multifactor breakdown) unless held or set by an admin.
  void ComputePriority(pb::JobRecord& job, int64_t now);
  // Starts a recalculation of every pending job's priority (a pass in progress starts over: the
  // weights may have changed). The first batch runs now; the rest a batch per turn of the loop.
  void RecomputePriorities(int64_t now);
  void RecomputePriorityBatch();
  const sched::PriorityContext& PriorityTotals();  // cached cluster totals (now unset)
  pb::Response QueryPriorities(const pb::PriorityQueryRequest& req);

  // --- preemption (preemption.cc)
  void LoadPreemptConfig();
  // Ends lower-tier jobs so `job` (blocked in `partition`) can start; true when it did.
  bool TryPreemption(pb::JobRecord& job, int partition, int64_t now);

  // --- partition access (partition_access.cc)
  Status CheckPartitionAccess(const pb::JobSpec& spec, const Partition& part, bool admin);
  // The partitions a submission may use, highest PriorityTier first; an error when none.
  Result<std::vector<const Partition*>> PartitionsForSubmit(const pb::JobSpec& spec, bool admin);
  const std::vector<uint32_t>& UserGroups(uint32_t uid, uint32_t gid);
  bool GroupAllowed(const std::string& allow_groups, uint32_t uid, uint32_t gid);
  std::vector<std::string> JobEnvironment(const pb::JobRecord& job) const;

  // --- queries (query.cc)
  // Answers with a serialized pb::Response encoded straight from the records (no copies of
  // them), in parts when the client asked for a stream (squeue).
  void QueryJobs(const pb::JobQueryRequest& req, const Responder& respond);
  pb::Response QueryNodes(const pb::NodeQueryRequest& req) const;
  pb::Response QueryConfig() const;

  // --- topology (topology.cc)
  // TopologyPlugin=topology/tree or topology/block: reads topology.conf from slurm.conf's
  // directory (Slurm's rule) and SchedulerParameters=max_switch_wait. A bad or missing file is
  // a start-up error naming file:line, as a bad slurm.conf is.
  Status LoadTopology();
  // Parses topology_text_ against the current node table (names of nodes that do not exist
  // yet are kept aside and join when such a dynamic node registers).
  Status ParseTopology(bool log);
  // After a dynamic node was added or deleted: re-resolves the topology when it names the node.
  void TopologyNodeChanged(int idx, bool added);
  // For a job needing more than one node: `candidates` reordered so the ones the topology picks
  // among those with room now come first (then the rest, in their order, so backfill still sees
  // every node). Empty when there is no topology, the job needs one node, or no choice exists:
  // the caller keeps the partition order.
  std::vector<int> TopologyOrder(const pb::JobRecord& job, const std::vector<int>& candidates);
  // --switches=N[@time]: whether `placement_nodes` (node indexes) span few enough leaf switches,
  // or the job has waited long enough (capped by max_switch_wait) to take them anyway.
  bool SwitchesAllowStart(const pb::JobRecord& job, const std::vector<int>& placement_nodes,
                          int64_t now) const;
  pb::Response QueryTopology() const;  // scontrol show topology

  sched::Topology topology_;                   // Kind::kNone without a topology plugin
  std::string topology_plugin_;                // "topology/tree", "topology/block" or ""
  std::string topology_text_, topology_path_;  // topology.conf as last read
  int64_t max_switch_wait_ = 300;              // seconds; Slurm's default

  // --- reservations (reservations.cc)
  // Owned by the event-loop thread like everything else; a handful of entries, kept in
  // creation order (the order scontrol show lists them).
  // create/update/delete (admins only); answers once the change is durable.
  void HandleReservation(const pb::Credential& cred, const pb::ReservationRequest& req,
                         Responder respond);
  pb::Response QueryReservations(const pb::ReservationQueryRequest& req) const;
  // LoadState: JournalRecord.reservation / delete_reservation / next_resv_id.
  void ReplayReservation(const pb::JournalRecord& rec);
  // MaybeCompact: what goes into Snapshot.reservations and Snapshot.next_resv_id.
  std::vector<pb::ReservationRecord> ReservationRecords() const;
  uint32_t next_resv_id() const { return next_resv_id_; }
  // Tick: rolls recurring reservations to their next window, purges ended ones (journalled).
  void ReservationTick(int64_t now);
  // For the scheduler: whether `job`, running on `node_index` over [t0, t1) (t1 = INT64_MAX for
  // no time limit), is kept off that node by a reservation. A job outside a reservation may not
  // use a reserved node during a window it would overlap; a job with --reservation only its
  // reservation's nodes (any with FLEX/ANY_NODES), starting inside an active window (any time
  // with FLEX).
  bool ReservationBlocksNode(int node_index, int64_t t0, int64_t t1,
                             const pb::JobRecord& job) const;
  // For a pending job the planner could not start: Slurm's reason when reservations are why,
  // else "". "Reservation" (its reservation's window has not begun), "ReservationDeleted",
  // "ReqNodeNotAvail, Reserved for maintenance" (an active MAINT reservation holds nodes of the
  // job's partition).
  std::string ReservationPendingReason(const pb::JobRecord& job, int64_t now) const;
  // Submit: --reservation=name must exist and admit the user/account (Slurm's texts).
  Status CheckJobReservation(const pb::JobSpec& spec);
  const sched::Reservation* FindReservation(const std::string& name) const;
  // Node state flags for sinfo/scontrol (MAINT, RESERVED) at the current time.
  bool NodeInMaint(int node_index) const;
  bool NodeReserved(int node_index) const;
  sched::ResvCluster ReservationCluster(int64_t now, const std::string& skip_name) const;
  sched::ResvJob ResvJobFor(const pb::JobSpec& spec, const std::string& reservation);

  std::vector<sched::Reservation> reservations_;
  uint32_t next_resv_id_ = 1;  // Slurm numbers every reservation it creates: root_1, x, root_3

  // --- accounting (accounting.cc): records to shoaldbd, associations from it
  Status StartAccounting();
  void AccountingTick();
  void MarkAcctDirty(uint32_t job_id);
  bool AcctUnsent(uint32_t job_id) const;  // a change shoaldbd has not acknowledged yet
  void CallDbd(const pb::DbdRequest& request, std::function<void(Result<pb::DbdResponse>)> done);
  void RegisterWithDbd();
  void PollAssociations();
  void SendAcctBatch();
  void CollectNodeEvents();
  void ApplyAssocSnapshot(pb::AssocSnapshot snap);
  const std::string& GroupName(uint32_t gid);

  // --- associations, limits and fair-share (associations.cc)
  bool LimitsEnforced() const;
  // Submit: the job's account and QOS from its association (filled in when not given), and
  // the checks of AccountingStorageEnforce; Slurm's messages.
  Status ResolveAssociation(pb::JobRecord& job);
  std::optional<sched::CountedJob> CountedOf(const pb::JobRecord& job);
  void RecountAssocUsage();  // counters from scratch (each scheduling pass)
  // The limit a pending job waits on ("" when none); `admit` counts it as running if none.
  std::string LimitReason(const pb::JobRecord& job, bool admit);
  void FairShareTick(int64_t now);
  void LoadUsage();
  void SaveUsage(int64_t now);
  pb::Response QueryShares(const pb::Credential& cred, const pb::ShareQueryRequest& req);
  // scontrol token (token.cc). via_jwt: the request itself came with a token.
  pb::Response CreateToken(const pb::Credential& cred, bool via_jwt, const pb::TokenRequest& req);
  Status LoadJwt();
  // The user name of a uid (getpwuid_r, cached; the decimal uid when unknown). token.cc
  const std::string& UserNameOf(uint32_t uid);

  std::shared_ptr<const sched::AssocTree> assoc_tree_;
  sched::EnforceFlags enforce_;
  sched::UsageCounters assoc_counters_;
  std::unordered_map<uint32_t, sched::ResolvedJob> resolved_;  // job id -> its association
  sched::FairShare fairshare_;
  std::unordered_set<uint32_t> fs_running_;  // running jobs fair-share knows of
  int64_t last_usage_save_ = 0;

  bool accounting_enabled_ = false;
  std::string dbd_address_;
  std::string assoc_cache_path_;
  RpcConnectionPtr dbd_conn_;
  bool dbd_connecting_ = false;
  bool dbd_down_logged_ = false;
  bool acct_in_flight_ = false;
  int64_t last_acct_refusal_log_ = 0;  // a refused batch is retried every tick: log once a minute
  bool assoc_poll_in_flight_ = false;
  int64_t last_assoc_poll_ = 0;
  std::map<uint32_t, uint64_t> acct_dirty_;  // job id -> generation of its last change
  uint64_t acct_generation_ = 0;
  std::vector<pb::AcctEvent> acct_events_;                     // node events not acknowledged yet
  std::unordered_map<std::string, int64_t> open_node_events_;  // node -> event start
  std::vector<pb::AcctReservation> acct_resvs_;  // reservation rows not acknowledged yet
  std::unordered_map<std::string, std::string> sent_resvs_;  // name -> last row queued
  void CollectReservations();
  std::unordered_map<uint32_t, std::string> group_names_;
  std::optional<pb::AssocSnapshot> assocs_;  // from shoaldbd or its on-disk cache

  // --- configless and reconfigure (reconfigure.cc)
  // Start and Reconfigure: the files served to `shoald --conf-server` (enable_configless).
  void LoadConfigFiles(const std::vector<std::string>& included);
  void ConfigFilesRequest(const pb::Credential& cred, Responder respond);
  void ReconfigureRequest(const pb::Credential& cred, Responder respond);
  void PushNodeReconfigure();
  // New inventory for a node whose configuration changed, same bookings (allocations, GRES).
  void RebuildNodeView(int idx);
  void StartConfigWatch();  // SlurmctldParameters=shoal_watch_config (a Shoal extension)

  bool configless_ = false;  // enable_configless, read at start (Slurm: restart to change)
  pb::ConfigFilesResponse config_files_;
  std::unique_ptr<asio::steady_timer> watch_timer_;
  std::vector<std::string> watch_paths_;  // slurm.conf, its includes, the files served
  std::string watch_stamp_;               // their sizes and mtimes when last loaded

  // --- statistics, sdiag, metrics and health probes (diag.cc, metrics_http.cc)
  pb::Response Diag(const pb::Credential& cred, const pb::DiagRequest& req);
  // Wraps `respond` so the time from `start` to the answer is counted for the request's type
  // and the caller's uid (answers after a journal commit count until the commit).
  Responder TimedResponder(const pb::Request& req, uint32_t uid,
                           std::chrono::steady_clock::time_point start, Responder respond);
  // HTTP on the controller port: /livez, /readyz, /healthz, /metrics[/...].
  HttpResponse HandleHttp(const HttpRequest& req);
  std::string MetricsText(const std::string& path);
  void WriteJobMetrics(OpenMetricsWriter& w);
  void WriteNodeMetrics(OpenMetricsWriter& w);
  void WritePartitionMetrics(OpenMetricsWriter& w);
  void WriteSchedulerMetrics(OpenMetricsWriter& w);
  void WriteUserAccountMetrics(OpenMetricsWriter& w);
  void WriteShoalMetrics(OpenMetricsWriter& w);
  void TimedSchedule(bool backfill, uint32_t depth);

  DiagStats diag_;
  bool serving_ = false;  // state loaded and listeners open (/readyz)
  struct MetricsCache {
    int64_t at_ms = 0;
    std::string body;
  };
  std::unordered_map<std::string, MetricsCache> metrics_cache_;  // path -> last text (~1 s)

  // The job, parsed: a packed job (packed_job.h) is unpacked into jobs_ first, and packed again
  // by a later PackJobs if it still qualifies. Pointers stay valid until then: packing
  // runs only in its own turn of the event loop, never under a handler holding one.
  pb::JobRecord* FindJob(uint32_t id);
  // The job to read without unpacking it: the parsed record, or a packed one parsed into
  // `scratch`; nullptr when there is no such job.
  const pb::JobRecord* PeekJob(uint32_t id, pb::JobRecord* scratch) const;
  // Every job, hot or packed (packed ones parsed into a scratch record that `fn` must not keep);
  // `finished_packed` false: not those finished and packed, for a caller that counts only queued
  // and running jobs and would parse each of them for nothing.
  template <class Fn>
  void ForEachJob(Fn&& fn, bool finished_packed = true) const {
    for (const auto& [id, job] : jobs_) fn(id, job);
    pb::JobRecord scratch;
    for (const auto& [id, packed] : packed_) {
      scratch.Clear();
      if (Unpack(packed, &scratch)) fn(id, static_cast<const pb::JobRecord&>(scratch));
    }
    if (!finished_packed) return;
    for (const auto& [id, packed] : packed_finished_) {
      scratch.Clear();
      if (UnpackFinished(packed, &scratch)) fn(id, static_cast<const pb::JobRecord&>(scratch));
    }
  }
  size_t JobCount() const { return jobs_.size() + packed_.size() + packed_finished_.size(); }
  bool JobExists(uint32_t id) const {
    return jobs_.count(id) || packed_.count(id) || packed_finished_.count(id);
  }
  // The parsed record of a job that may hold nodes, or nullptr: packed jobs (queued or
  // finished) hold none, so they are not unpacked to be asked.
  pb::JobRecord* FindParsedJob(uint32_t id) {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : &it->second;
  }
  // Buckets in jobs_ for every job and `more` (see jobs_), grown by doubling (reserve() alone
  // may shrink the table to fit). Only where no loop walks jobs_.
  void ReserveJobTable(size_t more = 0) {
    size_t need = JobCount() + more;
    if (need > jobs_.bucket_count() * jobs_.max_load_factor()) jobs_.reserve(2 * need);
  }
  // Packs the candidates that still qualify, a batch per call; SchedulePackJobs runs it in a
  // turn of its own (and again while candidates are left). Finished candidates not yet settled
  // (epilogs, shoaldbd's acknowledgement) are tried again by the next tick.
  void PackJobs();
  void SchedulePackJobs();
  // Queues those of `jobs` that may be packed, and schedules the packing of held ones (runnable
  // ones wait for the tick: most start at once).
  void NotePackable(const std::vector<pb::JobRecord*>& jobs);
  // Whether `job` may be packed now; for a runnable job, `view` is what the passes will read.
  bool MayPack(const pb::JobRecord& job, SchedView* view = nullptr) const;
  // Whether a scheduling pass may weigh `packed` from its view (and shape) alone; else the pass
  // unpacks it (the cluster changed since it was packed: partitions, reservations, limits).
  const sched::JobShape* PackedShapeToWeigh(uint32_t id, const PackedJob& packed) const;
  // Why `part` cannot take a job of `time_limit` minutes and `min_nodes` nodes; nullptr: it can.
  const char* PartitionRefusal(const Partition& part, uint32_t time_limit,
                               uint32_t min_nodes) const;
  // A packed runnable job's multifactor priority recomputed without unpacking it for good.
  void RecomputePackedPriority(uint32_t id, PackedJob& packed, int64_t now);
  int FindNode(const std::string& name) const;
  // The node indexes of a hostlist expression, or Slurm's "Invalid node name specified" answer.
  Result<std::vector<int>> ResolveNodeNames(const std::string& hostlist) const;
  const Partition* FindPartition(const std::string& name) const;
  const Partition* DefaultPartition() const;
  void AddPending(const pb::JobRecord& job);
  void RemovePending(const pb::JobRecord& job);
  int64_t Now() const;

  asio::io_context& io_;
  ControllerOptions options_;
  SlurmConf conf_;
  ClusterKey key_;
  JwtSettings jwt_settings_;  // AuthAltTypes/AuthAltParameters (token.cc)
  JwtVerifier jwt_;           // key empty: auth/jwt off
  std::unordered_map<uint32_t, std::string> user_names_;  // UserNameOf's cache
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<RpcServer> tcp_server_;
  std::unique_ptr<RpcServer> agent_server_;
  asio::steady_timer tick_timer_;
  bool schedule_posted_ = false;
  bool journal_failed_ = false;

  uint32_t slurm_user_uid_ = 0;
  uint32_t next_job_id_ = 1;
  uint32_t max_job_count_ = 10000;
  // Jobs parsed ("hot"); each job is either here or in packed_. jobs_ always has buckets for
  // every job, packed ones included (ReserveJobTable), so unpacking one never rehashes it: a
  // loop over jobs_ that looks up another job (FindJob) keeps valid iterators.
  std::unordered_map<uint32_t, pb::JobRecord> jobs_;
  std::unordered_map<uint32_t, PackedJob> packed_;  // queued jobs, serialized (packed_job.h)
  // Finished jobs kept until MinJobAge, serialized (packed_job.h); each job is in exactly one of
  // jobs_, packed_ and packed_finished_.
  std::unordered_map<uint32_t, PackedFinishedJob> packed_finished_;
  std::vector<uint32_t> pack_candidates_;     // queued, finished or unpacked since the last packing
  std::vector<uint32_t> finished_unsettled_;  // finished candidates to try again next tick
  uint32_t partitions_version_ = 0;  // bumped when partitions_ is replaced (SchedView.partition)
  bool pack_posted_ = false;
  // Every job by id, ascending, for listings: rebuilt by QueryJobs only after a job was added,
  // removed, packed or unpacked (the tables keep their nodes in place). Walking the hash
  // tables' nodes misses the cache on each (about a third of an unfiltered squeue's controller
  // time with 20,000 jobs).
  struct JobRef {
    enum class Kind : uint8_t { kParsed, kPacked, kFinished };
    uint32_t id;
    Kind kind;
    union {
      const pb::JobRecord* job;           // kParsed
      const PackedJob* packed;            // kPacked
      const PackedFinishedJob* finished;  // kFinished
    };
  };
  std::vector<JobRef> jobs_by_id_;
  bool jobs_by_id_stale_ = true;
  JobPayloads payloads_;          // scripts and environments, kept out of jobs_ (job_payload.h)
  std::set<PendingKey> pending_;  // every pending job (sprio, sdiag, priority recalculation)
  // The pending jobs the scheduling pass walks: pending_ less those parked in eligibility_
  // (begin time in the future, dependency not yet satisfied) until they are due.
  std::set<PendingKey> runnable_;
  sched::EligibilityIndex eligibility_;
  std::unordered_set<uint32_t> preempt_suspended_;  // ids that may await ResumePreemptedJobs
  // What the per-second walks look at instead of every job: jobs that may hold nodes
  // (CheckTimeLimits, NodeIdle) and ended jobs by end time (PurgeOldJobs). Stale entries drop
  // lazily.
  std::unordered_set<uint32_t> holders_;
  // Completing jobs -> steady time their TerminateJob last went out: resent while the batch
  // host has not reported the end (a request lost on a node must not leave it COMPLETING).
  std::unordered_map<uint32_t, int64_t> terminate_sent_;
  std::set<std::pair<int64_t, uint32_t>> ended_by_time_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> array_tasks_;  // array job id -> task jobs
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> node_by_name_;
  std::vector<Partition> partitions_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> group_cache_;  // uid -> gids
  std::vector<sched::NodeView> views_;  // parallel to nodes_: inventory and allocations
  sched::FeatureIndex features_;
  // Per job id; equal simple shapes are one object (ShapeInterner): ~50 bytes a job, not ~360.
  std::unordered_map<uint32_t, std::shared_ptr<const sched::JobShape>> shape_cache_;
  ShapeInterner shape_interner_;
  sched::PriorityConfig priority_;
  sched::BackfillParams backfill_;
  sched::MainSchedParams main_sched_;  // default_queue_depth, sched_interval
  int64_t last_full_pass_ = -1;        // SteadySeconds() of the last pass over every pending job
  std::shared_ptr<const sched::PreviousPlan> backfill_promises_;  // the last backfill pass's plan
  sched::PreemptConfig preempt_;
  int64_t last_priority_calc_ = 0;
  int64_t priority_calc_period_s_ = 300;  // PriorityCalcPeriod
  // The multifactor recalculations' cost (/metrics/shoal): the main loop answers nothing while
  // a batch runs, so the longest batch and the whole pass's time are worth watching.
  struct PriorityRecalcStats {
    uint64_t count = 0;
    uint64_t total_usec = 0;
    uint64_t last_usec = 0;  // the last pass's time in its batches
    uint64_t last_jobs = 0;
    uint64_t last_batches = 0;
    uint64_t last_longest_batch_usec = 0;
  } priority_recalc_;
  // The recalculation in progress: the pending jobs it goes over, `next` the first not yet done.
  struct PriorityRecalcPass {
    std::vector<uint32_t> ids;
    size_t next = 0;
    int64_t now = 0;
    uint64_t usec = 0;
    uint64_t batches = 0;
    uint64_t longest_batch_usec = 0;
    bool active = false;
    bool posted = false;
  } recalc_pass_;
  uint32_t backfill_interval_s_ = 30;  // bf_interval
  std::optional<sched::PriorityContext> priority_totals_;
  asio::steady_timer backfill_timer_;
  int64_t start_time_ = 0;
};

}  // namespace shoal::ctld
