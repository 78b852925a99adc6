#include "cli/sprio_format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "cli/format_fields.h"

namespace shoal::cli {
namespace {

// The codes sprio 22.05 knows; anything else is reported and skipped.
constexpr std::string_view kFieldCodes = "aAbBcfFijJNpPqQrStTuyY";

// %y divides by the largest 32-bit priority, as Slurm does.
constexpr double kMaxPriority = 4294967295.0;

std::string Int(int64_t v) { return std::to_string(v); }

// Normalized factors: weighted value / weight with 7 decimals ("0.5166470"); a zero weight
// prints 0.
std::string Norm(int64_t value, int64_t weight) {
  double num = weight ? static_cast<double>(value) / static_cast<double>(weight) : 0.0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.7f", num);
  return buf;
}

// "%16.14f": the man page's "0.00001459" is this cut to the 10-wide column.
std::string NormPriority(int64_t priority) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%16.14f", static_cast<double>(priority) / kMaxPriority);
  return buf;
}

std::string UserName(const SprioFormatOptions& o, uint32_t uid) {
  if (o.user_name) {
    std::string name = o.user_name(uid);
    if (!name.empty()) return name;
  }
  return "nobody";
}

bool IEquals(std::string_view a, std::string_view b) { return fmt::Lower(a) == fmt::Lower(b); }

// %t: each weighted TRES value divided by its PriorityWeightTRES entry, "%.2f". The names in
// PriorityWeightTRES are case-insensitive ("CPU=1000,Mem=2000"); entries without a weight are
// left out, as Slurm only lists TRES that carry one.
std::string NormTres(std::string_view detail, std::string_view weights) {
  std::string out;
  for (const std::string& item : fmt::SplitList(detail)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string name = item.substr(0, eq);
    double value = std::strtod(item.c_str() + eq + 1, nullptr);
    double weight = 0;
    for (const std::string& w : fmt::SplitList(weights)) {
      size_t weq = w.find('=');
      if (weq != std::string::npos && IEquals(w.substr(0, weq), name)) {
        weight = std::strtod(w.c_str() + weq + 1, nullptr);
        break;
      }
    }
    if (weight == 0 || value == 0) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", value / weight);
    if (!out.empty()) out += ',';
    out += name + '=' + buf;
  }
  return out;
}

std::string Header(char code) {
  switch (code) {
    case 'a':
    case 'A':
      return "AGE";
    case 'b':
    case 'B':
      return "ASSOC";
    case 'c':
      return "CLUSTER";
    case 'f':
    case 'F':
      return "FAIRSHARE";
    case 'i':
      return "JOBID";
    case 'j':
    case 'J':
      return "JOBSIZE";
    case 'N':
      return "NICE";
    case 'p':
    case 'P':
    case 'r':
      return "PARTITION";
    case 'q':
    case 'Q':
      return "QOS";
    case 'S':
      return "SITE";
    case 't':
    case 'T':
      return "TRES";
    case 'u':
      return "USER";
    case 'y':
    case 'Y':
      return "PRIORITY";
  }
  return "";
}

// The -w row: the weight of each factor (SITE's is always 1), blank where a column has none.
std::string WeightValue(char code, const pb::PriorityFactors& w) {
  switch (code) {
    case 'i':
      return "Weights";
    case 'S':
      return "1";
    case 'a':
    case 'A':
      return Int(w.age());
    case 'b':
    case 'B':
      return "0";  // Shoal has no association factor
    case 'f':
    case 'F':
      return Int(w.fairshare());
    case 'j':
    case 'J':
      return Int(w.jobsize());
    case 'p':
    case 'P':
      return Int(w.partition_factor());
    case 'q':
    case 'Q':
      return Int(w.qos_factor());
    case 'T':
      return w.tres_detail();
  }
  return "";  // r, u, c, y, Y, N, t
}

std::string JobValue(char code, const pb::PriorityFactors& j, const pb::PriorityFactors& w,
                     const SprioFormatOptions& o) {
  switch (code) {
    case 'i':
      return Int(j.job_id());
    case 'r':
      return j.partition();
    case 'u':
      return UserName(o, j.uid());
    case 'c':
      return o.cluster_name;
    case 'Y':
      return Int(j.priority());
    case 'y':
      return NormPriority(j.priority());
    case 'S':
      return Int(j.site());
    case 'A':
      return Int(j.age());
    case 'a':
      return Norm(j.age(), w.age());
    case 'B':
      return "0";
    case 'b':
      return Norm(0, 0);
    case 'F':
      return Int(j.fairshare());
    case 'f':
      return Norm(j.fairshare(), w.fairshare());
    case 'J':
      return Int(j.jobsize());
    case 'j':
      return Norm(j.jobsize(), w.jobsize());
    case 'P':
      return Int(j.partition_factor());
    case 'p':
      return Norm(j.partition_factor(), w.partition_factor());
    case 'Q':
      return Int(j.qos_factor());
    case 'q':
      return Norm(j.qos_factor(), w.qos_factor());
    case 'N':
      return Int(j.nice());
    case 'T':
      return j.tres_detail();
    case 't':
      return NormTres(j.tres_detail(), w.tres_detail());
  }
  return "";
}

struct SortKey {
  char code;
  bool descending;
};

// Slurm reads the -S list from its end, skipping ',', '+' and '-', and sorts once per letter;
// a letter preceded by '-' sorts descending. The first invalid letter found from the end is the
// one reported. Keys come back in priority order (first letter = primary key).
Result<std::vector<SortKey>> ParseSort(std::string_view spec) {
  std::vector<SortKey> keys;
  for (size_t i = spec.size(); i-- > 0;) {
    char c = spec[i];
    if (c == ',' || c == '+' || c == '-') continue;
    // The man page promises the -o letters; b/B/c sort as equal here (no assoc factor, one
    // cluster).
    if (kFieldCodes.find(c) == std::string_view::npos) {
      return Error(ErrorCode::kInvalidArgument, std::string("Invalid sort specification: ") + c);
    }
    keys.push_back({c, i > 0 && spec[i - 1] == '-'});
  }
  std::reverse(keys.begin(), keys.end());
  return keys;
}

// <0, 0, >0 for one key, ascending.
int CompareKey(char code, const pb::PriorityFactors& a, const pb::PriorityFactors& b,
               const SprioFormatOptions& o) {
  auto cmp = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  switch (code) {
    case 'i':
      return cmp(a.job_id(), b.job_id());
    case 'r':
      return a.partition().compare(b.partition());
    case 'u':
      return UserName(o, a.uid()).compare(UserName(o, b.uid()));
    case 'N':
      return cmp(a.nice(), b.nice());
    case 'S':
      return cmp(a.site(), b.site());
    case 'a':
    case 'A':
      return cmp(a.age(), b.age());
    case 'f':
    case 'F':
      return cmp(a.fairshare(), b.fairshare());
    case 'j':
    case 'J':
      return cmp(a.jobsize(), b.jobsize());
    case 'p':
    case 'P':
      return cmp(a.partition_factor(), b.partition_factor());
    case 'q':
    case 'Q':
      return cmp(a.qos_factor(), b.qos_factor());
    case 't':
    case 'T':
      return cmp(a.tres(), b.tres());
    case 'y':
    case 'Y':
      return cmp(a.priority(), b.priority());
  }
  return 0;  // b, B, c: the same for every job here
}

}  // namespace

std::string SprioDefaultFormat(const SprioFormatOptions& o, const pb::PriorityFactors& w) {
  if (o.long_output) return o.normalized ? kSprioNormLongFormat : kSprioLongFormat;
  std::string f = "%.15i %9r";
  if (o.cluster_column) f += " %.8c";
  if (o.user_column) f += " %.8u";
  // Normalized columns are left-justified and TRES is wider; the rest is the same shape.
  const bool n = o.normalized;
  f += n ? " %10y" : " %.10Y %.10S";
  if (w.age()) f += n ? " %10a" : " %.10A";
  // No assoc weight exists in Shoal, so that column (weight 0) is always left out here.
  if (w.fairshare()) f += n ? " %10f" : " %.10F";
  if (w.jobsize()) f += n ? " %10j" : " %.10J";
  if (w.partition_factor()) f += n ? " %10p" : " %.10P";
  if (w.qos_factor()) f += n ? " %10q" : " %.10Q";
  if (!w.tres_detail().empty() || w.tres()) f += n ? " %20t" : " %.20T";
  return f;
}

SprioOutput FormatSprio(const std::vector<const pb::PriorityFactors*>& jobs,
                        const pb::PriorityFactors& weights, const SprioFormatOptions& o) {
  SprioOutput out;
  std::string layout = o.has_format ? o.format : SprioDefaultFormat(o, weights);
  std::vector<fmt::FieldSpec> fields;
  for (fmt::FieldSpec& f : fmt::ParsePercentFormat(layout)) {
    if (f.code == 0) {  // text before the first '%'
      fields.push_back(std::move(f));
      continue;
    }
    // sprio has no "%#" width: the '#' is read as the type letter. An unknown letter loses its
    // suffix too (Slurm drops the whole token) but the rest of the layout is kept.
    char code = f.auto_width ? '#' : f.code;
    if (kFieldCodes.find(code) == std::string_view::npos) {
      out.warnings.push_back(std::string("Invalid job format specification: ") + code);
      continue;
    }
    fields.push_back(std::move(f));
  }

  auto line = [&](auto&& value_of) {
    std::string s;
    for (const fmt::FieldSpec& f : fields) {
      if (f.code) fmt::AppendField(s, value_of(f.code), f.width, f.right);
      s += f.suffix;
    }
    s += '\n';
    return s;
  };

  if (!o.no_header) out.text += line([](char c) { return Header(c); });
  if (o.weights) {
    out.text += line([&](char c) { return WeightValue(c, weights); });
    return out;
  }

  auto keys = ParseSort(o.sort.empty() ? std::string_view(kSprioDefaultSort) : o.sort);
  if (!keys.ok()) {
    out.error = keys.error();
    return out;
  }
  std::vector<const pb::PriorityFactors*> sorted = jobs;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const pb::PriorityFactors* a, const pb::PriorityFactors* b) {
                     for (const SortKey& k : *keys) {
                       int c = CompareKey(k.code, *a, *b, o);
                       if (c != 0) return k.descending ? c > 0 : c < 0;
                     }
                     return false;
                   });
  for (const pb::PriorityFactors* j : sorted) {
    out.text += line([&](char c) { return JobValue(c, *j, weights, o); });
  }
  return out;
}

Result<std::vector<uint32_t>> ParseSprioJobIds(std::string_view text) {
  std::vector<uint32_t> ids;
  for (const std::string& item : fmt::SplitList(text)) {
    // Slurm takes the item as a whole number; "12x", "0" or anything past INT_MAX is invalid.
    bool digits = !item.empty() && item.size() <= 10 &&
                  item.find_first_not_of("0123456789") == std::string::npos;
    unsigned long long v = digits ? std::strtoull(item.c_str(), nullptr, 10) : 0;
    if (v == 0 || v > 0x7fffffffull) {
      return Error(ErrorCode::kInvalidArgument, "Invalid job id: " + item);
    }
    ids.push_back(static_cast<uint32_t>(v));
  }
  return ids;
}

bool SprioJobMatches(const pb::PriorityFactors& job, const SprioFilter& filter) {
  auto has = [](const auto& list, const auto& v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  if (!filter.job_ids.empty() && !has(filter.job_ids, job.job_id())) return false;
  if (filter.uids_given && !has(filter.uids, job.uid())) return false;
  if (!filter.partitions.empty() && !has(filter.partitions, job.partition())) return false;
  return true;
}

}  // namespace shoal::cli
