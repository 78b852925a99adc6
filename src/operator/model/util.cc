#include "operator/model/util.h"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace shoal::op {

const Json* Find(const Json& j, std::string_view path) {
  const Json* cur = &j;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t dot = path.find('.', pos);
    if (dot == std::string_view::npos) dot = path.size();
    std::string key(path.substr(pos, dot - pos));
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    pos = dot + 1;
  }
  return cur;
}

std::string Str(const Json& j, std::string_view path, std::string_view def) {
  const Json* v = Find(j, path);
  if (v == nullptr || !v->is_string()) return std::string(def);
  return v->get<std::string>();
}

int64_t Int(const Json& j, std::string_view path, int64_t def) {
  const Json* v = Find(j, path);
  if (v == nullptr || !v->is_number_integer()) return def;
  return v->get<int64_t>();
}

bool Bool(const Json& j, std::string_view path, bool def) {
  const Json* v = Find(j, path);
  if (v == nullptr || !v->is_boolean()) return def;
  return v->get<bool>();
}

Json BaseLabels(std::string_view component, std::string_view instance) {
  return Json{{kLabelName, std::string(component)},
              {kLabelInstance, std::string(instance)},
              {kLabelManagedBy, kManagedBy}};
}

Json OwnerRef(const Json& cr) {
  return Json{{"apiVersion", Str(cr, "apiVersion", kGroupVersion)},
              {"kind", Str(cr, "kind")},
              {"name", Str(cr, "metadata.name")},
              {"uid", Str(cr, "metadata.uid")},
              {"controller", true},
              {"blockOwnerDeletion", true}};
}

Json OwnedMeta(const Json& cr, std::string_view name, const Json& labels) {
  return Json{{"name", std::string(name)},
              {"namespace", Str(cr, "metadata.namespace", "default")},
              {"labels", labels},
              {"ownerReferences", Json::array({OwnerRef(cr)})}};
}

void StampSpecHash(Json* object) {
  Json copy = *object;
  if (copy.contains("metadata") && copy["metadata"].contains("annotations"))
    copy["metadata"]["annotations"].erase(kSpecHashAnnotation);
  (*object)["metadata"]["annotations"][kSpecHashAnnotation] = HashHex(copy.dump());
}

std::string HashHex(std::string_view data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string ShortHash(std::string_view data) { return HashHex(data).substr(0, 10); }

Result<int64_t> ParseDuration(std::string_view text) {
  if (text.empty()) return InvalidArgument("empty duration");
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])))
      return InvalidArgument("invalid duration '" + std::string(text) + "'");
    int64_t n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      n = n * 10 + (text[i] - '0');
      if (n > 100000000) return InvalidArgument("duration too long '" + std::string(text) + "'");
      ++i;
    }
    int64_t unit = 1;
    if (i < text.size()) {
      switch (text[i]) {
        case 's':
          unit = 1;
          break;
        case 'm':
          unit = 60;
          break;
        case 'h':
          unit = 3600;
          break;
        case 'd':
          unit = 86400;
          break;
        default:
          return InvalidArgument("invalid duration '" + std::string(text) + "'");
      }
      ++i;
    } else if (total != 0) {
      return InvalidArgument("invalid duration '" + std::string(text) + "'");
    }
    total += n * unit;
  }
  return total;
}

std::string FormatRfc3339(int64_t unix_s) {
  time_t t = static_cast<time_t>(unix_s);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<int64_t> ParseRfc3339Micros(std::string_view text) {
  std::string t(text);
  int y, mo, d, h, mi, sec;
  int consumed = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &consumed) !=
          6 ||
      consumed != 19)
    return std::nullopt;
  size_t i = 19;
  int64_t frac = 0;  // microseconds: digits past the sixth are dropped
  if (i < t.size() && t[i] == '.') {
    ++i;
    int digits = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
      if (digits < 6) {
        frac = frac * 10 + (t[i] - '0');
        ++digits;
      }
      ++i;
    }
    while (digits++ < 6) frac *= 10;
  }
  int64_t offset = 0;
  if (i < t.size() && (t[i] == 'Z' || t[i] == 'z')) {
    ++i;
  } else if (i + 6 == t.size() && (t[i] == '+' || t[i] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(t.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offset = (oh * 3600 + om * 60) * (t[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != t.size()) return std::nullopt;
  struct tm tm {};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return (static_cast<int64_t>(timegm(&tm)) - offset) * 1000000 + frac;
}

std::optional<int64_t> ParseRfc3339(std::string_view text) {
  auto us = ParseRfc3339Micros(text);
  if (!us) return std::nullopt;
  return *us / 1000000;
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::optional<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t buf = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    const char* p = std::char_traits<char>::find(kB64, 64, c);
    if (p == nullptr) return std::nullopt;
    buf = (buf << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return out;
}

std::string Base64Encode(std::string_view data) {
  std::string out;
  size_t i = 0;
  while (i + 2 < data.size()) {
    uint32_t v = (static_cast<unsigned char>(data[i]) << 16) |
                 (static_cast<unsigned char>(data[i + 1]) << 8) |
                 static_cast<unsigned char>(data[i + 2]);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
    i += 3;
  }
  if (i < data.size()) {
    uint32_t v = static_cast<unsigned char>(data[i]) << 16;
    if (i + 1 < data.size()) v |= static_cast<unsigned char>(data[i + 1]) << 8;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < data.size() ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string PodName(const Json& pod) { return Str(pod, "metadata.name"); }
std::string PodPhase(const Json& pod) { return Str(pod, "status.phase", "Pending"); }

namespace {
const Json* ReadyCondition(const Json& pod) {
  const Json* conds = Find(pod, "status.conditions");
  if (conds == nullptr || !conds->is_array()) return nullptr;
  for (const Json& c : *conds) {
    if (Str(c, "type") == "Ready") return &c;
  }
  return nullptr;
}
}  // namespace

bool PodReady(const Json& pod) {
  const Json* c = ReadyCondition(pod);
  return c != nullptr && Str(*c, "status") == "True";
}

bool PodTerminating(const Json& pod) {
  const Json* v = Find(pod, "metadata.deletionTimestamp");
  return v != nullptr && !v->is_null();
}

int64_t PodDeletionTime(const Json& pod) {
  return ParseRfc3339(Str(pod, "metadata.deletionTimestamp")).value_or(0);
}

int64_t PodReadySince(const Json& pod) {
  const Json* c = ReadyCondition(pod);
  if (c == nullptr) return 0;
  return ParseRfc3339(Str(*c, "lastTransitionTime")).value_or(0);
}

std::string PodNodeName(const Json& pod) { return Str(pod, "spec.nodeName"); }

std::string PodLabel(const Json& pod, const std::string& key) {
  const Json* labels = Find(pod, "metadata.labels");
  if (labels == nullptr || !labels->is_object()) return "";
  auto it = labels->find(key);
  return it != labels->end() && it->is_string() ? it->get<std::string>() : "";
}

std::string PodAnnotation(const Json& pod, const std::string& key) {
  const Json* a = Find(pod, "metadata.annotations");
  if (a == nullptr || !a->is_object()) return "";
  auto it = a->find(key);
  return it != a->end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<int> OrdinalOf(std::string_view pod_name, std::string_view prefix) {
  if (pod_name.size() <= prefix.size() + 1 || pod_name.substr(0, prefix.size()) != prefix ||
      pod_name[prefix.size()] != '-')
    return std::nullopt;
  std::string_view digits = pod_name.substr(prefix.size() + 1);
  if (digits.size() > 6 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  int n = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace shoal::op
