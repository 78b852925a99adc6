// The GRES devices of this node (from gres.conf or autodetection) and which of their device files
// a job may reach. The device-file computation is pure; the spool-file load/save at the bottom is
// how shoald hands the detected list to shoal-stepd (it does not detect again per step).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::noded {

// One device of the node ("gpu" index 0 at /dev/nvidia0, close to cores 0-7).
struct GresDevice {
  std::string name;    // "gpu"
  std::string type;    // "a100", or "" when untyped
  uint32_t index = 0;  // per name, in the order Slurm numbers them (IDX, CUDA_VISIBLE_DEVICES)
  std::string file;    // device path, "" for count-only GRES
  std::string cores;   // cores close to the device ("0-7"), "" = unknown/any
  bool operator==(const GresDevice&) const = default;
};

// The job's entry of JobRecord.gres_alloc for this node: "gpu:0,1" or "gpu:0,1,nic:0" (a token
// with ':' opens a new name). "" = nothing. Indexes per name, in order of appearance.
std::map<std::string, std::vector<uint32_t>> ParseGresAllocEntry(std::string_view entry);

// Device files the job may reach: those of devices it holds (sorted, unique).
std::vector<std::string> AllowedDeviceFiles(const std::vector<GresDevice>& devices,
                                            std::string_view gres_alloc_entry);

// Device files the job must NOT reach on this node: every GRES device file of the node that no
// held device uses (a file shared by a held device stays reachable). Sorted, unique.
std::vector<std::string> DeniedDeviceFiles(const std::vector<GresDevice>& devices,
                                           std::string_view gres_alloc_entry);

// Devices of `name` held by the job, in index order (for binding / environment).
std::vector<GresDevice> HeldDevices(const std::vector<GresDevice>& devices,
                                    std::string_view gres_alloc_entry, std::string_view name);

// One line per device, "name|type|index|file|cores" (the spool file's content), and back.
std::string FormatGresDevices(const std::vector<GresDevice>& devices);
std::vector<GresDevice> ParseGresDevices(std::string_view text);

// `<spool_dir>/gres_devices`: written by shoald after detection, read by shoal-stepd. A missing
// file reads as no devices.
std::string GresDevicesPath(const std::string& spool_dir);
bool SaveGresDevices(const std::string& spool_dir, const std::vector<GresDevice>& devices);
std::vector<GresDevice> LoadGresDevices(const std::string& spool_dir);

}  // namespace shoal::noded
