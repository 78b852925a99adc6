#include "noded/cgroup/bpf_devices.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shoal::noded {
namespace {

BpfInsn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  return BpfInsn{code, static_cast<uint8_t>((dst & 0xf) | ((src & 0xf) << 4)), off, imm};
}

}  // namespace

// struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; }, access_type =
// (access << 16) | type, type BPF_DEVCG_DEV_BLOCK (1) or BPF_DEVCG_DEV_CHAR (2).
std::vector<BpfInsn> BuildDeviceProgram(const std::vector<DeviceRule>& deny) {
  std::vector<BpfInsn> p;
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0));  // r2 = access_type
  p.push_back(Insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff));   // r2 &= 0xffff
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_3, BPF_REG_1, 4, 0));  // r3 = major
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 8, 0));  // r4 = minor
  for (const DeviceRule& r : deny) {
    int32_t type = r.type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;
    // Any mismatch skips to the next rule (4, 3, 2 instructions ahead).
    p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 4, type));
    p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 3, static_cast<int32_t>(r.major)));
    p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 2, static_cast<int32_t>(r.minor)));
    p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0));  // r0 = 0: deny
    p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  }
  p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1));  // r0 = 1: allow
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  return p;
}

Status AttachDeviceProgram(const std::string& cgroup_dir, const std::vector<DeviceRule>& deny) {
  std::vector<BpfInsn> prog = BuildDeviceProgram(deny);
  char license[] = "GPL";
  char log[4096] = {0};
  union bpf_attr load;
  std::memset(&load, 0, sizeof(load));
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insn_cnt = static_cast<uint32_t>(prog.size());
  load.insns = reinterpret_cast<uint64_t>(prog.data());
  load.license = reinterpret_cast<uint64_t>(license);
  load.log_buf = reinterpret_cast<uint64_t>(log);
  load.log_size = sizeof(log);
  load.log_level = 1;
  int prog_fd = static_cast<int>(::syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load)));
  if (prog_fd < 0) {
    // The verifier log is only needed to explain a failure.
    return Error(ErrorCode::kIoError,
                 std::string("bpf(BPF_PROG_LOAD): ") + std::strerror(errno) + " " + log);
  }
  int cg_fd = ::open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cg_fd < 0) {
    int err = errno;
    ::close(prog_fd);
    return Error(ErrorCode::kIoError, cgroup_dir + ": " + std::strerror(err));
  }
  union bpf_attr attach;
  std::memset(&attach, 0, sizeof(attach));
  attach.target_fd = static_cast<uint32_t>(cg_fd);
  attach.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;  // rules of ancestors (and others) keep applying
  long rc = ::syscall(SYS_bpf, BPF_PROG_ATTACH, &attach, sizeof(attach));
  int err = errno;
  // The cgroup holds the program from here on; our descriptors can go.
  ::close(cg_fd);
  ::close(prog_fd);
  if (rc != 0)
    return Error(ErrorCode::kIoError,
                 "bpf(BPF_PROG_ATTACH) on " + cgroup_dir + ": " + std::strerror(err));
  return Status::Ok();
}

}  // namespace shoal::noded
