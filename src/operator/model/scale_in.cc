#include "operator/model/scale_in.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "operator/model/util.h"

namespace shoal::op {

int64_t CandidateDeadline(const ScaleInCandidate& c) {
  if (c.node != nullptr) return c.node->latest_job_end;
  return ParseRfc3339(PodAnnotation(c.pod, kAnnotDeadline)).value_or(0);
}

namespace {

int64_t DeletionCost(const Json& pod) {
  std::string v = PodAnnotation(pod, kAnnotDeletionCost);
  if (v.empty()) return 0;
  char* end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  return end != nullptr && *end == '\0' ? n : 0;
}

}  // namespace

void SortForScaleIn(std::vector<ScaleInCandidate>* candidates) {
  auto key = [](const ScaleInCandidate& c) {
    bool up = PodPhase(c.pod) == "Running" && PodReady(c.pod);
    // Smaller sorts first.
    return std::make_tuple(c.condemned ? 0 : 1, up ? 1 : 0, DeletionCost(c.pod),
                           CandidateDeadline(c), c.cordoned ? 0 : 1, -c.ordinal);
  };
  std::stable_sort(candidates->begin(), candidates->end(),
                   [&](const ScaleInCandidate& a, const ScaleInCandidate& b) {
                     auto ka = key(a), kb = key(b);
                     if (ka != kb) return ka < kb;
                     return PodName(a.pod) > PodName(b.pod);
                   });
}

}  // namespace shoal::op
