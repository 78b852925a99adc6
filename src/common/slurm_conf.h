// slurm.conf syntax: "Key=Value" pairs, several per line, '#' comments, '\' continuation
// lines, case-insensitive keys, "Include <file>" (glob patterns allowed, relative to the
// including file's directory), NodeName=/PartitionName=/NodeSet= lines with hostlist names and
// DEFAULT entries. Parsing is pure: file reading goes through a FileReader so tests need no disk.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"

namespace shoal {

// Case-insensitive key order for maps of slurm.conf keys.
struct CaseInsensitiveLess {
  using is_transparent = void;  // lets ConfMap::find take a string_view
  bool operator()(std::string_view a, std::string_view b) const;
};
using ConfMap = std::map<std::string, std::string, CaseInsensitiveLess>;

// Transparent hash so maps keyed by std::string can be searched with a string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct NodeConf {
  std::string name;      // one node (hostlists expanded)
  std::string addr;      // NodeAddr (defaults to name)
  std::string hostname;  // NodeHostname (defaults to name)
  uint32_t port = 0;     // 0 = SlurmdPort
  uint32_t cpus = 0;     // 0 = not given (derived from sockets*cores*threads, else 1)
  uint32_t boards = 1, sockets = 0, cores_per_socket = 0, threads_per_core = 0;
  // After parsing, cpus/sockets/cores_per_socket/threads_per_core are always filled in:
  // threads and cores default to 1, sockets to SocketsPerBoard*Boards, else CPUs/(cores*threads),
  // else 1; cpus to sockets*cores*threads. Port: one value for every node on the line, or a
  // list/range ("Port=[17001-17004]" or "17001-17004") pairing with the names.
  uint64_t real_memory_mb = 1;  // Slurm's default is 1
  uint64_t tmp_disk_mb = 0;
  uint32_t weight = 1;
  std::string gres;                   // as written
  std::vector<std::string> features;  // Features= / AvailableFeatures=
  std::string state;                  // State= (UNKNOWN, IDLE, DOWN, DRAIN, FUTURE, CLOUD), upper
                                      // ("UNKNOWN" when not given, as in Slurm)
  std::string reason;
  ConfMap extra;  // other keys on the line, kept for scontrol show
};

struct PartitionConf {
  std::string name;
  std::string nodes_expr;          // as written ("ALL" allowed)
  std::vector<std::string> nodes;  // expanded (NodeSets and ALL resolved)
  bool is_default = false;
  uint32_t max_time = 0xffffffff;      // minutes; UNLIMITED
  uint32_t default_time = 0xfffffffe;  // minutes; NONE
  std::string state = "UP";
  uint32_t min_nodes = 0;
  uint32_t max_nodes = 0xffffffff;
  uint32_t priority_tier = 1;
  uint32_t priority_job_factor = 1;
  bool hidden = false;
  bool root_only = false;
  std::string allow_accounts = "ALL", deny_accounts, allow_groups = "ALL", allow_qos = "ALL";
  std::string over_subscribe = "NO";
  uint64_t def_mem_per_cpu_mb = 0, max_mem_per_cpu_mb = 0;
  bool exclusive_user = false;
  std::string preempt_mode;  // "" = the cluster's PreemptMode
  uint32_t grace_time_s = 0;
  ConfMap extra;
};

// NodeSet=name Nodes=... Feature=... (the union of both), usable in partitions' Nodes=.
struct NodeSetConf {
  std::string name;
  std::string nodes_expr;          // as written
  std::string feature;             // as written
  std::vector<std::string> nodes;  // resolved, in node-table order
};

struct SlurmConf {
  // Every global Key=Value, last one wins; known keys under their canonical spelling, unknown
  // keys are not kept (they become warnings).
  ConfMap options;
  std::vector<std::string> controller_hosts;  // every SlurmctldHost= value in order, as written
  std::vector<NodeSetConf> nodesets;
  std::vector<NodeConf> nodes;  // in file order, names unique
  std::vector<PartitionConf> partitions;
  std::vector<std::string> warnings;  // "slurm.conf:12: unknown key 'Foo' ignored"
  // Name -> index into `nodes`, built by ParseSlurmConf. FindNode checks each hit and falls back
  // to a scan on a miss or a stale entry (e.g. after the caller edited the vector), so lookups of
  // indexed names are O(1) and the answer is always right.
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> node_index;

  // Typed accessors with Slurm's defaults.
  std::string Get(std::string_view key, std::string_view def = "") const;
  Result<int64_t> GetInt(std::string_view key, int64_t def) const;
  std::string ClusterName() const;     // default "cluster"
  std::string ControllerHost() const;  // first SlurmctldHost, name part ("h(addr)");
                                       // else ControlMachine; else "localhost"
  std::string ControllerAddr() const;  // addr part if given (or ControlAddr), else host
  // "addr:port" of every SlurmctldHost= in order (primary, then backups): clients try each.
  std::vector<std::string> ControllerAddresses() const;
  uint32_t ControllerPort() const;        // SlurmctldPort, default 6817
  uint32_t SlurmdPort() const;            // default 6818
  std::string StateSaveLocation() const;  // default /var/spool/slurmctld
  std::string SlurmdSpoolDir() const;     // default /var/spool/slurmd
  uint32_t SlurmdTimeout() const;         // default 300
  uint32_t KillWait() const;              // default 30
  uint32_t FirstJobId() const;            // default 1
  uint32_t MaxJobCount() const;           // default 10000
  uint32_t MinJobAge() const;             // default 300
  std::string SlurmUser() const;          // default "root"
  const NodeConf* FindNode(std::string_view name) const;
  const PartitionConf* DefaultPartition() const;  // the last Default=YES one, else nullptr
};

// Returns the file's text, or an error message such as "No such file or directory".
using FileReader = std::function<Result<std::string>(const std::string& path)>;
// Expands an Include glob into matching paths (sorted); identity when there is no glob char.
using GlobExpander = std::function<std::vector<std::string>(const std::string& pattern)>;

// Parses text read from `path`. Malformed lines are errors naming "path:line: what" (e.g.
// "slurm.conf:7: expected Key=Value, got 'Foo'"); unknown keys become warnings. Node and
// partition definitions are validated (numbers, hostlists, duplicate names, partitions naming
// unknown nodes).
Result<SlurmConf> ParseSlurmConf(const std::string& text, const std::string& path,
                                 const FileReader& reader, const GlobExpander& glob);

// Reads from disk (the real FileReader and glob(3)).
Result<SlurmConf> LoadSlurmConf(const std::string& path);

// The real FileReader and GlobExpander LoadSlurmConf uses (exposed for daemons that re-read).
Result<std::string> ReadFileToString(const std::string& path);
std::vector<std::string> GlobPaths(const std::string& pattern);

// One node's definition from node-line keys without the NodeName ("CPUs=4 RealMemory=2000
// Feature=x"), as `shoald -Z --conf` gives it. Same keys, defaults and derivations as a
// NodeName= line; errors name the problem without a path ("invalid CPUs value 'x'").
Result<NodeConf> ParseNodeConf(std::string_view name, std::string_view keys);

// Where `shoald --conf-server` caches the configuration it fetched (configless; Slurm's is
// /run/slurm/conf), unless told otherwise with --conf-cache.
inline constexpr const char* kConfiglessCacheDir = "/run/shoal/conf";

// The path commands and daemons use, in Slurm's order: $SLURM_CONF, else /etc/slurm/slurm.conf
// when it exists, else the configless cache a local shoald wrote (kConfiglessCacheDir), else
// /etc/slurm/slurm.conf (whose absence the caller reports).
std::string DefaultSlurmConfPath();

// Splits one logical line into Key=Value tokens honouring double quotes; exposed for tests.
Result<std::vector<std::pair<std::string, std::string>>> SplitConfLine(std::string_view line);

}  // namespace shoal
