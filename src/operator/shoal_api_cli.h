// `shoal-operator shoal-api ...`: the operator's Shoal API calls from a shell, for
// troubleshooting a deployment (does the operator's token work? what does it see?) and for the
// integration tests. Prints what the reconcilers would get; exit 1 with the error otherwise.
#pragma once

#include <string>
#include <vector>

#include "operator/model/plan.h"

namespace shoal::op {

// The operator's node view as JSON (for printing).
Json ShoalNodeJson(const ShoalNode& node);

// args: [--controller-address H:P] [--jwt-key-file F] [--shoal-user U] COMMAND ARGS...
int RunShoalApiCommand(const std::vector<std::string>& args);

}  // namespace shoal::op
