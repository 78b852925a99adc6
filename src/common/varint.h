// Protobuf base-128 varints read from raw wire bytes, for the code that walks encoded messages
// without parsing them (squeue's answer splitter, the controller's projected job encoder).
#pragma once

#include <cstddef>
#include <cstdint>
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

}  // namespace shoal
