// Job and node states by their Slurm names, for every place that prints or parses them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "shoal.pb.h"

namespace shoal {

// "PENDING", "RUNNING", ... ; with completing=true a running/ended job shows "COMPLETING".
std::string JobStateName(pb::JobState state);
// squeue's %t: "PD", "R", "S", "CG", "CD", "CA", "F", "TO", "NF", "PR", "BF", "DL", "OOM".
std::string JobStateCompact(pb::JobState state);
// Accepts long or compact names, case-insensitive ("pd", "pending", "R").
std::optional<pb::JobState> ParseJobState(std::string_view text);
bool IsFinished(pb::JobState state);

// Long node state as scontrol shows it: "IDLE", "ALLOCATED", "MIXED", "DOWN", "IDLE+DRAIN",
// "DOWN+DRAIN", "ALLOCATED+DRAIN" (DRAINING), "IDLE*"-style flags are added by callers.
std::string NodeStateLong(const pb::NodeRecord& node);
// sinfo's %t: "idle", "alloc", "mix", "down", "drain", "drng", "unk", "futr", with "*" appended
// when not responding; "maint" and "resv" for nodes in an active reservation ("$" appended to an
// allocated/mixed node in a MAINT one). NodeStateLong adds "+MAINTENANCE", "+RESERVED".
std::string NodeStateCompact(const pb::NodeRecord& node);
// sinfo's %T: "idle", "allocated", "mixed", "down", "drained", "draining", ... (+ "*").
// Lifecycle flags (both forms): suffix "@" reboot requested, "^" reboot issued ("boot^" /
// "reboot^" alone when not drained), "#" powering up, "%" powering down, "~" powered down;
// NodeStateLong adds "+CLOUD", "+POWERED_DOWN", "+REBOOT_REQUESTED", "+POWERING_UP",
// "+POWERING_DOWN", "+REBOOT_ISSUED" in Slurm's flag order.
std::string NodeStateLongLower(const pb::NodeRecord& node);

}  // namespace shoal
