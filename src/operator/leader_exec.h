// `shoal-operator leader-exec`: runs a command only while this pod holds a Kubernetes Lease
// (active/passive controller HA). It campaigns for the Lease (client-go's protocol, see
// kube/leader.h), starts the command once it holds it, forwards signals to it and renews the
// Lease; the decisions are LeaderExecMachine's (leader_exec_machine.h), this is the I/O.
//
//   shoal-operator leader-exec --lease-name NAME [--lease-namespace NS] [--identity ID]
//       [--lease-duration-seconds N] [--health-port N] [--api URL | --kubeconfig F] -- CMD...
#pragma once

#include <string>
#include <vector>

namespace shoal::op {

// Returns the process exit status (the child's when it ran and exited).
int RunLeaderExec(const std::vector<std::string>& args);

}  // namespace shoal::op
