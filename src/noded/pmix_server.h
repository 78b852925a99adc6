// PMIx server of one job step on one node (`srun --mpi=pmix`), hosted by shoal-stepd through
// OpenPMIx's server API (libpmix). Open MPI, MPICH and others direct-launch under it: each task
// gets PMIX_NAMESPACE, PMIX_RANK and the server's URI in its environment, connects back (libpmix
// 4.2: loopback TCP on a port of its choosing, so servers on one host never collide) and reads
// the job's layout (sizes, node and proc maps, local peers, per-rank info) registered by Start()
// from the server's shared-memory data store in a private directory.
//
// Thread model: libpmix runs its own progress thread and calls the host (us) from it. Every such
// call copies what it needs and hands the work to PmixCallbacks::post, i.e. onto the supervisor's
// single asio thread; all PmixServer state is touched on that thread only, and PMIx requests are
// completed from there (libpmix's completion functions are safe to call from any thread).
// Start(), TaskEnvironment(), CompleteFence(), FailFence() and the destructor must be called on
// that same thread. libpmix keeps one server per process and cannot start another after
// PMIx_server_finalize, so a process hosts one PmixServer in its lifetime (one step per
// shoal-stepd process); a second Start() fails cleanly.
//
// Fences: when every local rank has entered a fence over the whole namespace, libpmix hands us
// this node's contribution; we number fences 0, 1, 2, ... in the order they start (the same order
// on every node, since every rank takes part in each) and pass (seq, bytes) to
// PmixCallbacks::fence. srun gathers one contribution per node and answers each node with all of
// them in node order; CompleteFence(seq, data) concatenates them and releases the local ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace shoal::noded {

struct PmixStepInfo {
  uint32_t job_id = 0, step_id = 0;
  uint32_t uid = 0, gid = 0;       // the step's user: the server's files are made theirs
  std::vector<std::string> nodes;  // the step's node names in order (several may share a host)
  std::vector<std::vector<uint32_t>> ranks_by_node;  // global ranks per node, node order
  uint32_t node_id = 0;                              // index of this node in `nodes`
  // A private directory for this server, created by the caller (root-owned is fine). Start()
  // creates <tmpdir>/pmix owned by uid:gid (0700) for libpmix's data store (PMIX_SERVER_TMPDIR)
  // and adds the search bit (o+x, never read) to `tmpdir` itself when the user could not
  // otherwise traverse it. The directories above must be searchable by the user (logged if not).
  std::string tmpdir;
};

struct PmixCallbacks {
  // All PMIx library callbacks arrive on libpmix's own thread: they are marshalled onto the
  // supervisor's single asio thread with `post` before anything is touched.
  std::function<void(std::function<void()>)> post;
  // Every local rank entered a fence over the whole namespace: ship `local_data` (the bytes PMIx
  // gave fence_nb; may be empty) to srun; srun answers CompleteFence(seq, all nodes' data in node
  // order), or FailFence(seq) when a node cannot take part.
  std::function<void(uint32_t seq, std::string local_data)> fence;
  // A local rank called PMIx_Abort / MPI_Abort. The rank is released (and exits with `status`)
  // right after this returns; the supervisor is expected to terminate the whole step.
  std::function<void(uint32_t rank, int status, std::string message)> abort;
};

// True when this build links libpmix (SHOAL_HAVE_PMIX).
bool PmixSupported();

// "shoal.<job>.<step>": the PMIx namespace of a step (PMIX_NAMESPACE in the tasks' environment).
std::string PmixNamespace(uint32_t job_id, uint32_t step_id);

// Pure helpers (exposed for tests).
// Checks the step layout: nodes and ranks_by_node of equal, non-zero length, node_id in range,
// node names non-empty and without ',', ';', '/' or blanks, ranks 0..N-1 each exactly once.
Status ValidatePmixStepInfo(const PmixStepInfo& info);
// Input of PMIx_generate_regex: the node names, comma-separated, in node order ("n1,n2,n3").
std::string PmixNodeListString(const PmixStepInfo& info);
// Input of PMIx_generate_ppn: per node, its ranks comma-separated, ';' between nodes, node order
// ("0,1,2;3,4" or "0,2;1,3"). No "0-3" ranges: libpmix 4.2 hands each node's field back verbatim
// as PMIX_LOCAL_PEERS (and counts its commas for PMIX_LOCAL_SIZE), and Open MPI splits it on ','.
std::string PmixProcMapString(const PmixStepInfo& info);
// Local rank of each rank of node `node_index`: its position in ranks_by_node[node_index].
// Returns -1 when `rank` is not on that node.
int PmixLocalRank(const PmixStepInfo& info, uint32_t node_index, uint32_t rank);
// Node index hosting `rank`, or -1.
int PmixNodeOfRank(const PmixStepInfo& info, uint32_t rank);

class PmixServer {
 public:
  // PMIx_server_init (files in <tmpdir>/pmix, no system/session/tool rendezvous, hostname =
  // this node's name) and PMIx_server_register_nspace with the step's layout. Blocks until
  // libpmix has taken the registration (it does not need the asio thread for that).
  // Fails when this build has no PMIx support, when another PmixServer is alive in the process,
  // or when libpmix refuses.
  static Result<std::unique_ptr<PmixServer>> Start(const PmixStepInfo& info, PmixCallbacks cb);
  ~PmixServer();  // PMIx_server_finalize; safe with fences still pending or after a failed one
  PmixServer(const PmixServer&) = delete;
  PmixServer& operator=(const PmixServer&) = delete;

  // For the task with global rank `rank` on this node: PMIx_server_register_client (the client
  // must connect with this uid/gid) + PMIx_server_setup_fork. The returned "KEY=VALUE" entries go
  // into that task's environment (PMIX_NAMESPACE, PMIX_RANK, PMIX_SERVER_URI*, ...), added on
  // top of the task's own environment. Call once per local rank before forking it.
  // Also returned: OMPI_MCA_btl_vader_backing_directory / OMPI_MCA_btl_sm_backing_directory,
  // a directory private to this node of the step (/dev/shm/shoal-pmix.<job>.<step>.<node>, owned
  // by the user, removed by the destructor): Open MPI names its shared-memory segments after the
  // host, the job and the local rank, so two nodes of one step on one host would collide.
  Result<std::vector<std::string>> TaskEnvironment(uint32_t rank, uint32_t uid, uint32_t gid);

  // srun's answer to fence `seq`: every node's contribution in node order.
  void CompleteFence(uint32_t seq, const std::vector<std::string>& all_node_data);
  // srun could not complete fence `seq`: release the local ranks with an error.
  void FailFence(uint32_t seq);
  // A local task exited: forget its registration (optional cleanup).
  void ClientExited(uint32_t rank);

  const std::string& ns() const;  // the namespace, as PmixNamespace()
  uint32_t pending_fences() const;

  struct Impl;

 private:
  explicit PmixServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace shoal::noded
