// The bundle's own config.json (oci.conf without IgnoreFileConfigJson=true): a small JSON
// document model, and the merge that keeps the image's settings (rootfs, mounts, namespaces,
// user, hostname, ...) while the job decides what runs: process args, environment (the job's
// variables win over the image's), cwd; the spool directory bind mounts are appended. Pure.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "noded/oci_conf.h"

namespace shoal::noded {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = kNull;
  bool boolean = false;
  std::string text;  // a string's value, or a number as written
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;  // in document order

  static JsonValue String(std::string s);
  static JsonValue Array(const std::vector<std::string>& strings);
  JsonValue* Find(const std::string& key);
  // The member `key` (added, as an empty object, when absent or not an object when `object`).
  JsonValue& Member(const std::string& key);
};

Result<JsonValue> ParseJson(const std::string& text);
std::string SerializeJson(const JsonValue& v);

// root.path of a config.json, absolute (relative paths are relative to `bundle`).
Result<std::string> OciConfigRootfs(const JsonValue& config, const std::string& bundle);

// The task's config.json from the bundle's: see above. `spec.rootfs` replaces root.path. Hook
// types named in `disabled_hooks` (oci.conf DisableHooks=prestart,poststop,...) are removed.
Result<std::string> MergeOciConfig(const std::string& bundle_config, const OciProcessSpec& spec,
                                   const std::string& disabled_hooks = "");

}  // namespace shoal::noded
