// Generic resources (GRES: GPUs, shards, NICs, ...) in Slurm's select/cons_tres sense: a node's
// inventory from slurm.conf `Gres=`, a job's requests (--gres, --gpus*, --cpus-per-gpu,
// --mem-per-gpu), the choice of DISTINCT device indexes on a node, and Slurm's display forms.
// Pure logic, no I/O.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal::sched {

// One name/type of GRES on a node ("gpu:a100:4"). Devices are numbered per NAME across the
// node (a100 0-3, then v100 4-5), as Slurm's IDX and CUDA_VISIBLE_DEVICES number them; the bitmap
// is local to the slot (bit i = device first_index + i).
struct GresSlot {
  std::string name;  // "gpu"
  std::string type;  // "a100", or "" when untyped
  uint64_t count = 0;
  uint64_t alloc = 0;          // devices in use (always kept, also for count-only slots)
  uint32_t first_index = 0;    // index of the slot's device 0 within its name
  std::vector<uint64_t> bits;  // allocation bitmap; empty for count-only slots (see below)

  // Counts above this (e.g. "bandwidth:1G") are consumed as plain numbers, without indexes.
  static constexpr uint64_t kMaxIndexed = 4096;
  bool indexed() const { return count <= kMaxIndexed; }
  uint64_t free() const { return count - std::min(count, alloc); }
  bool IsUsed(uint32_t local) const { return (bits[local / 64] >> (local % 64)) & 1; }
};

// A node's GRES inventory with its allocation state.
struct NodeGres {
  std::vector<GresSlot> slots;
  bool empty() const { return slots.empty(); }
};

// One requested amount: "gpu:a100:2" -> {gpu, a100, 2}; type "" matches any type.
struct GresRequest {
  std::string name;
  std::string type;
  uint64_t count = 0;
  bool operator==(const GresRequest&) const = default;
};

// Everything a job asks for in GRES. Empty = nothing requested (old callers).
struct JobGres {
  std::vector<GresRequest> per_node;  // --gres, --gpus-per-node
  std::vector<GresRequest> per_task;  // --gpus-per-task
  std::vector<GresRequest> per_job;   // --gpus (total, spread over the nodes)
  uint32_t cpus_per_gpu = 0;          // --cpus-per-gpu, 0 = not given
  uint64_t mem_per_gpu_mb = 0;        // --mem-per-gpu, 0 = not given
  bool empty() const {
    return per_node.empty() && per_task.empty() && per_job.empty() && !cpus_per_gpu &&
           !mem_per_gpu_mb;
  }
};

// Devices of one slot given to a job on one node.
struct GresAlloc {
  uint32_t slot = 0;  // index into NodeGres::slots of the node
  std::string name;
  std::string type;
  uint64_t count = 0;
  std::vector<uint32_t> indexes;  // device indexes (per name), ascending; empty if count-only
  bool operator==(const GresAlloc&) const = default;
};

// The text every parse error carries (Slurm's wording).
inline constexpr const char* kInvalidGresMessage = "Invalid generic resource (gres) specification";

// slurm.conf `Gres=`: "gpu:4", "gpu:a100:4", "gpu:a100:2,gpu:v100:2,nic:1", "shard:1K",
// "gpu:a100:4(S:0-1)". A missing count is 1; a repeated name:type is merged; "" and "(null)"
// give an empty inventory.
Result<NodeGres> ParseNodeGres(std::string_view text);

// --gres / --tres-per-node: "gpu:2", "gpu:a100:2,shard:1", "gres/gpu:2", "gpu" (count 1),
// "none" (nothing). Repeated name:type are summed.
Result<std::vector<GresRequest>> ParseGresRequest(std::string_view text);

// --gpus / --gpus-per-node / --gpus-per-task: "[type:]N[,[type:]N...]" (name is always "gpu").
Result<std::vector<GresRequest>> ParseGpuRequest(std::string_view text);

// What a job asks for, all in one: the option values as given ("" = option not used).
struct GresOptions {
  std::string gres;           // --gres
  std::string gpus;           // --gpus / -G
  std::string gpus_per_node;  // --gpus-per-node
  std::string gpus_per_task;  // --gpus-per-task
  std::string cpus_per_gpu;   // --cpus-per-gpu
  std::string mem_per_gpu;    // --mem-per-gpu in MB (plain number; the caller converts units)
};
Result<JobGres> ParseJobGres(const GresOptions& opts);

// Free devices of name (any type when type is "").
uint64_t GresFree(const NodeGres& node, std::string_view name, std::string_view type);
uint64_t GresTotal(const NodeGres& node, std::string_view name, std::string_view type);

// Whether `need` (per name/type amounts, typed and untyped mixed) fits the free devices; with
// ignore_alloc, whether it fits the node's whole inventory. Allocation-free.
bool GresFits(const NodeGres& node, const std::vector<GresRequest>& need, bool ignore_alloc);

// Picks the lowest free device indexes for `need` (typed requests first, so an untyped one never
// takes what a typed one needs). Empty result and false when it does not fit.
bool PickGres(const NodeGres& node, const std::vector<GresRequest>& need,
              std::vector<GresAlloc>* out);

// Books / gives back devices picked by PickGres. Release is the exact inverse of Book.
void BookGres(NodeGres& node, const std::vector<GresAlloc>& allocs);
void ReleaseGres(NodeGres& node, const std::vector<GresAlloc>& allocs);

// Display forms.
// Node `Gres=`: "gpu:a100:4,nic:1".
std::string FormatNodeGres(const NodeGres& node);
// Node `GresUsed=`: "gpu:a100:2(IDX:0-1),nic:0".
std::string FormatGresUsed(const NodeGres& node);
// Job `TresPerNode=` (also TresPerTask/TresPerJob): "gres/gpu:2", "gres/gpu:a100:2,gres/shard:1".
std::string FormatTres(const std::vector<GresRequest>& reqs);
// Index list "0,2" or "0-3" ranges as Slurm prints IDX: FormatIndexRanges {0,1,2,5} = "0-2,5".
std::string FormatIndexRanges(const std::vector<uint32_t>& idx);
// Plain comma list "0,2" (SLURM_JOB_GPUS / CUDA_VISIBLE_DEVICES) of one name's devices.
std::string FormatIndexList(const std::vector<GresAlloc>& allocs, std::string_view name);
// "gpu:0,2" per name ("gpu:0,2,nic:0"): what the controller tells the node to bind.
std::string FormatAllocIndexes(const std::vector<GresAlloc>& allocs);
// Job detail `GRES=gpu:a100:2(IDX:0-1)`.
std::string FormatGresAllocDetail(const std::vector<GresAlloc>& allocs);

}  // namespace shoal::sched
