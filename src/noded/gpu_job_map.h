// The GPU -> job mapping directory DCGM exporter reads (--hpc-job-mapping-dir): one file per GPU,
// named by the GPU's index, holding the ids of the jobs using it, one per line; no file when the
// GPU is idle. Shoal extension: SlurmdParameters=gpu_job_map_dir=<dir> (default
// <SlurmdSpoolDir>/gpu_job_map). The content computation is pure; the rest does the I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "noded/gres_devices.h"

namespace shoal::noded {

// File name ("0") -> content ("12\n15\n") for every GPU of `devices` that a job of `jobs`
// (job id, its gres_alloc entry for this node) holds. Job ids ascending, unique.
std::map<std::string, std::string> GpuJobMapFiles(
    const std::vector<GresDevice>& devices,
    const std::vector<std::pair<uint32_t, std::string>>& jobs);

// The directory from SlurmdParameters ("gpu_job_map_dir=/run/dcgm-job-map,..."), else the default.
std::string GpuJobMapDir(std::string_view slurmd_parameters, const std::string& spool);

// Jobs running on this node with their gres_alloc entry here: batch jobs (job dirs without a
// done file) and srun steps (step dirs).
std::vector<std::pair<uint32_t, std::string>> GpuJobsInSpool(const std::string& spool);

// Makes `dir` hold exactly `files` among the GPU files of `devices` (idle GPUs' files removed).
void SyncGpuJobMap(const std::string& dir, const std::vector<GresDevice>& devices,
                   const std::map<std::string, std::string>& files);

}  // namespace shoal::noded
