// Which worker pods go first when a NodeSet shrinks or rolls (the pick order). Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "operator/model/plan.h"

namespace shoal::op {

struct ScaleInCandidate {
  Json pod;
  const ShoalNode* node = nullptr;  // null: no Shoal node record (or unknown)
  bool cordoned = false;            // its Kubernetes node is cordoned
  bool condemned = false;           // already being drained by the operator for removal
  int ordinal = -1;
};

// Orders candidates, first to go first: already condemned (keeps a started drain stable), then
// not running or not ready, then lowest pod-deletion-cost, then earliest deadline (latest end of
// the node's jobs; none = earliest), then cordoned, then highest ordinal, then name.
void SortForScaleIn(std::vector<ScaleInCandidate>* candidates);

// Deadline used for ordering: the Shoal node's latest_job_end, else the pod-deadline
// annotation, else 0.
int64_t CandidateDeadline(const ScaleInCandidate& c);

}  // namespace shoal::op
