// The PMI server that shoal-stepd runs for `srun --mpi=pmi2`: one instance per step and node, a
// pure state machine (no I/O, no clock) fed with the bytes each local task writes on its end of a
// socketpair. It speaks both wire protocols that MPI libraries use with that plugin, detected per
// connection from the first bytes:
//   * PMI-1 ("simple" PMI): newline-terminated lines of space-separated key=value pairs,
//     `cmd=init pmi_version=1 pmi_subversion=1` (MPICH's default client, libmpich.so.12);
//   * PMI-2: a 6-character decimal length then `cmd=fullinit;pmijobid=...;` style pairs, `;` in a
//     value escaped as `;;`. PMI-2 clients (MPICH's and Slurm's libpmi2) open with the PMI-1 line
//     `cmd=init pmi_version=2 pmi_subversion=0`; the connection switches framing after our reply.
//     A connection whose first byte is a digit or a space is taken as PMI-2 framing from the start.
//
// Supervisor integration (shoal-stepd):
//   * One AF_UNIX SOCK_STREAM socketpair per local task. The task's end is passed as PMI_FD and
//     must stay blocking and inherit across exec (no O_CLOEXEC); the supervisor's end is polled.
//   * After every OnBytes / OnClosed / CompleteFence call: write TakeReplies(rank) for every local
//     rank (it may be empty), then check TakeAbort() and FenceReady(). Commands are answered in
//     order; while more than kMaxPendingReplyBytes of replies wait for one rank, its later commands
//     are held and processed by the next TakeReplies(rank), so call it again once the socket
//     drained.
//   * Fences: when FenceReady(), ship TakeFenceContribution() to srun, which gathers one string per
//     node and answers all of them in node order; pass that to CompleteFence() on every node.
//   * A rank that closes before finalizing, or that broke the protocol (Broken()), stops counting
//     for fences so the others are not held forever; the supervisor treats it as an abnormal exit
//     (and should close the socket of a Broken() rank, whose client would otherwise wait forever).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::noded {

struct PmiStepInfo {
  uint32_t job_id = 0, step_id = 0;
  uint32_t size = 0;                     // tasks in the whole step (PMI_SIZE)
  std::vector<uint32_t> tasks_per_node;  // per step node, in node order (for PMI_process_mapping)
  uint32_t node_id = 0;                  // this node's index
  std::vector<uint32_t> local_ranks;     // global ranks running on this node, ascending
  uint32_t appnum = 0;
  uint32_t universe_size = 0;  // 0 = size
  // Optional: the global ranks of every step node, in node order. When given, PMI_process_mapping
  // describes the real placement (cyclic, arbitrary); when empty, ranks are taken as block
  // distributed by tasks_per_node (rank 0.. on node 0, and so on).
  std::vector<std::vector<uint32_t>> node_ranks;
  // Set only for tasks started by a spawn: MPICH takes the mere presence of spawner-jobid in the
  // PMI-2 fullinit reply as "I was spawned", so it is left out when empty.
  std::string spawner_jobid;
  bool pmi_verbose = false;  // PMI-2 `pmiverbose`: asks the client library to trace its PMI calls
};

struct PmiAbort {
  uint32_t rank = 0;
  int exit_code = 0;
  std::string message;
};

class PmiServer {
 public:
  // Bounds that keep a hostile or broken task from growing the supervisor without limit.
  static constexpr size_t kMaxMessageBytes = 1 << 20;           // one PMI-1 line or PMI-2 message
  static constexpr size_t kMaxKeyBytes = 256;                   // larger keys are refused
  static constexpr size_t kMaxValueBytes = 64 << 10;            // larger values are refused
  static constexpr size_t kMaxPendingReplyBytes = 1 << 20;      // per rank, then input is held
  static constexpr size_t kMaxStoredBytes = size_t{256} << 20;  // whole KVS + node attrs
  // Advertised to PMI-1 clients (get_maxes). MPICH shrinks vallen_max itself so that a whole
  // `cmd=put` line fits its 1024-byte line buffer; the reply to a get then fits too.
  static constexpr int kPmi1KvsNameMax = 256, kPmi1KeyMax = 64, kPmi1ValueMax = 1024;

  explicit PmiServer(PmiStepInfo info);

  // Variables for the task with global rank `rank`, whose end of the PMI socketpair is descriptor
  // `fd` inside the task: PMI_FD, PMI_RANK, PMI_SIZE, PMI_JOBID, "KEY=VALUE" each. MPICH's simple
  // client reads PMI_FD/PMI_RANK/PMI_SIZE (PMI_SPAWNED is read with atoi, absent = not spawned);
  // PMI-2 clients read PMI_FD, PMI_RANK (or PMI_ID) and PMI_JOBID.
  std::vector<std::string> TaskEnvironment(uint32_t rank, int fd) const;

  void OnBytes(uint32_t rank, std::string_view bytes);  // bytes read from that rank (any split)
  std::string TakeReplies(uint32_t rank);               // bytes to write back now (may be empty)
  void OnClosed(uint32_t rank);                         // the task's socket hit EOF

  // Fence (PMI-1 barrier_in, PMI-2 kvs-fence): ready when no fence is in flight, at least one
  // local rank waits, and every local rank still taking part (connected, not finalized, not
  // broken) has entered the current fence. TakeFenceContribution() returns this node's opaque
  // contribution (the pairs put since the previous fence) and marks the fence in flight; it returns
  // "" and does nothing when the fence is not ready. CompleteFence() merges every node's
  // contribution (later nodes win on a duplicate key; malformed contributions are skipped whole)
  // and queues the fence replies; it is ignored when no fence is in flight.
  bool FenceReady() const;
  std::string TakeFenceContribution();
  void CompleteFence(const std::vector<std::string>& contributions);

  std::optional<PmiAbort> TakeAbort();  // a rank sent abort (oldest first)
  bool Finalized(uint32_t rank) const;
  bool Broken(uint32_t rank) const;  // the rank broke the framing; it is no longer served

  const std::string& KvsName() const { return kvs_name_; }  // PMI-1 kvsname, PMI-2 jobid
  // The MPICH "(vector,(node,nodes,tasks_per_node),...)" form of a step's task placement.
  static std::string ProcessMapping(const PmiStepInfo& info);

 private:
  enum class Wire { kUnknown, kPmi1, kPmi2 };
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  struct FenceWaiter {
    uint64_t epoch = 0;
    bool pmi2 = false;
    std::string thrid;  // PMI-2 thread id to echo, if the request had one
  };
  struct NodeAttrWaiter {
    std::string key, thrid;
  };
  struct Conn {
    Wire wire = Wire::kUnknown;
    std::string in, out;
    size_t pos = 0;  // bytes of `in` already handled (erased once per Process call)
    bool closed = false, finalized = false, broken = false;
    bool in_spawn = false;  // inside a PMI-1 `mcmd=spawn` ... `endcmd` block
    std::string spawn_total, spawn_sofar;
    std::deque<FenceWaiter> fences;
    std::vector<NodeAttrWaiter> attr_waiters;
  };

  Conn* Find(uint32_t rank);
  const Conn* Find(uint32_t rank) const;
  bool Participating(const Conn& c) const { return !c.closed && !c.finalized && !c.broken; }
  void Process(uint32_t rank, Conn& c);
  void Break(Conn& c);

  // Returns false when the message was incomplete (wait for more bytes).
  bool ProcessPmi1Line(uint32_t rank, Conn& c);
  bool ProcessPmi2Message(uint32_t rank, Conn& c);
  void HandlePmi1(uint32_t rank, Conn& c, const Pairs& kv);
  void HandlePmi2(uint32_t rank, Conn& c, const Pairs& kv);
  void EnterFence(Conn& c, bool pmi2, std::string thrid);
  void RecordAbort(uint32_t rank, const Pairs& kv, std::string_view code_key,
                   std::string_view msg_key);

  // The put/get store. A key put on this node is visible here at once (PMI-2 allows reading one's
  // own puts before the fence) and to other nodes after the next fence.
  std::string CheckKeyValue(std::string_view key, std::string_view value) const;
  void Put(const std::string& key, const std::string& value);
  const std::string* Lookup(const std::string& key) const;

  PmiStepInfo info_;
  std::string kvs_name_;
  std::string process_mapping_;
  std::map<uint32_t, Conn> conns_;  // local ranks only
  std::map<std::string, std::string> committed_, pending_, in_flight_, node_attrs_;
  size_t stored_bytes_ = 0;  // all four maps above; new puts are refused past kMaxStoredBytes
  uint64_t epoch_ = 0;       // the fence being collected (or in flight)
  bool fence_in_flight_ = false;
  std::deque<PmiAbort> aborts_;
};

}  // namespace shoal::noded
