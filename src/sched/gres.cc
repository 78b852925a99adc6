#include "sched/gres.h"

#include <charconv>

#include "common/units.h"

namespace shoal::sched {
namespace {

Status Invalid() { return Error(ErrorCode::kInvalidGres, kInvalidGresMessage); }

// Splits on `sep`, keeping empty pieces (so "gpu:" is caught as an error).
std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t end = s.find(sep, pos);
    if (end == std::string_view::npos) {
      out.push_back(s.substr(pos));
      return out;
    }
    out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
}

bool ValidName(std::string_view s) {
  // A leading '-' reads as a negative count, never as a name.
  if (s.empty() || s[0] == '-') return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

// "name[:type][:count]" with count defaulting to 1; the last field is the count when it reads as
// one (that is how Slurm tells "gpu:2" from "gpu:a100").
bool ParseTriple(std::string_view item, GresRequest* r, bool allow_zero) {
  auto f = Split(item, ':');
  if (f.size() > 3) return false;
  for (std::string_view x : f)
    if (x.empty()) return false;
  r->name = std::string(f[0]);
  if (!ValidName(r->name)) return false;
  r->type.clear();
  r->count = 1;
  if (f.size() == 1) return true;
  uint64_t n = 0;
  bool last_is_count = ParseGresCount(f.back(), &n);
  if (f.size() == 3 && !last_is_count) return false;
  if (last_is_count) {
    if (n == 0 && !allow_zero) return false;
    r->count = n;
    if (f.size() == 3) r->type = std::string(f[1]);
  } else {
    r->type = std::string(f[1]);
  }
  return r->type.empty() || ValidName(r->type);
}

// Adds `r` to `list`, summing with an entry of the same name and type.
void Merge(std::vector<GresRequest>& list, const GresRequest& r) {
  for (auto& x : list)
    if (x.name == r.name && x.type == r.type) {
      x.count += r.count;
      return;
    }
  list.push_back(r);
}

bool Matches(const GresSlot& s, std::string_view name, std::string_view type) {
  return s.name == name && (type.empty() || s.type == type);
}

uint64_t Avail(const GresSlot& s, bool ignore_alloc) { return ignore_alloc ? s.count : s.free(); }

// Takes up to `want` of the lowest free devices of slot `si`, appending to `out`.
uint64_t TakeFrom(const NodeGres& node, uint32_t si, uint64_t want, std::vector<GresAlloc>* out) {
  const GresSlot& s = node.slots[si];
  uint64_t take = std::min(want, s.free());
  if (take == 0) return 0;
  GresAlloc a{si, s.name, s.type, take, {}};
  if (s.indexed()) {
    a.indexes.reserve(take);
    for (uint32_t i = 0; i < s.count && a.indexes.size() < take; ++i)
      if (!s.IsUsed(i)) a.indexes.push_back(s.first_index + i);
  }
  out->push_back(std::move(a));
  return take;
}

// Appends `a`, merging with an entry for the same slot: a typed and an untyped request may both
// draw on one slot, and the node should see one list of indexes per slot.
void AddAlloc(std::vector<GresAlloc>* out, GresAlloc a) {
  for (auto& prev : *out)
    if (prev.slot == a.slot) {
      prev.count += a.count;
      prev.indexes.insert(prev.indexes.end(), a.indexes.begin(), a.indexes.end());
      std::sort(prev.indexes.begin(), prev.indexes.end());
      return;
    }
  out->push_back(std::move(a));
}

void SetBits(GresSlot& s, const GresAlloc& a, bool on) {
  if (!s.indexed()) return;
  for (uint32_t idx : a.indexes) {
    uint32_t local = idx - s.first_index;
    if (local >= s.count) continue;
    uint64_t mask = 1ull << (local % 64);
    if (on)
      s.bits[local / 64] |= mask;
    else
      s.bits[local / 64] &= ~mask;
  }
}

std::string TypedName(const std::string& name, const std::string& type) {
  return type.empty() ? name : name + ":" + type;
}

}  // namespace

Result<NodeGres> ParseNodeGres(std::string_view text) {
  NodeGres node;
  if (text.empty() || text == "(null)") return node;
  for (std::string_view item : Split(text, ',')) {
    // "(S:0-1)" names the sockets the devices sit on; placement here is not socket-aware.
    if (size_t paren = item.find('('); paren != std::string_view::npos) {
      if (item.back() != ')') return Invalid();
      item = item.substr(0, paren);
    }
    GresRequest r;
    if (!ParseTriple(item, &r, /*allow_zero=*/true)) return Invalid();
    bool merged = false;
    for (auto& s : node.slots)
      if (s.name == r.name && s.type == r.type) {
        s.count += r.count;
        merged = true;
      }
    if (!merged) node.slots.push_back(GresSlot{r.name, r.type, r.count, 0, 0, {}});
  }
  // Number devices per name in slot order, and size the bitmaps.
  for (size_t i = 0; i < node.slots.size(); ++i) {
    GresSlot& s = node.slots[i];
    uint64_t first = 0;
    for (size_t j = 0; j < i; ++j)
      if (node.slots[j].name == s.name) first += node.slots[j].count;
    if (first > UINT32_MAX) return Invalid();
    s.first_index = static_cast<uint32_t>(first);
    if (s.indexed()) s.bits.assign((s.count + 63) / 64, 0);
  }
  return node;
}

Result<std::vector<GresRequest>> ParseGresRequest(std::string_view text) {
  std::vector<GresRequest> out;
  if (text.empty() || text == "none") return out;
  for (std::string_view item : Split(text, ',')) {
    if (item.substr(0, 5) == "gres/" || item.substr(0, 5) == "gres:") item.remove_prefix(5);
    GresRequest r;
    if (!ParseTriple(item, &r, /*allow_zero=*/false)) return Invalid();
    Merge(out, r);
  }
  return out;
}

Result<std::vector<GresRequest>> ParseGpuRequest(std::string_view text) {
  std::vector<GresRequest> out;
  if (text.empty()) return Invalid();
  for (std::string_view item : Split(text, ',')) {
    auto f = Split(item, ':');
    if (f.size() > 2) return Invalid();
    GresRequest r{"gpu", "", 0};
    if (!ParseGresCount(f.back(), &r.count) || r.count == 0) return Invalid();
    if (f.size() == 2) {
      if (!ValidName(f[0])) return Invalid();
      r.type = std::string(f[0]);
    }
    Merge(out, r);
  }
  return out;
}

Result<JobGres> ParseJobGres(const GresOptions& opts) {
  JobGres job;
  if (!opts.gres.empty()) {
    auto r = ParseGresRequest(opts.gres);
    if (!r) return r.status();
    job.per_node = std::move(*r);
  }
  if (!opts.gpus_per_node.empty()) {
    auto r = ParseGpuRequest(opts.gpus_per_node);
    if (!r) return r.status();
    for (const auto& x : *r) Merge(job.per_node, x);
  }
  if (!opts.gpus_per_task.empty()) {
    auto r = ParseGpuRequest(opts.gpus_per_task);
    if (!r) return r.status();
    job.per_task = std::move(*r);
  }
  if (!opts.gpus.empty()) {
    auto r = ParseGpuRequest(opts.gpus);
    if (!r) return r.status();
    job.per_job = std::move(*r);
  }
  if (!opts.cpus_per_gpu.empty()) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(opts.cpus_per_gpu.data(),
                                   opts.cpus_per_gpu.data() + opts.cpus_per_gpu.size(), n);
    if (ec != std::errc() || p != opts.cpus_per_gpu.data() + opts.cpus_per_gpu.size() || n == 0 ||
        n > UINT32_MAX)
      return Invalid();
    job.cpus_per_gpu = static_cast<uint32_t>(n);
  }
  if (!opts.mem_per_gpu.empty()) {
    auto mb = ParseMemoryMB(opts.mem_per_gpu);
    if (!mb || *mb == 0) return Invalid();
    job.mem_per_gpu_mb = *mb;
  }
  return job;
}

uint64_t GresFree(const NodeGres& node, std::string_view name, std::string_view type) {
  uint64_t n = 0;
  for (const auto& s : node.slots)
    if (Matches(s, name, type)) n += s.free();
  return n;
}

uint64_t GresTotal(const NodeGres& node, std::string_view name, std::string_view type) {
  uint64_t n = 0;
  for (const auto& s : node.slots)
    if (Matches(s, name, type)) n += s.count;
  return n;
}

bool GresFits(const NodeGres& node, const std::vector<GresRequest>& need, bool ignore_alloc) {
  // Typed needs must fit their own type; an untyped need fits what the typed needs of the same
  // name leave over (any type will do, so this count test is exact).
  for (const auto& r : need) {
    if (r.count == 0) continue;
    uint64_t avail = 0;
    for (const auto& s : node.slots)
      if (Matches(s, r.name, r.type)) avail += Avail(s, ignore_alloc);
    uint64_t want = r.count;
    if (r.type.empty())
      for (const auto& t : need)
        if (!t.type.empty() && t.name == r.name) want += t.count;
    if (avail < want) return false;
  }
  return true;
}

bool PickGres(const NodeGres& node, const std::vector<GresRequest>& need,
              std::vector<GresAlloc>* out) {
  out->clear();
  if (!GresFits(node, need, false)) return false;
  // Book on a scratch copy as we go, so the untyped pass never re-takes a device the typed pass
  // took. Runs only for the nodes a job is placed on, so the copy is cheap.
  NodeGres scratch = node;
  for (int pass = 0; pass < 2; ++pass) {
    bool typed_pass = pass == 0;
    for (const auto& r : need) {
      if (r.type.empty() == typed_pass) continue;
      uint64_t left = r.count;
      for (uint32_t si = 0; si < scratch.slots.size() && left > 0; ++si) {
        if (!Matches(scratch.slots[si], r.name, r.type)) continue;
        std::vector<GresAlloc> got;
        left -= TakeFrom(scratch, si, left, &got);
        BookGres(scratch, got);
        for (auto& a : got) AddAlloc(out, std::move(a));
      }
      if (left > 0) {  // cannot happen after GresFits, kept as a guard
        out->clear();
        return false;
      }
    }
  }
  return true;
}

void BookGres(NodeGres& node, const std::vector<GresAlloc>& allocs) {
  for (const auto& a : allocs) {
    if (a.slot >= node.slots.size()) continue;
    GresSlot& s = node.slots[a.slot];
    s.alloc += a.count;
    SetBits(s, a, true);
  }
}

void ReleaseGres(NodeGres& node, const std::vector<GresAlloc>& allocs) {
  for (const auto& a : allocs) {
    if (a.slot >= node.slots.size()) continue;
    GresSlot& s = node.slots[a.slot];
    s.alloc -= std::min(s.alloc, a.count);
    SetBits(s, a, false);
  }
}

std::string FormatNodeGres(const NodeGres& node) {
  std::string out;
  for (const auto& s : node.slots) {
    if (!out.empty()) out += ',';
    out += TypedName(s.name, s.type) + ":" + std::to_string(s.count);
  }
  return out.empty() ? "(null)" : out;
}

std::string FormatIndexRanges(const std::vector<uint32_t>& idx) {
  std::string out;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(idx[i]);
    if (j > i) out += "-" + std::to_string(idx[j]);
    i = j + 1;
  }
  return out;
}

std::string FormatGresUsed(const NodeGres& node) {
  std::string out;
  for (const auto& s : node.slots) {
    if (!out.empty()) out += ',';
    out += TypedName(s.name, s.type) + ":" + std::to_string(s.alloc);
    if (!s.indexed()) continue;
    std::vector<uint32_t> used;
    for (uint32_t i = 0; i < s.count; ++i)
      if (s.IsUsed(i)) used.push_back(s.first_index + i);
    out += "(IDX:" + (used.empty() ? std::string("N/A") : FormatIndexRanges(used)) + ")";
  }
  return out.empty() ? "(null)" : out;
}

std::string FormatTres(const std::vector<GresRequest>& reqs) {
  std::string out;
  for (const auto& r : reqs) {
    if (!out.empty()) out += ',';
    out += "gres/" + TypedName(r.name, r.type) + ":" + std::to_string(r.count);
  }
  return out;
}

std::string FormatIndexList(const std::vector<GresAlloc>& allocs, std::string_view name) {
  std::vector<uint32_t> idx;
  for (const auto& a : allocs)
    if (a.name == name) idx.insert(idx.end(), a.indexes.begin(), a.indexes.end());
  std::sort(idx.begin(), idx.end());
  std::string out;
  for (uint32_t i : idx) {
    if (!out.empty()) out += ',';
    out += std::to_string(i);
  }
  return out;
}

std::string FormatAllocIndexes(const std::vector<GresAlloc>& allocs) {
  std::vector<std::string> names;
  for (const auto& a : allocs)
    if (!a.indexes.empty() && std::find(names.begin(), names.end(), a.name) == names.end())
      names.push_back(a.name);
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ',';
    out += n + ":" + FormatIndexList(allocs, n);
  }
  return out;
}

std::string FormatGresAllocDetail(const std::vector<GresAlloc>& allocs) {
  std::string out;
  for (const auto& a : allocs) {
    if (!out.empty()) out += ',';
    out += TypedName(a.name, a.type) + ":" + std::to_string(a.count);
    if (!a.indexes.empty()) out += "(IDX:" + FormatIndexRanges(a.indexes) + ")";
  }
  return out;
}

}  // namespace shoal::sched
