#include "noded/gpu_bind.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "common/strings.h"

namespace shoal::noded {
namespace {

bool ParseNum(std::string_view s, uint64_t& out, int base) {
  if (base == 16 && (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0)) s.remove_prefix(2);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string Join(const std::vector<uint64_t>& v) {
  std::string out;
  for (uint64_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

// The positions of the GPUs close to `cpus` (a GPU without Cores= is close to every CPU).
std::vector<size_t> Closest(const std::vector<GresDevice>& gpus, const std::vector<int>& cpus) {
  std::vector<size_t> out;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].cores.empty() || cpus.empty()) {
      out.push_back(i);
      continue;
    }
    auto near = ParseCpuList(gpus[i].cores);
    if (std::any_of(cpus.begin(), cpus.end(),
                    [&](int c) { return std::find(near.begin(), near.end(), c) != near.end(); }))
      out.push_back(i);
  }
  if (out.empty())
    for (size_t i = 0; i < gpus.size(); ++i) out.push_back(i);
  return out;
}

}  // namespace

std::vector<int> ParseCpuList(std::string_view list) {
  std::vector<int> out;
  for (auto part : SplitFields(list, ',')) {
    size_t dash = part.find('-');
    uint64_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (ParseNum(part, lo, 10)) out.push_back(static_cast<int>(lo));
    } else if (ParseNum(part.substr(0, dash), lo, 10) && ParseNum(part.substr(dash + 1), hi, 10) &&
               lo <= hi && hi - lo < 65536) {
      for (uint64_t c = lo; c <= hi; ++c) out.push_back(static_cast<int>(c));
    }
  }
  return out;
}

bool ParseGpuBind(std::string_view text, GpuBind& out, std::string* error) {
  out = GpuBind{};
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  if (text.rfind("verbose", 0) == 0) {
    out.verbose = true;
    text.remove_prefix(7);
    if (!text.empty() && text[0] == ',') text.remove_prefix(1);
  }
  if (text.empty() || text == "none") return true;
  size_t colon = text.find(':');
  std::string_view type = text.substr(0, colon);
  std::string_view arg = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  if (type == "closest") {
    out.type = "closest";
    return true;
  }
  if (type == "single" || type == "per_task") {
    uint64_t n = 0;
    if (!ParseNum(arg, n, 10) || n == 0 || n > 1u << 20)
      return fail("Invalid --gpu-bind argument: " + std::string(text));
    out.type = std::string(type);
    out.n = static_cast<uint32_t>(n);
    return true;
  }
  if (type == "map_gpu" || type == "mask_gpu") {
    int base = type == "map_gpu" ? 10 : 16;
    for (auto item : SplitFields(arg, ',')) {
      uint64_t v = 0, rep = 1;
      size_t star = item.find('*');
      if (!ParseNum(item.substr(0, star), v, base) ||
          (star != std::string_view::npos &&
           (!ParseNum(item.substr(star + 1), rep, 10) || rep == 0 || rep > 65536)))
        return fail("Invalid --gpu-bind argument: " + std::string(text));
      for (uint64_t r = 0; r < rep; ++r) out.entries.push_back(v);
    }
    out.type = type == "map_gpu" ? "map" : "mask";
    return true;
  }
  return fail("Invalid --gpu-bind argument: " + std::string(text));
}

std::vector<std::vector<size_t>> TaskGpus(const GpuBind& bind, uint32_t ntasks,
                                          const std::vector<GresDevice>& gpus,
                                          const std::vector<std::vector<int>>& task_cpus,
                                          bool constrained) {
  // Slurm ignores GPU binding for a single task.
  if (bind.type.empty() || ntasks <= 1 || gpus.empty()) return {};
  std::vector<std::vector<size_t>> out(ntasks);
  static const std::vector<int> kNone;
  auto cpus_of = [&](uint32_t t) -> const std::vector<int>& {
    return t < task_cpus.size() ? task_cpus[t] : kNone;
  };
  // An id names a position (constrained) or a global index; -1 = not held here.
  auto position = [&](uint64_t id) -> long {
    if (constrained) return id < gpus.size() ? static_cast<long>(id) : -1;
    for (size_t i = 0; i < gpus.size(); ++i)
      if (gpus[i].index == id) return static_cast<long>(i);
    return -1;
  };
  for (uint32_t t = 0; t < ntasks; ++t) {
    auto& mine = out[t];
    if (bind.type == "closest") {
      mine = Closest(gpus, cpus_of(t));
    } else if (bind.type == "single") {
      auto near = Closest(gpus, cpus_of(t));
      mine.push_back(near[(t / bind.n) % near.size()]);
    } else if (bind.type == "per_task") {
      for (uint32_t k = 0; k < bind.n; ++k) {
        size_t p = (static_cast<size_t>(t) * bind.n + k) % gpus.size();
        if (std::find(mine.begin(), mine.end(), p) == mine.end()) mine.push_back(p);
      }
      std::sort(mine.begin(), mine.end());
    } else if (bind.type == "map" && !bind.entries.empty()) {
      long p = position(bind.entries[t % bind.entries.size()]);
      if (p >= 0) mine.push_back(static_cast<size_t>(p));
    } else if (bind.type == "mask" && !bind.entries.empty()) {
      uint64_t mask = bind.entries[t % bind.entries.size()];
      for (uint64_t bit = 0; bit < 64; ++bit) {
        if (!((mask >> bit) & 1)) continue;
        long p = position(bit);
        if (p >= 0) mine.push_back(static_cast<size_t>(p));
      }
      std::sort(mine.begin(), mine.end());
    }
  }
  return out;
}

std::vector<std::string> GpuEnvironmentVars(const std::vector<GresDevice>& gpus,
                                            const std::vector<size_t>& visible, bool batch,
                                            bool constrained) {
  if (gpus.empty()) return {};
  std::vector<uint64_t> global;
  for (const auto& g : gpus) global.push_back(g.index);
  std::vector<size_t> pos = visible;
  if (pos.empty())
    for (size_t i = 0; i < gpus.size(); ++i) pos.push_back(i);
  std::vector<uint64_t> seen;
  for (size_t p : pos)
    if (p < gpus.size()) seen.push_back(constrained ? p : gpus[p].index);
  std::string ids = Join(seen);
  std::vector<std::string> env;
  env.push_back(std::string(batch ? "SLURM_JOB_GPUS=" : "SLURM_STEP_GPUS=") + Join(global));
  env.push_back("CUDA_VISIBLE_DEVICES=" + ids);
  env.push_back("GPU_DEVICE_ORDINAL=" + ids);
  env.push_back("ROCR_VISIBLE_DEVICES=" + ids);
  env.push_back("ZE_AFFINITY_MASK=" + ids);
  return env;
}

std::string GpuBindVerboseLine(const std::string& node, uint32_t task,
                               const std::vector<GresDevice>& gpus,
                               const std::vector<size_t>& visible) {
  uint64_t usable = 0;
  std::vector<uint64_t> global;
  for (size_t p : visible) {
    if (p >= gpus.size()) continue;
    if (p < 64) usable |= 1ULL << p;
    global.push_back(gpus[p].index);
  }
  char mask[32];
  std::snprintf(mask, sizeof mask, "0x%llx", static_cast<unsigned long long>(usable));
  std::vector<uint64_t> local(visible.begin(), visible.end());
  return "gpu-bind: usable_gres=" + std::string(mask) + "; node=" + node +
         "; task_id=" + std::to_string(task) + "; global_list=" + Join(global) +
         "; local_list=" + Join(local) + "\n";
}

void OverrideEnv(std::vector<std::string>& env, const std::vector<std::string>& vars) {
  for (const auto& v : vars) {
    std::string key = v.substr(0, v.find('=') + 1);
    auto it = std::find_if(env.begin(), env.end(),
                           [&](const std::string& e) { return e.rfind(key, 0) == 0; });
    if (it != env.end())
      *it = v;
    else
      env.push_back(v);
  }
}

}  // namespace shoal::noded
