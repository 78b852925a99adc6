#include "common/states.h"

#include <algorithm>
#include <cctype>

namespace shoal {
namespace {

struct JobStateNames {
  pb::JobState state;
  const char* name;
  const char* compact;
};

constexpr JobStateNames kJobStates[] = {
    {pb::JOB_PENDING, "PENDING", "PD"},     {pb::JOB_RUNNING, "RUNNING", "R"},
    {pb::JOB_SUSPENDED, "SUSPENDED", "S"},  {pb::JOB_COMPLETED, "COMPLETED", "CD"},
    {pb::JOB_CANCELLED, "CANCELLED", "CA"}, {pb::JOB_FAILED, "FAILED", "F"},
    {pb::JOB_TIMEOUT, "TIMEOUT", "TO"},     {pb::JOB_NODE_FAIL, "NODE_FAIL", "NF"},
    {pb::JOB_PREEMPTED, "PREEMPTED", "PR"}, {pb::JOB_BOOT_FAIL, "BOOT_FAIL", "BF"},
    {pb::JOB_DEADLINE, "DEADLINE", "DL"},   {pb::JOB_OUT_OF_MEMORY, "OUT_OF_MEMORY", "OOM"},
};

std::string Upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  return out;
}

bool Draining(const pb::NodeRecord& n) {
  return n.drain() && (n.alloc_cpus() > 0 || n.base_state() == pb::NODE_ALLOCATED ||
                       n.base_state() == pb::NODE_MIXED);
}

}  // namespace

std::string JobStateName(pb::JobState state) {
  for (const auto& s : kJobStates)
    if (s.state == state) return s.name;
  return "UNKNOWN";
}

std::string JobStateCompact(pb::JobState state) {
  for (const auto& s : kJobStates)
    if (s.state == state) return s.compact;
  return "?";
}

std::optional<pb::JobState> ParseJobState(std::string_view text) {
  std::string up = Upper(text);
  for (const auto& s : kJobStates)
    if (up == s.name || up == s.compact) return s.state;
  return std::nullopt;
}

bool IsFinished(pb::JobState state) {
  return state != pb::JOB_PENDING && state != pb::JOB_RUNNING && state != pb::JOB_SUSPENDED;
}

namespace {

// Reservation flags as Slurm shows them: a node in an active MAINT reservation reads "maint"
// unless it is allocated, mixed, down or drained (then the base state wins, with "$" for
// allocated/mixed); an idle node in any other active reservation reads "resv"/"reserved".
bool ShowsMaint(const pb::NodeRecord& n) {
  return n.maint() && !n.drain() && n.base_state() != pb::NODE_ALLOCATED &&
         n.base_state() != pb::NODE_MIXED && n.base_state() != pb::NODE_DOWN;
}
bool MaintSuffix(const pb::NodeRecord& n) {
  return n.maint() && !n.drain() &&
         (n.base_state() == pb::NODE_ALLOCATED || n.base_state() == pb::NODE_MIXED);
}
bool ShowsReserved(const pb::NodeRecord& n) {
  return n.reserved() && !n.maint() && !n.drain() && n.base_state() == pb::NODE_IDLE &&
         n.responding();
}

// A node powered down, powering up/down or rebooting is expected to be silent: Slurm shows
// its power/boot flag instead of NOT_RESPONDING.
bool PowerOrBootTransition(const pb::NodeRecord& n) {
  return n.powered_down() || n.powering_up() || n.powering_down() || n.reboot_issued();
}

// sinfo's one-character state flag, Slurm's precedence: maintenance "$", pending reboot "@",
// reboot issued "^", power down requested "!", powering up "#", powering down "%", powered
// down "~", not responding "*".
std::string StateSuffix(const pb::NodeRecord& n) {
  if (MaintSuffix(n)) return "$";
  if (n.reboot_requested()) return "@";
  if (n.reboot_issued()) return "^";
  if (n.power_down_requested()) return "!";
  if (n.powering_up()) return "#";
  if (n.powering_down()) return "%";
  if (n.powered_down()) return "~";
  if (!n.responding() && n.base_state() != pb::NODE_FUTURE && !n.reboot_issued()) return "*";
  return "";
}

}  // namespace

std::string NodeStateLong(const pb::NodeRecord& n) {
  std::string base;
  switch (n.base_state()) {
    case pb::NODE_IDLE:
      base = "IDLE";
      break;
    case pb::NODE_ALLOCATED:
      base = "ALLOCATED";
      break;
    case pb::NODE_MIXED:
      base = "MIXED";
      break;
    case pb::NODE_DOWN:
      base = "DOWN";
      break;
    case pb::NODE_FUTURE:
      base = "FUTURE";
      break;
    default:
      base = "UNKNOWN";
      break;
  }
  // Slurm's flag order: CLOUD, DRAIN, (DYNAMIC_NORM), MAINTENANCE, POWERED_DOWN,
  // REBOOT_REQUESTED, RESERVED, NOT_RESPONDING, POWERING_UP, POWERING_DOWN, REBOOT_ISSUED.
  if (n.cloud()) base += "+CLOUD";
  if (n.drain()) base += "+DRAIN";
  if (n.maint()) base += "+MAINTENANCE";
  if (n.power_down_requested()) base += "+POWER_DOWN";
  if (n.powered_down()) base += "+POWERED_DOWN";
  if (n.reboot_requested()) base += "+REBOOT_REQUESTED";
  if (n.reserved()) base += "+RESERVED";
  if (!n.responding() && n.base_state() != pb::NODE_FUTURE && !PowerOrBootTransition(n))
    base += "+NOT_RESPONDING";
  if (n.powering_up()) base += "+POWERING_UP";
  if (n.powering_down()) base += "+POWERING_DOWN";
  if (n.reboot_issued()) base += "+REBOOT_ISSUED";
  return base;
}

std::string NodeStateCompact(const pb::NodeRecord& n) {
  if (ShowsMaint(n)) return n.responding() ? "maint" : "maint*";
  if (ShowsReserved(n)) return "resv";
  if (n.reboot_issued() && !n.drain()) return "boot^";
  std::string s;
  if (n.drain()) {
    s = n.base_state() == pb::NODE_DOWN ? "drain" : (Draining(n) ? "drng" : "drain");
  } else {
    switch (n.base_state()) {
      case pb::NODE_IDLE:
        s = "idle";
        break;
      case pb::NODE_ALLOCATED:
        s = "alloc";
        break;
      case pb::NODE_MIXED:
        s = "mix";
        break;
      case pb::NODE_DOWN:
        s = "down";
        break;
      case pb::NODE_FUTURE:
        s = "futr";
        break;
      default:
        s = "unk";
        break;
    }
  }
  return s + StateSuffix(n);
}

std::string NodeStateLongLower(const pb::NodeRecord& n) {
  if (ShowsMaint(n)) return n.responding() ? "maint" : "maint*";
  if (ShowsReserved(n)) return "reserved";
  if (n.reboot_issued() && !n.drain()) return "reboot^";
  std::string s;
  if (n.drain()) {
    s = n.base_state() == pb::NODE_DOWN ? "drained" : (Draining(n) ? "draining" : "drained");
  } else {
    switch (n.base_state()) {
      case pb::NODE_IDLE:
        s = "idle";
        break;
      case pb::NODE_ALLOCATED:
        s = "allocated";
        break;
      case pb::NODE_MIXED:
        s = "mixed";
        break;
      case pb::NODE_DOWN:
        s = "down";
        break;
      case pb::NODE_FUTURE:
        s = "future";
        break;
      default:
        s = "unknown";
        break;
    }
  }
  return s + StateSuffix(n);
}

}  // namespace shoal
