// cgroup v2 device rules: a BPF_PROG_TYPE_CGROUP_DEVICE program, hand-assembled (no libbpf),
// that denies the listed devices and allows everything else, attached with the raw bpf(2)
// syscall. Building the instructions is pure; loading/attaching is the thin I/O edge.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "noded/cgroup/cgroup_backend.h"

namespace shoal::noded {

// One eBPF instruction, laid out as struct bpf_insn.
struct BpfInsn {
  uint8_t code;
  uint8_t regs;  // dst_reg:4 (low), src_reg:4 (high)
  int16_t off;
  int32_t imm;
};
static_assert(sizeof(BpfInsn) == 8);

// Returns 0 (deny) for an access to any of `deny` (type and major:minor), 1 otherwise.
std::vector<BpfInsn> BuildDeviceProgram(const std::vector<DeviceRule>& deny);

// Loads the program and attaches it to the cgroup directory `cgroup_dir`.
Status AttachDeviceProgram(const std::string& cgroup_dir, const std::vector<DeviceRule>& deny);

}  // namespace shoal::noded
