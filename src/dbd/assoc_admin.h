// sacctmgr's administrative requests applied to shoaldbd's in-memory association state. Pure:
// no I/O, the current time is passed in; the daemon writes the rows recorded in AssocChanges.
//
// Names are matched literally (never as patterns) and validated on creation: letters, digits,
// '_', '-', '.'. Cluster, account, user and QOS names are lowered as Slurm's database does.
// Error messages are the lines sacctmgr prints on stderr, leading space included, e.g.
// " Unknown option: foo=bar\n Use keyword 'where' to modify condition".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "acct.pb.h"
#include "common/result.h"
#include "dbd/assoc_state.h"

namespace shoal::dbd {

// Who sent the request (from its verified credential).
struct AdminCaller {
  uint32_t uid = 0;
  std::string name;           // the user name
  bool is_superuser = false;  // root or SlurmUser: everything is allowed
};

// What adding a cluster does in Slurm: the cluster row, the `root` account, the cluster's root
// association (account root, no user, Fairshare 1, QOS list "normal"), the `root` user
// (AdminLevel Administrator, default account root) with its association under root, and the
// `normal` QOS. Existing rows are left alone; a deleted cluster is revived.
void EnsureCluster(AssocState& state, const std::string& cluster, int64_t now,
                   AssocChanges* changes);

// Applies one add/modify/delete. On success `state` holds the result (unless req.dry_run),
// version bumped once when anything changed, and `changes` (may be null) lists every touched
// row in its new form. On error `state` is untouched.
Result<pb::AcctAdminResponse> ApplyAdmin(AssocState& state, const pb::AcctAdminRequest& req,
                                         const AdminCaller& caller, int64_t now,
                                         AssocChanges* changes);

// sacctmgr show: cluster, account, user (with_assoc), qos, association (where cluster=,
// account=, user=, partition=, id=, onlydefaults, woplimits), tres. Association rows come in
// hierarchical order (per cluster: each account's users, then its sub-accounts); unless
// `WOPLimits` is in `where`, unset Max* limits, QOS lists and default QOS are shown as
// inherited from the parents, as Slurm does.
Result<pb::AcctShowResponse> ShowAdmin(const AssocState& state, const pb::AcctShowRequest& req);

// What a controller enforces from: the cluster's live associations, every live user, account
// and QOS, and the state version.
pb::AssocSnapshot SnapshotFor(const AssocState& state, const std::string& cluster);

// ---- Helpers shared with tests ----------------------------------------------------------------

// A name sacctmgr may create: 1..64 of [A-Za-z0-9_.-], not starting with '-'.
bool ValidAcctName(std::string_view name);

// "cpu=10,mem=2G,gres/gpu:a100=2" -> canonical "cpu=10,mem=2G,gres/gpu:a100=2" (known TRES
// order, memory in compact units, duplicates: last wins). "-1" values are kept as "-1" (they
// remove that TRES when merged). Error: " Invalid TRES: <item>".
Result<std::string> NormalizeTres(std::string_view spec, bool minutes = false);

// Applies `spec` (normalized) to `current`: listed TRES replace, "=-1" removes, others stay.
// "-1" alone clears everything.
Result<std::string> MergeTres(const std::string& current, std::string_view spec,
                              bool minutes = false);

}  // namespace shoal::dbd
