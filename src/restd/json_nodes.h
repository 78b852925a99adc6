// Nodes, partitions and reservations between Shoal's records/requests and slurmrestd v0.0.44
// JSON (node, update_node_msg, partition_info, reservation_info, reservation_desc_msg). Pure.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "restd/json_common.h"
#include "shoal.pb.h"

namespace shoal::restd {

// The node's state as v0.0.44's state array: the base state then its flags.
json NodeStateArray(const pb::NodeRecord& node);
json NodeToJson(const pb::NodeRecord& node, const std::string& cluster);

// update_node_msg as an UpdateNodeRequest for `names` (a hostlist; the body's "name" wins when
// the path has none). Fields the controller cannot change add warnings.
Result<pb::UpdateNodeRequest> NodeUpdateToRequest(const json& body, const std::string& names,
                                                  std::vector<std::string>* warnings);

json PartitionToJson(const pb::PartitionRecord& part, const std::string& cluster);

json ReservationToJson(const pb::ReservationRecord& resv);
// reservation_desc_msg as the "Key=Value" arguments scontrol create/update reservation takes.
Result<std::vector<std::string>> ReservationDescToArgs(const json& desc);

}  // namespace shoal::restd
