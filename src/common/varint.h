// Protobuf base-128 varints read from and written to raw wire bytes, for the code that walks or
// builds encoded messages without protobuf (squeue's answer splitter, the controller's job
// answers, response frame heads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shoal {

// Reads the varint at `pos` into `v` and advances `pos`; false when it is truncated or longer
// than 64 bits.
inline bool ReadVarint(std::string_view in, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return false;
    auto b = static_cast<uint8_t>(in[pos++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Appends `v` as a varint.
inline void AppendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

}  // namespace shoal
