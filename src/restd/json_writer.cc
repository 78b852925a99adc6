#include "restd/json_writer.h"

#include <cmath>
#include <cstdio>

#include "common/units.h"

namespace shoal::restd {

NV NV::U32(uint32_t v) {
  if (v == kTimeNoVal) return Unset();
  if (v == kTimeInfinite) return Infinite();
  return Set(v);
}

NV NV::Double(double v) {
  if (std::isnan(v)) return Unset();
  if (std::isinf(v)) return Infinite();
  NV n{true, false, true, 0, v};
  return n;
}

void JsonObjectWriter::Key(std::string_view key) {
  if (!first_) out_->push_back(',');
  first_ = false;
  out_->push_back('"');
  out_->append(key);  // keys are our own identifiers: nothing to escape
  out_->append("\":");
}

void JsonObjectWriter::String(std::string_view s) {
  bool plain = true;
  for (unsigned char c : s) plain = plain && c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  if (plain) {
    out_->push_back('"');
    out_->append(s);
    out_->push_back('"');
    return;
  }
  // Escapes and invalid UTF-8 (replaced) as nlohmann does.
  out_->append(json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace));
}

void JsonObjectWriter::Field(std::string_view key, const NV& v) {
  Key(key);
  out_->append(v.set ? "{\"set\":true," : "{\"set\":false,");
  out_->append(v.infinite ? "\"infinite\":true,\"number\":" : "\"infinite\":false,\"number\":");
  if (v.is_double) {
    out_->append(json(v.dnumber).dump());
  } else {
    out_->append(std::to_string(v.number));
  }
  out_->push_back('}');
}

void JsonObjectWriter::Field(std::string_view key, const json& v) {
  Key(key);
  out_->append(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace shoal::restd
