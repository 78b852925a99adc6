#include "sched/array_spec.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace shoal::sched {
namespace {

Status Invalid(const std::string& why) {
  return InvalidArgument("Invalid job array specification: " + why);
}

bool ParseU32(std::string_view s, uint32_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

Result<ArraySpec> ParseArraySpec(std::string_view text, uint32_t max_array_size) {
  ArraySpec spec;
  std::string_view body = text;
  if (auto pct = text.find('%'); pct != std::string_view::npos) {
    body = text.substr(0, pct);
    if (!ParseU32(text.substr(pct + 1), &spec.throttle)) return Invalid(std::string(text));
  }
  if (body.empty()) return Invalid("empty");
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t comma = body.find(',', pos);
    std::string_view item =
        body.substr(pos, comma == std::string_view::npos ? body.size() - pos : comma - pos);
    uint32_t step = 1;
    if (auto colon = item.find(':'); colon != std::string_view::npos) {
      if (!ParseU32(item.substr(colon + 1), &step) || step == 0) return Invalid(std::string(item));
      item = item.substr(0, colon);
    }
    uint32_t lo = 0, hi = 0;
    if (auto dash = item.find('-'); dash != std::string_view::npos) {
      if (!ParseU32(item.substr(0, dash), &lo) || !ParseU32(item.substr(dash + 1), &hi) || hi < lo)
        return Invalid(std::string(item));
    } else {
      if (!ParseU32(item, &lo)) return Invalid(std::string(item));
      hi = lo;
    }
    if (hi >= max_array_size)
      return Invalid("index " + std::to_string(hi) + " exceeds MaxArraySize-1 (" +
                     std::to_string(max_array_size - 1) + ")");
    for (uint64_t i = lo; i <= hi; i += step) spec.indexes.push_back(static_cast<uint32_t>(i));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::sort(spec.indexes.begin(), spec.indexes.end());
  spec.indexes.erase(std::unique(spec.indexes.begin(), spec.indexes.end()), spec.indexes.end());
  if (spec.indexes.empty()) return Invalid("no tasks");
  return spec;
}

}  // namespace shoal::sched
