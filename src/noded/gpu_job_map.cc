#include "noded/gpu_job_map.h"

#include <unistd.h>

#include <set>

#include "noded/util.h"
#include "shoal.pb.h"

namespace shoal::noded {

std::map<std::string, std::string> GpuJobMapFiles(
    const std::vector<GresDevice>& devices,
    const std::vector<std::pair<uint32_t, std::string>>& jobs) {
  std::map<uint32_t, std::set<uint32_t>> by_gpu;
  for (const auto& [job, entry] : jobs)
    for (const auto& d : HeldDevices(devices, entry, "gpu")) by_gpu[d.index].insert(job);
  std::map<std::string, std::string> out;
  for (const auto& [gpu, ids] : by_gpu) {
    std::string text;
    for (uint32_t id : ids) text += std::to_string(id) + "\n";
    out[std::to_string(gpu)] = text;
  }
  return out;
}

std::string GpuJobMapDir(std::string_view params, const std::string& spool) {
  constexpr std::string_view kKey = "gpu_job_map_dir=";
  size_t start = 0;
  while (start <= params.size()) {
    size_t end = params.find(',', start);
    if (end == std::string_view::npos) end = params.size();
    std::string_view item = params.substr(start, end - start);
    if (item.rfind(kKey, 0) == 0 && item.size() > kKey.size())
      return std::string(item.substr(kKey.size()));
    start = end + 1;
  }
  return spool + "/gpu_job_map";
}

std::vector<std::pair<uint32_t, std::string>> GpuJobsInSpool(const std::string& spool) {
  std::vector<std::pair<uint32_t, std::string>> out;
  for (uint32_t id : ListJobDirs(spool)) {
    std::string dir = JobDir(spool, id);
    if (FileExists(dir + "/" + kDoneFile)) continue;
    auto data = ReadWholeFile(dir + "/" + kLaunchFile);
    pb::LaunchBatchRequest launch;
    if (!data || !launch.ParseFromString(*data)) continue;
    // The batch step runs on the job's first node.
    if (launch.job().gres_alloc_size() > 0) out.emplace_back(id, launch.job().gres_alloc(0));
  }
  for (const StepDirId& s : ListStepDirs(spool)) {
    auto data = ReadWholeFile(StepDir(spool, s.job_id, s.step_id) + "/" + kLaunchFile);
    pb::LaunchTasksRequest lt;
    pb::StepCredential cred;
    if (!data || !lt.ParseFromString(*data) || !cred.ParseFromString(lt.cred().body())) continue;
    if (static_cast<int>(lt.node_id()) < cred.gres_alloc_size())
      out.emplace_back(s.job_id, cred.gres_alloc(static_cast<int>(lt.node_id())));
  }
  return out;
}

void SyncGpuJobMap(const std::string& dir, const std::vector<GresDevice>& devices,
                   const std::map<std::string, std::string>& files) {
  bool any_gpu = false;
  for (const auto& d : devices) any_gpu = any_gpu || d.name == "gpu";
  if (!any_gpu) return;
  if (!MakeDirs(dir, 0755).ok()) return;
  for (const auto& d : devices) {
    if (d.name != "gpu") continue;
    std::string name = std::to_string(d.index);
    std::string path = dir + "/" + name;
    auto it = files.find(name);
    if (it == files.end()) {
      ::unlink(path.c_str());
      continue;
    }
    auto old = ReadWholeFile(path);
    if (old.ok() && *old == it->second) continue;
    (void)WriteFileAtomic(path, it->second, 0644, false);
  }
}

}  // namespace shoal::noded
