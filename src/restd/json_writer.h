// A streaming JSON object writer for large answers (GET jobs/ with thousands of jobs): fields
// are appended straight to the output text instead of building an nlohmann tree per job, which
// cost ~150 us a job in allocations. Slurm's no-val structs have their own small value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "restd/json_common.h"

namespace shoal::restd {

// A *_no_val_struct value.
struct NV {
  bool set = false, infinite = false, is_double = false;
  int64_t number = 0;
  double dnumber = 0;
  static NV Set(int64_t v) { return NV{true, false, false, v, 0}; }
  static NV Unset() { return NV{}; }
  static NV Infinite() { return NV{false, true, false, 0, 0}; }
  static NV U32(uint32_t v);  // kTimeNoVal unset, kTimeInfinite infinite
  static NV Time(int64_t t) { return t > 0 ? Set(t) : Unset(); }
  static NV Double(double v);
};

class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(std::string* out) : out_(out) { out_->push_back('{'); }
  void Finish() { out_->push_back('}'); }

  void Field(std::string_view key, std::string_view v) {
    Key(key);
    String(v);
  }
  void Field(std::string_view key, const std::string& v) { Field(key, std::string_view(v)); }
  void Field(std::string_view key, const char* v) { Field(key, std::string_view(v)); }
  void Field(std::string_view key, bool v) {
    Key(key);
    out_->append(v ? "true" : "false");
  }
  template <typename T,
            typename = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
  void Field(std::string_view key, T v) {
    Key(key);
    out_->append(std::to_string(v));
  }
  void Field(std::string_view key, const NV& v);
  void Field(std::string_view key, const json& v);

 private:
  void Key(std::string_view key);
  void String(std::string_view s);
  std::string* out_;
  bool first_ = true;
};

}  // namespace shoal::restd
