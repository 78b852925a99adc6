// The node's GRES from gres.conf and GPU autodetection (AutoDetect=nvml through NVML loaded at
// run time, AutoDetect=nvidia through nvidia-smi). Parsing and merging are pure; the Detect*
// functions and LoadNodeGres at the bottom do the I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/gres_conf.h"
#include "common/result.h"
#include "noded/gres_devices.h"

namespace shoal::noded {

// One GPU as a detector saw it.
struct DetectedGpu {
  uint32_t index = 0;  // the tool's index (PCI bus order)
  std::string name;    // "NVIDIA A100-SXM4-40GB"
  std::string uuid;
  std::string pci_bus_id;  // "00000000:07:00.0"
  int minor = -1;          // /dev/nvidia<minor>; -1 = unknown (index is used)
  std::string cores;       // CPUs close to the GPU ("0-15"), "" = unknown
};

// `nvidia-smi --query-gpu=index,name,uuid,pci.bus_id --format=csv,noheader` output.
Result<std::vector<DetectedGpu>> ParseNvidiaSmiQuery(std::string_view csv);
// `nvidia-smi -q` output: fills `minor` of each GPU from its "Minor Number" (matched by bus id).
void ApplyNvidiaSmiMinors(std::string_view q_output, std::vector<DetectedGpu>& gpus);
// Slurm's GPU type from a device name: lower case, spaces as '_' ("Tesla V100" -> tesla_v100).
std::string GpuTypeFromName(std::string_view name);
// "00000000:07:00.0" -> "0000:07:00.0" (the sysfs spelling, lower case).
std::string SysfsBusId(std::string_view pci_bus_id);

// What the node has and reports.
struct NodeGresInfo {
  std::vector<GresDevice> devices;  // every device with an index (gres.conf files, detected)
  std::string gres;                 // for NodeRegisterRequest.gres ("gpu:a100:4,nic:1")
  bool detected = false;            // from gres.conf/AutoDetect (else: slurm.conf's Gres as is)
  std::vector<std::string> log;     // messages for the daemon log
};

// Combines the node's gres.conf lines, the GPUs a detector found (`detected_ok` false = no
// detector ran or it failed) and slurm.conf's `Gres=` of the node (names gres.conf does not
// describe keep their slurm.conf entry; an untyped line inherits the only slurm.conf type).
NodeGresInfo BuildNodeGres(const NodeGresConf& conf, const std::vector<DetectedGpu>& gpus,
                           bool detected_ok, std::string_view slurm_conf_gres);

// I/O: runs `nvidia_smi` (a path or a name looked up in PATH).
Result<std::vector<DetectedGpu>> DetectWithNvidiaSmi(const std::string& nvidia_smi);
// I/O: dlopen("libnvidia-ml.so.1"); an error carries Slurm's message when it is missing.
Result<std::vector<DetectedGpu>> DetectWithNvml();

// Reads <dir of slurm.conf>/gres.conf (missing = empty), detects as it says and builds the
// node's GRES. A malformed gres.conf is an error (the daemon stops, as slurmd does).
Result<NodeGresInfo> LoadNodeGres(const std::string& slurm_conf_path, const std::string& node,
                                  std::string_view slurm_conf_gres);

}  // namespace shoal::noded
