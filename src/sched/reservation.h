// Advance reservations (scontrol create/update/delete reservation, sinfo -T): parsing the
// scontrol argument list, validating a new or changed reservation against the cluster, recurring
// windows (HOURLY/DAILY/WEEKDAY/WEEKEND/WEEKLY), who may use a reservation and which nodes it
// keeps from other jobs, and Slurm's output layouts. Pure logic, no I/O: the controller passes
// the current time, node names and lookups; it owns, journals and rolls reservations forward.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace shoal::sched {

// Reservation flags. The enum order is the order scontrol show prints them (observed on Slurm
// 22.05 for every flag but REPLACE, REPLACE_DOWN, PART_NODES whose place is a guess).
enum ResvFlag : uint64_t {
  kResvMaint = 1ull << 0,
  kResvFlex = 1ull << 1,
  kResvOverlap = 1ull << 2,
  kResvIgnoreJobs = 1ull << 3,
  kResvHourly = 1ull << 4,
  kResvDaily = 1ull << 5,
  kResvWeekday = 1ull << 6,
  kResvWeekend = 1ull << 7,
  kResvWeekly = 1ull << 8,
  kResvSpecNodes = 1ull << 9,
  kResvAllNodes = 1ull << 10,
  kResvAnyNodes = 1ull << 11,  // LICENSE_ONLY is an alias on input
  kResvFirstCores = 1ull << 12,
  kResvStatic = 1ull << 13,  // STATIC_ALLOC, printed STATIC
  kResvPartNodes = 1ull << 14,
  kResvTimeFloat = 1ull << 15,
  kResvReplace = 1ull << 16,
  kResvReplaceDown = 1ull << 17,
  kResvPurgeComp = 1ull << 18,        // printed PURGE_COMP=hh:mm:ss
  kResvNoHoldJobsAfter = 1ull << 19,  // printed NO_HOLD_JOBS_AFTER_END
  kResvMagnetic = 1ull << 20,
};
inline constexpr uint64_t kResvRecurring =
    kResvHourly | kResvDaily | kResvWeekday | kResvWeekend | kResvWeekly;

// Slurm turns Duration=UNLIMITED into one year (observed: Duration=365-00:00:00).
inline constexpr int64_t kResvUnlimitedSeconds = 365ll * 86400;

struct Reservation {
  std::string name;
  int64_t start = 0;              // unix seconds: the current (or next) window for recurring ones
  int64_t end = 0;                // exclusive
  int64_t duration = 0;           // seconds, end - start
  std::vector<int> node_indexes;  // ascending
  std::vector<std::string> node_names;  // parallel to node_indexes
  uint32_t node_cnt = 0;
  uint32_t core_cnt = 0;           // the caller's sum of CPUs on the nodes (CoreCnt=, TRES=cpu=)
  std::string partition;           // empty = (null)
  std::vector<std::string> users;  // names, without '-'
  bool users_denied = false;       // "Users=-a,-b": everyone but these
  std::vector<std::string> accounts;
  bool accounts_denied = false;
  std::vector<std::string> groups;
  uint64_t flags = 0;
  int64_t purge_comp_seconds = 0;  // with kResvPurgeComp (default 300)
  std::string features, licenses;  // kept as written, shown as (null) when empty

  bool Has(uint64_t f) const { return (flags & f) != 0; }
};

// One list edit from "Users=", "Users+=", "Users-=" (and the same for Accounts, Groups).
enum class ListOp { kSet, kAdd, kRemove };
struct ListEdit {
  ListOp op = ListOp::kSet;
  std::vector<std::string> names;  // as written, a leading '-' kept ("-alan")
};

// What an scontrol create/update argument list asked for; fields not given stay empty.
struct ReservationRequest {
  bool update = false;
  std::optional<std::string> name;
  std::optional<int64_t> start, end;
  std::optional<int64_t> duration;   // seconds; UNLIMITED -> kResvUnlimitedSeconds
  std::optional<std::string> nodes;  // hostlist, "ALL", or "" (update: re-pick by NodeCnt)
  std::optional<uint32_t> node_cnt;
  std::optional<uint32_t> core_cnt;
  std::optional<std::string> partition;
  std::optional<ListEdit> users, accounts, groups;
  uint64_t flags_set = 0;     // "Flags=a,b" (create) or items without sign
  uint64_t flags_add = 0;     // "Flags+=a" or "+a"
  uint64_t flags_remove = 0;  // "Flags-=a" or "-a"
  bool flags_given = false;
  std::optional<int64_t> purge_comp_seconds;
  std::optional<std::string> features, licenses, tres;
  bool skip = false;  // update only: jump a recurring reservation to its next window
};

// Parses the words after "create reservation" / "update" (e.g. {"StartTime=now",
// "Duration=60", "Users=root", "Nodes=n[1-4]", "Flags=MAINT,IGNORE_JOBS"}). Keys are
// case-insensitive and may be abbreviated as Slurm allows ("start=", "user=", "account=",
// "partition=", "reservation="). Times use ParseBeginTime against `now`. Error texts are
// scontrol's, without the "scontrol: error: " prefix, e.g.
//   "Error parsing flags bogus.  No reservation created."
//   "Invalid start time starttime=xyz.  No reservation created."
//   "Invalid duration duration=abc.  No reservation created."
//   "Unknown parameter foo=bar.  No reservation created."
//   "Invalid node count x"
//   "Parameter users=x specified more than once"
//   "A start time must be given.  No reservation created."
//   "An end time or duration must be given.  No reservation created."
//   "CoreCnt, Nodes, NodeCnt, BurstBuffer, Licenses or Watts must be specified.  No reservation
//    created."
//   "Either Users/Groups and/or Accounts must be specified.  No reservation created."
//   "Start time cannot be after end time.  No reservation created."
//   "PART_NODES flag requires specifying a Partition and ALL nodes.  No reservation created."
//   "Reservation must be given.  No reservation update."
// (Update messages end in "No reservation update.")
Result<ReservationRequest> ParseReservationArgs(const std::vector<std::string>& args, bool update,
                                                int64_t now);

// The cluster as reservation validation needs it. Unset lookups accept everything.
struct ResvCluster {
  int64_t now = 0;
  std::vector<std::string> node_names;  // index -> name
  std::vector<uint32_t> node_cpus;      // index -> CPUs (CoreCnt); empty = 1 each
  std::vector<bool> node_usable;        // up/not drained, for NodeCnt picks; empty = all
  std::function<bool(std::string_view)> user_exists;
  std::function<bool(std::string_view)> account_exists;
  // Partition name -> its node indexes; nullopt for an unknown partition.
  std::function<std::optional<std::vector<int>>(std::string_view)> partition_nodes;
  std::string default_partition;
  // When the jobs running on a node are expected to end (0 = idle). Nodes busy past a
  // reservation's start are refused unless IGNORE_JOBS (or MAINT) is set.
  std::function<int64_t(int)> node_busy_until;
  std::vector<const Reservation*> existing;  // all other reservations
  // Order in which NodeCnt picks nodes (e.g. topology OrderCandidates); empty = by index.
  std::vector<int> preferred_order;
};

// Creation result: the reservation and the auto-name counter to journal (Slurm numbers every
// reservation it creates, named or not: root_1, weekly (2), root_3).
struct CreatedReservation {
  Reservation resv;
  uint32_t next_id = 0;
};

// Validates and builds a new reservation. `next_id` is the controller's counter (start at 1).
// Errors are the controller's text after "Error creating the reservation: ":
//   "Duplicate reservation name", "Invalid time specified" (start in the past),
//   "Invalid node name specified", "Invalid user id" (unknown user, or allowed and denied users
//   mixed), "Invalid account or account/partition combination specified",
//   "Invalid partition name specified", "Requested nodes are busy" (NodeCnt cannot be met, or
//   nodes run jobs past the start without IGNORE_JOBS), "Requested reservation overlaps with
//   another reservation", "Requested operation not supported on this system" (TIME_FLOAT with
//   a repeating flag).
Result<CreatedReservation> CreateReservation(const ReservationRequest& req,
                                             const ResvCluster& cluster, uint32_t next_id);

// Applies an update. Errors after "Error updating the reservation: " (the controller answers
// "Requested reservation is invalid" itself for an unknown name).
Result<Reservation> UpdateReservation(const Reservation& current, const ReservationRequest& req,
                                      const ResvCluster& cluster);

// Picks `count` nodes for NodeCnt from `eligible` (already in preference order).
Result<std::vector<int>> PickReservationNodes(const std::vector<int>& eligible, uint32_t count);

// ---- time windows -------------------------------------------------------------------------

// Every active window [start, end) of the reservation that intersects [t0, t1), in order
// (one window unless recurring). Recurrence keeps the local wall-clock time across DST.
std::vector<std::pair<int64_t, int64_t>> Windows(const Reservation& r, int64_t t0, int64_t t1);

// Moves a recurring reservation whose window ended (end <= now) to its next window; returns
// whether it moved. A non-recurring one that ended should be purged by the caller
// (IsExpired).
bool RollForward(Reservation& r, int64_t now);
bool IsExpired(const Reservation& r, int64_t now);
bool IsActive(const Reservation& r, int64_t now);  // State=ACTIVE

// ---- access --------------------------------------------------------------------------------

struct ResvJob {
  std::string user;
  std::string account;
  std::vector<std::string> groups;
  std::string reservation;  // --reservation=name, empty if none
};

// Whether the job's user/account may use the reservation: allowed users (or not denied),
// allowed accounts (or not denied); when both users and accounts are listed both must match.
bool CanUse(const Reservation& r, const ResvJob& job);

// Whether reservation `r` keeps `job` off `node` if the job ran over [t0, t1) (t1 = start +
// time limit; pass INT64_MAX for no limit). A job that is not in `r` is kept off r's nodes
// during every window it would overlap, so a job that ends before the window starts may still
// run there (backfill before maintenance). A job in `r` is never blocked by `r` itself, but is
// blocked by other reservations, MAINT ones included.
bool Blocks(const Reservation& r, int node, int64_t t0, int64_t t1, const ResvJob& job);

// For a job that asked for `r`: the nodes it may use (r's nodes; every candidate with FLEX or
// ANY_NODES), in the order given.
std::vector<int> ReservedNodes(const Reservation& r, const std::vector<int>& candidates);

// For a job that asked for `r`: the earliest start >= now at which a run of `run_seconds` fits
// inside one window (FLEX: any time from now); nullopt if never (run longer than a window).
// While it is in the future the job's pending reason is "Reservation".
std::optional<int64_t> EarliestStartInReservation(const Reservation& r, int64_t now,
                                                  int64_t run_seconds);

// Node state flags for sinfo/scontrol: a node in an active MAINT reservation shows MAINT; in
// any other active reservation RESERVED.
bool NodeInMaint(const std::vector<const Reservation*>& resvs, int node, int64_t now);
bool NodeReserved(const std::vector<const Reservation*>& resvs, int node, int64_t now);

// ---- output --------------------------------------------------------------------------------

std::string FlagsString(const Reservation& r);  // "MAINT,IGNORE_JOBS,SPEC_NODES,ALL_NODES"

// scontrol show reservation, one block (no trailing blank line):
// ReservationName=x StartTime=2026-12-01T10:00:00 EndTime=2026-12-01T12:00:00 Duration=02:00:00
//    Nodes=m[1-8],n[1-4] NodeCnt=12 CoreCnt=40 Features=(null) PartitionName=(null) Flags=...
//    TRES=cpu=40
//    Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null)
//    Watts=n/a   (same line as Users)
//    MaxStartDelay=(null)
std::string FormatReservation(const Reservation& r, int64_t now);

// sinfo -T: RESV_NAME (left, as wide as the longest name), STATE (right, 8), START_TIME and
// END_TIME (right, 19), DURATION (right, 11), NODELIST; columns separated by two spaces.
std::string FormatReservationTable(const std::vector<const Reservation*>& resvs, int64_t now);

}  // namespace shoal::sched
