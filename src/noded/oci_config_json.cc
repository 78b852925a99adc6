#include "noded/oci_config_json.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <set>

namespace shoal::noded {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  Result<JsonValue> Document() {
    auto v = Value(0);
    if (!v.ok()) return v;
    Skip();
    if (pos_ != t_.size()) return Fail("trailing characters");
    return v;
  }

 private:
  Status Fail(const std::string& what) const {
    return InvalidArgument("config.json: " + what + " at offset " + std::to_string(pos_));
  }
  void Skip() {
    while (pos_ < t_.size() &&
           (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r'))
      ++pos_;
  }
  bool Literal(const char* word) {
    std::string w = word;
    if (t_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  static void Utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xc0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xe0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      *out += static_cast<char>(0xf0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  bool Hex4(uint32_t* out) {
    if (pos_ + 4 > t_.size()) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = t_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return false;
    }
    *out = v;
    return true;
  }
  Result<std::string> StringBody() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < t_.size() && t_[pos_] != '"') {
      char c = t_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= t_.size()) break;
      char e = t_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return Fail("bad \\u escape");
          if (cp >= 0xd800 && cp < 0xdc00 && t_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            uint32_t low = 0;
            if (!Hex4(&low) || low < 0xdc00 || low > 0xdfff) return Fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          Utf8(cp, &out);
          break;
        }
        default:
          return Fail("bad escape");
      }
    }
    if (pos_ >= t_.size()) return Fail("unterminated string");
    ++pos_;
    return out;
  }
  Result<JsonValue> Value(int depth) {
    if (depth > 64) return Fail("nested too deeply");
    Skip();
    if (pos_ >= t_.size()) return Fail("unexpected end");
    JsonValue v;
    char c = t_[pos_];
    if (c == '{') {
      v.kind = JsonValue::kObject;
      ++pos_;
      Skip();
      if (pos_ < t_.size() && t_[pos_] == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        Skip();
        if (pos_ >= t_.size() || t_[pos_] != '"') return Fail("expected a member name");
        auto key = StringBody();
        if (!key.ok()) return key.status();
        Skip();
        if (pos_ >= t_.size() || t_[pos_] != ':') return Fail("expected ':'");
        ++pos_;
        auto member = Value(depth + 1);
        if (!member.ok()) return member;
        v.members.emplace_back(std::move(*key), std::move(*member));
        Skip();
        if (pos_ < t_.size() && t_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < t_.size() && t_[pos_] == '}') {
          ++pos_;
          return v;
        }
        return Fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.kind = JsonValue::kArray;
      ++pos_;
      Skip();
      if (pos_ < t_.size() && t_[pos_] == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        auto item = Value(depth + 1);
        if (!item.ok()) return item;
        v.items.push_back(std::move(*item));
        Skip();
        if (pos_ < t_.size() && t_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < t_.size() && t_[pos_] == ']') {
          ++pos_;
          return v;
        }
        return Fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      auto s = StringBody();
      if (!s.ok()) return s.status();
      return JsonValue::String(std::move(*s));
    }
    if (Literal("true")) {
      v.kind = JsonValue::kBool;
      v.boolean = true;
      return v;
    }
    if (Literal("false")) {
      v.kind = JsonValue::kBool;
      return v;
    }
    if (Literal("null")) return v;
    size_t start = pos_;
    while (pos_ < t_.size() &&
           (std::isdigit(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '-' ||
            t_[pos_] == '+' || t_[pos_] == '.' || t_[pos_] == 'e' || t_[pos_] == 'E'))
      ++pos_;
    if (pos_ == start) return Fail("unexpected character");
    v.kind = JsonValue::kNumber;
    v.text = t_.substr(start, pos_ - start);
    return v;
  }

  const std::string& t_;
  size_t pos_ = 0;
};

void Serialize(const JsonValue& v, int indent, std::string* out) {
  std::string pad(static_cast<size_t>(indent + 1) * 2, ' ');
  std::string close_pad(static_cast<size_t>(indent) * 2, ' ');
  switch (v.kind) {
    case JsonValue::kNull:
      *out += "null";
      break;
    case JsonValue::kBool:
      *out += v.boolean ? "true" : "false";
      break;
    case JsonValue::kNumber:
      *out += v.text;
      break;
    case JsonValue::kString:
      *out += JsonString(v.text);
      break;
    case JsonValue::kArray:
      if (v.items.empty()) {
        *out += "[]";
        break;
      }
      *out += "[\n";
      for (size_t i = 0; i < v.items.size(); ++i) {
        *out += pad;
        Serialize(v.items[i], indent + 1, out);
        *out += i + 1 < v.items.size() ? ",\n" : "\n";
      }
      *out += close_pad + "]";
      break;
    case JsonValue::kObject:
      if (v.members.empty()) {
        *out += "{}";
        break;
      }
      *out += "{\n";
      for (size_t i = 0; i < v.members.size(); ++i) {
        *out += pad + JsonString(v.members[i].first) + ": ";
        Serialize(v.members[i].second, indent + 1, out);
        *out += i + 1 < v.members.size() ? ",\n" : "\n";
      }
      *out += close_pad + "}";
      break;
  }
}

}  // namespace

JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.kind = kString;
  v.text = std::move(s);
  return v;
}

JsonValue JsonValue::Array(const std::vector<std::string>& strings) {
  JsonValue v;
  v.kind = kArray;
  for (const auto& s : strings) v.items.push_back(String(s));
  return v;
}

JsonValue* JsonValue::Find(const std::string& key) {
  if (kind != kObject) return nullptr;
  for (auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

JsonValue& JsonValue::Member(const std::string& key) {
  if (JsonValue* found = Find(key)) return *found;
  kind = kObject;
  JsonValue empty;
  empty.kind = kObject;
  members.emplace_back(key, std::move(empty));
  return members.back().second;
}

Result<JsonValue> ParseJson(const std::string& text) { return Parser(text).Document(); }

std::string SerializeJson(const JsonValue& v) {
  std::string out;
  Serialize(v, 0, &out);
  return out + "\n";
}

Result<std::string> OciConfigRootfs(const JsonValue& config, const std::string& bundle) {
  JsonValue copy = config;
  JsonValue* root = copy.Find("root");
  JsonValue* path = root ? root->Find("path") : nullptr;
  if (!path || path->kind != JsonValue::kString || path->text.empty())
    return InvalidArgument("config.json of " + bundle + " has no root.path");
  if (path->text[0] == '/') return path->text;
  return bundle + "/" + path->text;
}

Result<std::string> MergeOciConfig(const std::string& bundle_config, const OciProcessSpec& spec,
                                   const std::string& disabled_hooks) {
  auto parsed = ParseJson(bundle_config);
  if (!parsed.ok()) return parsed.status();
  JsonValue config = std::move(*parsed);
  if (config.kind != JsonValue::kObject) return InvalidArgument("config.json: not an object");
  config.Member("root").Member("path") = JsonValue::String(spec.rootfs);

  JsonValue& process = config.Member("process");
  process.Member("args") = JsonValue::Array(spec.argv);
  // The image's variables the job does not set, then the job's.
  std::set<std::string> job_names;
  for (const auto& e : spec.env) job_names.insert(e.substr(0, e.find('=')));
  std::vector<std::string> env;
  if (JsonValue* image_env = process.Find("env"); image_env && image_env->kind == JsonValue::kArray)
    for (const auto& item : image_env->items)
      if (item.kind == JsonValue::kString &&
          !job_names.count(item.text.substr(0, item.text.find('='))))
        env.push_back(item.text);
  env.insert(env.end(), spec.env.begin(), spec.env.end());
  process.Member("env") = JsonValue::Array(env);
  if (!spec.cwd.empty()) process.Member("cwd") = JsonValue::String(spec.cwd);
  JsonValue terminal;
  terminal.kind = JsonValue::kBool;  // the task's stdio are pipes
  process.Member("terminal") = terminal;

  if (!spec.binds.empty()) {
    JsonValue& mounts = config.Member("mounts");
    if (mounts.kind != JsonValue::kArray) {
      mounts = JsonValue();
      mounts.kind = JsonValue::kArray;
    }
    for (const auto& [source, dest] : spec.binds) {
      JsonValue m;
      m.kind = JsonValue::kObject;
      m.members.emplace_back("destination", JsonValue::String(dest));
      m.members.emplace_back("type", JsonValue::String("none"));
      m.members.emplace_back("source", JsonValue::String(source));
      m.members.emplace_back("options", JsonValue::Array({"rbind", "nosuid", "nodev", "rw"}));
      mounts.items.push_back(std::move(m));
    }
  }
  if (JsonValue* hooks = config.Find("hooks"); hooks && !disabled_hooks.empty()) {
    std::set<std::string> off;
    size_t pos = 0;
    while (pos <= disabled_hooks.size()) {
      size_t comma = disabled_hooks.find(',', pos);
      std::string item =
          disabled_hooks.substr(pos, comma == std::string::npos ? comma : comma - pos);
      if (!item.empty()) off.insert(item);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    auto& m = hooks->members;
    m.erase(std::remove_if(m.begin(), m.end(), [&](const auto& kv) { return off.count(kv.first); }),
            m.end());
  }
  return SerializeJson(config);
}

}  // namespace shoal::noded
