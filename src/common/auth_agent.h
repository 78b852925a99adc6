// The auth agent: a unix socket where an unprivileged command gets a credential for its own
// uid/gid, as the kernel reports them (SO_PEERCRED), signed with the cluster key it cannot read.
// Served by shoalctld on its host and by shoalsackd on login nodes.
#pragma once

#include <cstdint>
#include <string>

#include "common/auth.h"
#include "common/rpc.h"
#include "shoal.pb.h"

namespace shoal {

// Answers one AuthAgentRequest (serialized pb::Request in `body`) from `conn`'s peer.
pb::Response AnswerAuthAgent(const ClusterKey& key, const RpcConnection& conn,
                             const std::string& body, int64_t now);

}  // namespace shoal
