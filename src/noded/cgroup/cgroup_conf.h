// cgroup.conf (beside slurm.conf) and how it combines with slurm.conf's ProctrackType and
// TaskPlugin into what a node does with cgroups. Parsing and combining are pure; LoadCgroupConf
// reads the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shoal::noded {

enum class CgroupPluginKind { kAutodetect, kV1, kV2 };

struct CgroupConf {
  bool present = false;  // the file exists
  CgroupPluginKind plugin = CgroupPluginKind::kAutodetect;
  std::string mountpoint = "/sys/fs/cgroup";
  bool constrain_cores = false;
  bool constrain_ram = false;
  double allowed_ram_percent = 100;  // AllowedRAMSpace
  double max_ram_percent = 100;      // MaxRAMPercent (of the node's RealMemory)
  uint64_t min_ram_mb = 30;          // MinRAMSpace
  bool constrain_swap = false;
  double allowed_swap_percent = 0;  // AllowedSwapSpace
  double max_swap_percent = 100;    // MaxSwapPercent
  bool constrain_devices = false;
  bool ignore_systemd = false;
};

// `file` names the file in error messages ("cgroup.conf: line 3: ..."). Keys are
// case-insensitive as in Slurm; an unknown key or a bad value is an error.
Result<CgroupConf> ParseCgroupConf(std::string_view text, const std::string& file);

// <dir of slurm.conf>/cgroup.conf; a missing file gives the defaults (present = false).
std::string CgroupConfPath(const std::string& slurm_conf_path);
Result<CgroupConf> LoadCgroupConf(const std::string& slurm_conf_path);

// What the node does, from slurm.conf + cgroup.conf.
struct CgroupPolicy {
  bool track = false;  // processes of jobs live in cgroups and die with them
  bool constrain_cores = false, constrain_ram = false, constrain_swap = false,
       constrain_devices = false;
  bool any() const { return track || constrain_cores || constrain_ram || constrain_devices; }
};

// ProctrackType=proctrack/cgroup (Slurm's default) tracks; ConstrainX apply only with
// task/cgroup in TaskPlugin (as in Slurm: cgroup.conf constraints are task/cgroup's job).
CgroupPolicy MakeCgroupPolicy(std::string_view proctrack_type, std::string_view task_plugin,
                              const CgroupConf& conf);

// Memory limit of a job on a node, in bytes (0 = no limit): allocated MB x AllowedRAMSpace%,
// capped at MaxRAMPercent of the node's memory, at least MinRAMSpace.
uint64_t RamLimitBytes(const CgroupConf& conf, uint64_t alloc_mb, uint64_t node_mem_mb);
// memory+swap limit (v1 memsw, and v2 swap.max = this - RAM limit): RAM limit +
// AllowedSwapSpace% of the allocation, capped at MaxSwapPercent of the node's memory.
uint64_t RamSwapLimitBytes(const CgroupConf& conf, uint64_t alloc_mb, uint64_t node_mem_mb);

}  // namespace shoal::noded
