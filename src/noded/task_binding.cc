#include "noded/task_binding.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/mem_bind.h"
#include "noded/cpu_bind.h"
#include "noded/gpu_bind.h"
#include "shoal.pb.h"

namespace shoal::noded {
namespace {

// <linux/mempolicy.h> modes (the header is not needed for four constants).
constexpr int kMpolBind = 2;
constexpr int kMpolLocal = 4;

void WriteErr(const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(2, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string CurrentCpuMask() {
  std::string mask;
  std::vector<int> cpus = CpusOfThisProcess();
  uint64_t bits = 0;
  for (int c : cpus)
    if (c < 64) bits |= uint64_t{1} << c;
  return HexU64(bits);
}

}  // namespace

uint32_t NumaNodeCount() {
  std::ifstream in("/sys/devices/system/node/online");
  std::string text;
  if (!(in >> text) || text.empty()) return 1;
  // "0" or "0-3" or "0,2": the highest id + 1 bounds the nodes set_mempolicy accepts.
  size_t cut = text.find_last_of(",-");
  std::string last = cut == std::string::npos ? text : text.substr(cut + 1);
  char* end = nullptr;
  unsigned long v = std::strtoul(last.c_str(), &end, 10);
  return end != last.c_str() ? static_cast<uint32_t>(v + 1) : 1;
}

bool CpuBindVerbose(const std::string& cpu_bind) {
  size_t start = 0;
  while (start <= cpu_bind.size()) {
    size_t end = cpu_bind.find(',', start);
    std::string tok = cpu_bind.substr(start, end == std::string::npos ? end : end - start);
    if (tok == "verbose" || tok == "v") return true;
    if (tok.find(':') != std::string::npos || end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

std::string ApplyTaskBinding(const TaskBindRequest& r) {
  pid_t pid = ::getpid();
  if (!r.cpu_mask.empty()) ApplyCpuMask(r.cpu_mask);
  if (CpuBindVerbose(r.cpu_bind)) {
    bool pinned = !r.cpu_mask.empty();
    WriteErr(BindVerboseLine("cpu-bind", pinned ? "MASK" : "NONE", r.node, r.global_task,
                             r.local_task, pid, pinned ? r.cpu_mask : CurrentCpuMask(), pinned));
  }
  if (r.mem_bind.empty()) return "";
  auto mb = ParseMemBind(r.mem_bind);
  if (!mb.ok()) return "--mem-bind=" + r.mem_bind + ": " + mb.error();
  uint64_t mask = TaskMemMasks(*mb, r.local_tasks, NumaNodeCount())
                      .at(r.local_task < r.local_tasks ? r.local_task : 0);
  long rc = 0;
  if (mb->type == MemBindType::kLocal) {
    rc = ::syscall(SYS_set_mempolicy, kMpolLocal, nullptr, 0UL);
  } else if (mb->type != MemBindType::kNone) {
    unsigned long nodemask = mask;
    rc = mask == 0 ? (errno = EINVAL, -1)
                   : ::syscall(SYS_set_mempolicy, kMpolBind, &nodemask, 8 * sizeof(nodemask));
  }
  if (rc != 0) {
    int err = errno;
    return "--mem-bind: NUMA node mask " + HexU64(mask) + " not usable on " + r.node + ": " +
           std::strerror(err);
  }
  if (mb->verbose) {
    bool none = mb->type == MemBindType::kNone;
    uint64_t shown =
        mb->type == MemBindType::kLocal || none
            ? (NumaNodeCount() >= 64 ? ~uint64_t{0} : (uint64_t{1} << NumaNodeCount()) - 1)
            : mask;
    WriteErr(BindVerboseLine("mem-bind", MemBindTypeWord(mb->type), r.node, r.global_task,
                             r.local_task, pid, HexU64(shown), !none));
  }
  return "";
}

std::string BindBatchScript(const pb::JobSpec& spec, const std::string& node,
                            std::vector<std::string>* env) {
  std::string cpu_bind = EffectiveCpuBind(spec.cpu_bind(), spec.hint());
  TaskBindRequest r;
  r.cpu_bind = cpu_bind;
  std::vector<std::string> masks =
      TaskCpuMasks(cpu_bind, 1, std::max<uint32_t>(spec.cpus_per_task(), 1), CpusOfThisProcess());
  if (!masks.empty()) r.cpu_mask = masks[0];
  r.mem_bind = spec.mem_bind();
  r.node = node;
  std::vector<std::string> vars;
  if (!spec.gpu_bind().empty()) vars.push_back("SLURM_GPU_BIND=" + spec.gpu_bind());
  if (!spec.hint().empty()) vars.push_back("SLURM_HINT=" + spec.hint());
  for (auto& v : MemBindEnvironment(spec.mem_bind(), "SBATCH")) vars.push_back(std::move(v));
  if (env) OverrideEnv(*env, vars);
  return ApplyTaskBinding(r);
}

std::vector<size_t> BatchScriptGpus(const std::string& gpu_bind, const std::string& node,
                                    const std::vector<GresDevice>& gpus, bool constrained) {
  if (gpu_bind.empty() || gpus.empty()) return {};
  GpuBind bind;
  std::string err;
  if (!ParseGpuBind(gpu_bind, bind, &err)) return {};
  auto per_task = TaskGpus(bind, 1, gpus, {CpusOfThisProcess()}, constrained);
  std::vector<size_t> visible = per_task.empty() ? std::vector<size_t>{} : per_task[0];
  if (bind.verbose) {
    std::vector<size_t> shown = visible;
    if (shown.empty())
      for (size_t i = 0; i < gpus.size(); ++i) shown.push_back(i);
    WriteErr(GpuBindVerboseLine(node, 0, gpus, shown));
  }
  return visible;
}

}  // namespace shoal::noded
