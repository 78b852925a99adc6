#include "operator/model/plan.h"

namespace shoal::op {

const char* KindName(Action::Kind kind) {
  switch (kind) {
    case Action::Kind::kApply:
      return "Apply";
    case Action::Kind::kDelete:
      return "Delete";
    case Action::Kind::kPatchPodStatus:
      return "PatchPodStatus";
    case Action::Kind::kPatchMetadata:
      return "PatchMetadata";
    case Action::Kind::kUpdateStatus:
      return "UpdateStatus";
    case Action::Kind::kDrainNode:
      return "DrainNode";
    case Action::Kind::kUndrainNode:
      return "UndrainNode";
    case Action::Kind::kDownNode:
      return "DownNode";
    case Action::Kind::kSetNodeComment:
      return "SetNodeComment";
    case Action::Kind::kDeleteShoalNode:
      return "DeleteShoalNode";
    case Action::Kind::kReconfigure:
      return "Reconfigure";
    case Action::Kind::kCreateReservation:
      return "CreateReservation";
    case Action::Kind::kEvent:
      return "Event";
    case Action::Kind::kSetNodeFeatures:
      return "SetNodeFeatures";
  }
  return "?";
}

}  // namespace shoal::op
