// Pure parts of `scontrol reconfigure`: records built from slurm.conf definitions (shared with
// the controller's start-up), and which nodes a new slurm.conf adds, removes or changes.
#pragma once

#include <string>
#include <vector>

#include "common/slurm_conf.h"
#include "shoal.pb.h"

namespace shoal::ctld {

// A node's record as slurm.conf defines it (configured state included, runtime state empty).
pb::NodeRecord NodeRecordFromConf(const NodeConf& nc, const SlurmConf& conf);
// A partition's record; node membership is by name (the caller maps names to indexes).
pb::PartitionRecord PartitionRecordFromConf(const PartitionConf& pc, const SlurmConf& conf);

struct NodeChangePlan {
  std::vector<size_t> added;         // indexes into the new conf's nodes
  std::vector<size_t> changed;       // same: configured hardware/features/address changed
  std::vector<std::string> removed;  // names in the old conf only
};

// Compares node definitions by name. "Changed" looks at what a reconfigure applies to a live
// node: CPUs and topology, memory, tmp disk, weight, features, GRES, address and port.
NodeChangePlan PlanNodeChanges(const SlurmConf& old_conf, const SlurmConf& new_conf);

// Copies the configured fields of `from` (as NodeRecordFromConf builds them) onto a live record,
// keeping its runtime state (drain, reason, allocation, registration data).
void ApplyNodeConfig(const pb::NodeRecord& from, pb::NodeRecord* live);

// Whether SlurmctldParameters names `flag` (a comma-separated list, case-insensitive).
bool HasCtldParameter(const SlurmConf& conf, std::string_view flag);

}  // namespace shoal::ctld
