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
#include <vector>

#include "common/auth.h"
#include "common/rpc.h"
#include "common/slurm_conf.h"
#include "ctld/journal.h"
#include "sched/placement.h"
#include "shoal.pb.h"

namespace shoal::ctld {

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

 private:
  struct Node {
    pb::NodeRecord rec;
    RpcConnectionPtr stream;  // the node's own connection, when registered
    int64_t last_seen = 0;    // steady seconds of the last message
    bool registered = false;  // since this controller started
    bool down_not_responding = false;
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
  void PersistJob(const pb::JobRecord& job, std::function<void()> then = nullptr);
  void Tick();
  void ScheduleTick();
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
  void TerminateRunning(pb::JobRecord& job, pb::JobState end_state, const std::string& reason);
  void FinishJob(pb::JobRecord& job, pb::JobState state, int64_t now);
  void ReleaseResources(const pb::JobRecord& job);
  void Requeue(pb::JobRecord& job, bool hold);
  Result<std::vector<pb::JobRecord*>> ResolveJobIds(const std::string& spec);
  void CheckTimeLimits(int64_t now);
  void PurgeOldJobs(int64_t now);

  // --- nodes (nodes.cc)
  void RegisterNode(const RpcConnectionPtr& conn, const pb::NodeRegisterRequest& req,
                    Responder respond);
  void Heartbeat(const pb::HeartbeatRequest& req);
  // Adds a node that registered itself (-Z); returns its index.
  int AddDynamicNode(pb::NodeRecord rec);
  pb::Response UpdateNode(const pb::Credential& cred, const pb::UpdateNodeRequest& req);
  void CheckNodeSilence(int64_t now);
  void NodeFailed(int node_index, const std::string& reason);
  void SendToNode(int node_index, const pb::Request& request, ResponseCallback done);
  void PersistNode(const Node& node);
  pb::NodeRecord NodeView(const Node& node) const;

  // --- scheduling (schedule.cc)
  void ScheduleSoon();
  void Schedule();
  std::vector<sched::NodeView> NodeViews() const;
  sched::JobShape ShapeFor(const pb::JobRecord& job, const Partition& part) const;
  void Launch(pb::JobRecord& job);
  Status ValidateAgainstPartition(const pb::JobRecord& job, const Partition& part) const;
  std::vector<std::string> JobEnvironment(const pb::JobRecord& job) const;

  // --- queries (query.cc)
  pb::Response QueryJobs(const pb::JobQueryRequest& req);
  pb::Response QueryNodes(const pb::NodeQueryRequest& req) const;
  pb::Response QueryConfig() const;

  pb::JobRecord* FindJob(uint32_t id);
  int FindNode(const std::string& name) const;
  const Partition* FindPartition(const std::string& name) const;
  const Partition* DefaultPartition() const;
  void AddPending(const pb::JobRecord& job);
  void RemovePending(const pb::JobRecord& job);
  int64_t Now() const;

  asio::io_context& io_;
  ControllerOptions options_;
  SlurmConf conf_;
  ClusterKey key_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<RpcServer> tcp_server_;
  std::unique_ptr<RpcServer> agent_server_;
  asio::steady_timer tick_timer_;
  bool schedule_posted_ = false;
  bool journal_failed_ = false;

  uint32_t slurm_user_uid_ = 0;
  uint32_t next_job_id_ = 1;
  uint32_t max_job_count_ = 10000;
  std::unordered_map<uint32_t, pb::JobRecord> jobs_;
  std::set<PendingKey> pending_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> array_tasks_;  // array job id -> task jobs
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> node_by_name_;
  std::vector<Partition> partitions_;
  int64_t start_time_ = 0;
};

}  // namespace shoal::ctld
