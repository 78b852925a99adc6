// topology.conf (Slurm 22.05, topology/tree or topology/block) from Kubernetes Node annotations
// or labels: the worker pods on a Kubernetes node go under that node's leaf switch or block.
// Pure text generation, no I/O; the output order is fixed (sorted), so an unchanged cluster
// gives the same bytes and the ConfigMap does not churn.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "operator/model/plan.h"

namespace shoal::op {

// Default annotation read from each Kubernetes Node (Controller spec.topology.nodeAnnotation).
inline constexpr const char* kAnnotTopologyLine = "topology.shoal.dev/line";
// SchedMD Slinky's spelling, read when the configured annotation is absent.
inline constexpr const char* kAnnotTopologySlinky = "topology.slinky.slurm.net/line";

struct TopologySpec {
  std::string plugin;       // "topology/tree", "topology/block"; "" = no topology
  std::string static_conf;  // extra topology.conf lines (spines, BlockSizes=)
  std::string node_annotation = kAnnotTopologyLine;
  std::string node_label;  // fallback: the label's value names the switch or block
  bool enabled() const { return !plugin.empty(); }
};

// Where a Kubernetes node sits: "switch:s0,block:b0". Slinky's "topo-switch:"/"topo-block:"
// are accepted; each kind at most once; names are Slurm names ([A-Za-z0-9._-]). Errors say why.
struct TopoLine {
  std::string switch_name, block;
};
Result<TopoLine> ParseTopologyLine(std::string_view value);

// A worker: its Shoal node name (the pod name) and the Kubernetes node it runs on.
struct TopoMember {
  std::string shoal_node, k8s_node;
};

struct TopologyConf {
  std::string text;                   // topology.conf
  int placed = 0;                     // workers placed under a switch or in a block
  std::vector<std::string> problems;  // sorted; each one leaves something out, never breaks
};

// Tree: one leaf switch per name, Nodes= the workers on the Kubernetes nodes naming it; the
// static lines come first (their Switches= that name no switch yet are dropped, and a static
// switch named like a leaf gets the workers too); without static SwitchName lines and with two
// leaves or more, a top switch "shoal-top" joins the leaves so a job may span them.
// Block: one block per name, in name order; every block must hold the base block size
// (BlockSizes' first entry in the static lines, else the smallest block): others are left out.
// Bad annotation values and names leave the Kubernetes node's workers out, with a problem.
TopologyConf GenerateTopologyConf(const TopologySpec& spec, const std::vector<TopoMember>& members,
                                  const std::vector<Json>& k8s_nodes, std::string_view origin);

}  // namespace shoal::op
