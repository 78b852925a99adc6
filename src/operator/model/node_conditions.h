// Shoal node state -> worker pod conditions (ShoalNodeState<Word>), and the Shoal -> Kubernetes
// drain mirror (the node-drain annotation for drains the operator did not make). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "operator/model/plan.h"

namespace shoal::op {

inline constexpr const char* kConditionPrefix = "ShoalNodeState";

// "NOT_RESPONDING" -> "NotResponding", "IDLE" -> "Idle".
std::string StateWord(const std::string& state);
// The conditions currently true for `node` (base state first, then flags in sorted order), each
// {type, status "True", reason <word>, message <node reason>, lastTransitionTime}.
std::vector<Json> NodeConditions(const ShoalNode& node, int64_t now);
// The full status.conditions the pod should have: its non-Shoal conditions unchanged, Shoal
// conditions replaced by NodeConditions (keeping lastTransitionTime of those already true).
// nullopt when nothing changes. `node` null: every Shoal condition is removed.
std::optional<Json> DesiredPodConditions(const Json& pod, const ShoalNode* node, int64_t now);
// A pods/status merge patch carrying `conditions`.
Json PodStatusPatch(const Json& pod, const Json& conditions);
// Whether the node's drain was made by the operator (reason starts with kDrainPrefix).
bool OperatorDrain(const ShoalNode& node);
// The node-drain annotation value the pod should carry: the reason of a drain the operator did
// not make, else nullopt (annotation absent).
std::optional<std::string> ForeignDrainAnnotation(const ShoalNode& node);
// Busy: jobs running or completing, or allocated/mixed.
bool NodeBusy(const ShoalNode& node);
// Drained and empty: safe to delete its pod (Slinky's IsNodeDrained plus no running jobs).
bool NodeDrainedAndEmpty(const ShoalNode& node);

}  // namespace shoal::op
