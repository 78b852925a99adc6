// What a node reports about itself at registration: from its NodeName= line, from -Z --conf
// parameters, or detected from the machine. Parsing and merging are pure; detection reads /proc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/slurm_conf.h"

namespace shoal::noded {

struct NodeResources {
  uint32_t cpus = 0;  // 0 = not given
  uint32_t boards = 0, sockets = 0, cores_per_socket = 0, threads_per_core = 0;
  uint64_t real_memory_mb = 0;  // 0 = not given
  uint64_t tmp_disk_mb = 0;
  std::vector<std::string> features;
  std::string gres;
  std::string addr, hostname;
  uint32_t port = 0;
};

// Parses "CPUs=4 RealMemory=2000 Features=a,b Gres=gpu:2" (slurmd -Z --conf). Keys are
// case-insensitive: CPUs, Boards, Sockets, SocketsPerBoard, CoresPerSocket, ThreadsPerCore,
// RealMemory, TmpDisk, Feature(s)/AvailableFeatures, Gres, NodeAddr, NodeHostname, Port.
// Other keys are reported in `warnings` and ignored.
Result<NodeResources> ParseNodeConfParams(std::string_view text,
                                          std::vector<std::string>* warnings = nullptr);

// The NodeName= line of slurm.conf as resources.
NodeResources FromNodeConf(const NodeConf& node);

struct DetectedHardware {
  uint32_t cpus = 1;
  uint64_t memory_mb = 1;
};
DetectedHardware DetectHardware();

// Fills what is not given: CPUs from Boards*Sockets*Cores*Threads, else `fallback_cpus`; memory
// from `fallback_mem_mb`; the topology as Slurm shows it when only CPUs is known (Sockets=CPUs,
// CoresPerSocket=1, ThreadsPerCore=1, Boards=1).
void CompleteResources(NodeResources& r, uint32_t fallback_cpus, uint64_t fallback_mem_mb);

// /proc/meminfo "MemTotal"/"MemAvailable" text -> MB; /proc/stat "btime"; /proc/loadavg.
uint64_t ParseMeminfoMB(std::string_view meminfo, std::string_view key);
int64_t ParseBootTime(std::string_view proc_stat);

}  // namespace shoal::noded
