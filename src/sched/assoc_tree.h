// The association tree of one cluster, built from the snapshot shoaldbd sends (AssocSnapshot):
// finding a job's association, the parent chain up to root, limits with their inheritance, and
// the QOS a job may use. Pure logic, no I/O; immutable once built (rebuild on a new snapshot
// version: usage and counters are keyed by association id, so they survive a rebuild).
//
// Rules (Slurm's, from sacctmgr(1) and resource_limits.html):
//   * A job's association is (user, account, partition): a partition-specific association
//     first, then the user's association without a partition. Account names are
//     case-insensitive (Slurm keeps them lower case); user names are not.
//   * No account given: the user's default account (AcctUser.default_account), else the
//     association marked is_default.
//   * Max* limits (MaxJobs, MaxSubmitJobs, MaxTRESPerJob, MaxTRESPerNode, MaxTRESMinsPerJob,
//     MaxWall) unset on an association are inherited from its account, then the parent
//     accounts, per TRES. Grp* limits are never inherited: they cap the aggregate of the
//     association and its children, so each ancestor enforces its own (see assoc_limits.h).
//   * The allowed QOS list is the association's, else the nearest ancestor's that has one,
//     else {"normal"}. The default QOS: the nearest DefaultQOS in the chain, else the only QOS
//     allowed, else "normal".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "acct.pb.h"
#include "common/result.h"

namespace shoal::sched {

// TRES counts by lower-case name: "cpu", "mem" (MB), "node", "billing", "energy",
// "gres/gpu", "gres/gpu:a100", "license/x".
using TresMap = std::map<std::string, uint64_t>;

// "cpu=10,mem=20G,node=2,gres/gpu=4" -> {cpu:10, mem:20480, node:2, gres/gpu:4}. Memory takes
// Slurm's suffixes (K, M, G, T; MB by default); other counts are plain integers (K/M/G/T
// multiply by 1024^n). "name=-1" (sacctmgr's "clear") drops the entry. Empty text -> {}.
// Error: "Invalid TRES specification: <entry>".
Result<TresMap> ParseTres(std::string_view text);
// The reverse, in Slurm's TRES order (cpu, mem, energy, node, billing, then by name); memory
// printed compactly ("20G").
std::string FormatTres(const TresMap& tres);

// The limits that apply to one association after inheritance (see above).
struct EffectiveLimits {
  std::optional<int32_t> max_jobs;
  std::optional<int32_t> max_submit_jobs;
  std::optional<uint32_t> max_wall_minutes;
  TresMap max_tres_per_job;
  TresMap max_tres_per_node;
  TresMap max_tres_mins_per_job;
};

class AssocTree {
 public:
  static constexpr int kNone = -1;

  struct Node {
    pb::AcctAssoc assoc;
    std::string account;  // lower case
    bool is_user = false;
    int parent = kNone;         // index of the parent account's association; kNone for root
    std::vector<int> children;  // user associations first (by user, partition), then accounts
    uint32_t depth = 0;         // root = 0
  };

  AssocTree() = default;

  // Builds the tree of `cluster` (associations of other clusters and deleted ones are skipped;
  // "" takes every association). An account association whose parent is missing hangs under
  // root; without a root association a synthetic one (id 0, "root") is made, so the tree always
  // has a root at index 0 when it has any node.
  static AssocTree Build(const pb::AssocSnapshot& snapshot, std::string_view cluster = "");

  uint64_t version() const { return version_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int index) const { return nodes_[static_cast<size_t>(index)]; }
  bool empty() const { return nodes_.empty(); }
  int root() const { return nodes_.empty() ? kNone : 0; }

  int IndexOfId(uint32_t assoc_id) const;                 // kNone if unknown
  int AccountIndex(std::string_view account) const;       // the account's own association
  const pb::AcctUser* User(std::string_view name) const;  // nullptr if unknown
  const pb::AcctQos* Qos(std::string_view name) const;    // by name, case-insensitive
  const std::vector<pb::AcctQos>& all_qos() const { return qos_; }

  // The account a job runs under: `account` when given, else the user's default account.
  // "" when the user has none.
  std::string ResolveAccount(std::string_view user, std::string_view account) const;

  // The user association for (user, account, partition): the partition-specific one first,
  // then the one without partition. `account` "" uses ResolveAccount. kNone when none.
  int Find(std::string_view user, std::string_view account, std::string_view partition) const;

  // The association itself, then each parent account up to root.
  std::vector<int> Chain(int index) const;

  EffectiveLimits Limits(int index) const;
  std::vector<std::string> AllowedQos(int index) const;  // lower case
  std::string DefaultQos(int index) const;               // lower case
  bool QosAllowed(int index, std::string_view qos) const;

  // Pre-order walk (sshare's tree order): each account, then its users, then its sub-accounts.
  std::vector<int> PreOrder() const;

 private:
  uint64_t version_ = 0;
  std::vector<Node> nodes_;
  std::unordered_map<uint32_t, int> by_id_;
  std::map<std::string, int, std::less<>> accounts_;  // lower-case account -> index
  // (user, account, partition) -> index; account lower case.
  std::map<std::tuple<std::string, std::string, std::string>, int, std::less<>> users_;
  std::map<std::string, pb::AcctUser, std::less<>> user_recs_;
  std::vector<pb::AcctQos> qos_;
  std::map<std::string, size_t, std::less<>> qos_by_name_;  // lower case -> index in qos_
};

std::string LowerAscii(std::string_view s);

}  // namespace shoal::sched
