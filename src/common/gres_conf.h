// gres.conf (next to slurm.conf): which GRES devices a node has, their files, cores and links,
// and whether GPUs are autodetected. Pure parsing: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal {

// One Name= line of gres.conf (or a NodeName= line with AutoDetect= only, name empty).
struct GresConfLine {
  int line = 0;                    // 1-based line number in the file
  std::vector<std::string> nodes;  // NodeName= expanded; empty = every node
  std::string name;                // "gpu"
  std::string type;                // "a100" or ""
  std::vector<std::string> files;  // File= / MultipleFiles= expanded ("/dev/nvidia[0-1]")
  bool multiple_files = false;     // MultipleFiles=: all files form one device
  uint64_t count = 0;              // Count=; defaults to the number of files, else 1
  std::string cores;               // Cores= as written ("0-3")
  std::string links;               // Links= as written
  std::string flags;               // Flags= as written (lower-cased)
  std::string autodetect;          // node-local AutoDetect= ("" = not on this line)
};

struct GresConf {
  std::string autodetect;  // global AutoDetect= ("" = not given)
  std::vector<GresConfLine> lines;
};

// Parses gres.conf text read from `path`. Errors name "path:line: what" and the key.
Result<GresConf> ParseGresConf(std::string_view text, std::string_view path);

// What applies to one node: its AutoDetect mode ("nvml", "nvidia", "rsmi", "off" or "" for none;
// a node-local value beats the global one) and its Name= lines in file order.
struct NodeGresConf {
  std::string autodetect;
  std::vector<GresConfLine> lines;
};
NodeGresConf GresConfForNode(const GresConf& conf, std::string_view node);

}  // namespace shoal
