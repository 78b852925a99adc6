// Network topology (topology.conf) for topology/tree and topology/block, and topology-aware node
// choice. Pure logic, no I/O: the caller reads the file and decides which nodes have room for a
// job (per-node fit); this module decides which of them to use so a job spans few switches
// (tree) or stays inside aligned blocks (block).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal::sched {

struct TopoSwitch {
  std::string name;
  int level = 0;  // 0 = leaf (has Nodes=); parent = 1 + highest child level
  int parent = -1;
  std::vector<int> children;  // switch indexes
  std::vector<int> nodes;     // node indexes directly attached (leaf switches)
  std::vector<int> subtree;   // every node below, ascending
  std::string link_speed;     // as written; unused for placement, as in Slurm
  int line = 0;
};

struct TopoBlock {
  std::string name;
  std::vector<int> nodes;  // node indexes in the order written
  int line = 0;
};

struct Topology {
  enum class Kind { kNone, kTree, kBlock };
  Kind kind = Kind::kNone;
  std::vector<TopoSwitch> switches;
  std::vector<TopoBlock> blocks;
  std::vector<uint32_t> block_sizes;  // node counts per aggregation level, ascending
  std::vector<int> node_leaf;         // node index -> leaf switch index, -1 if none
  std::vector<int> node_block;        // node index -> block index, -1 if none
  std::vector<std::string> warnings;  // "topology.conf: nodes n9 are not connected to any switch"
  // With TopoParseOptions::allow_unknown_nodes: names written in the file that are not nodes
  // (yet), sorted. A dynamic node of such a name joins the topology when it registers.
  std::vector<std::string> unknown_nodes;
};

struct TopoParseOptions {
  // Dynamic nodes (shoald -Z, scontrol create) may be named before they exist, or be gone:
  // their names are left out of the topology instead of being an error. A block's size is then
  // the number of names written, so a block whose nodes have not all registered stays valid.
  bool allow_unknown_nodes = false;
};

// Parses topology.conf text. SwitchName= lines make a tree, BlockName=/BlockSizes= lines block
// topology (mixing both is an error). Node names must be in `node_names` (index = position).
// Errors name "path:line: problem": unknown node 'x', switch 's9' is not defined, switch loop
// through 's1', duplicate switch 's1', SwitchName needs Nodes= or Switches=, node 'n1' is in
// two leaf switches / blocks, bad BlockSizes.
// BlockSizes: the first entry is the base block size (every block must have exactly that many
// nodes); each further size must be a power-of-two multiple of it. Without BlockSizes the
// levels are base * 2^k up to the number of blocks.
// Empty names in `node_names` (deleted nodes' slots) match nothing.
Result<Topology> ParseTopologyConf(std::string_view text,
                                   const std::vector<std::string>& node_names,
                                   std::string_view path = "topology.conf",
                                   const TopoParseOptions& options = {});

// A topology-aware pick among `candidates` (node indexes that can each host their part of the
// job).
struct TopoChoice {
  std::vector<int> nodes;      // chosen node indexes, ascending
  uint32_t leaf_switches = 0;  // tree: leaf switches spanned; block: blocks spanned
  int top_switch = -1;         // tree: the switch whose subtree holds the job
  uint32_t level_size = 0;     // block: the aggregation size used
};

// Tree: the lowest-level switch whose subtree holds `needed` candidates (ties: fewest spare
// candidates, then lowest index); inside it, leaf switches with the most candidates first and
// the last one best-fit, so the job spans as few leaves as possible. nullopt when no single
// switch holds enough (Slurm never spans disconnected fabrics). Candidates outside the topology
// are ignored.
std::optional<TopoChoice> SelectTree(const Topology& topo, const std::vector<int>& candidates,
                                     uint32_t needed);

// Block: the smallest aggregation size >= needed (else the largest) whose aligned groups of
// consecutive blocks hold `needed` candidates; among those groups the one with the fewest spare
// candidates; inside it, blocks with the most candidates first. A job larger than the largest
// level spans several top-level groups, fullest first.
std::optional<TopoChoice> SelectBlock(const Topology& topo, const std::vector<int>& candidates,
                                      uint32_t needed);

// Dispatches on topo.kind; with Kind::kNone picks the first `needed` candidates in order.
std::optional<TopoChoice> SelectNodes(const Topology& topo, const std::vector<int>& candidates,
                                      uint32_t needed);

// Candidates reordered so that the first `needed` are the topology's choice and the rest follow
// in their original order; the placement code can feed this as JobShape::allowed. Without a
// choice (or Kind::kNone) the candidates come back unchanged.
std::vector<int> OrderCandidates(const Topology& topo, const std::vector<int>& candidates,
                                 uint32_t needed);

// --switches=count[@max-time]: count 0 = no limit, wait in seconds (no time given: the cap).
struct SwitchRequest {
  uint32_t max_switches = 0;
  int64_t max_wait_s = 0;
};
// Parses "2", "2@10:00", "1@300" (time forms as --time: bare number = minutes).
Result<SwitchRequest> ParseSwitches(std::string_view text);

// Whether a job that would span `leaf_switches` may start now: yes if within the limit, or if
// it has waited (now - eligible_time) at least min(max_wait_s, max_switch_wait) — Slurm's
// SchedulerParameters=max_switch_wait, default 300 s. While waiting the job stays PENDING with
// reason "Resources" (Slurm has no separate reason for this wait) and squeue's Wait4Switch
// shows the wait.
bool SwitchLimitAllowsStart(const SwitchRequest& req, uint32_t leaf_switches, int64_t eligible_time,
                            int64_t now, int64_t max_switch_wait = 300);

}  // namespace shoal::sched
