#include "noded/cgroup/job_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/slurm_conf.h"
#include "noded/cgroup/cpu_alloc.h"
#include "noded/gres_devices.h"
#include "noded/util.h"
#include "shoal.pb.h"

namespace shoal::noded {
namespace {

constexpr long kCgroup2Magic = 0x63677270;  // CGROUP2_SUPER_MAGIC

// Several node daemons (and, in tests, several clusters with the same node names) share one
// host: the spool directory, unique per daemon, disambiguates "<node>" in the cgroup path.
std::string NodeKey(const std::string& node, const std::string& spool) {
  uint32_t h = 2166136261u;
  for (char c : spool) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", h);
  return node + "_" + buf;
}

std::string AllocDir(const std::string& spool) { return spool + "/cgroup_cpus"; }

// Serializes CPU picking between the supervisors of one node (separate processes).
class DirLock {
 public:
  explicit DirLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

}  // namespace

JobOnNode JobOnNodeFrom(const pb::JobRecord& job, const std::string& node) {
  JobOnNode j;
  j.job_id = job.job_id();
  for (int i = 0; i < job.nodes_size(); ++i) {
    if (job.nodes(i) != node) continue;
    if (i < job.cpus_per_node_size()) j.cpus = job.cpus_per_node(i);
    if (i < job.mem_alloc_mb_size()) j.mem_mb = job.mem_alloc_mb(i);
    if (i < job.gres_alloc_size()) j.gres_alloc = job.gres_alloc(i);
    break;
  }
  if (j.mem_mb == 0) j.mem_mb = job.mem_per_node_mb();
  return j;
}

Result<std::unique_ptr<NodeCgroups>> NodeCgroups::Open(const std::string& slurm_conf_path,
                                                       const std::string& node,
                                                       const std::string& spool,
                                                       std::string* note) {
  auto conf = LoadSlurmConf(slurm_conf_path);
  if (!conf) return conf.status();
  auto cg = LoadCgroupConf(slurm_conf_path);
  if (!cg) return cg.status();
  CgroupPolicy policy = MakeCgroupPolicy(conf->Get("ProctrackType", "proctrack/cgroup"),
                                         conf->Get("TaskPlugin"), *cg);
  if (!policy.any()) return std::unique_ptr<NodeCgroups>();
  bool v2 = cg->plugin == CgroupPluginKind::kV2;
  if (cg->plugin == CgroupPluginKind::kAutodetect) {
    struct statfs fs {};
    v2 = ::statfs(cg->mountpoint.c_str(), &fs) == 0 && fs.f_type == kCgroup2Magic;
  }
  std::string key = NodeKey(node, spool);
  auto backend = v2 ? MakeCgroupV2(cg->mountpoint, key) : MakeCgroupV1(cg->mountpoint, key);
  if (!backend) {
    *note = "cgroups not used: " + backend.error();
    return std::unique_ptr<NodeCgroups>();
  }
  uint32_t cpus = 0;
  uint64_t mem = 0;
  if (const NodeConf* nc = conf->FindNode(node)) {
    cpus = nc->cpus;
    mem = nc->real_memory_mb > 1 ? nc->real_memory_mb : 0;
  }
  if (cpus == 0) cpus = static_cast<uint32_t>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  return std::make_unique<NodeCgroups>(policy, *cg, std::move(*backend), spool, cpus, mem);
}

NodeCgroups::NodeCgroups(CgroupPolicy policy, CgroupConf conf,
                         std::unique_ptr<CgroupBackend> backend, std::string spool,
                         uint32_t node_cpus, uint64_t node_mem_mb)
    : policy_(policy),
      conf_(std::move(conf)),
      backend_(std::move(backend)),
      spool_(std::move(spool)),
      node_cpus_(node_cpus),
      node_mem_mb_(node_mem_mb) {}

Result<std::vector<int>> NodeCgroups::AllocateCpus(uint32_t job_id, uint32_t count) {
  std::string dir = AllocDir(spool_);
  (void)MakeDirs(dir, 0700);
  DirLock lock(dir + "/lock");
  std::string mine = dir + "/job" + std::to_string(job_id);
  if (auto text = ReadWholeFile(mine)) {
    auto ids = ParseCpuIds(*text);
    if (!ids.empty()) return ids;
  }
  std::vector<std::vector<int>> taken;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("job", 0) != 0) continue;
      if (auto text = ReadWholeFile(dir + "/" + name)) taken.push_back(ParseCpuIds(*text));
    }
    ::closedir(d);
  }
  std::vector<int> ids = PickCpuIds(node_cpus_, count, taken);
  Status s = WriteFileAtomic(mine, FormatCpuIds(ids) + "\n", 0600, false);
  if (!s.ok()) return s;
  return ids;
}

void NodeCgroups::ReleaseCpus(uint32_t job_id) {
  std::string dir = AllocDir(spool_);
  DirLock lock(dir + "/lock");
  ::unlink((dir + "/job" + std::to_string(job_id)).c_str());
}

Status NodeCgroups::SetupStep(const JobOnNode& job, uint32_t step_id, std::vector<int>* cpus) {
  CgroupLimits limits;
  if (policy_.constrain_cores && job.cpus > 0) {
    auto ids = AllocateCpus(job.job_id, job.cpus);
    if (!ids) return ids.status();
    long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    limits.cpus = HostCpus(*ids, static_cast<int>(online));
    if (cpus) *cpus = limits.cpus;
  }
  if (policy_.constrain_ram) {
    limits.mem_bytes = RamLimitBytes(conf_, job.mem_mb, node_mem_mb_);
    if (policy_.constrain_swap)
      limits.mem_swap_bytes = RamSwapLimitBytes(conf_, job.mem_mb, node_mem_mb_);
  }
  if (policy_.constrain_devices) {
    for (const std::string& file : DeniedDeviceFiles(LoadGresDevices(spool_), job.gres_alloc)) {
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) continue;
      limits.deny.push_back(
          DeviceRule{S_ISBLK(st.st_mode) ? 'b' : 'c', major(st.st_rdev), minor(st.st_rdev)});
    }
  }
  return backend_->CreateStep(job.job_id, StepCgroupName(step_id), limits);
}

Status NodeCgroups::Join(uint32_t job_id, uint32_t step_id, pid_t pid) {
  return backend_->AddPid(job_id, StepCgroupName(step_id), pid == 0 ? ::getpid() : pid);
}

CgroupStats NodeCgroups::Stats(uint32_t job_id, uint32_t step_id) {
  return backend_->Stats(job_id, StepCgroupName(step_id));
}

void NodeCgroups::EndStep(uint32_t job_id, uint32_t step_id) {
  backend_->KillAndRemove(job_id, StepCgroupName(step_id));
}

void NodeCgroups::EndJob(uint32_t job_id) {
  backend_->KillAndRemove(job_id, "");
  ReleaseCpus(job_id);
}

void NodeCgroups::Sweep(const std::function<bool(uint32_t, bool)>& gone) {
  for (uint32_t id : backend_->Jobs()) {
    if (gone(id, backend_->HasStep(id, StepCgroupName(kCgExternStep)))) EndJob(id);
  }
  RemoveNodeDirIfIdle();
}

void NodeCgroups::RemoveNodeDirIfIdle() {
  if (backend_->Jobs().empty()) backend_->RemoveNodeDirIfEmpty();
}

std::string OomMessage(uint64_t oom_kills, const std::string& step) {
  return "slurmstepd: error: Detected " + std::to_string(oom_kills) + " oom_kill event" +
         (oom_kills == 1 ? "" : "s") + " in StepId=" + step +
         ". Some of the step tasks have been OOM Killed.\n";
}

Status CreateExternStep(NodeCgroups* cgroups, const pb::JobRecord& job, const std::string& node) {
  if (cgroups == nullptr) return Status::Ok();
  return cgroups->SetupStep(JobOnNodeFrom(job, node), kCgExternStep, nullptr);
}

}  // namespace shoal::noded
