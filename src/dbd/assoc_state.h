// What shoaldbd keeps in memory between requests: every cluster, account, user, association and
// QOS (a few thousand rows at the largest sites), loaded from the store at start. Administrative
// changes (sacctmgr) are applied here first, by pure logic (assoc_admin.h), and the changed rows
// are then written to the store in one transaction.
#pragma once

#include <cstdint>
#include <vector>

#include "acct.pb.h"

namespace shoal::dbd {

struct AssocState {
  uint64_t version = 0;  // bumps with every committed change; controllers poll it
  std::vector<pb::AcctCluster> clusters;
  std::vector<pb::AcctAccount> accounts;
  std::vector<pb::AcctUser> users;
  std::vector<pb::AcctAssoc> assocs;  // ids are unique and never reused
  std::vector<pb::AcctQos> qos;       // ids are unique and never reused
  uint32_t next_assoc_id = 1;
  uint32_t next_qos_id = 1;
};

// The rows one change touched, in their new form (a deletion is the row with deleted = true;
// rows are never removed, as Slurm keeps deleted associations for old jobs' records).
struct AssocChanges {
  std::vector<pb::AcctCluster> clusters;
  std::vector<pb::AcctAccount> accounts;
  std::vector<pb::AcctUser> users;
  std::vector<pb::AcctAssoc> assocs;
  std::vector<pb::AcctQos> qos;
  bool empty() const {
    return clusters.empty() && accounts.empty() && users.empty() && assocs.empty() && qos.empty();
  }
};

}  // namespace shoal::dbd
