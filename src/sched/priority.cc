#include "sched/priority.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>

#include "common/units.h"

namespace shoal::sched {
namespace {

Status BadValue(std::string_view key, std::string_view value) {
  return InvalidArgument("Invalid " + std::string(key) + " value: " + std::string(value));
}

Result<uint32_t> ParseWeight(std::string_view key, std::string_view value) {
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size()) return BadValue(key, value);
  return v;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "CPU=1000,Mem=2000,GRES/gpu=3000": TRES names are case-insensitive, kept in lower case.
Result<std::map<std::string, double>> ParseTresWeights(std::string_view text) {
  std::map<std::string, double> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) return BadValue("PriorityWeightTRES", entry);
    double w = 0;
    std::string_view num = entry.substr(eq + 1);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), w);
    if (ec != std::errc() || p != num.data() + num.size() || w < 0)
      return BadValue("PriorityWeightTRES", entry);
    out[Lower(entry.substr(0, eq))] = w;
  }
  return out;
}

Result<bool> ParseYesNo(std::string_view key, std::string_view value) {
  std::string v = Lower(value);
  if (v == "yes" || v == "1" || v == "true") return true;
  if (v == "no" || v == "0" || v == "false") return false;
  return BadValue(key, value);
}

double Clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

// Job size factor: the larger of the job's share of the cluster's nodes and of its CPUs.
// With PriorityFavorSmall the smallest job (one CPU) gets 1.0 and the whole cluster nearly 0.
double JobSizeFactor(const PriorityConfig& cfg, const PriorityContext& ctx,
                     const PriorityJob& job) {
  double nodes = static_cast<double>(std::max<uint32_t>(ctx.total_nodes, 1));
  double cpus = static_cast<double>(std::max<uint64_t>(ctx.total_cpus, 1));
  double share = std::max(job.nodes / nodes, job.cpus / cpus);
  if (!cfg.favor_small) return Clamp01(share);
  return Clamp01(1.0 - share + 1.0 / cpus);
}

double TresShare(const std::string& name, const PriorityContext& ctx, const PriorityJob& job) {
  if (name == "cpu") return Clamp01(double(job.cpus) / std::max<uint64_t>(ctx.total_cpus, 1));
  if (name == "mem")
    return Clamp01(double(job.memory_mb) / std::max<uint64_t>(ctx.total_memory_mb, 1));
  if (name == "node") return Clamp01(double(job.nodes) / std::max<uint32_t>(ctx.total_nodes, 1));
  return 0;  // GRES and licenses are not modelled yet
}

}  // namespace

Result<PriorityConfig> ParsePriorityConfig(const ConfMap& conf) {
  PriorityConfig cfg;
  if (auto it = conf.find("PriorityType"); it != conf.end()) {
    if (it->second == "priority/multifactor")
      cfg.type = PriorityType::kMultifactor;
    else if (it->second == "priority/basic")
      cfg.type = PriorityType::kBasic;
    else
      return BadValue("PriorityType", it->second);
  }
  if (auto it = conf.find("PriorityMaxAge"); it != conf.end()) {
    auto s = ParseDurationSeconds(it->second);
    if (!s || *s < 0) return BadValue("PriorityMaxAge", it->second);
    cfg.max_age_s = *s;
  }
  if (auto it = conf.find("PriorityFavorSmall"); it != conf.end()) {
    auto v = ParseYesNo("PriorityFavorSmall", it->second);
    if (!v) return v.status();
    cfg.favor_small = *v;
  }
  const std::pair<const char*, uint32_t*> weights[] = {
      {"PriorityWeightAge", &cfg.weight_age},
      {"PriorityWeightFairshare", &cfg.weight_fairshare},
      {"PriorityWeightJobSize", &cfg.weight_job_size},
      {"PriorityWeightPartition", &cfg.weight_partition},
      {"PriorityWeightQOS", &cfg.weight_qos},
  };
  for (auto [key, target] : weights) {
    auto it = conf.find(key);
    if (it == conf.end()) continue;
    auto v = ParseWeight(key, it->second);
    if (!v) return v.status();
    *target = *v;
  }
  if (auto it = conf.find("PriorityWeightTRES"); it != conf.end()) {
    auto v = ParseTresWeights(it->second);
    if (!v) return v.status();
    cfg.weight_tres = std::move(*v);
  }
  return cfg;
}

PriorityBreakdown MultifactorPriority(const PriorityConfig& cfg, const PriorityContext& ctx,
                                      const PriorityJob& job, const FairShareSource& fairshare) {
  PriorityBreakdown b;
  double age = std::max<int64_t>(ctx.now - job.eligible_time, 0);
  double age_factor = cfg.max_age_s > 0 ? Clamp01(age / double(cfg.max_age_s)) : 1.0;
  double part_factor = Clamp01(double(job.partition_job_factor) /
                               std::max<uint16_t>(ctx.max_partition_job_factor, 1));
  double qos_factor =
      ctx.max_qos_priority ? Clamp01(double(job.qos_priority) / ctx.max_qos_priority) : 0.0;
  b.site = static_cast<double>(job.site_factor);
  b.age = cfg.weight_age * age_factor;
  b.fairshare = cfg.weight_fairshare * Clamp01(fairshare.Factor(job.user, job.account));
  b.job_size = cfg.weight_job_size * JobSizeFactor(cfg, ctx, job);
  b.partition = cfg.weight_partition * part_factor;
  b.qos = cfg.weight_qos * qos_factor;
  b.nice = job.nice;
  for (const auto& [name, weight] : cfg.weight_tres) {
    double v = weight * TresShare(name, ctx, job);
    b.tres[name] = v;
    b.tres_total += v;
  }
  double total =
      b.site + b.age + b.fairshare + b.job_size + b.partition + b.qos + b.tres_total - b.nice;
  // Priority 0 means held, so a computed priority never goes below 1.
  b.priority = static_cast<uint32_t>(std::clamp(std::round(total), 1.0, 4294967295.0));
  return b;
}

uint32_t BasicPriority(uint64_t submit_sequence) {
  if (submit_sequence >= kBasicTopPriority) return 1;
  return static_cast<uint32_t>(kBasicTopPriority - submit_sequence);
}

bool SchedulesBefore(const SchedOrderKey& a, const SchedOrderKey& b) {
  if (a.partition_tier != b.partition_tier) return a.partition_tier > b.partition_tier;
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.job_id < b.job_id;
}

void SortForScheduling(std::vector<SchedOrderKey>& keys) {
  std::sort(keys.begin(), keys.end(), SchedulesBefore);
}

}  // namespace shoal::sched
