#include "noded/gres_devices.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "common/strings.h"
#include "noded/util.h"

namespace shoal::noded {
namespace {

bool ParseU32(std::string_view s, uint32_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool Holds(const std::map<std::string, std::vector<uint32_t>>& held, const GresDevice& d) {
  auto it = held.find(d.name);
  return it != held.end() &&
         std::find(it->second.begin(), it->second.end(), d.index) != it->second.end();
}

}  // namespace

std::map<std::string, std::vector<uint32_t>> ParseGresAllocEntry(std::string_view entry) {
  std::map<std::string, std::vector<uint32_t>> out;
  if (entry.empty()) return out;
  std::string current;
  for (std::string_view tok : SplitFields(entry, ',')) {
    size_t colon = tok.rfind(':');
    if (colon != std::string_view::npos) {
      // "gpu:0" or "gpu:a100:0": the name is the first field, the index the last one.
      current = std::string(tok.substr(0, tok.find(':')));
      out[current];
      tok = tok.substr(colon + 1);
    }
    uint32_t idx = 0;
    // Ranges ("0-3") are accepted too, though the controller writes plain lists.
    size_t dash = tok.find('-');
    if (dash != std::string_view::npos) {
      uint32_t lo = 0, hi = 0;
      if (current.empty() || !ParseU32(tok.substr(0, dash), lo) ||
          !ParseU32(tok.substr(dash + 1), hi) || hi < lo || hi - lo > 65536)
        continue;
      for (uint32_t i = lo; i <= hi; ++i) out[current].push_back(i);
      continue;
    }
    if (current.empty() || !ParseU32(tok, idx)) continue;
    out[current].push_back(idx);
  }
  return out;
}

std::vector<std::string> AllowedDeviceFiles(const std::vector<GresDevice>& devices,
                                            std::string_view gres_alloc_entry) {
  auto held = ParseGresAllocEntry(gres_alloc_entry);
  std::set<std::string> allowed;
  for (const auto& d : devices)
    if (!d.file.empty() && Holds(held, d)) allowed.insert(d.file);
  return {allowed.begin(), allowed.end()};
}

std::vector<std::string> DeniedDeviceFiles(const std::vector<GresDevice>& devices,
                                           std::string_view gres_alloc_entry) {
  auto held = ParseGresAllocEntry(gres_alloc_entry);
  std::set<std::string> allowed, denied;
  for (const auto& d : devices) {
    if (d.file.empty()) continue;
    (Holds(held, d) ? allowed : denied).insert(d.file);
  }
  std::vector<std::string> out;
  for (const auto& f : denied)
    if (!allowed.count(f)) out.push_back(f);
  return out;
}

std::vector<GresDevice> HeldDevices(const std::vector<GresDevice>& devices,
                                    std::string_view gres_alloc_entry, std::string_view name) {
  auto held = ParseGresAllocEntry(gres_alloc_entry);
  std::vector<GresDevice> out;
  for (const auto& d : devices)
    if (d.name == name && Holds(held, d)) out.push_back(d);
  std::sort(out.begin(), out.end(),
            [](const GresDevice& a, const GresDevice& b) { return a.index < b.index; });
  return out;
}

std::string FormatGresDevices(const std::vector<GresDevice>& devices) {
  std::string out;
  for (const auto& d : devices)
    out +=
        d.name + "|" + d.type + "|" + std::to_string(d.index) + "|" + d.file + "|" + d.cores + "\n";
  return out;
}

std::vector<GresDevice> ParseGresDevices(std::string_view text) {
  std::vector<GresDevice> out;
  for (std::string_view line : SplitFields(text, '\n')) {
    if (line.empty()) continue;
    auto f = SplitFields(line, '|');
    if (f.size() != 5) continue;
    GresDevice d;
    if (f[0].empty() || !ParseU32(f[2], d.index)) continue;
    d.name = std::string(f[0]);
    d.type = std::string(f[1]);
    d.file = std::string(f[3]);
    d.cores = std::string(f[4]);
    out.push_back(std::move(d));
  }
  return out;
}

std::string GresDevicesPath(const std::string& spool_dir) { return spool_dir + "/gres_devices"; }

bool SaveGresDevices(const std::string& spool_dir, const std::vector<GresDevice>& devices) {
  return WriteFileAtomic(GresDevicesPath(spool_dir), FormatGresDevices(devices), 0644, false).ok();
}

std::vector<GresDevice> LoadGresDevices(const std::string& spool_dir) {
  auto text = ReadWholeFile(GresDevicesPath(spool_dir));
  if (!text.ok()) return {};
  return ParseGresDevices(*text);
}

}  // namespace shoal::noded
