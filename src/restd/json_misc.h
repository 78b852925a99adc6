// Smaller v0.0.44 shapes: ping, diag (stats_msg), shares, licenses, resource layout. Pure.
#pragma once

#include <string>
#include <vector>

#include "restd/json_common.h"
#include "shoal.pb.h"

namespace shoal::restd {

json PingToJson(const pb::PingResponse& ping, int64_t latency_us);
json DiagToJson(const pb::DiagResponse& diag);
json SharesToJson(const pb::ShareQueryResponse& shares, const std::string& cluster);
// Licenses= of slurm.conf ("foo:4,bar") with the counts running jobs hold.
json LicensesToJson(const std::string& configured, const std::vector<pb::JobRecord>& jobs);
json ResourceLayoutToJson(const pb::JobRecord& job);

}  // namespace shoal::restd
